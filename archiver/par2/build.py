"""Making PAR2 data with the engine and laying it out canonically (``layout.py``).

The engine (``par2 c``) runs in a private folder next to the data, on a hard link of the data file
named after the set (par2cmdline-turbo refuses symlinked inputs, and the name it sees is the name it
records). archiver then reads the engine's packets and writes them in the canonical order with its
own Creator packet, so the bytes do not depend on which par2 program computed them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from archiver import safefs
from archiver.errors import ArchiverError, FormatError
from archiver.par2.engine import Engine, refusal, run
from archiver.par2.layout import Plan, Slot, creator_text
from archiver.par2.packets import (
    CRITICAL_TYPES,
    HEADER_SIZE,
    TYPE_CREATOR,
    TYPE_FILEDESC,
    TYPE_IFSC,
    TYPE_MAIN,
    TYPE_RECVSLIC,
    Creator,
    encode_creator,
    encode_packet,
    parse_filedesc,
    parse_header,
    parse_ifsc,
    parse_main,
    parse_recovery_exponent,
)
from archiver.par2.scan import CHUNK, hash_packet, mapped

__all__ = ["Generated", "copy_file", "generated", "write_slots"]


def copy_file(src: Path, dst: Path, length: int | None = None) -> None:
    """Copy the first ``length`` bytes (default: all) of ``src`` to a new file ``dst``, with
    ``copy_file_range`` when the kernel offers it (a reflink on filesystems that can)."""
    with src.open("rb") as fin, dst.open("xb") as fout:
        total = os.fstat(fin.fileno()).st_size if length is None else length
        done = 0
        try:
            while done < total:
                n = os.copy_file_range(fin.fileno(), fout.fileno(), min(total - done, 1 << 30), done, done)
                if n == 0:
                    break
                done += n
        except (AttributeError, OSError):
            pass  # not offered here: finish with plain reads below
        fin.seek(done)
        fout.seek(done)
        while done < total:
            data = fin.read(min(CHUNK, total - done))
            if not data:
                raise FormatError(f"ended at byte {done}, expected {total}", subject=str(src))
            fout.write(data)
            done += len(data)


@dataclass
class Generated:
    """The packets the engine made for one set: the critical packets (whole, by type), our Creator
    packet, and where each recovery packet lies in the engine's files."""

    plan: Plan
    set_id: bytes
    critical: dict[bytes, bytes]
    recovery: dict[int, tuple[Path, int]] = field(default_factory=dict)  # exponent → (file, offset)

    def packet(self, slot: Slot) -> bytes | tuple[Path, int]:
        if slot.ptype == TYPE_RECVSLIC:
            assert slot.exponent is not None
            return self.recovery[slot.exponent]
        return self.critical[slot.ptype]


