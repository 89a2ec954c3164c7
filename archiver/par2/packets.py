"""PAR2 2.0 packets: parse and encode the five packet types archiver reads or writes.

Pure: no network, no filesystem, no clock.

Every packet is 4-byte aligned and starts with a 64-byte header (integers little-endian)::

    "PAR2\\0PKT" (8) | length u64, header included (8) | MD5 of bytes 32..length (16)
    | recovery-set id (16) | type (16)

then a body. The recovery-set id is the MD5 of the Main packet's body. Bodies:

- Main ``PAR 2.0\\0Main\\0\\0\\0\\0``: slice size u64 | count of recoverable files u32 | their file ids,
  sorted | ids of the non-recovery files.
- File description ``PAR 2.0\\0FileDesc``: file id | MD5 of the file | MD5 of its first 16 KiB |
  length u64 | name, zero-padded to 4. File id = MD5(md5_16k ‖ length u64 ‖ name).
- Input file slice checksums ``PAR 2.0\\0IFSC\\0\\0\\0\\0``: file id, then MD5 (16) + CRC32 (4) per
  slice; the last slice is zero-padded to the slice size before hashing.
- Recovery slice ``PAR 2.0\\0RecvSlic``: exponent u32 | slice-size bytes of recovery data.
- Creator ``PAR 2.0\\0Creator\\0``: the creating client's name, zero-padded to 4.

Parsers raise :class:`~archiver.errors.FormatError` on a body that cannot be what its type says
(the caller has already checked the packet's MD5, so this means a buggy writer, not bit rot).
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from archiver.errors import FormatError

__all__ = [
    "CRITICAL_TYPES",
    "HEADER_SIZE",
    "MAGIC",
    "TYPE_CREATOR",
    "TYPE_FILEDESC",
    "TYPE_IFSC",
    "TYPE_MAIN",
    "TYPE_NAMES",
    "TYPE_RECVSLIC",
    "Creator",
    "FileDesc",
    "Found",
    "Header",
    "Ifsc",
    "Main",
    "encode_creator",
    "encode_filedesc",
    "encode_ifsc",
    "encode_main",
    "encode_packet",
    "encode_recovery",
    "file_id",
    "iter_packets",
    "packet_md5",
    "pad4",
    "parse_creator",
    "parse_filedesc",
    "parse_header",
    "parse_ifsc",
    "parse_main",
    "parse_recovery_exponent",
    "slice_checksum",
]

MAGIC = b"PAR2\x00PKT"
HEADER_SIZE = 64

TYPE_MAIN = b"PAR 2.0\x00Main\x00\x00\x00\x00"
TYPE_FILEDESC = b"PAR 2.0\x00FileDesc"
TYPE_IFSC = b"PAR 2.0\x00IFSC\x00\x00\x00\x00"
TYPE_RECVSLIC = b"PAR 2.0\x00RecvSlic"
TYPE_CREATOR = b"PAR 2.0\x00Creator\x00"

#: Short names for reports.
TYPE_NAMES = {
    TYPE_MAIN: "Main",
    TYPE_FILEDESC: "FileDesc",
    TYPE_IFSC: "IFSC",
    TYPE_RECVSLIC: "RecvSlic",
    TYPE_CREATOR: "Creator",
}
#: The packets a client needs before it can use any recovery slice.
CRITICAL_TYPES = frozenset({TYPE_MAIN, TYPE_FILEDESC, TYPE_IFSC})

_HEADER = struct.Struct("<8sQ16s16s16s")
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_IFSC_ENTRY = 20


def pad4(data: bytes) -> bytes:
    """``data`` zero-padded to a multiple of 4 bytes (names and creator text are stored this way)."""
    return data + b"\x00" * (-len(data) % 4)


@dataclass(frozen=True, slots=True)
class Header:
    """A packet header: total ``length`` (header included), the packet's ``md5``, ``set_id``, ``type``."""

    length: int
    md5: bytes
    set_id: bytes
    type: bytes

    @property
    def body_length(self) -> int:
        return self.length - HEADER_SIZE

    @property
    def type_name(self) -> str:
        return TYPE_NAMES.get(self.type, repr(self.type.rstrip(b"\x00")))


