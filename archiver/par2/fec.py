"""Add FEC data to a file and check a file against it (formats/fec.md).

A file with FEC has a *protected region* [0, L) and, after it, a *tail*: an uncompressed ustar
archive of PAR2 2.0 files in archiver's canonical layout (``layout.py``). For a gwtar, L is
``totalArchiveSize``. ZIM files get the same PAR2 files as *sidecars* next to them instead
(``sidecar.py``), because ZIM readers reject trailing bytes.

- :func:`add_fec` replaces whatever follows byte L with a new tail, atomically (temp file + rename);
- :func:`append_fec` appends a tail to a file that nobody else sees yet (a writer's own temp file);
- :func:`check` / :func:`check_tail` parse the FEC packets in Python, check the protected region
  slice by slice against their MD5/CRC32, account for every byte of the FEC data, and say which slices
  (and which members, given their spans) are damaged and whether a repair can fix them.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import mmap
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from archiver.errors import FormatError, UsageError
from archiver.par2 import sidecar as _sidecar
from archiver.par2.build import copy_file, generated, write_slots
from archiver.par2.engine import Engine, find_engine
from archiver.par2.layout import (
    DEFAULT_REDUNDANCY,
    Plan,
    Slot,
    creator_text,
    members,
    parse_creator_text,
    plan,
    set_name_for,
    tail_layout,
)
from archiver.par2.packets import (
    CRITICAL_TYPES,
    HEADER_SIZE,
    MAGIC,
    TYPE_CREATOR,
    TYPE_FILEDESC,
    TYPE_NAMES,
    TYPE_RECVSLIC,
    Creator,
    encode_creator,
    encode_packet,
    parse_filedesc,
    parse_header,
)
from archiver.par2.results import DamagedSlice, FecReport, FecResult, TailDamage, group_runs
from archiver.par2.scan import (
    PacketSet,
    Releaser,
    check_slices,
    find_sets,
    hash_packet,
    mapped,
    read_packet,
)

__all__ = [
    "Inspection",
    "add_fec",
    "append_fec",
    "check",
    "check_tail",
    "find_protected_length",
    "gwtar_total_size",
    "inspect",
]

Span = tuple[str, int, int]

_GWTAR_MAGIC = b"<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->"
_TOTAL_FIELD = b'let totalArchiveSize = parseInt("'
_HEADER_SCAN = 64 * 1024 * 1024  # a gwtar header (its JSON manifest) is far smaller than this


# --- writing ----------------------------------------------------------------------------------------


def append_fec(
    path: Path,
    *,
    name: str | None = None,
    redundancy: float = DEFAULT_REDUNDANCY,
    engine: Engine | None = None,
) -> FecResult:
    """Append a FEC tail to ``path``, protecting all of its current bytes.

    For writers: call it on your own temp file (exactly the protected bytes, not yet visible to
    anyone), then fsync and rename it as usual (this function does not fsync: that is the writer's
    one fsync before its rename). ``name`` is the name the file will finally have (the
    set is named after it; default ``path.name``). Not atomic by itself: on failure the file is cut
    back to its original length and the error raised."""
    path = Path(path)
    length = path.stat().st_size
    p = plan(length, redundancy)
    set_name = set_name_for(name or path.name)
    layout = tail_layout(p, set_name)
    engine = engine or find_engine()
    with generated(path, set_name, p, engine) as gen, path.open("r+b") as f:
        try:
            f.seek(length)
            write_slots(layout.slots, gen, f, base=length)
            f.flush()
            if f.tell() != length + layout.size:
                raise FormatError(f"tail written to byte {f.tell()}, expected {length + layout.size}")
        except BaseException:
            f.truncate(length)
            raise
    return FecResult(
        path,
        length,
        p.slice_size,
        p.slice_count,
        p.recovery_count,
        set_name,
        tuple(m.name for m in layout.members),
        layout.size,
        engine.version,
    )


@contextlib.contextmanager
def _temp_beside(path: Path, label: str):  # type: ignore[no-untyped-def]
    fd, name = tempfile.mkstemp(prefix=f".{path.name[:60]}.", suffix=f".{label}.tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    tmp.unlink()
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def add_fec(
    path: Path,
    protected_length: int,
    *,
    redundancy: float = DEFAULT_REDUNDANCY,
    engine: Engine | None = None,
) -> FecResult:
    """Give ``path`` a FEC tail protecting its first ``protected_length`` bytes (for a gwtar,
    ``totalArchiveSize``), replacing anything after them (an older tail).

    ``redundancy`` is a fraction: 0.10 means recovery data for 10 % of the slices. The new file is
    written beside the old one and renamed over it, so readers see the old file or the new one."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", subject=str(path))
    size = path.stat().st_size
    if not isinstance(protected_length, int) or not 0 < protected_length <= size:
        raise UsageError(
            f"protected length {protected_length!r} is not within the file's {size} bytes", subject=str(path)
        )
    plan(protected_length, redundancy)  # reject bad arguments before copying anything
    engine = engine or find_engine()
    mode = path.stat().st_mode & 0o7777
    with _temp_beside(path, "fec") as tmp:
        copy_file(path, tmp, protected_length)
        os.chmod(tmp, mode)
        result = append_fec(tmp, name=path.name, redundancy=redundancy, engine=engine)
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    _fsync_dir(path.parent)
    return replace(result, path=path)


