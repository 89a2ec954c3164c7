"""POSIX ustar (and pax) headers: encode, decode, checksum and offset arithmetic.

Pure: no network, no filesystem, no clock.

Only what a gwtar needs (formats/gwtar.md §5): regular-file members with one 512-byte ustar header,
a pax extended header (typeflag ``x``) for a name or size that ustar cannot hold, and the
end-of-archive blocks. :func:`decode_header` reads any ustar/GNU/pax header a foreign tool wrote, so
readers can walk and check archives they did not write. Numbers in headers are octal text
(``"0000644\\0"``) as GNU tar and Python's ``tarfile`` write them; base-256 numbers (a GNU extension)
are read, never written.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

__all__ = [
    "BLOCK",
    "MAX_NUMBER",
    "MAX_USTAR_SIZE",
    "RECORD",
    "TarError",
    "TarHeader",
    "checksum",
    "data_span",
    "decode_header",
    "encode_header",
    "end_of_archive",
    "fits_ustar",
    "is_zero_block",
    "member_blocks",
    "member_blocks_size",
    "padding",
    "parse_pax",
    "pax_header",
    "pax_number",
    "split_name",
]

BLOCK = 512
#: GNU tar and Python's tarfile pad an archive to a multiple of this (20 blocks).
RECORD = 10240
#: The largest size an 11-digit octal ``size`` field holds (8 GiB - 1).
MAX_USTAR_SIZE = 8**11 - 1
_MAX_MTIME = 8**11 - 1
_NAME_LEN = 100
_PREFIX_LEN = 155
_PAX_NAME = b"././@PaxHeader"
_OCTAL = re.compile(rb"[0-7]+")


class TarError(ValueError):
    """A header that cannot be encoded or decoded; the message says which field and why."""


@dataclass(frozen=True)
class TarHeader:
    """One decoded 512-byte header. ``name`` joins ustar's prefix and name with ``/``; it is decoded
    as UTF-8 with ``surrogateescape``, so foreign bytes survive. ``checksum_ok`` compares the stored
    checksum with the computed one (unsigned, as POSIX says; signed sums as old tars wrote are accepted
    too)."""

    name: str
    mode: int
    uid: int
    gid: int
    size: int
    mtime: int
    typeflag: bytes
    linkname: str
    magic: bytes
    version: bytes
    uname: str
    gname: str
    devmajor: int
    devminor: int
    checksum_ok: bool

    @property
    def is_ustar(self) -> bool:
        """POSIX ustar magic (``ustar\\0`` + ``00``), as opposed to GNU's ``ustar  \\0``."""
        return self.magic == b"ustar\x00" and self.version == b"00"

    @property
    def is_regular(self) -> bool:
        return self.typeflag in (b"0", b"\x00", b"7")


def padding(size: int) -> int:
    """Zero bytes that follow ``size`` data bytes to reach a block boundary."""
    return -size % BLOCK


def data_span(size: int) -> int:
    """Bytes a member's data occupies in the archive, padding included."""
    return size + padding(size)


def split_name(name: str) -> tuple[bytes, bytes] | None:
    """ustar's (prefix, name) for a UTF-8 path, or None when it cannot fit one header: the whole
    name ≤ 100 bytes, or split at a ``/`` into prefix ≤ 155 and name ≤ 100 bytes (the longest prefix
    that fits is chosen, as GNU tar does). A name with a NUL byte never fits."""
    if name and len(name) <= _NAME_LEN and name.isascii() and "\x00" not in name:
        return b"", name.encode("ascii")  # most names: short and ASCII
    raw = name.encode("utf-8", "surrogateescape")
    if not raw or b"\x00" in raw:
        return None
    if len(raw) <= _NAME_LEN:
        return b"", raw
    # every '/' whose prefix fits, longest prefix first
    for i in range(min(len(raw) - 1, _PREFIX_LEN), 0, -1):
        if raw[i] == 0x2F:
            prefix, rest = raw[:i], raw[i + 1 :]
            if rest and len(rest) <= _NAME_LEN:
                return prefix, rest
            if len(rest) > _NAME_LEN:
                return None  # a shorter prefix only makes the rest longer
    return None


def fits_ustar(name: str, size: int = 0) -> bool:
    """True when ``name`` and ``size`` fit one plain ustar header."""
    return 0 <= size <= MAX_USTAR_SIZE and split_name(name) is not None


# name, mode, uid, gid, size, mtime, checksum (eight spaces), typeflag, linkname, magic + version,
# uname, gname, devmajor, devminor (zero), prefix, 12 bytes of padding
_HEADER_FORMAT = (
    b"%s%07o\x00%07o\x00%07o\x00%011o\x00%011o\x00        %s%sustar\x0000%s%s0000000\x000000000\x00%s"
    + b"\x00" * 12
)


def checksum(block: bytes) -> int:
    """The ustar checksum of a 512-byte header: the unsigned byte sum, the checksum field counted as
    eight spaces."""
    return sum(block) - sum(block[148:156]) + 8 * 0x20


