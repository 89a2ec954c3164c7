"""The ZIM file's own structure, checked before libzim is trusted with it (formats/zim.md §7.1).

libzim assumes a well-formed file: an out-of-range pointer in a crafted ZIM can make it read past
the end, throw from deep inside, or hand back another entry's bytes. :func:`check` reads the layout
itself (openZIM "ZIM file format": header, MIME list, path and title pointer lists, directory
entries, cluster pointers, the blob tables of uncompressed clusters) and yields one message per
problem, so ``verify`` can report them and ``ls``, ``extract``, ``serve`` and ``pack`` can refuse
the file with one clear line instead of crashing.

Reading goes through a :class:`Source` (a ``pread`` over one file or the parts of a split ZIM) with
a small window cache, so memory stays bounded whatever the entry count: pointer lists are read in
slices, and sortedness is checked pairwise while streaming. Nothing is written.

Compressed clusters are checked as far as their header byte (a known compression); their blob
tables live inside the compressed data and are checked by libzim as it decompresses them
(``verify`` reads every entry).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "HEADER_SIZE", "MAGIC", "MAX_ENTRY", "NOT_A_ZIM", "Header", "Source", "check", "parse_header",
    "split_parts",
]  # fmt: skip

MAGIC = 72173914
#: The largest entry archiver reads (:mod:`archiver.zim.read`; formats/zim.md §7.1). libzim gives an
#: item's content whole, its cluster decompressed up to it: a 175 KB ZIM whose zstd cluster claims a
#: 3 GiB blob took ``verify`` to std::bad_alloc (a traceback); an 8-byte-offset cluster can claim any
#: size. Kiwix's largest media are tens of MB.
MAX_ENTRY = 512 << 20
HEADER_SIZE = 80
_HEADER = struct.Struct("<IHH16sIIQQQQIIQ")
_NONE32 = 0xFFFFFFFF
_NONE64 = 0xFFFFFFFFFFFFFFFF
_REDIRECT, _LINKTARGET, _DELETED = 0xFFFF, 0xFFFE, 0xFFFD
_COMPRESSIONS = {0: "none", 1: "none", 4: "xz", 5: "zstd"}
_SLICE = 1 << 16  # pointers read per slice
_WINDOW = 1 << 20
_WINDOWS = 3
_NAMES = 1 << 16  # the longest path and title read back
#: How the problems that mean "this is no ZIM archiver can read" begin.
NOT_A_ZIM = ("the file is too short", "not a ZIM file", "unsupported ZIM major version")
#: After this many problems the check stops (a file this broken says all it needs to).
MAX_PROBLEMS = 50


def split_parts(path: Path) -> list[Path]:
    """The files that make up the ZIM named ``path``: itself when it exists, else its parts
    ``<path>aa``, ``<path>ab``… in order (libzim's split naming). Empty when neither exists."""
    path = Path(path)
    if path.exists():
        return [path]
    parts: list[Path] = []
    for first in "abcdefghijklmnopqrstuvwxyz":
        for second in "abcdefghijklmnopqrstuvwxyz":
            part = path.with_name(f"{path.name}{first}{second}")
            if not part.is_file():
                return parts
            parts.append(part)
    return parts


class Source:
    """Random-access reads over one file or the concatenated parts of a split ZIM."""

    def __init__(self, parts: Sequence[Path]) -> None:
        self._fds: list[int] = []
        self._starts: list[int] = []
        total = 0
        try:
            for part in parts:
                fd = os.open(part, os.O_RDONLY)
                self._fds.append(fd)
                self._starts.append(total)
                total += os.fstat(fd).st_size
        except BaseException:
            self.close()
            raise
        self.size = total
        self._windows: list[tuple[int, bytes]] = []

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` (fewer at the end of the file)."""
        out = bytearray()
        while size > 0 and offset < self.size:
            i = max(j for j, start in enumerate(self._starts) if start <= offset)
            chunk = os.pread(self._fds[i], size, offset - self._starts[i])
            if not chunk:
                break
            out += chunk
            offset += len(chunk)
            size -= len(chunk)
        return bytes(out)

    def cached(self, offset: int, size: int) -> bytes:
        """Like :meth:`read`, through a few 1 MiB windows (small reads near each other, in two or
        three regions at once: pointer lists and directory entries)."""
        for k, (at, window) in enumerate(self._windows):
            start = offset - at
            if start >= 0 and start + size <= len(window):
                if k:
                    self._windows.insert(0, self._windows.pop(k))
                return window[start : start + size]
        window = self.read(offset, max(size, _WINDOW))
        self._windows = [(offset, window), *self._windows[: _WINDOWS - 1]]
        return window[:size]


@dataclass(frozen=True)
class Header:
    major: int
    minor: int
    entry_count: int
    cluster_count: int
    path_ptr_pos: int
    title_ptr_pos: int
    cluster_ptr_pos: int
    mime_list_pos: int
    main_page: int
    checksum_pos: int


class StructureError(Exception):
    """The file cannot be read far enough to check the rest."""


def parse_header(data: bytes) -> Header:
    """The 80-byte header; :class:`StructureError` when it is short or not a ZIM header."""
    if len(data) < HEADER_SIZE:
        raise StructureError(f"{NOT_A_ZIM[0]}: {len(data)} bytes, less than a ZIM header ({HEADER_SIZE})")
    magic, major, minor, _uuid, entries, clusters, paths, titles, cptrs, mimes, main, _layout, ck = (
        _HEADER.unpack_from(data)
    )
    if magic != MAGIC:
        raise StructureError(f"{NOT_A_ZIM[1]}: the magic number is wrong")
    if major not in (5, 6):
        raise StructureError(f"{NOT_A_ZIM[2]} {major} (archiver reads 5 and 6)")
    return Header(major, minor, entries, clusters, paths, titles, cptrs, mimes, main, ck)


@dataclass(frozen=True)
class _Dirent:
    mimetype: int
    namespace: bytes
    path: bytes
    title: bytes
    cluster: int  # or the redirect index
    blob: int

    @property
    def key(self) -> tuple[bytes, bytes]:
        return (self.namespace, self.path)

    @property
    def title_key(self) -> tuple[bytes, bytes]:
        return (self.namespace, self.title or self.path)


def _dirent(src: Source, offset: int, limit: int) -> _Dirent | str:
    head = src.cached(offset, 16)
    if len(head) < 12 or offset + 12 > limit:
        return f"directory entry at offset {offset} runs past the end of the file"
    mimetype, param_len, namespace, _rev = struct.unpack_from("<HBcI", head)
    if mimetype == _REDIRECT:
        (cluster,) = struct.unpack_from("<I", head, 8)
        blob, names_at = 0, offset + 12
    elif mimetype in (_LINKTARGET, _DELETED):
        cluster, blob, names_at = 0, 0, offset + 8
    else:
        if len(head) < 16:
            return f"directory entry at offset {offset} runs past the end of the file"
        cluster, blob = struct.unpack_from("<II", head, 8)
        names_at = offset + 16
    names = src.cached(names_at, min(_NAMES, max(0, limit - names_at)))
    end = names.find(b"\0")
    end2 = names.find(b"\0", end + 1) if end >= 0 else -1
    if end2 < 0 or names_at + end2 + 1 + param_len > limit:
        return f"directory entry at offset {offset} has no terminated path and title"
    return _Dirent(mimetype, namespace, names[:end], names[end + 1 : end2], cluster, blob)


def _u64s(src: Source, at: int, count: int) -> Iterator[int]:
    for start in range(0, count, _SLICE):
        n = min(_SLICE, count - start)
        yield from struct.unpack(f"<{n}Q", src.read(at + 8 * start, 8 * n))


def _u32s(data: bytes) -> tuple[int, ...]:
    return struct.unpack(f"<{len(data) // 4}I", data[: len(data) // 4 * 4])


def check(src: Source) -> list[str]:
    """Every structural problem of the ZIM in ``src`` (at most :data:`MAX_PROBLEMS`); ``[]`` when
    the layout is sound."""
    problems: list[str] = []
    try:
        for problem in _check(src):
            problems.append(problem)
            if len(problems) >= MAX_PROBLEMS:
                problems.append("(more problems not listed)")
                break
    except StructureError as e:
        problems.append(str(e))
    return problems


def _check(src: Source) -> Iterator[str]:
    h = parse_header(src.read(0, HEADER_SIZE))
    size = src.size
    if h.checksum_pos == _NONE64 or h.checksum_pos + 16 > size:
        if h.checksum_pos != _NONE64:
            raise StructureError(
                f"the file is truncated: {size} bytes, the header places the checksum at {h.checksum_pos}"
            )
        data_end = size
    else:
        data_end = h.checksum_pos
    for name, pos, width, count in (
        ("path pointer list", h.path_ptr_pos, 8, h.entry_count),
        ("cluster pointer list", h.cluster_ptr_pos, 8, h.cluster_count),
    ):
        if pos < HEADER_SIZE or pos + width * count > data_end:
            raise StructureError(f"the {name} ({count} entries at offset {pos}) lies outside the file")
    if h.title_ptr_pos != _NONE64 and (
        h.title_ptr_pos < HEADER_SIZE or h.title_ptr_pos + 4 * h.entry_count > data_end
    ):
        raise StructureError(f"the title pointer list at offset {h.title_ptr_pos} lies outside the file")
    if h.main_page != _NONE32 and h.main_page >= h.entry_count:
        yield f"the main page index {h.main_page} is out of range ({h.entry_count} entries)"
    mimes = _mime_list(src, h.mime_list_pos, data_end)
    clusters = list(_u64s(src, h.cluster_ptr_pos, h.cluster_count))
    blob_counts = yield from _check_clusters(src, clusters, data_end)
    listing: tuple[int, int] | None = None  # (cluster, blob) of X/listing/titleOrdered/v0 or v1
    previous: tuple[bytes, bytes] | None = None
    for index, offset in enumerate(_u64s(src, h.path_ptr_pos, h.entry_count)):
        if offset < HEADER_SIZE or offset >= data_end:
            yield f"entry {index}: its directory entry pointer {offset} is out of range"
            previous = None
            continue
        d = _dirent(src, offset, data_end)
        if isinstance(d, str):
            yield f"entry {index}: {d}"
            previous = None
            continue
        label = f"entry {index} ({d.namespace.decode('latin-1')}/{d.path.decode('utf-8', 'replace')!s})"
        try:
            d.path.decode("utf-8")
            d.title.decode("utf-8")
        except UnicodeDecodeError:
            yield f"{label}: its path or title is not valid UTF-8"
        if previous is not None and d.key <= previous:
            yield f"{label}: the directory is not sorted by path (or the path repeats)"
        previous = d.key
        if d.mimetype == _REDIRECT:
            if d.cluster >= h.entry_count:
                yield f"{label}: redirect to entry {d.cluster}, out of range"
        elif d.mimetype in (_LINKTARGET, _DELETED):
            continue
        elif d.mimetype >= len(mimes):
            yield f"{label}: MIME type index {d.mimetype} is out of range ({len(mimes)} types)"
        elif d.cluster >= h.cluster_count:
            yield f"{label}: cluster {d.cluster} is out of range ({h.cluster_count} clusters)"
        else:
            blobs = blob_counts.get(d.cluster)
            if blobs is not None and d.blob >= blobs:
                yield f"{label}: blob {d.blob} is out of range (cluster {d.cluster} holds {blobs})"
            elif d.namespace == b"X" and d.path in (b"listing/titleOrdered/v0", b"listing/titleOrdered/v1"):
                listing = (d.cluster, d.blob)
    if h.title_ptr_pos != _NONE64:
        yield from _check_titles(src, h, data_end, _header_titles(src, h), "title pointer list")
    if listing is not None and listing[0] in blob_counts:
        data = _blob(src, clusters, listing[0], listing[1], data_end)
        if data is not None:
            yield from _check_titles(src, h, data_end, iter(_u32s(data)), "title listing")


def _mime_list(src: Source, at: int, end: int) -> list[bytes]:
    if at < HEADER_SIZE or at >= end:
        raise StructureError(f"the MIME type list at offset {at} lies outside the file")
    data = src.read(at, min(1 << 20, end - at))
    mimes: list[bytes] = []
    pos = 0
    while True:
        stop = data.find(b"\0", pos)
        if stop < 0:
            raise StructureError("the MIME type list is not terminated")
        if stop == pos:
            return mimes
        mimes.append(data[pos:stop])
        pos = stop + 1


def _check_clusters(src: Source, clusters: list[int], end: int) -> Iterator[str]:
    """Checks each cluster's place and, when uncompressed, its blob table; returns cluster → blob
    count for the uncompressed ones (a generator's return value)."""
    counts: dict[int, int] = {}
    for i, at in enumerate(clusters):
        following = clusters[i + 1] if i + 1 < len(clusters) else end
        stop = following if HEADER_SIZE <= following <= end else end
        if at < HEADER_SIZE or at >= end:
            yield f"cluster {i}: its pointer {at} is out of range"
            continue
        if stop <= at:
            yield f"cluster {i}: the cluster pointers are not in file order"
            continue
        info = src.read(at, 1)[0]
        compression = _COMPRESSIONS.get(info & 0x0F)
        if compression is None:
            yield f"cluster {i}: unknown compression {info & 0x0F}"
            continue
        if compression != "none":
            continue
        width = 8 if info & 0x10 else 4
        room = stop - at - 1
        first_raw = src.read(at + 1, width)
        if len(first_raw) < width:
            yield f"cluster {i}: its blob table runs past the end of the cluster"
            continue
        first = int.from_bytes(first_raw, "little")
        if first % width or first < width or first > room:
            yield f"cluster {i}: its blob table size {first} is misaligned or larger than the cluster"
            continue
        table = src.read(at + 1, first)
        offsets = [int.from_bytes(table[k : k + width], "little") for k in range(0, len(table), width)]
        bad = next((k for k in range(1, len(offsets)) if offsets[k] < offsets[k - 1]), None)
        if bad is not None:
            yield f"cluster {i}: blob {bad - 1} ends before it starts (offset {offsets[bad]})"
            continue
        if offsets[-1] > room:
            yield f"cluster {i}: blob offset {offsets[-1]} lies beyond the cluster's {room} bytes"
            continue
        counts[i] = len(offsets) - 1
    return counts


def _blob(src: Source, clusters: list[int], cluster: int, blob: int, end: int) -> bytes | None:
    at = clusters[cluster]
    info = src.read(at, 1)[0]
    width = 8 if info & 0x10 else 4
    lo = int.from_bytes(src.read(at + 1 + blob * width, width), "little")
    hi = int.from_bytes(src.read(at + 1 + (blob + 1) * width, width), "little")
    if hi - lo > 1 << 28:  # a title listing of 64 M entries: larger is not one
        return None
    return src.read(at + 1 + lo, hi - lo)


def _header_titles(src: Source, h: Header) -> Iterator[int]:
    for start in range(0, h.entry_count, _SLICE):
        n = min(_SLICE, h.entry_count - start)
        yield from _u32s(src.read(h.title_ptr_pos + 4 * start, 4 * n))


def _check_titles(src: Source, h: Header, end: int, indexes: Iterator[int], what: str) -> Iterator[str]:
    previous: tuple[bytes, bytes] | None = None
    for k, index in enumerate(indexes):
        if index >= h.entry_count:
            yield f"the {what}: position {k} names entry {index}, out of range ({h.entry_count} entries)"
            previous = None
            continue
        (offset,) = struct.unpack("<Q", src.cached(h.path_ptr_pos + 8 * index, 8))
        if offset < HEADER_SIZE or offset >= end:
            previous = None
            continue  # reported with the path pointers
        d = _dirent(src, offset, end)
        if isinstance(d, str):
            previous = None
            continue
        if previous is not None and d.title_key < previous:
            yield f"the {what} is not sorted by title (position {k})"
            return
        previous = d.title_key