# --- locating FEC data ------------------------------------------------------------------------------


def gwtar_total_size(buf: bytes | mmap.mmap) -> int | None:
    """``totalArchiveSize`` from the start of a gwtar (its fixed field of 24 digits), or None when
    ``buf`` (bytes or a mapped file) does not start like a gwtar. Reads only the header."""
    if bytes(buf[: len(_GWTAR_MAGIC)]) != _GWTAR_MAGIC:
        return None
    end = buf.find(b"<!-- GWTAR END", 0, _HEADER_SCAN)
    at = buf.find(_TOTAL_FIELD, 0, end if end > 0 else _HEADER_SCAN)
    if at < 0:
        return None
    digits = bytes(buf[at + len(_TOTAL_FIELD) : at + len(_TOTAL_FIELD) + 26])
    return int(digits[:24]) if digits[:24].isdigit() and digits[24:] == b'")' else None


def _discover(buf: bytes, size: int) -> int | None:
    total = gwtar_total_size(buf) if size else None
    if total is not None and total == size:
        return None  # a gwtar that ends where its header says: no tail
    pos = size
    while True:
        at = buf.rfind(MAGIC, 0, pos)
        if at < 0:
            return None
        pos = at + len(MAGIC) - 1
        header = parse_header(buf[at : at + HEADER_SIZE])
        if header is None or header.type != TYPE_FILEDESC:
            continue
        found = read_packet(buf, at, size)
        if found is None:
            continue
        length = parse_filedesc(found[1]).length
        if not 0 < length <= at:
            continue
        ustar = bytes(buf[length + 257 : length + 262]) == b"ustar"
        ours = _creator_is_ours(buf, length, size, header.set_id)
        if ustar or total == length or ours:
            return length


def _creator_is_ours(buf: bytes, start: int, end: int, set_id: bytes) -> bool:
    pos = start
    while True:
        at = buf.find(MAGIC, pos, end)
        if at < 0:
            return False
        pos = at + len(MAGIC)
        header = parse_header(buf[at : at + HEADER_SIZE])
        if header is None or header.type != TYPE_CREATOR or header.set_id != set_id:
            continue
        found = read_packet(buf, at, end)
        if found and parse_creator_text(found[1].rstrip(b"\x00").decode("ascii", "replace")) is not None:
            return True


def find_protected_length(path: Path) -> int | None:
    """L for a file with a FEC tail: the length its PAR2 set protects (found from the end of the file,
    checked against the tail's ustar header, our Creator packet or a gwtar's ``totalArchiveSize``), or
    None when the file has no FEC tail."""
    with mapped(Path(path)) as buf:
        return _discover(buf, len(buf))  # type: ignore[arg-type]


# --- checking ---------------------------------------------------------------------------------------