def _signed_checksum(block: bytes) -> int:
    high = sum(1 for b in block[:148] + block[156:BLOCK] if b > 127)
    return checksum(block) - 256 * high


def encode_header(
    name: str,
    size: int,
    *,
    mtime: int,
    mode: int = 0o644,
    typeflag: bytes = b"0",
    uid: int = 0,
    gid: int = 0,
    uname: str = "",
    gname: str = "",
    linkname: str = "",
) -> bytes:
    """One 512-byte POSIX ustar header. Raises :class:`TarError` when the name does not fit
    (:func:`split_name`) or a number does not fit its field; nothing is ever truncated."""
    parts = split_name(name)
    if parts is None:
        raise TarError(f"name does not fit a ustar header (100 + 155 bytes split at '/'): {name!r}")
    prefix, short = parts
    link = linkname.encode("utf-8", "surrogateescape")
    if len(link) > _NAME_LEN:
        raise TarError(f"link name longer than 100 bytes: {linkname!r}")
    if not 0 <= mtime <= _MAX_MTIME:
        raise TarError(f"mtime {mtime} outside the ustar range")
    for value, width in ((mode, 8), (uid, 8), (gid, 8), (size, 12)):
        if not 0 <= value < 8 ** (width - 1):
            raise TarError(f"number {value} does not fit a {width}-byte octal field")
    return _encode(prefix, short, size, _fixed_fields(mode, uid, gid, mtime, typeflag, link, uname, gname))


def _encode(prefix: bytes, short: bytes, size: int, fields: tuple[bytes, bytes, bytes, int]) -> bytes:
    """A header of checked names and size and the cached fields of :func:`_fixed_fields`."""
    ids, when, rest, fixed = fields
    size_field = b"%011o\x00" % size
    # the checksum field holds eight spaces while summing (counted in ``fixed``)
    check = fixed + sum(short) + sum(prefix) + sum(size_field)
    block = b"".join(
        (
            short.ljust(_NAME_LEN, b"\x00"),
            ids,
            size_field,
            when,
            b"%06o\x00 " % check,
            rest,
            prefix.ljust(_PREFIX_LEN, b"\x00"),
            _HEADER_PAD,
        )
    )
    assert len(block) == BLOCK
    return block


_HEADER_PAD = b"\x00" * 12


@functools.lru_cache(maxsize=64)
def _fixed_fields(
    mode: int, uid: int, gid: int, mtime: int, typeflag: bytes, link: bytes, uname: str, gname: str
) -> tuple[bytes, bytes, bytes, int]:
    """The header fields that are the same for every member written with these values: mode, uid
    and gid; mtime; typeflag to devminor; and their byte sum plus the checksum field's eight spaces.
    A header is then its names, its size and the checksum (an archive's members share them all: one
    header took ~7 µs of formatting and summing 512 bytes, and an indexed tree has thousands)."""
    block = _HEADER_FORMAT % (
        b"\x00" * _NAME_LEN,
        mode,
        uid,
        gid,
        0,
        mtime,
        typeflag,
        link.ljust(100, b"\x00"),
        uname.encode("utf-8")[:32].ljust(32, b"\x00"),
        gname.encode("utf-8")[:32].ljust(32, b"\x00"),
        b"\x00" * _PREFIX_LEN,
    )
    assert len(block) == BLOCK
    ids, when, rest = block[100:124], block[136:148], block[156:345]
    return ids, when, rest, sum(ids) + sum(when) + sum(rest) + 8 * 0x20


def _pax_record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n".encode("utf-8", "surrogateescape")
    # the length counts its own digits: grow until stable
    n = len(body) + 1
    while len(str(n).encode()) + len(body) != n:
        n = len(str(n).encode()) + len(body)
    return str(n).encode() + body


def pax_header(records: dict[str, str], *, mtime: int) -> bytes:
    """A pax extended header (typeflag ``x``) carrying ``records`` for the member that follows, data
    and padding included. Its own name is fixed (``././@PaxHeader``), so output is reproducible."""
    data = b"".join(_pax_record(k, v) for k, v in records.items())
    head = encode_header(_PAX_NAME.decode(), len(data), mtime=mtime, typeflag=b"x")
    return head + data + b"\x00" * padding(len(data))


def _pax_records(name: str, size: int) -> dict[str, str]:
    records: dict[str, str] = {}
    if split_name(name) is None:
        records["path"] = name
    if size > MAX_USTAR_SIZE:
        records["size"] = str(size)
    return records


def member_blocks_size(name: str, size: int) -> int:
    """``len(member_blocks(name, size, ...))`` without building the blocks."""
    if size <= MAX_USTAR_SIZE and split_name(name) is not None:
        return BLOCK
    records = _pax_records(name, size)
    if not records:
        return BLOCK
    data = sum(len(_pax_record(k, v)) for k, v in records.items())
    return BLOCK + data_span(data) + BLOCK


