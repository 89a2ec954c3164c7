"""The bundle of an extension-2 gwtar (formats/gwtar.md §5.5): the search index's small files stored
as one tar member whose data is their bytes one after the other, each still a site index entry of its
own (path, offset inside the bundle, size, SHA-256), so the loader, ``ls``, ``serve`` and ``search``
read them as before. What ``verify`` and ``extract`` add: the bundled entries must tile the bundle
member exactly (:class:`~archiver.gwtar.rules.BundleTiling`) and match their hashes; a forged table is
refused with one line.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from archiver.errors import FormatError
from archiver.gwtar import parse, rules
from archiver.gwtar.read import GwtarReader, Member, TarEntry

__all__ = ["Bundle", "Check", "expand", "file_sha256", "locate", "member_problem"]


@dataclass(frozen=True)
class Bundle:
    """Where the bundle is: its data's absolute offset and size, and its files' site index entries
    (``first`` and the ``count`` after it)."""

    start: int
    size: int
    first: int
    count: int

    def holds(self, i: int) -> bool:
        """Whether site index entry ``i`` is a bundled file."""
        return self.first <= i < self.first + self.count


def locate(meta: dict[str, Any] | None, overhead: int) -> Bundle | str | None:
    """The bundle the metadata declares (None for a file without one), or what is wrong with it."""
    if meta is None:
        return None
    where = parse.bundle_location(meta)
    if where is None or isinstance(where, str):
        return where
    offset, size, first, count = where
    return Bundle(overhead + offset, size, first, count)


def member_problem(found: Bundle | str, member: tuple[str, int] | None) -> str | None:
    """Why the bundle the metadata declares (or the message :func:`locate` gave) is not the tar
    member found at its data offset (``(name, size)``, None when no member's data starts there)."""
    if isinstance(found, str):
        return f"metadata: {found}"
    if member != (rules.BUNDLE_PATH, found.size):
        return f"the metadata's bundle is not the tar member {rules.BUNDLE_PATH!r} of {found.size} bytes"
    return None


class Check:
    """``verify``'s check of the bundled files' site index entries, given one at a time in index order
    (:meth:`entry`), then :meth:`finish`: the tiling, the names (``tar_names``: the tar members'),
    and each file's SHA-256 against its bytes read from ``fd``. A broken tiling is reported once and
    stops the checks of the entries after it (each would be off too)."""

    def __init__(self, fd: int, found: Bundle, tar_names: set[str]) -> None:
        self.fd = fd
        self.bundle = found
        self.tiling: rules.BundleTiling | None = rules.BundleTiling(found.start, found.size)
        self.tar_names = tar_names
        self.names: set[str] = set()
        self.buf = bytearray(1 << 20)

    def entry(self, m: Member) -> str | None:
        if self.tiling is None:
            return None
        why = self.tiling.add(m.path, m.offset, m.size, m.sha256)
        if why is None and (m.path in self.tar_names or m.path in self.names):
            why = f"bundled file {m.path!r} is named twice"
        self.names.add(m.path)
        if why:
            self.tiling = None
            return why
        if file_sha256(self.fd, m.offset, m.size, self.buf) != m.sha256:
            return f"bundled file {m.path!r} does not match its SHA-256 in the site index"
        return None

    def finish(self, count: int) -> str | None:
        """What is wrong once the site index's ``count`` entries were seen."""
        if self.tiling is None:
            return None
        if count < self.bundle.first + self.bundle.count:
            last = self.bundle.first + self.bundle.count
            return f"the site index lists {count} members, the bundle's files end at entry {last}"
        return self.tiling.finish()


def file_sha256(fd: int, offset: int, size: int, buf: bytearray) -> str:
    """The SHA-256 of ``size`` bytes of ``fd`` from absolute ``offset`` (a bundled file's)."""
    digest = hashlib.sha256()
    view = memoryview(buf)
    while size:
        n = os.preadv(fd, [view[: min(size, len(view))]], offset)
        if not n:
            break
        digest.update(view[:n])
        offset, size = offset + n, size - n
    return digest.hexdigest()


def expand(g: GwtarReader, entries: list[TarEntry]) -> list[TarEntry]:
    """``entries`` (a tar walk of ``g``) with the bundle member replaced by one entry for each bundled
    file, as ``tar x`` would see them if they were members; a file without a bundle: ``entries``.
    Raises :class:`FormatError` (one line) for a bundle that is not the tar member its metadata says
    or whose site index entries do not tile it."""
    found = locate(g.meta, g.overhead)
    if found is None:
        return entries
    at = (
        None
        if isinstance(found, str)
        else next((k for k, e in enumerate(entries) if e.data_offset == found.start), None)
    )
    why = member_problem(found, None if at is None else (entries[at].name, entries[at].size))
    if why:
        where = "" if isinstance(found, str) else f"offset {found.start}: "
        raise FormatError(f"{where}{why}; nothing extracted", subject=str(g.path))
    assert at is not None and not isinstance(found, str)
    members: list[Member] = g.members[found.first : found.first + found.count]
    tiling = rules.BundleTiling(found.start, found.size)
    if len(members) != found.count:
        raise FormatError(
            f"the site index lists {found.first + len(members)} members, the bundle's files end at entry "
            f"{found.first + found.count}; nothing extracted",
            subject=str(g.path),
        )
    for m in members:
        why = tiling.add(m.path, m.offset, m.size, m.sha256)
        if why:
            raise FormatError(f"offset {m.offset}: {why}; nothing extracted", subject=str(g.path))
    why = tiling.finish()
    if why:
        raise FormatError(f"offset {found.start}: {why}; nothing extracted", subject=str(g.path))
    bundle = entries[at]
    files = [
        TarEntry(m.path, m.offset, m.offset, m.offset, m.size, b"0", "", bundle.header, False)
        for m in members
    ]
    return entries[:at] + files + entries[at + 1 :]
