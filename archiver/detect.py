"""What kind of input a path is: a canonical tree, a gwtar, a ZIM (or a split ZIM named by its base
name, ``X.zim`` for ``X.zimaa``, ``X.zimab``…), a WARC (plain or gzip), a WACZ, or a
SingleFile-style HTML page.

The decision reads at most the first 1 KiB of a file (``kind_of_bytes`` is pure over those bytes).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Literal

from archiver.errors import UsageError

__all__ = ["Kind", "kind_of", "kind_of_bytes"]

Kind = Literal["tree", "gwtar", "zim", "html", "warc", "wacz"]

_ZIM_MAGIC = (72173914).to_bytes(4, "little")  # openZIM header magic number
_GWTAR_MAGIC = b"<!-- Gwtar self-extracting HTML archive, v1 -->"
_WACZ_FIRST = (b"archive/", b"datapackage", b"indexes/", b"pages/")


def kind_of_bytes(head: bytes) -> Kind | None:
    """The kind of a file from its first bytes, or None when it is none of ours."""
    if head.startswith(_ZIM_MAGIC):
        return "zim"
    if _GWTAR_MAGIC in head[:1024]:
        return "gwtar"
    if head.startswith(b"WARC/1."):
        return "warc"
    if head.startswith(b"\x1f\x8b"):  # a gzip WARC: its first record starts with WARC/1.
        try:
            if zlib.decompressobj(31).decompress(head, 16).startswith(b"WARC/1."):
                return "warc"
        except zlib.error:
            return None
    if head.startswith(b"PK\x03\x04") and head[30:].startswith(_WACZ_FIRST):
        return "wacz"  # a zip whose first entry is one of a WACZ's
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
    name = path.name.lower()
    if kind is None and name.endswith(".wacz"):
        kind = "wacz"  # its reader says what is wrong with it
    elif kind is None and name.endswith((".warc", ".warc.gz")):
        kind = "warc"
    if kind is None:
        raise UsageError("not a tree, gwtar, ZIM or HTML file", subject=str(path))
    return kind