def member_blocks(name: str, size: int, *, mtime: int) -> bytes:
    """Everything before a regular member's data: one ustar header, preceded by a pax header when the
    name or size does not fit ustar (formats/gwtar.md §5.1: only unlisted members may need one)."""
    if 0 <= size <= MAX_USTAR_SIZE and split_name(name) is not None:  # most members: no pax records
        return encode_header(name, size, mtime=mtime)
    records = _pax_records(name, size)
    if not records:
        return encode_header(name, size, mtime=mtime)
    short = name
    if "path" in records:
        leaf = name.rsplit("/", 1)[-1].encode("utf-8", "surrogateescape")[:_NAME_LEN]
        short = leaf.decode("utf-8", "ignore") or "pax"
    ustar_size = 0 if "size" in records else size
    return pax_header(records, mtime=mtime) + encode_header(short, ustar_size, mtime=mtime)


def end_of_archive(length: int) -> bytes:
    """The bytes that end a tar whose members fill ``length`` bytes: two zero blocks, then zeros up to
    a multiple of :data:`RECORD` (GNU tar's and tarfile's default)."""
    end = length + 2 * BLOCK
    return b"\x00" * (end - length + (-end % RECORD))


def is_zero_block(block: bytes) -> bool:
    return len(block) == BLOCK and not any(block)


#: The largest number a header field may hold here (base-256 fields can say far more).
MAX_NUMBER = (1 << 63) - 1


def _number(field: bytes, what: str) -> int:
    if field and field[0] & 0x80:  # GNU base-256: big-endian, the first byte's top bit is the marker
        if field[0] & 0x40:
            raise TarError(f"{what} field is a negative base-256 number")
        value = int.from_bytes(bytes([field[0] & 0x7F]) + field[1:], "big")
        if value > MAX_NUMBER:
            raise TarError(f"{what} field is a base-256 number too large ({value:.3e})")
        return value
    text = field.split(b"\x00", 1)[0].strip(b" ")
    if not text:
        return 0
    if not _OCTAL.fullmatch(text):
        raise TarError(f"{what} field is not octal: {field!r}")
    return int(text, 8)


def _text(field: bytes) -> str:
    return field.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")


def decode_header(block: bytes) -> TarHeader:
    """Decode one 512-byte header. Raises :class:`TarError` for a short block or a number field that is
    not octal; a wrong checksum or missing magic is reported in the result, not raised, so a
    verifier can name every problem."""
    if len(block) != BLOCK:
        raise TarError(f"header is {len(block)} bytes, not {BLOCK}")
    stored = block[148:156]
    try:
        chk = _number(stored, "checksum")
    except TarError:
        chk = -1
    magic, version = block[257:263], block[263:265]
    name = block[0:100].split(b"\x00", 1)[0]
    if magic == b"ustar\x00":
        prefix = block[345:500].split(b"\x00", 1)[0]
        if prefix:
            name = prefix + b"/" + name
    return TarHeader(
        name=name.decode("utf-8", "surrogateescape"),
        mode=_number(block[100:108], "mode"),
        uid=_number(block[108:116], "uid"),
        gid=_number(block[116:124], "gid"),
        size=_number(block[124:136], "size"),
        mtime=_number(block[136:148], "mtime"),
        typeflag=block[156:157],
        linkname=_text(block[157:257]),
        magic=magic,
        version=version,
        uname=_text(block[265:297]),
        gname=_text(block[297:329]),
        devmajor=_number(block[329:337], "devmajor") if magic.startswith(b"ustar") else 0,
        devminor=_number(block[337:345], "devminor") if magic.startswith(b"ustar") else 0,
        checksum_ok=chk == checksum(block) or chk == _signed_checksum(block),
    )


def parse_pax(data: bytes) -> dict[str, str]:
    """The records of a pax extended header's data (``"LEN key=value\\n"`` repeated). Raises
    :class:`TarError` for a malformed record."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        if data[pos] == 0:  # trailing NUL padding
            break
        space = data.find(b" ", pos, pos + 21)
        if space < 0 or not data[pos:space].isdigit():  # bytes: ASCII digits only, at most 20
            raise TarError(f"malformed pax record at byte {pos}")
        length = int(data[pos:space])
        record = data[pos : pos + length]
        if length <= space - pos or len(record) != length or not record.endswith(b"\n"):
            raise TarError(f"malformed pax record at byte {pos}")
        key, eq, value = record[space - pos + 1 : -1].partition(b"=")
        if not eq:
            raise TarError(f"pax record without '=' at byte {pos}")
        out[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


_DECIMAL = re.compile(r"[0-9]{1,19}")


def pax_number(value: str, what: str) -> int:
    """A pax record's decimal number (``size``): ASCII digits only and at most 19 of them, so a
    record of thousands of digits, or of non-ASCII digits, is a :class:`TarError`, not a huge int."""
    if not _DECIMAL.fullmatch(value) or int(value) > MAX_NUMBER:
        shown = value if len(value) <= 24 else value[:20] + f"... ({len(value)} characters)"
        raise TarError(f"pax {what} is not a decimal number of at most 19 digits: {shown!r}")
    return int(value)
