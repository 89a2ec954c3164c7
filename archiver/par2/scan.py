"""Reading PAR2 data out of files: packets in a byte range, the per-slice check of a protected region,
and streaming copies. The IO half of ``packets.py`` and ``layout.py``; constant memory throughout
(files are mapped read-only or read in chunks of at most :data:`CHUNK` bytes).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from archiver.errors import FormatError
from archiver.par2.packets import (
    HEADER_SIZE,
    MAGIC,
    TYPE_CREATOR,
    TYPE_FILEDESC,
    TYPE_IFSC,
    TYPE_MAIN,
    TYPE_RECVSLIC,
    Creator,
    FileDesc,
    Header,
    Ifsc,
    Main,
    parse_creator,
    parse_filedesc,
    parse_header,
    parse_ifsc,
    parse_main,
    parse_recovery_exponent,
)

__all__ = [
    "CHUNK",
    "Candidate",
    "PacketSet",
    "Releaser",
    "check_slices",
    "copy_range",
    "find_sets",
    "hash_packet",
    "mapped",
    "read_packet",
    "release",
]

#: Read and hash in pieces of at most this many bytes.
CHUNK = 1 << 20
# Critical packets are small (an IFSC holds 20 bytes per slice, at most 32,768 slices).
_MAX_CRITICAL = HEADER_SIZE + 16 + 20 * 32768 + 1024


@contextlib.contextmanager
def mapped(path: Path) -> Iterator[mmap.mmap | bytes]:
    """``path`` mapped read-only (an empty file gives ``b""``)."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            yield mm
        finally:
            mm.close()


def release(buf: mmap.mmap | bytes, start: int, end: int) -> None:
    """Let go of the mapped pages of ``buf[start:end]`` once read, so a scan over a large file keeps
    a small resident set (the pages stay in the page cache; nothing is lost)."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    first = start - start % mmap.PAGESIZE
    last = min(len(buf), end)
    if last > first:
        buf.madvise(mmap.MADV_DONTNEED, first, last - first)


class Releaser:
    """Calls :func:`release` behind a forward scan, every :data:`CHUNK` × 8 bytes."""

    def __init__(self, buf: mmap.mmap | bytes, start: int) -> None:
        self.buf, self.done = buf, start

    def upto(self, pos: int) -> None:
        if pos - self.done >= 8 * CHUNK:
            release(self.buf, self.done, pos)
            self.done = pos


def hash_packet(buf: mmap.mmap | bytes, at: int, header: Header) -> bool:
    """Whether the packet at ``at`` (whose header is ``header``) has a correct MD5, hashed in chunks
    (large packets let go of their pages as they are hashed)."""
    end = at + header.length
    if end > len(buf):
        return False
    h = hashlib.md5()
    pos = at + 32
    while pos < end:
        nxt = min(end, pos + CHUNK)
        h.update(buf[pos:nxt])
        pos = nxt
    if header.length >= 65536:
        release(buf, at, end)
    return h.digest() == header.md5


def read_packet(buf: mmap.mmap | bytes, at: int, end: int) -> tuple[Header, bytes] | None:
    """The valid critical-sized packet at ``at`` (header, body), or None."""
    header = parse_header(buf[at : at + HEADER_SIZE])
    if header is None or at + header.length > end or header.length > _MAX_CRITICAL:
        return None
    if not hash_packet(buf, at, header):
        return None
    return header, bytes(buf[at + HEADER_SIZE : at + header.length])


@dataclass(frozen=True, slots=True)
class Candidate:
    """Something that starts with the packet magic and a plausible header, at ``offset``."""

    offset: int
    header: Header


@dataclass
class PacketSet:
    """The critical packets of one recovery set, as found (the first valid copy of each), and where."""

    set_id: bytes
    main: Main | None = None
    filedesc: FileDesc | None = None
    ifsc: Ifsc | None = None
    creator: Creator | None = None
    raw: dict[bytes, bytes] = field(default_factory=dict)  # type → the whole valid packet

    @property
    def complete(self) -> bool:
        """Main, FileDesc and IFSC found, for one file."""
        return (
            self.main is not None
            and self.filedesc is not None
            and self.ifsc is not None
            and self.main.recovery_ids == (self.filedesc.file_id,)
            and self.ifsc.file_id == self.filedesc.file_id
        )


_PARSERS = {
    TYPE_MAIN: ("main", parse_main),
    TYPE_FILEDESC: ("filedesc", parse_filedesc),
    TYPE_IFSC: ("ifsc", parse_ifsc),
    TYPE_CREATOR: ("creator", parse_creator),
}


def find_sets(buf: mmap.mmap | bytes, start: int, end: int) -> tuple[dict[bytes, PacketSet], list[Candidate]]:
    """Scan ``buf[start:end]`` for packets as PAR2 clients do (by magic). Returns the recovery sets
    whose critical packets were found intact (by set id) and every candidate packet header seen,
    valid or not (recovery slices are not hashed here: see :func:`hash_packet`)."""
    sets: dict[bytes, PacketSet] = {}
    candidates: list[Candidate] = []
    pos = start
    behind = Releaser(buf, start)
    while True:
        at = buf.find(MAGIC, pos, end)
        if at < 0:
            break
        behind.upto(at)
        header = parse_header(buf[at : at + HEADER_SIZE])
        if header is None:
            pos = at + 1
            continue
        candidates.append(Candidate(at, header))
        pos = at + len(MAGIC)
        if header.type not in _PARSERS:
            continue
        found = read_packet(buf, at, end)
        if found is None:
            continue
        pos = at + header.length
        attr, parser = _PARSERS[header.type]
        try:
            value = parser(found[1])
        except FormatError:
            continue
        entry = sets.setdefault(header.set_id, PacketSet(header.set_id))
        if getattr(entry, attr) is None:
            if header.type == TYPE_MAIN and value.set_id != header.set_id:  # type: ignore[attr-defined]
                continue  # a Main packet whose body is not its own set's
            setattr(entry, attr, value)
            entry.raw[header.type] = bytes(buf[at : at + header.length])
    return sets, candidates


def recovery_exponent(buf: mmap.mmap | bytes, candidate: Candidate) -> int | None:
    """The exponent of a recovery-slice candidate, or None when its header is not a RecvSlic's."""
    if candidate.header.type != TYPE_RECVSLIC or candidate.header.body_length < 4:
        return None
    at = candidate.offset + HEADER_SIZE
    return parse_recovery_exponent(buf[at : at + 4])