@dataclass
class Inspection:
    """A :class:`FecReport` plus what a repair needs: where the FEC data is, the set, the plan, and
    whether the FEC data is byte-for-byte as written (``fec_intact``)."""

    report: FecReport
    kind: Literal["tail", "sidecar", "none"]
    regions: list[tuple[Path, int, int]]
    packets: PacketSet | None = None
    plan: Plan | None = None
    fec_intact: bool = False


def _map_members(start: int, end: int, spans: list[Span], starts: list[int], longest: int) -> tuple[str, ...]:
    names: list[str] = []
    i = bisect.bisect_left(starts, end) - 1
    while i >= 0 and starts[i] + longest > start:
        name, s, e = spans[i]
        if s < end and e > start:
            names.append(name)
        i -= 1
    return tuple(reversed(names))


def _slot_what(slot: Slot) -> str:
    if slot.kind == "tar":
        return f"tar header of {slot.member}"
    if slot.kind == "zero":
        return f"padding after {slot.member}" if slot.member else "end of the tail archive"
    name = TYPE_NAMES.get(slot.ptype, "packet")
    return f"{name} {slot.exponent}" if slot.exponent is not None else f"{name} packet"


def _check_layout(
    buf: bytes, base: int, limit: int, slots: Sequence[Slot], ref: dict[bytes, bytes], file: str
) -> tuple[set[int], list[TailDamage]]:
    """Compare ``buf[base:limit]`` with the canonical ``slots``: intact recovery exponents and damage."""
    usable: set[int] = set()
    damage: list[TailDamage] = []
    end = base
    for slot in slots:
        a, b = base + slot.offset, base + slot.offset + slot.length
        end = b
        if b > limit:
            damage.append(TailDamage(file, a, b, _slot_what(slot) + " (missing)"))
            continue
        if slot.kind == "tar":
            good = bytes(buf[a:b]) == slot.data
        elif slot.kind == "zero":
            good = bytes(buf[a:b]).count(0) == slot.length
        else:
            header = parse_header(buf[a : a + HEADER_SIZE])
            good = (
                header is not None
                and header.length == slot.length
                and header.type == slot.ptype
                and (slot.ptype == TYPE_RECVSLIC or header.md5 == ref[slot.ptype][16:32])
                and header.set_id == ref[TYPE_FILEDESC][32:48]
                and hash_packet(buf, a, header)
            )
            if good and slot.ptype == TYPE_RECVSLIC:
                exponent = int.from_bytes(bytes(buf[a + HEADER_SIZE : a + HEADER_SIZE + 4]), "little")
                good = exponent == slot.exponent
                if good:
                    usable.add(exponent)
        if not good:
            damage.append(TailDamage(file, a, b, _slot_what(slot)))
    if limit > end:
        damage.append(TailDamage(file, end, limit, f"{limit - end:,} unexpected bytes after the FEC data"))
    return usable, damage


def _check_foreign(
    buf: bytes, start: int, end: int, set_id: bytes, file: str
) -> tuple[set[int], list[TailDamage]]:
    """Packet by packet, for FEC data archiver did not lay out: intact recovery slices, bad packets."""
    usable: set[int] = set()
    damage: list[TailDamage] = []
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
        if hash_packet(buf, at, header):
            if header.type == TYPE_RECVSLIC and header.set_id == set_id and header.body_length >= 4:
                usable.add(int.from_bytes(bytes(buf[at + HEADER_SIZE : at + HEADER_SIZE + 4]), "little"))
            pos = at + header.length
        else:
            damage.append(TailDamage(file, at, min(end, at + header.length), f"{header.type_name} (bad MD5)"))
            pos = at + len(MAGIC)
    return usable, damage


def _choose_set(sets: dict[bytes, PacketSet], length: int | None) -> PacketSet | None:
    good = [s for s in sets.values() if s.complete and (length is None or s.filedesc.length == length)]  # type: ignore[union-attr]
    if not good:
        return None
    good.sort(key=lambda s: s.creator is None or parse_creator_text(s.creator.text) is None)
    return good[0]


def _our_creator_packet(set_id: bytes, recovery: int) -> bytes:
    return encode_packet(set_id, TYPE_CREATOR, encode_creator(Creator(creator_text(recovery))))