def parse_header(data: bytes | bytearray | memoryview) -> Header | None:
    """The header in the first 64 bytes of ``data``, or None when it cannot start a packet: wrong magic,
    a length below 64 or not a multiple of 4. (A damaged header is data, not an error.)"""
    if len(data) < HEADER_SIZE:
        return None
    magic, length, md5, set_id, ptype = _HEADER.unpack_from(data, 0)
    if magic != MAGIC or length < HEADER_SIZE or length % 4:
        return None
    return Header(length, md5, set_id, ptype)


def packet_md5(set_id: bytes, ptype: bytes, body: bytes | bytearray | memoryview) -> bytes:
    """The MD5 a packet header carries: over set id ‖ type ‖ body."""
    h = hashlib.md5(set_id)
    h.update(ptype)
    h.update(body)
    return h.digest()


def encode_packet(set_id: bytes, ptype: bytes, body: bytes) -> bytes:
    """A whole packet: header (with its MD5) + body. ``body`` must already be 4-byte aligned."""
    if len(set_id) != 16 or len(ptype) != 16:
        raise ValueError("set id and type are 16 bytes each")
    if len(body) % 4:
        raise ValueError(f"a packet body must be a multiple of 4 bytes, not {len(body)}")
    length = HEADER_SIZE + len(body)
    return _HEADER.pack(MAGIC, length, packet_md5(set_id, ptype, body), set_id, ptype) + body


def _need(body: bytes, size: int, what: str) -> None:
    if len(body) < size:
        raise FormatError(f"{what} packet body is {len(body)} bytes, expected at least {size}")


# --- Main -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Main:
    """The Main packet: ``slice_size`` and the file ids of the recovery set (and of other files)."""

    slice_size: int
    recovery_ids: tuple[bytes, ...]
    other_ids: tuple[bytes, ...] = ()

    @property
    def set_id(self) -> bytes:
        """The recovery-set id: MD5 of this packet's body."""
        return hashlib.md5(encode_main(self)).digest()


def parse_main(body: bytes) -> Main:
    """A Main packet body."""
    _need(body, 12, "Main")
    (slice_size,) = _U64.unpack_from(body, 0)
    (count,) = _U32.unpack_from(body, 8)
    ids = body[12:]
    if len(ids) % 16 or len(ids) // 16 < count:
        raise FormatError(f"Main packet lists {count} recovery files but carries {len(ids)} id bytes")
    if slice_size == 0 or slice_size % 4:
        raise FormatError(f"Main packet slice size {slice_size} is not a positive multiple of 4")
    all_ids = tuple(ids[i : i + 16] for i in range(0, len(ids), 16))
    return Main(slice_size, all_ids[:count], all_ids[count:])


def encode_main(main: Main) -> bytes:
    """The body of a Main packet (recovery ids sorted by byte value, as the spec requires)."""
    ids = sorted(main.recovery_ids)
    return _U64.pack(main.slice_size) + _U32.pack(len(ids)) + b"".join(ids) + b"".join(main.other_ids)


# --- File description -------------------------------------------------------------------------------


def file_id(md5_16k: bytes, length: int, name: bytes) -> bytes:
    """A file's PAR2 id: MD5(md5 of its first 16 KiB ‖ length u64 ‖ name without padding)."""
    return hashlib.md5(md5_16k + _U64.pack(length) + name).digest()


@dataclass(frozen=True, slots=True)
class FileDesc:
    """A file description: id, MD5 of the whole file and of its first 16 KiB, length, name (bytes)."""

    file_id: bytes
    md5: bytes
    md5_16k: bytes
    length: int
    name: bytes

    @property
    def display_name(self) -> str:
        return self.name.decode("utf-8", errors="replace")


def parse_filedesc(body: bytes) -> FileDesc:
    """A File Description packet body (the name loses its zero padding)."""
    _need(body, 56, "FileDesc")
    (length,) = _U64.unpack_from(body, 48)
    return FileDesc(body[0:16], body[16:32], body[32:48], length, body[56:].rstrip(b"\x00"))


