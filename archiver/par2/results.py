"""What the FEC functions return: plain data, printable as text lines or JSON.

Pure: no network, no filesystem, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["DamagedSlice", "FecReport", "FecResult", "RepairResult", "TailDamage", "group_runs"]


@dataclass(frozen=True, slots=True)
class FecResult:
    """FEC data that was just written: for ``path``, protecting its first ``protected_length`` bytes
    in ``slice_count`` slices of ``slice_size`` bytes, with ``recovery_slices`` recovery slices;
    ``files`` are the ``.par2`` names (tail members, or sidecar files), ``fec_size`` their total size
    on disk (the tail's size, tar framing included), ``engine`` the par2 program's version line."""

    path: Path
    protected_length: int
    slice_size: int
    slice_count: int
    recovery_slices: int
    set_name: str
    files: tuple[str, ...]
    fec_size: int
    engine: str
    kind: Literal["tail", "sidecar"] = "tail"

    @property
    def redundancy(self) -> float:
        """Recovery slices per input slice (what can be lost and rebuilt)."""
        return self.recovery_slices / self.slice_count

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "protected_length": self.protected_length,
            "slice_size": self.slice_size,
            "slice_count": self.slice_count,
            "recovery_slices": self.recovery_slices,
            "redundancy": round(self.redundancy, 4),
            "set_name": self.set_name,
            "files": list(self.files),
            "fec_size": self.fec_size,
            "engine": self.engine,
        }


@dataclass(frozen=True, slots=True)
class DamagedSlice:
    """Slice ``index`` covers bytes [``start``, ``end``) of the protected region and does not match its
    checksums; ``members`` names the spans (archive members) it overlaps, when spans were given."""

    index: int
    start: int
    end: int
    members: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TailDamage:
    """Bytes [``start``, ``end``) of ``file`` (the archive for a tail, a sidecar file otherwise) are not
    what the FEC layout says; ``what`` says which part (``RecvSlic 17``, ``IFSC``, ``tar header``…)."""

    file: str
    start: int
    end: int
    what: str


def group_runs(indices: list[int]) -> list[tuple[int, int]]:
    """Sorted integers as inclusive runs: [1, 2, 3, 7] → [(1, 3), (7, 7)]."""
    runs: list[tuple[int, int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


@dataclass
class FecReport:
    """The result of checking a file against its FEC data.

    ``damaged_slices`` are the protected slices that fail their MD5/CRC32; ``recovery_slices`` is the
    number of intact recovery slices (``recovery_total`` were written); ``tail_damage`` lists the bytes of
    the FEC data itself that are not as written. ``problems`` has one text line per finding (empty when
    the file is intact). ``repairable``: everything damaged can be rebuilt (damaged slices ≤ intact
    recovery slices, and one copy of every checksum packet survives)."""

    path: Path
    has_fec: bool
    kind: Literal["tail", "sidecar", "none"] = "none"
    protected_length: int | None = None
    slice_size: int = 0
    slice_count: int = 0
    recovery_slices: int = 0
    recovery_total: int = 0
    set_name: str = ""
    canonical: bool = False
    usable: bool = False
    damaged_slices: list[DamagedSlice] = field(default_factory=list)
    tail_damage: list[TailDamage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """FEC data present, usable, and everything (protected region and FEC data) as written."""
        return (
            self.has_fec
            and self.usable
            and not self.damaged_slices
            and not self.tail_damage
            and not self.problems
        )

    @property
    def missing(self) -> int:
        """How many more intact recovery slices a repair would need (0 when repairable)."""
        return max(0, len(self.damaged_slices) - self.recovery_slices)

    @property
    def repairable(self) -> bool:
        return self.has_fec and self.usable and self.missing == 0

    @property
    def damaged_members(self) -> list[str]:
        """Every member some damaged slice overlaps, in first-seen order."""
        seen: dict[str, None] = {}
        for s in self.damaged_slices:
            for m in s.members:
                seen.setdefault(m, None)
        return list(seen)

    def summary(self) -> str:
        """One line saying what the FEC data says about the file."""
        if not self.has_fec:
            return "no FEC data"
        if not self.usable:
            return "FEC data unusable: no intact copy of its checksum packets"
        what = (
            f"{self.protected_length:,} bytes protected in {self.slice_count} slices "
            f"of {self.slice_size:,} bytes, "
            f"{self.recovery_slices} of {self.recovery_total} recovery slices intact"
        )
        if self.ok:
            return f"intact ({what})"
        damage = f"{len(self.damaged_slices)} damaged slices"
        if self.tail_damage:
            damage += f", {len(self.tail_damage)} damaged parts of the FEC data"
        if self.repairable:
            return f"damaged, repairable: {damage} ({what})"
        return (
            f"damaged, not repairable: {damage}, {self.missing} more recovery slices needed "
            f"(about {self.missing * self.slice_size:,} bytes of recovery data) ({what})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "has_fec": self.has_fec,
            "kind": self.kind,
            "ok": self.ok,
            "repairable": self.repairable,
            "protected_length": self.protected_length,
            "slice_size": self.slice_size,
            "slice_count": self.slice_count,
            "recovery_slices": self.recovery_slices,
            "recovery_total": self.recovery_total,
            "missing": self.missing,
            "set_name": self.set_name,
            "canonical": self.canonical,
            "damaged_slices": [
                {"index": s.index, "start": s.start, "end": s.end, "members": list(s.members)}
                for s in self.damaged_slices
            ],
            "damaged_members": self.damaged_members,
            "tail_damage": [
                {"file": d.file, "start": d.start, "end": d.end, "what": d.what} for d in self.tail_damage
            ],
            "problems": list(self.problems),
            "summary": self.summary(),
        }


@dataclass(frozen=True, slots=True)
class DamagedMember:
    """A member of the archive that damaged slices overlap: its data is bytes [``offset``, ``end``) of
    the file, and ``slices`` are the indices of the damaged slices that touch it."""

    member: str
    offset: int
    end: int
    slices: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"member": self.member, "offset": self.offset, "end": self.end, "slices": list(self.slices)}


RepairStatus = Literal["intact", "repaired", "unrepairable", "no_fec"]


@dataclass(frozen=True, slots=True)
class RepairResult:
    """What :func:`archiver.par2.repair` did. ``status``: ``intact`` (nothing to do; copied to OUT if
    one was given), ``repaired``, ``unrepairable`` (nothing written), ``no_fec`` (nothing written);
    ``exit_code`` is 0, 0, 1, 2 respectively; ``message`` is one line; ``out`` is where the result
    is (None when nothing was written); ``report`` is the check before the repair; ``damaged`` the
    members of a gwtar that damaged slices overlap (empty for other files)."""

    status: RepairStatus
    message: str
    out: Path | None
    report: FecReport
    repaired_slices: int = 0
    fec_rebuilt: bool = False
    damaged: tuple[DamagedMember, ...] = ()

    @property
    def exit_code(self) -> int:
        return {"intact": 0, "repaired": 0, "unrepairable": 1, "no_fec": 2}[self.status]

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "message": self.message,
            "out": str(self.out) if self.out else None,
            "repaired_slices": self.repaired_slices,
            "fec_rebuilt": self.fec_rebuilt,
            "damaged_members": [d.to_json() for d in self.damaged],
            "report": self.report.to_json(),
        }
