"""What kind of input a path is: a canonical tree, a gwtar, a ZIM (or a split ZIM named by its base
name, ``X.zim`` for ``X.zimaa``, ``X.zimab``…), a WARC (plain or gzip), a WACZ, or a
SingleFile-style HTML page. An ARC file (the Internet Archive's format before WARC, first line
``filedesc://…``, plain or gzip) is recognised only to be refused with one message
(:data:`ARC_NOT_SUPPORTED`) by every command (formats/warc.md §1).

The decision reads at most the first 1 KiB of a file (``kind_of_bytes`` is pure over those bytes).
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Literal

from archiver.errors import UsageError

__all__ = ["ARC_NOT_SUPPORTED", "ARC_START", "Kind", "is_arc", "kind_of", "kind_of_bytes", "refuse_arc"]

Kind = Literal["tree", "gwtar", "zim", "html", "warc", "wacz"]

_ZIM_MAGIC = (72173914).to_bytes(4, "little")  # openZIM header magic number
_GWTAR_MAGIC = b"<!-- Gwtar self-extracting HTML archive, v1 -->"
_WACZ_FIRST = (b"archive/", b"datapackage", b"indexes/", b"pages/")

#: How an ARC file starts: its version block's URL-record line (ARC 1.0 and 1.1).
ARC_START = b"filedesc://"
#: The one message every command gives for an ARC file (a :class:`UsageError`, exit 2).
ARC_NOT_SUPPORTED = (
    "an ARC file (the Internet Archive's format before WARC): ARC is not supported; "
    "convert it to WARC with arc2warc (pip install warctools) and give the WARC"
)


def is_arc(head: bytes) -> bool:
    """Whether the first bytes of a file are those of an ARC file, plain or gzip."""
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(31).decompress(head, len(ARC_START))
        except zlib.error:
            return False
    return head.startswith(ARC_START)


def refuse_arc(path: Path) -> None:
    """Raise the :class:`UsageError` of :data:`ARC_NOT_SUPPORTED` when ``path`` is an ARC file (a
    file that cannot be read is left to the caller to report)."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError:
        return
    if is_arc(head):
        raise UsageError(ARC_NOT_SUPPORTED, subject=str(path))


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
    if is_arc(head):
        raise UsageError(ARC_NOT_SUPPORTED, subject=str(path))
    kind = kind_of_bytes(head)
    name = path.name.lower()
    if kind is None and name.endswith(".wacz"):
        kind = "wacz"  # its reader says what is wrong with it
    elif kind is None and name.endswith((".warc", ".warc.gz")):
        kind = "warc"
    if kind is None:
        raise UsageError("not a tree, gwtar, ZIM or HTML file", subject=str(path))
    return kind
