"""How far into a compressed cluster libzim must decompress to hand out an entry, found before it
does (formats/zim.md §7.1).

libzim hands an item out whole and decompresses its cluster from the start up to the item's end,
keeping what came before; a blob table it reads whole when it first touches the cluster. Both sizes
are written inside the compressed data, where :mod:`archiver.zim.structure` cannot see them: a
176 KB ZIM whose zstd cluster holds eight blobs of 400 MiB (each under the entry bound) took
``verify`` to 4.1 GB of memory for its last blob; a cluster whose first offset claims a 4 GiB blob
table does the same before any entry is read. :class:`ClusterGuard` decompresses a compressed
cluster's blob table itself (xz with :mod:`lzma`, zstd with ``backports.zstd``: streaming, at most
:data:`MAX_TABLE` bytes of output, no more input read than that needs) and refuses an entry whose
end lies more than :data:`MAX_REACH` bytes into its cluster, with one line, before libzim is asked.

:func:`table_size` and :func:`reach` are the pure rules; the guard reads, decompresses and caches.
"""

from __future__ import annotations

import lzma
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from archiver.zim.structure import HEADER_SIZE, MAX_ENTRY, Source, StructureError, parse_header

__all__ = ["MAX_REACH", "MAX_TABLE", "ClusterGuard", "reach", "table_size"]

#: The largest blob table read of one compressed cluster: libzim's writer fills a compressed cluster
#: to about 2 MiB, so its table holds at most a few hundred thousand offsets (~1 MiB at 4 bytes).
MAX_TABLE = 16 << 20
#: How far into a compressed cluster an entry may end (its blob table included): what libzim
#: decompresses to hand the entry out. The bound of one entry (:data:`MAX_ENTRY`) serves here too.
MAX_REACH = MAX_ENTRY
_COMPRESSED = {4: "xz", 5: "zstd"}
_INPUT = 1 << 16  # compressed bytes read at a time
_CACHE_BYTES = 32 << 20  # blob tables kept (most recently used first out last)
_REDIRECT_OR_MORE = 0xFFFD  # directory entries without a cluster: redirects, link targets, deleted


def table_size(head: bytes, width: int) -> int | str:
    """The size in bytes of a cluster's blob table from its first offset (``head``: the first
    ``width`` bytes of the decompressed cluster), or what is wrong with it."""
    first = int.from_bytes(head[:width], "little")
    if first < width or first % width:
        return f"its blob table size {first} is misaligned"
    if first > MAX_TABLE:
        return f"its blob table of {first} bytes is larger than archiver reads ({MAX_TABLE})"
    return first


def reach(table: bytes, width: int, blob: int) -> int | str:
    """Where blob ``blob`` ends in its decompressed cluster (``table``: the whole blob table, offsets
    of ``width`` bytes), or what is wrong with it."""
    count = len(table) // width - 1
    if not 0 <= blob < count:
        return f"blob {blob} is out of range (the cluster holds {count})"
    start = int.from_bytes(table[blob * width : (blob + 1) * width], "little")
    end = int.from_bytes(table[(blob + 1) * width : (blob + 2) * width], "little")
    if end < start or start < len(table):
        return f"blob {blob}'s offsets ({start}, {end}) are out of order"
    return end


def _cost(found: tuple[int, bytes] | str) -> int:
    return 64 + (len(found) if isinstance(found, str) else len(found[1]))


class _Decompressor(Protocol):
    needs_input: bool
    eof: bool

    def decompress(self, data: bytes, max_length: int = -1) -> bytes: ...


def _decompressor(kind: str) -> _Decompressor:
    if kind == "xz":
        return lzma.LZMADecompressor(memlimit=256 << 20)  # type: ignore[return-value]
    from backports import zstd  # imported when a zstd cluster is first read

    return zstd.ZstdDecompressor(options={zstd.DecompressionParameter.window_log_max: 27})  # type: ignore[return-value]


