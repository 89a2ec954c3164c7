"""What kind of input a path is: a canonical tree, a gwtar, a ZIM (or a split ZIM named by its base
name, ``X.zim`` for ``X.zimaa``, ``X.zimab``…), or a SingleFile-style HTML page.

The decision reads at most the first 1 KiB of a file (``kind_of_bytes`` is pure over those bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from archiver.errors import UsageError

__all__ = ["Kind", "kind_of", "kind_of_bytes"]

Kind = Literal["tree", "gwtar", "zim", "html"]

_ZIM_MAGIC = (72173914).to_bytes(4, "little")  # openZIM header magic number
_GWTAR_MAGIC = b"<!-- Gwtar self-extracting HTML archive, v1 -->"


def kind_of_bytes(head: bytes) -> Kind | None:
    """The kind of a file from its first bytes, or None when it is none of ours."""
    if head.startswith(_ZIM_MAGIC):
        return "zim"
    if _GWTAR_MAGIC in head[:1024]:
        return "gwtar"
    start = head[:1024].lstrip().lower()
    if start.startswith((b"<!doctype html", b"<html", b"<!--", b"<head", b"<meta")):
        return "html"
    return None


def kind_of(path: Path) -> Kind:
    """The kind of ``path``; a :class:`UsageError` names the path when it is missing or unknown."""
    if path.is_dir():
        return "tree"
    try:
        with path.open("rb") as f:
            head = f.read(1024)
    except FileNotFoundError:
        if path.with_name(f"{path.name}aa").is_file():  # a split ZIM named by its base name
            return "zim"
        raise UsageError("no such file or folder", subject=str(path)) from None
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror}", subject=str(path)) from None
    kind = kind_of_bytes(head)
    if kind is None:
        raise UsageError("not a tree, gwtar, ZIM or HTML file", subject=str(path))
    return kind
