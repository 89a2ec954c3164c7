"""The FEC plan (slice size, slice count, recovery count) and the canonical tail layout (formats/fec.md).

Pure: no network, no filesystem, no clock.

The par2 engine computes the numbers (recovery data, checksums); archiver decides where every byte
goes. Because the layout is a function of (protected length, slice size, recovery count, set name)
alone, any engine that computes PAR2 2.0 correctly gives a byte-identical tail, a damaged tail can be
rebuilt byte for byte, and a checker can account for every byte of an intact one.

Tail (a ustar archive of two members, fixed metadata, mtime 0)::

    header(NAME.par2)        [Main, FileDesc, IFSC, Creator]              zero pad to 512
    header(NAME.vol00+R.par2) c × (block + recovery packets spread evenly) zero pad to 512
    two zero blocks (no padding to 10,240-byte records: it would only waste space; GNU tar and
    Python's tarfile read the archive without it)

where a *block* is [Main, FileDesc, IFSC, Creator], c = R.bit_length() (par2cmdline's number of
copies), block j sits before recovery packet ``j*R//c``, and recovery packets run by exponent 0..R-1.
A recovery member that would pass 4 GiB is split into several of even size, each laid out the same way
with its own exponents (``NAME.vol0000+1234.par2``, ``NAME.vol1234+1234.par2``, …).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from archiver.errors import UsageError
from archiver.par2.packets import (
    HEADER_SIZE,
    TYPE_CREATOR,
    TYPE_FILEDESC,
    TYPE_IFSC,
    TYPE_MAIN,
    TYPE_RECVSLIC,
    pad4,
)

__all__ = [
    "CHECKSUM_BUDGET_BYTES",
    "CHECKSUM_BUDGET_FRACTION",
    "CREATOR_PREFIX",
    "DEFAULT_REDUNDANCY",
    "MAX_MEMBER_SIZE",
    "MAX_SLICES",
    "MIN_RECOVERY",
    "MIN_SLICE_SIZE",
    "TAIL_LIMIT_BYTES",
    "TAIL_LIMIT_FRACTION",
    "Member",
    "Plan",
    "Slot",
    "TailLayout",
    "block_types",
    "creator_text",
    "member_layout",
    "members",
    "parse_creator_text",
    "plan",
    "set_name_for",
    "tail_layout",
    "tail_limit",
    "tail_size",
    "tar_header",
    "vol_name",
    "vol_ranges",
]

#: Recovery data as a fraction of the protected bytes when the caller does not choose.
DEFAULT_REDUNDANCY = 0.10
#: Never more input slices than this (half par2's default of 2000): the engine's work, to create and
#: to repair, is protected bytes × recovery slices, so at a given redundancy 1000 slices cost half the
#: time of 2000 (and half the checksum space); the price is half as many scattered damaged places
#: repairable per set (formats/fec.md §3).
MAX_SLICES = 1000
#: Never fewer recovery slices than this (or than input slices, when there are fewer): a small file
#: still survives this many scattered byte errors, whatever the redundancy.
MIN_RECOVERY = 32
#: Never slices smaller than this (tiny files would otherwise get 4-byte slices).
MIN_SLICE_SIZE = 64
#: What the repeated checksum packets may cost: this fraction of the protected bytes, plus
#: :data:`CHECKSUM_BUDGET_BYTES`. The slice count is the largest that fits.
CHECKSUM_BUDGET_FRACTION = 0.02
CHECKSUM_BUDGET_BYTES = 32 * 1024
#: A recovery member never passes this size (the ustar size field holds less than 8 GiB).
MAX_MEMBER_SIZE = 4 * 1024**3
#: The promise: a tail never takes more than (redundancy + 5 %) of the protected bytes + 64 KiB.
TAIL_LIMIT_FRACTION = 0.05
TAIL_LIMIT_BYTES = 64 * 1024
#: Our Creator packet text starts with this; it marks the canonical layout and carries R.
CREATOR_PREFIX = "Created by archiver-fec/1"
# An estimate of Main + FileDesc + IFSC header + Creator for any set name of at most 80 bytes, used by
# the plan so that it depends on the protected length and redundancy only.
_FIXED_PER_COPY = 400

_SAFE_NAME = re.compile(r"[A-Za-z0-9._+-]{1,80}")
_CREATOR_RE = re.compile(r"Created by archiver-fec/1 \(recovery slices: ([0-9]{1,5})\)\Z")


@dataclass(frozen=True, slots=True)
class Plan:
    """How a protected region of ``protected_length`` bytes is cut: ``slice_count`` slices of
    ``slice_size`` bytes (the last one zero-padded) and ``recovery_count`` recovery slices, with
    ``copies`` copies of the checksum block in the recovery member (one more in the index member)."""

    protected_length: int
    slice_size: int
    slice_count: int
    recovery_count: int

    @property
    def copies(self) -> int:
        return self.recovery_count.bit_length()


def _round4(n: int) -> int:
    return (n + 3) // 4 * 4


def _plan_for(length: int, n: int, redundancy: float, minimum: int) -> Plan:
    size = max(4, _round4(-(-length // n)))
    count = -(-length // size)
    recovery = max(1, math.ceil(redundancy * count - 1e-9), min(count, minimum))
    return Plan(length, size, count, recovery)


def _checksum_cost(p: Plan) -> int:
    return (1 + p.copies) * (20 * p.slice_count + _FIXED_PER_COPY)


def _largest(length: int, redundancy: float, minimum: int) -> Plan:
    budget = CHECKSUM_BUDGET_FRACTION * length + CHECKSUM_BUDGET_BYTES
    lo, hi = 1, max(1, min(MAX_SLICES, length // MIN_SLICE_SIZE))
    # The cost only grows with n, so binary-search the largest n that fits.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _checksum_cost(_plan_for(length, mid, redundancy, minimum)) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return _plan_for(length, lo, redundancy, minimum)


def tail_limit(protected_length: int, redundancy: float) -> float:
    """The most a tail may take: (redundancy + 5 %) of the protected bytes + 64 KiB (issue 5)."""
    return (redundancy + TAIL_LIMIT_FRACTION) * protected_length + TAIL_LIMIT_BYTES


def plan(protected_length: int, redundancy: float = DEFAULT_REDUNDANCY) -> Plan:
    """Choose the slices for ``protected_length`` bytes at ``redundancy`` (a fraction in (0, 1]).

    - The slice count N is the largest N ≤ :data:`MAX_SLICES` (and ≥ 1, with slices of at least
      :data:`MIN_SLICE_SIZE` bytes) whose repeated checksum packets cost at most 2 % of the protected
      bytes + 32 KiB; the slice size is ceil(L / N) rounded up to a multiple of 4.
    - The recovery count is ceil(redundancy × N), but at least 32 (:data:`MIN_RECOVERY`; N when there
      are fewer slices), unless that minimum would push the tail past :func:`tail_limit`.

    >>> plan(1_000_000_000)
    Plan(protected_length=1000000000, slice_size=1000000, slice_count=1000, recovery_count=100)
    """
    if not isinstance(protected_length, int) or protected_length <= 0:
        raise UsageError(f"the protected length must be a positive number of bytes, not {protected_length!r}")
    if not 0 < redundancy <= 1:
        raise UsageError(
            f"redundancy {redundancy!r} is not a fraction in (0, 1] (10 % is 0.10; use 1.0 for 100 %)"
        )
    p = _largest(protected_length, redundancy, MIN_RECOVERY)
    if tail_size(p) > tail_limit(protected_length, redundancy):
        p = _largest(protected_length, redundancy, 1)
    return p


def set_name_for(file_name: str) -> str:
    """The file name recorded inside the PAR2 set (and the stem of the tail's member names).

    The archive's own name when it is plain ASCII (``[A-Za-z0-9._+-]``, at most 80 bytes, not starting
    with a dot); otherwise ``archive`` plus the name's ``.gwtar.html`` / ``.zim`` / last suffix when
    that is plain. par2 writes a repaired file under this name, so it must be safe in any folder and
    fit a ustar member name with the ``.vol000+000.par2`` suffix."""
    if _SAFE_NAME.fullmatch(file_name) and not file_name.startswith("."):
        return file_name
    for suffix in (".gwtar.html", ".zim"):
        if file_name.endswith(suffix):
            return "archive" + suffix
    dot = file_name.rfind(".")
    suffix = file_name[dot:] if dot > 0 else ""
    if suffix and _SAFE_NAME.fullmatch(suffix) and len(suffix) <= 16:
        return "archive" + suffix
    return "archive"


def creator_text(recovery_count: int) -> str:
    """Our Creator packet's text; it names the layout and the recovery count R."""
    return f"{CREATOR_PREFIX} (recovery slices: {recovery_count})"