class ClusterGuard:
    """Checks, by directory entry index, that an entry's cluster is one libzim may be given. Safe
    for threads (one lock). :meth:`check` returns None or the one-line reason the entry is not read."""

    def __init__(self, parts: Sequence[Path]) -> None:
        self._src = Source(parts)
        try:
            self._header = parse_header(self._src.read(0, HEADER_SIZE))
        except StructureError:
            self._src.close()
            raise
        checksum = self._header.checksum_pos
        self._end = checksum if HEADER_SIZE <= checksum <= self._src.size else self._src.size
        self._lock = threading.Lock()
        self._tables: OrderedDict[int, tuple[int, bytes] | str] = OrderedDict()  # cluster → (width, table)
        self._cached = 0

    def close(self) -> None:
        with self._lock:
            self._src.close()
            self._tables.clear()

    def __del__(self) -> None:  # a reader's entries may outlive its close(): the last one closes the files
        src = getattr(self, "_src", None)
        if src is not None:
            src.close()

    def check(self, index: int) -> str | None:
        """None when directory entry ``index`` is not in a compressed cluster or ends within
        :data:`MAX_REACH` of its start; else what is wrong (without the entry's name)."""
        h = self._header
        if not 0 <= index < h.entry_count:
            return None  # libzim says what is wrong with it
        with self._lock:
            (offset,) = struct.unpack("<Q", self._src.cached(h.path_ptr_pos + 8 * index, 8).ljust(8, b"\0"))
            head = self._src.cached(offset, 16)
            if len(head) < 16 or struct.unpack_from("<H", head)[0] >= _REDIRECT_OR_MORE:
                return None
            cluster, blob = struct.unpack_from("<II", head, 8)
            return self.check_blob(cluster, blob)

    def check_blob(self, cluster: int, blob: int) -> str | None:
        """:meth:`check` by (cluster, blob number); the lock held by the caller or not needed."""
        if cluster >= self._header.cluster_count:
            return None
        found = self._table(cluster)
        if found is None:
            return None
        where = f"its compressed cluster {cluster}"
        if isinstance(found, str):
            return f"{where}: {found}"
        width, table = found
        end = reach(table, width, blob)
        if isinstance(end, str):
            return f"{where}: {end}"
        if end > MAX_REACH:
            return (
                f"it ends {end} bytes into {where}, more than archiver decompresses for one entry"
                f" ({MAX_REACH}; formats/zim.md §7.1)"
            )
        return None

    def _table(self, cluster: int) -> tuple[int, bytes] | str | None:
        """(offset width, blob table) of a compressed cluster (cached), what is wrong with it, or
        None when the cluster is not compressed (structure.check bounds those by the file)."""
        known = self._tables.get(cluster)
        if known is not None:
            self._tables.move_to_end(cluster)
            return known
        h = self._header
        (at,) = struct.unpack("<Q", self._src.cached(h.cluster_ptr_pos + 8 * cluster, 8).ljust(8, b"\0"))
        stop = self._end
        if cluster + 1 < h.cluster_count:
            (following,) = struct.unpack(
                "<Q", self._src.cached(h.cluster_ptr_pos + 8 * (cluster + 1), 8).ljust(8, b"\0")
            )
            stop = min(stop, following) if following > at else stop
        info = self._src.read(at, 1)
        kind = _COMPRESSED.get(info[0] & 0x0F) if info else None
        if kind is None:
            return None
        width = 8 if info[0] & 0x10 else 4
        table = self._decompress_table(kind, at + 1, stop, width)
        found = table if isinstance(table, str) else (width, table)
        self._tables[cluster] = found
        self._cached += _cost(found)
        while self._cached > _CACHE_BYTES and len(self._tables) > 1:
            _old, dropped = self._tables.popitem(last=False)
            self._cached -= _cost(dropped)
        return found

    def _decompress_table(self, kind: str, start: int, stop: int, width: int) -> bytes | str:
        try:
            d = _decompressor(kind)
        except ImportError:  # a dependency (pyproject.toml): an install without it says so
            return "checking a zstd cluster needs the Python package backports.zstd, not installed"
        out = bytearray()
        need = width
        pos = start
        short = f"its {kind} data ends inside its blob table"
        try:
            while len(out) < need:
                if d.eof:  # the stream ended (a decompressor at its end takes no more input)
                    return short
                chunk = b""
                if d.needs_input:
                    chunk = self._src.read(pos, min(_INPUT, stop - pos)) if pos < stop else b""
                    if not chunk:
                        return short
                    pos += len(chunk)
                got = d.decompress(chunk, max_length=need - len(out))
                if not got and not chunk and not d.eof:  # no input taken, no output given: never again
                    return f"its {kind} data is damaged (the decoder makes no progress)"
                out += got
                if need == width and len(out) >= width:
                    size = table_size(bytes(out[:width]), width)
                    if isinstance(size, str):
                        return size
                    need = size
        except Exception as e:  # lzma.LZMAError, zstd.ZstdError: a damaged stream
            return f"its {kind} data is damaged ({e})"
        return bytes(out[:need])
