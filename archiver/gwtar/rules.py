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
    "END_MARK",
    "EXCLUDED",
    "EXTENSION_VERSION",
    "INDEX_PATH",
    "MAGIC",
    "MAGIC_COMMENT",
    "META_ID",
    "OFFSET_DIGITS",
    "OVERHEAD_DIGITS",
    "RESERVED_ENTRY_FIELDS",
    "TOTAL_DIGITS",
    "Problem",
    "is_array_index",
    "member_path_problem",
    "v1_data_offsets",
]

MAGIC_COMMENT = b"<!-- Gwtar self-extracting HTML archive, v1 -->"
MAGIC = b"<html>\n" + MAGIC_COMMENT + b"\n"
END_MARK = b"<!-- GWTAR END\n"
EXTENSION_VERSION = 1
INDEX_PATH = "_archiver/gwtar-index.json"
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