def inspect(
    path: Path, protected_length: int | None = None, spans: Sequence[Span] | None = None
) -> Inspection:
    """Everything :func:`check` reports, plus what a repair needs (see :class:`Inspection`)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", subject=str(path))
    size = path.stat().st_size
    sidecars = _sidecar.sidecar_files(path)
    if sidecars and (protected_length is None or protected_length >= size):
        return _inspect_sidecar(path, size, protected_length, sidecars, spans)
    with mapped(path) as buf:
        length = protected_length
        if length is None:
            length = _discover(buf, size)  # type: ignore[arg-type]
        has_tail = length is not None and length < size and buf.find(MAGIC, length, size) >= 0
        if not has_tail and sidecars:
            return _inspect_sidecar(path, size, length, sidecars, spans)
        if length is None or not has_tail:
            report = FecReport(path, has_fec=False, protected_length=length)
            if length is not None and size < length:
                report.problems.append(
                    f"the file is {size:,} bytes, shorter than the {length:,} it should have"
                )
            else:
                report.problems.append(
                    "no FEC data" + (f" after byte {length:,}" if length is not None else "")
                )
            return Inspection(report, "none", [])
        regions = [(path, length, size)]
        sets, _ = find_sets(buf, length, size)
        return _finish(path, buf, "tail", length, regions, sets, spans, {path: buf})


def _inspect_sidecar(
    path: Path, size: int, length: int | None, sidecars: list[Path], spans: Sequence[Span] | None
) -> Inspection:
    with contextlib.ExitStack() as stack:
        bufs = {f: stack.enter_context(mapped(f)) for f in sidecars}
        sets: dict[bytes, PacketSet] = {}
        for f in sidecars:
            found, _ = find_sets(bufs[f], 0, len(bufs[f]))
            for set_id, s in found.items():
                entry = sets.setdefault(set_id, s)
                for attr in ("main", "filedesc", "ifsc", "creator"):
                    if getattr(entry, attr) is None and getattr(s, attr) is not None:
                        setattr(entry, attr, getattr(s, attr))
                for t, raw in s.raw.items():
                    entry.raw.setdefault(t, raw)
        regions = [(f, 0, len(bufs[f])) for f in sidecars]
        chosen = _choose_set(sets, length)
        if length is None:
            length = chosen.filedesc.length if chosen and chosen.filedesc else size
        with mapped(path) as data:
            bufs[path] = data
            return _finish(path, data, "sidecar", length, regions, sets, spans, bufs, data_size=size)


def _finish(
    path: Path,
    buf: bytes,
    kind: Literal["tail", "sidecar"],
    length: int,
    regions: list[tuple[Path, int, int]],
    sets: dict[bytes, PacketSet],
    spans: Sequence[Span] | None,
    bufs: dict[Path, bytes],
    data_size: int | None = None,
) -> Inspection:
    report = FecReport(path, has_fec=True, kind=kind, protected_length=length)
    chosen = _choose_set(sets, length)
    other = _choose_set(sets, None)
    if chosen is None and other is not None and other.filedesc is not None:
        report.problems.append(
            f"the FEC data protects {other.filedesc.length:,} bytes, not {length:,} "
            "(a damaged length field? archiver repair finds the length itself)"
        )
        return Inspection(report, kind, regions, None, None, False)
    if chosen is None:
        report.problems.append(
            f"no intact Main, FileDesc and IFSC packets for a {length:,}-byte region; "
            "the FEC data cannot be used"
        )
        return Inspection(report, kind, regions, None, None, False)
    assert chosen.main and chosen.filedesc and chosen.ifsc
    slice_size = chosen.main.slice_size
    count = len(chosen.ifsc)
    report.slice_size, report.slice_count = slice_size, count
    report.set_name = chosen.filedesc.display_name
    if count != math.ceil(length / slice_size):
        report.problems.append(
            f"the set has {count} slice checksums, {math.ceil(length / slice_size)} expected"
        )
        return Inspection(report, kind, regions, chosen, None, False)
    if set_name_for(report.set_name) != report.set_name:
        report.problems.append(f"the set names an unsafe file name {report.set_name!r}; it will not be used")
        return Inspection(report, kind, regions, chosen, None, False)
    report.usable = True
    recovery = parse_creator_text(chosen.creator.text) if chosen.creator else None
    usable: set[int] = set()
    damage: list[TailDamage] = []
    p: Plan | None = None
    if recovery is not None:
        p = Plan(length, slice_size, count, recovery)
        report.canonical = True
        report.recovery_total = recovery
        ref = {t: chosen.raw[t] for t in CRITICAL_TYPES}
        ref[TYPE_CREATOR] = _our_creator_packet(chosen.set_id, recovery)
        if kind == "tail":
            (file, start, end) = regions[0]
            usable, damage = _check_layout(
                buf, start, end, tail_layout(p, report.set_name).slots, ref, file.name
            )
        else:
            by_name = {f.name: f for f, _, _ in regions}
            for m in members(p, report.set_name):
                fname = path.name + m.name[len(report.set_name) :]
                f = by_name.pop(fname, None)
                if f is None:
                    damage.append(TailDamage(fname, 0, m.size, "sidecar file missing"))
                    continue
                got, bad = _check_layout(bufs[f], 0, len(bufs[f]), m.slots, ref, f.name)
                usable |= got
                damage += bad
            for extra in by_name:
                report.problems.append(f"sidecar {extra} is not part of the set; ignored")
    else:
        for f, start, end in regions:
            got, bad = _check_foreign(bufs[f], start, end, chosen.set_id, f.name)
            usable |= got
            damage += bad
        report.recovery_total = len(usable)
    report.recovery_slices = len(usable)
    report.tail_damage = damage

    if data_size is not None and data_size != length:
        report.problems.append(f"the file is {data_size:,} bytes, the FEC data protects {length:,}")
    indices = check_slices(path, chosen.ifsc, slice_size, length)
    spans = sorted(spans or [], key=lambda s: (s[1], s[2]))
    starts = [s[1] for s in spans]
    longest = max((s[2] - s[1] for s in spans), default=0)
    report.damaged_slices = [
        DamagedSlice(
            i,
            i * slice_size,
            min(length, (i + 1) * slice_size),
            _map_members(i * slice_size, min(length, (i + 1) * slice_size), spans, starts, longest)
            if spans
            else (),
        )
        for i in indices
    ]
    _describe(report, spans is not None and len(spans) > 0)
    fec_intact = not damage
    return Inspection(report, kind, regions, chosen, p, fec_intact)


def _describe(report: FecReport, mapped_spans: bool) -> None:
    by_index = {s.index: s for s in report.damaged_slices}
    for first, last in group_runs(list(by_index)):
        run = [by_index[i] for i in range(first, last + 1)]
        names: dict[str, None] = {}
        for s in run:
            for m in s.members:
                names.setdefault(m, None)
        which = f"slice {first}" if first == last else f"slices {first}-{last}"
        line = f"{which} damaged (bytes {run[0].start:,}-{run[-1].end - 1:,})"
        if mapped_spans:
            line += (": in " + ", ".join(names)) if names else ": in no listed member"
        report.problems.append(line)
    for d in report.tail_damage:
        report.problems.append(f"FEC data damaged: {d.what} ({d.file}, bytes {d.start:,}-{d.end - 1:,})")
    if report.damaged_slices or report.tail_damage:
        report.problems.append(report.summary())


def check(
    path: Path, protected_length: int | None = None, *, spans: Sequence[Span] | None = None
) -> FecReport:
    """Check ``path`` against its FEC data: a tail after ``protected_length`` (found from the file when
    None), or sidecar ``.par2`` files next to it. ``spans`` are (name, start, end) byte ranges of the
    archive's members (absolute file offsets, end exclusive); each damaged slice is mapped onto them.

    The report's ``problems`` is empty exactly when the file and its FEC data are as written."""
    return inspect(path, protected_length, spans).report


def check_tail(path: Path, protected_length: int, spans: Sequence[Span] | None = None) -> FecReport:
    """The check ``gwtar verify`` runs when it sees data after ``totalArchiveSize``: like :func:`check`
    with the protected length known."""
    return check(path, protected_length, spans=spans)