def encode_filedesc(desc: FileDesc) -> bytes:
    """The body of a File Description packet."""
    return desc.file_id + desc.md5 + desc.md5_16k + _U64.pack(desc.length) + pad4(desc.name)


# --- Input file slice checksums ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ifsc:
    """Per-slice checksums of one file: ``entries`` is MD5 (16) + CRC32 (4, LE) per slice."""

    file_id: bytes
    entries: bytes

    def __len__(self) -> int:
        return len(self.entries) // _IFSC_ENTRY

    def checksum(self, index: int) -> tuple[bytes, int]:
        """(MD5, CRC32) of slice ``index``."""
        at = index * _IFSC_ENTRY
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.entries[at : at + 16], _U32.unpack_from(self.entries, at + 16)[0]


def parse_ifsc(body: bytes) -> Ifsc:
    """An IFSC packet body."""
    _need(body, 16, "IFSC")
    if (len(body) - 16) % _IFSC_ENTRY:
        raise FormatError(f"IFSC packet body of {len(body)} bytes is not 16 + 20 per slice")
    return Ifsc(body[:16], body[16:])


def encode_ifsc(ifsc: Ifsc) -> bytes:
    """The body of an IFSC packet."""
    return ifsc.file_id + ifsc.entries


def slice_checksum(data: bytes, slice_size: int) -> tuple[bytes, int]:
    """(MD5, CRC32) of one slice as IFSC stores them: ``data`` zero-padded to ``slice_size``."""
    if len(data) > slice_size:
        raise ValueError("slice longer than the slice size")
    padded = data + b"\x00" * (slice_size - len(data))
    return hashlib.md5(padded).digest(), zlib.crc32(padded)


# --- Recovery slice and creator ---------------------------------------------------------------------


def parse_recovery_exponent(body: bytes | bytearray | memoryview) -> int:
    """The exponent at the start of a Recovery Slice body."""
    if len(body) < 4:
        raise FormatError("RecvSlic packet body is shorter than its exponent")
    return int(_U32.unpack_from(body, 0)[0])


def encode_recovery(set_id: bytes, exponent: int, data: bytes) -> bytes:
    """A whole Recovery Slice packet (``data`` is one slice of recovery data)."""
    return encode_packet(set_id, TYPE_RECVSLIC, _U32.pack(exponent) + data)


@dataclass(frozen=True, slots=True)
class Creator:
    """The creating client's name."""

    text: str


def parse_creator(body: bytes) -> Creator:
    """A Creator packet body."""
    return Creator(body.rstrip(b"\x00").decode("ascii", errors="replace"))


def encode_creator(creator: Creator) -> bytes:
    """The body of a Creator packet (ASCII text, zero-padded)."""
    return pad4(creator.text.encode("ascii"))


# --- scanning a buffer ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Found:
    """A packet candidate found by :func:`iter_packets`: where (``offset`` into the buffer), its
    header, and whether its MD5 holds."""

    offset: int
    header: Header
    valid: bool


def iter_packets(data: bytes | memoryview) -> Iterator[Found]:
    """Every packet candidate in ``data``, in order, found by scanning for the magic as PAR2 clients
    do. A valid packet is skipped whole; after a damaged one the scan resumes 8 bytes on, so a packet
    behind a damaged length field is still found. Candidates whose claimed length runs past the end
    of ``data`` are reported invalid."""
    view = memoryview(data)
    raw = bytes(view) if not isinstance(data, bytes) else data
    pos = 0
    end = len(raw)
    while True:
        at = raw.find(MAGIC, pos)
        if at < 0:
            return
        header = parse_header(view[at : at + HEADER_SIZE])
        if header is None:
            pos = at + 1
            continue
        if at + header.length > end:
            yield Found(at, header, False)
            pos = at + len(MAGIC)
            continue
        valid = packet_md5(header.set_id, header.type, view[at + HEADER_SIZE : at + header.length])
        if valid == header.md5:
            yield Found(at, header, True)
            pos = at + header.length
        else:
            yield Found(at, header, False)
            pos = at + len(MAGIC)