def parse_creator_text(text: str) -> int | None:
    """R from our Creator text, or None when the text is not ours (another tool made the set)."""
    m = _CREATOR_RE.match(text)
    return int(m.group(1)) if m else None


def vol_name(set_name: str, first: int, count: int, total: int) -> str:
    """par2cmdline's name for a recovery file holding exponents ``first``..``first+count-1`` of
    ``total``: ``NAME.vol00+37.par2`` (numbers zero-padded to the width of ``total``, as par2 does)."""
    width = len(str(total))
    return f"{set_name}.vol{first:0{width}d}+{count:0{width}d}.par2"


def vol_ranges(p: Plan) -> list[tuple[int, int]]:
    """(first exponent, count) of each recovery member: one member, or several of even size when one
    would pass :data:`MAX_MEMBER_SIZE` (a ustar size field holds less than 8 GiB)."""
    r = p.recovery_count
    per_packet = HEADER_SIZE + 4 + p.slice_size
    members = max(1, -(-(r * per_packet + 2 * 1024 * 1024) // MAX_MEMBER_SIZE))
    members = min(members, r)
    bounds = [r * i // members for i in range(members + 1)]
    return [(bounds[i], bounds[i + 1] - bounds[i]) for i in range(members)]


def tar_header(name: str, size: int) -> bytes:
    """A 512-byte ustar header for a regular file with archiver's fixed metadata (mode 0644, uid/gid 0,
    empty owner names, mtime 0). ``name`` must be ASCII and at most 100 bytes."""
    raw = name.encode("ascii")
    if not raw or len(raw) > 100:
        raise ValueError(f"tail member name {name!r} does not fit a ustar header")
    if size < 0 or size >= 8**11:
        raise ValueError(f"tail member size {size} does not fit a ustar header")
    fields = [
        raw.ljust(100, b"\x00"),
        b"0000644\x00",
        b"0000000\x00",
        b"0000000\x00",
        f"{size:011o}".encode() + b"\x00",
        b"00000000000\x00",
        b" " * 8,  # checksum placeholder
        b"0",
        b"\x00" * 100,  # linkname
        b"ustar\x0000",
        b"\x00" * 32,  # uname
        b"\x00" * 32,  # gname
        b"0000000\x00",
        b"0000000\x00",
        b"\x00" * 155,  # prefix
        b"\x00" * 12,
    ]
    block = bytearray(b"".join(fields))
    assert len(block) == 512
    block[148:156] = f"{sum(block):06o}".encode() + b"\x00 "
    return bytes(block)


# --- the canonical layout ---------------------------------------------------------------------------


SlotKind = Literal["tar", "packet", "zero"]


@dataclass(frozen=True, slots=True)
class Slot:
    """One region of a member or tail: ``offset`` and ``length`` relative to its start; ``kind`` is
    ``tar`` (a ustar header, ``data`` holds its exact bytes), ``zero`` (padding) or ``packet`` (a PAR2
    packet of ``ptype``; ``exponent`` for recovery slices, else None). ``member`` names the tail member
    the slot belongs to (or precedes, for its header)."""

    offset: int
    length: int
    kind: SlotKind
    ptype: bytes = b""
    exponent: int | None = None
    member: str = ""
    data: bytes = b""

    @property
    def end(self) -> int:
        return self.offset + self.length


def block_types() -> tuple[bytes, ...]:
    """The packet types of one checksum block, in order."""
    return (TYPE_MAIN, TYPE_FILEDESC, TYPE_IFSC, TYPE_CREATOR)


def _packet_sizes(p: Plan, set_name: str) -> dict[bytes, int]:
    return {
        TYPE_MAIN: HEADER_SIZE + 12 + 16,
        TYPE_FILEDESC: HEADER_SIZE + 56 + len(pad4(set_name.encode("ascii"))),
        TYPE_IFSC: HEADER_SIZE + 16 + 20 * p.slice_count,
        TYPE_CREATOR: HEADER_SIZE + len(pad4(creator_text(p.recovery_count).encode("ascii"))),
    }


def member_layout(p: Plan, set_name: str, vol: tuple[int, int] | None = None) -> list[Slot]:
    """The packet slots of the index member (``vol=None``) or of the recovery member holding the
    exponents ``vol = (first, count)``, offsets relative to the member's first byte."""
    sizes = _packet_sizes(p, set_name)
    member = f"{set_name}.par2" if vol is None else vol_name(set_name, vol[0], vol[1], p.recovery_count)
    slots: list[Slot] = []
    at = 0

    def block() -> None:
        nonlocal at
        for t in block_types():
            slots.append(Slot(at, sizes[t], "packet", t, None, member))
            at += sizes[t]

    if vol is None:
        block()
        return slots
    first, count = vol
    copies = count.bit_length()
    # copies <= count, so the positions j*count//copies are distinct: one block before each.
    block_before = {j * count // copies for j in range(copies)}
    recv_size = HEADER_SIZE + 4 + p.slice_size
    for k in range(count):
        if k in block_before:
            block()
        slots.append(Slot(at, recv_size, "packet", TYPE_RECVSLIC, first + k, member))
        at += recv_size
    return slots


@dataclass(frozen=True, slots=True)
class Member:
    """One tail member (one ``.par2`` file): its ``name``, its packet ``slots`` (offsets relative to the
    member) and ``size``."""

    name: str
    slots: tuple[Slot, ...]
    size: int


@dataclass(frozen=True, slots=True)
class TailLayout:
    """Every byte of a canonical tail: ``members`` (the ``.par2`` files, index first) and ``slots`` in
    order, covering [0, ``size``) without gaps (offsets relative to the tail's first byte)."""

    plan: Plan
    set_name: str
    members: tuple[Member, ...]
    slots: tuple[Slot, ...]
    size: int


def members(p: Plan, set_name: str) -> tuple[Member, ...]:
    """The ``.par2`` files of the set: the index (no recovery data), then the recovery files. Written
    as they are, they are the sidecar files of a ZIM; wrapped in a tar, they are a gwtar's tail."""
    out = []
    for vol in [None, *vol_ranges(p)]:
        slots = member_layout(p, set_name, vol)
        name = slots[0].member
        out.append(Member(name, tuple(slots), slots[-1].end))
    return tuple(out)


def tail_layout(p: Plan, set_name: str) -> TailLayout:
    """The canonical tail for plan ``p`` and set name ``set_name``."""
    ms = members(p, set_name)
    slots: list[Slot] = []
    at = 0
    for m in ms:
        slots.append(Slot(at, 512, "tar", member=m.name, data=tar_header(m.name, m.size)))
        at += 512
        for s in m.slots:
            slots.append(Slot(at + s.offset, s.length, s.kind, s.ptype, s.exponent, s.member))
        at += m.size
        pad = -m.size % 512
        if pad:
            slots.append(Slot(at, pad, "zero", member=m.name))
            at += pad
    slots.append(Slot(at, 1024, "zero"))
    at += 1024
    return TailLayout(p, set_name, ms, tuple(slots), at)


def _pad512(n: int) -> int:
    return n + (-n % 512)


def tail_size(p: Plan, set_name: str | None = None) -> int:
    """The size of :func:`tail_layout` ``(p, set_name)`` without building it; with ``set_name`` None,
    for the longest set name (80 bytes), so an upper bound for any name."""
    sizes = _packet_sizes(p, set_name if set_name is not None else "x" * 80)
    block = sum(sizes[t] for t in block_types())
    recv = HEADER_SIZE + 4 + p.slice_size
    total = 512 + _pad512(block)
    for _, count in vol_ranges(p):
        total += 512 + _pad512(count.bit_length() * block + count * recv)
    return total + 1024