def _index(work: Path, set_name: str, p: Plan) -> Generated:
    critical: dict[bytes, bytes] = {}
    recovery: dict[int, tuple[Path, int]] = {}
    set_ids: set[bytes] = set()
    for f in sorted(work.glob("*.par2")):
        with mapped(f) as buf:
            at, size = 0, len(buf)
            while at < size:
                header = parse_header(buf[at : at + HEADER_SIZE])
                if header is None or at + header.length > size:
                    raise FormatError(
                        f"the par2 engine wrote an unreadable packet at byte {at}", subject=f.name
                    )
                set_ids.add(header.set_id)
                if header.type in CRITICAL_TYPES:
                    if not hash_packet(buf, at, header):
                        raise FormatError(f"the par2 engine wrote a bad packet at byte {at}", subject=f.name)
                    critical.setdefault(header.type, bytes(buf[at : at + header.length]))
                elif header.type == TYPE_RECVSLIC:
                    if header.length != HEADER_SIZE + 4 + p.slice_size:
                        raise FormatError(f"the par2 engine wrote a recovery packet of {header.length} bytes")
                    exponent = parse_recovery_exponent(buf[at + HEADER_SIZE : at + HEADER_SIZE + 4])
                    recovery[exponent] = (f, at)
                at += header.length
    if len(set_ids) != 1 or set(critical) != set(CRITICAL_TYPES):
        raise FormatError("the par2 engine's output is not one complete recovery set", subject=str(work))
    main = parse_main(critical[TYPE_MAIN][HEADER_SIZE:])
    desc = parse_filedesc(critical[TYPE_FILEDESC][HEADER_SIZE:])
    ifsc = parse_ifsc(critical[TYPE_IFSC][HEADER_SIZE:])
    wanted = (
        p.slice_size,
        p.slice_count,
        p.protected_length,
        set_name.encode(),
        set(range(p.recovery_count)),
    )
    got = (main.slice_size, len(ifsc), desc.length, desc.name, set(recovery))
    if wanted != got:
        raise FormatError(
            f"the par2 engine did not follow the plan (slice size, slices, length, name, exponents): "
            f"wanted {wanted[:4]} and {p.recovery_count} recovery slices, got {got[:4]} and {len(recovery)}",
            subject=str(work),
        )
    (set_id,) = set_ids
    critical[TYPE_CREATOR] = encode_packet(
        set_id, TYPE_CREATOR, encode_creator(Creator(creator_text(p.recovery_count)))
    )
    return Generated(p, set_id, critical, recovery)


@contextlib.contextmanager
def generated(data: Path, set_name: str, p: Plan, engine: Engine) -> Iterator[Generated]:
    """Run the engine over ``data`` (exactly ``p.protected_length`` bytes) as set ``set_name`` and
    yield its packets; the engine's files are deleted on exit."""
    size = data.stat().st_size
    if size != p.protected_length:
        raise FormatError(f"is {size} bytes, the plan is for {p.protected_length}", subject=str(data))
    # a fresh folder beside the data (same filesystem: hard links work), removed on every exit, a
    # signal included; one a killed run left is recognised and removed by the next
    with safefs.temp_dir(data) as work:
        target = work / set_name
        try:
            os.link(data, target)
        except OSError:
            copy_file(data, target)  # no hard links here (another filesystem, FAT): a copy works too
        args = [
            "c",
            "-q",
            "-q",
            f"-s{p.slice_size}",
            f"-c{p.recovery_count}",
            "-n1",
            "--",
            f"{set_name}.par2",
            set_name,
        ]
        done = run(engine, args, cwd=work)
        if done.returncode != 0:
            refused = refusal(done)  # the disk, not par2: the caller's line names its output
            if refused is not None:
                raise refused
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
            raise ArchiverError(
                f"par2 create failed (exit {done.returncode}): {last[0]}", subject=str(engine.path)
            )
        target.unlink()
        yield _index(work, set_name, p)


def write_slots(
    slots: tuple[Slot, ...] | list[Slot], gen: Generated, dst: BinaryIO, *, base: int = 0
) -> None:
    """Write the bytes of ``slots`` (offsets relative to ``base`` = ``dst``'s position now) to ``dst``."""
    handles: dict[Path, BinaryIO] = {}
    try:
        at = base
        for slot in slots:
            if slot.offset + base != at:
                raise AssertionError(f"layout gap at {at}")
            if slot.kind == "tar":
                dst.write(slot.data)
            elif slot.kind == "zero":
                dst.write(bytes(slot.length))
            else:
                what = gen.packet(slot)
                if isinstance(what, bytes):
                    if len(what) != slot.length:
                        raise FormatError(f"packet is {len(what)} bytes, the layout wants {slot.length}")
                    dst.write(what)
                else:
                    path, offset = what
                    src = handles.get(path)
                    if src is None:
                        src = handles[path] = path.open("rb")
                    remaining, pos = slot.length, offset
                    while remaining:
                        data = os.pread(src.fileno(), min(CHUNK, remaining), pos)
                        if not data:
                            raise FormatError("recovery packet cut short", subject=str(path))
                        dst.write(data)
                        remaining -= len(data)
                        pos += len(data)
            at += slot.length
    finally:
        for h in handles.values():
            h.close()