def _check_run(path: Path, ifsc: Ifsc, slice_size: int, length: int, first: int, last: int) -> list[int]:
    damaged: list[int] = []
    zero = bytes(min(slice_size, CHUNK))
    with path.open("rb") as f:
        fd = f.fileno()
        for index in range(first, last):
            start = index * slice_size
            stop = min(length, start + slice_size)
            h = hashlib.md5()
            crc = 0
            pos = start
            while pos < stop:
                data = os.pread(fd, min(CHUNK, stop - pos), pos)
                if not data:
                    break  # the file is shorter than the protected length
                h.update(data)
                crc = zlib.crc32(data, crc)
                pos += len(data)
            missing = start + slice_size - pos  # the zero padding of the last slice, or lost bytes
            while missing > 0:
                pad = zero[: min(missing, len(zero))]
                h.update(pad)
                crc = zlib.crc32(pad, crc)
                missing -= len(pad)
            want_md5, want_crc = ifsc.checksum(index)
            if pos < stop or h.digest() != want_md5 or crc != want_crc:
                damaged.append(index)
    return damaged


def check_slices(
    path: Path, ifsc: Ifsc, slice_size: int, length: int, *, workers: int | None = None
) -> list[int]:
    """Indices of the slices of ``path[0:length]`` whose MD5 or CRC32 differs from ``ifsc`` (a slice
    the file is too short to hold counts as damaged). Hashing runs in up to ``workers`` threads
    (hashlib and zlib release the GIL), each over a contiguous run of slices."""
    count = len(ifsc)
    workers = max(1, min(workers or os.cpu_count() or 1, 4, count))
    bounds = [count * i // workers for i in range(workers + 1)]
    if workers == 1:
        return _check_run(path, ifsc, slice_size, length, 0, count)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = pool.map(
            lambda i: _check_run(path, ifsc, slice_size, length, bounds[i], bounds[i + 1]), range(workers)
        )
        return [i for run in runs for i in run]


def copy_range(src: BinaryIO, dst: BinaryIO, start: int, length: int) -> None:
    """Copy ``length`` bytes of ``src`` from ``start`` to ``dst``'s current position, in chunks."""
    src.seek(start)
    remaining = length
    while remaining > 0:
        data = src.read(min(CHUNK, remaining))
        if not data:
            raise FormatError(f"ended {remaining} bytes early", subject=getattr(src, "name", None))
        dst.write(data)
        remaining -= len(data)
