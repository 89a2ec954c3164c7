"""The fixed facts of the gwtar format (formats/gwtar.md) that writing and reading share: the
magic and terminator, the extension's version, ids and reserved names, the header's field widths, the
v1 offset arithmetic, the rule a member name must obey, and :class:`Problem`, the one way a problem
with an archive is reported.

Pure: no network, no filesystem, no clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from archiver import tar
from archiver.urls import PRIVATE_NAMES, RESERVED_DIR

__all__ = [
    "BUNDLE_PATH",
    "BUNDLE_VERSION",
    "END_MARK",
    "EXCLUDED",
    "EXTENSION_VERSION",
    "EXTENSION_VERSIONS",
    "INDEX_PATH",
    "MAGIC",
    "MAGIC_COMMENT",
    "META_ID",
    "OFFSET_DIGITS",
    "OVERHEAD_DIGITS",
    "RESERVED_ENTRY_FIELDS",
    "TOTAL_DIGITS",
    "BundleTiling",
    "Problem",
    "is_array_index",
    "member_path_problem",
    "v1_data_offsets",
]

MAGIC_COMMENT = b"<!-- Gwtar self-extracting HTML archive, v1 -->"
MAGIC = b"<html>\n" + MAGIC_COMMENT + b"\n"
END_MARK = b"<!-- GWTAR END\n"
EXTENSION_VERSION = 1
#: The extension version of a file whose search index files are one bundle member (formats/gwtar.md
#: §5.5); a file without a bundle is written as version 1, as before.
BUNDLE_VERSION = 2
#: The extension versions this archiver reads.
EXTENSION_VERSIONS = (EXTENSION_VERSION, BUNDLE_VERSION)
INDEX_PATH = "_archiver/gwtar-index.json"
#: The tar member whose data is the bundled files' bytes, one after the other (formats/gwtar.md §5.5).
BUNDLE_PATH = "_archiver/gwtar-bundle"
META_ID = "archiver-gwtar"
OVERHEAD_DIGITS = 12
TOTAL_DIGITS = 24
OFFSET_DIGITS = 24
#: Tree files never packed: the tree's private files (urls.PRIVATE_NAMES), and a site index left by
#: an earlier extract.
EXCLUDED = frozenset({f"{RESERVED_DIR}/{name}" for name in PRIVATE_NAMES} | {INDEX_PATH})
#: Fields the v1 loader adds to each manifest entry at run time; a manifest must not use them.
RESERVED_ENTRY_FIELDS = frozenset(
    {"name", "byteRangeStart", "byteRangeEnd", "urlString", "data", "status", "rendered"}
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an archive: the member it concerns (None for the file as a whole), the
    byte offset in the file where it shows (None when there is none), and one line saying what."""

    member: str | None
    offset: int | None
    message: str

    def line(self, subject: str) -> str:
        where = []
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.member is not None:
            where.append(f"member {json.dumps(self.member, ensure_ascii=False)}")
        return f"{subject}: {', '.join(where)}: {self.message}" if where else f"{subject}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"member": self.member, "offset": self.offset, "message": self.message}


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def is_array_index(key: str) -> bool:
    """True for keys JavaScript orders before all others in ``Object.entries`` (canonical integers
    below 2**32 - 1)."""
    return bool(_ARRAY_INDEX.fullmatch(key)) and int(key) < 2**32 - 1


def member_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a member name (absolute, ``..``, empty or ``.`` segments, NUL, a
    backslash-free POSIX path is required), or None."""
    if not path:
        return "empty name"
    if "\x00" in path:
        return "name contains NUL"
    if path.startswith("/"):
        return "absolute name"
    # an empty, "." or ".." segment, found without splitting (every member's name is checked; an
    # indexed tree has thousands): the path is not absolute, so a segment starts at 0 or after "/"
    marked = f"/{path}/"
    if "//" in marked or "/./" in marked or "/../" in marked:
        return "name has an empty, '.' or '..' segment"
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            return "name is not valid UTF-8"
    return None


def plain_names(paths: Sequence[str]) -> bool:
    """Whether :func:`member_path_problem` finds nothing wrong with any of ``paths``, found for all
    of them at once (an indexed tree has thousands of members; False: look at each)."""
    # each name between two "/" as member_path_problem marks it, NUL (refused in a name) between
    # them: every "//", "/./" or "/../" of the text is one of a name's, and so is every NUL but the
    # separators; an empty or absolute name shows as "//"
    if not paths:
        return True
    text = "/" + "/\x00/".join(paths) + "/"
    if text.count("\x00") != len(paths) - 1 or "//" in text or "/./" in text or "/../" in text:
        return False
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return True


def v1_data_offsets(sizes: Sequence[int]) -> list[int]:
    """Data offsets (relative to the tar start) the v1 loader computes for listed members of these
    sizes: the first at 512, each next one after a 512-byte header and the previous data padded to
    512."""
    out: list[int] = []
    pos = tar.BLOCK
    for size in sizes:
        out.append(pos)
        pos += tar.BLOCK + tar.data_span(size)
    return out


class BundleTiling:
    """Checks the site index entries of the bundled files (formats/gwtar.md §5.5), given in index
    order, against the bundle member's data (absolute ``start``, ``size`` bytes): each file starts
    where the one before it ends, the first at the bundle's start, none runs past its end, each has a
    SHA-256, and together they fill it (no byte of the bundle belongs to no file or to two)."""

    def __init__(self, start: int, size: int) -> None:
        self.start = start
        self.end = start + size
        self.next = start

    def add(self, path: str, offset: int, size: int, sha256: str | None) -> str | None:
        """Why the next bundled file (``path`` at absolute ``offset``) is refused, or None."""
        if sha256 is None:
            return f"bundled file {path!r} has no SHA-256"
        if offset != self.next:
            where = (
                "overlaps the one before it" if offset < self.next else "leaves a gap after the one before it"
            )
            if not self.start <= offset < self.end:
                where = "lies outside the bundle"
            return f"bundled file {path!r} at {offset} {where} (expected at {self.next})"
        if offset + size > self.end:
            return f"bundled file {path!r} runs {offset + size - self.end} bytes past the bundle's end"
        self.next = offset + size
        return None

    def finish(self) -> str | None:
        """Why the bundle is refused once every bundled file was added, or None."""
        if self.next != self.end:
            return f"the bundle's last {self.end - self.next} bytes belong to no file of the site index"
        return None
