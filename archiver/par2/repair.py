"""Repair a file from its FEC data: ``archiver repair FILE [-o OUT]`` (formats/fec.md §Repair).

The recipe (research fec-serve.md A.3, recipe A): in a private folder next to the output, the FEC data
is copied into ``NAME.par2`` and the damaged file is linked in under another name, so par2 treats it as
an *extra file*: it takes the intact slices from it and writes the repaired protected region as a new
file ``NAME``. It never renames or writes the original (the trap of the same-name symlink), and par2's
exit code is not trusted: archiver checks the result slice by slice itself. Then the FEC data goes back:
the old bytes when they were intact, else rebuilt in the canonical layout (byte-identical to what
was written). The result replaces the original (or goes to OUT) only after it verifies.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
from pathlib import Path

from archiver import safefs
from archiver.errors import ArchiverError, FormatError, UsageError
from archiver.par2 import sidecar as _sidecar
from archiver.par2.build import copy_file, generated, write_slots
from archiver.par2.engine import Engine, find_engine, refusal, run
from archiver.par2.fec import Inspection, Span, inspect
from archiver.par2.layout import DEFAULT_REDUNDANCY, MIN_RECOVERY, Plan, tail_layout
from archiver.par2.results import DamagedMember, FecReport, RepairResult
from archiver.par2.scan import check_slices, copy_range

__all__ = ["repair", "repair_main"]


def _unrepairable_message(report: FecReport) -> str:
    if not report.usable:
        first = report.problems[0] if report.problems else "FEC data unusable"
        return f"not repairable: {first}"
    return (
        f"not repairable: {len(report.damaged_slices)} damaged slices but only {report.recovery_slices} "
        f"intact recovery slices; {report.missing} more needed "
        f"(about {report.missing * report.slice_size:,} bytes)"
    )


def _check_room(dest: Path, need: int) -> None:
    """Refuse up front when the folder of ``dest`` cannot hold the repair's files (par2 itself only
    says that it failed)."""
    try:
        st = os.statvfs(dest.parent)
    except OSError:
        return
    if st.f_flag & os.ST_RDONLY:
        raise ArchiverError(
            "read-only file system: the repair cannot write beside the output", subject=str(dest)
        )
    free = st.f_bavail * st.f_frsize
    if free < need:
        raise ArchiverError(
            f"no space left on device: the repair needs about {need:,} bytes beside the output, "
            f"{free:,} are free",
            subject=str(dest),
        )


def _copy_atomic(src: Path, dst: Path) -> None:
    _check_room(dst, src.stat().st_size)
    with safefs.temp_dir(dst) as work:
        tmp = work / "copy"
        copy_file(src, tmp)
        shutil.copymode(src, tmp)
        with tmp.open("rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, dst)


def _repair_region(ins: Inspection, path: Path, work: Path, engine: Engine) -> Path:
    """Write the repaired protected region to ``work/NAME`` with par2 and return it."""
    report = ins.report
    set_name = report.set_name
    par = work / f"{set_name}.par2"
    with par.open("wb") as out:
        for file, start, end in ins.regions:
            with file.open("rb") as src:
                copy_range(src, out, start, end - start)
    damaged = work / ".damaged-input"
    try:
        os.link(path, damaged)  # read only by par2; a link survives any rename par2 might do
    except OSError:
        damaged.symlink_to(path.resolve())
    done = run(engine, ["r", "-q", "-q", "--", par.name, damaged.name], cwd=work)
    fixed = work / set_name
    if done.returncode != 0 or not fixed.is_file():
        refused = refusal(done)  # the disk, not par2: the caller's line names its output
        if refused is not None:
            raise refused
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        raise ArchiverError(f"par2 repair failed (exit {done.returncode}): {last[0]}", subject=str(path))
    damaged.unlink()
    par.unlink()
    return fixed


def _verify_region(fixed: Path, ins: Inspection, path: Path) -> None:
    report = ins.report
    assert ins.packets is not None and ins.packets.ifsc is not None and report.protected_length is not None
    still = check_slices(fixed, ins.packets.ifsc, report.slice_size, report.protected_length)
    if still:
        raise FormatError(
            f"par2 wrote a region that still fails {len(still)} slice checks; nothing was changed",
            subject=str(path),
        )


def _plan_for_rebuild(ins: Inspection) -> Plan:
    if ins.plan is not None:
        return ins.plan
    r = ins.report
    assert r.protected_length is not None
    # No Creator packet survived to say R: assume the default redundancy over the set's own slices
    # (never the current plan's slice count: the file may come from a release with another cap).
    recovery = r.recovery_total or max(
        math.ceil(DEFAULT_REDUNDANCY * r.slice_count - 1e-9), min(r.slice_count, MIN_RECOVERY)
    )
    return Plan(r.protected_length, r.slice_size, r.slice_count, recovery)


def repair(path: Path, out: Path | None = None, *, engine: Engine | None = None) -> RepairResult:
    """Repair ``path`` (see :func:`_repair`); SIGTERM and SIGHUP stop it like Ctrl-C, and its
    temporary files (``.NAME.archiver-tmp-PID-RAND`` beside the output) go with it."""
    with safefs.interruptible():
        return _repair(Path(path), out, engine=engine)


def _repair(path: Path, out: Path | None = None, *, engine: Engine | None = None) -> RepairResult:
    """Repair ``path`` from its FEC data (tail or sidecars), in place or into ``out``.

    The result is byte-identical to the file as written, FEC data included. In place, the original
    stays until the repaired file has verified, then the repaired file is renamed over it; on any
    failure the original is untouched. Returns a :class:`RepairResult` (``exit_code`` 0 repaired or
    already intact, 1 not repairable, 2 no FEC data); raises :class:`UsageError` for a missing file
    and :class:`EnvironmentProblem` when a repair needs par2 and none is installed."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", subject=str(path))
    dest = Path(out) if out is not None else path
    if dest.is_dir():
        dest = dest / path.name
    if not dest.parent.is_dir():
        raise UsageError("the output's folder does not exist", subject=str(dest))
    if out is not None and dest.exists() and dest.resolve() == path.resolve():
        dest, out = path, None
    spans = member_spans(path)
    ins = inspect(path, None, spans)
    report = ins.report
    damaged = _damaged(report, spans, path)
    if not report.has_fec:
        return RepairResult("no_fec", "no FEC data: nothing to repair with", None, report)
    if report.ok:
        if out is None:
            return RepairResult("intact", "intact: nothing to repair", None, report)
        _copy_atomic(path, dest)
        if ins.kind == "sidecar":
            _copy_sidecars(ins, dest)
        return RepairResult("intact", f"intact: copied to {dest}", dest, report)
    if not report.repairable:
        return RepairResult("unrepairable", _unrepairable_message(report), None, report, damaged=damaged)

    engine = engine or find_engine()
    # the repaired copy, and par2's copy of the FEC data, are written beside the output first
    _check_room(dest, path.stat().st_size + sum(end - start for _, start, end in ins.regions))
    assert report.protected_length is not None and ins.packets is not None and ins.packets.ifsc is not None
    length = report.protected_length
    resized = ins.kind == "sidecar" and path.stat().st_size != length
    with safefs.temp_dir(dest) as work:
        if report.damaged_slices or resized:
            fixed = _repair_region(ins, path, work, engine)
        else:
            fixed = work / report.set_name
            copy_file(path, fixed, length)
        if fixed.stat().st_size != length:
            raise FormatError(
                f"par2 wrote {fixed.stat().st_size} bytes, not {length}; nothing was changed",
                subject=str(path),
            )
        shutil.copymode(path, fixed)
        rebuilt = False
        if ins.kind == "tail":
            if ins.fec_intact:
                # The old tail was verified byte for byte; the final check below holds the repaired
                # region against its checksums.
                with fixed.open("r+b") as f, path.open("rb") as src:
                    f.seek(length)
                    copy_range(src, f, length, ins.regions[0][2] - length)
            else:
                # A rebuilt tail would vouch for whatever it was built from: check the region against
                # the original checksums first.
                _verify_region(fixed, ins, path)
                p = _plan_for_rebuild(ins)
                with generated(fixed, report.set_name, p, engine) as gen, fixed.open("r+b") as f:
                    f.seek(length)
                    write_slots(tail_layout(p, report.set_name).slots, gen, f, base=length)
                rebuilt = True
            with fixed.open("rb+") as f:
                os.fsync(f.fileno())
            final = inspect(fixed, length)
            if final.report.damaged_slices:
                raise FormatError(
                    f"par2 wrote a region that still fails {len(final.report.damaged_slices)} slice checks; "
                    "nothing was changed",
                    subject=str(path),
                )
            if not final.report.ok:
                raise FormatError(
                    "the repaired file does not verify ("
                    + "; ".join(final.report.problems[:3])
                    + "); nothing was changed",
                    subject=str(path),
                )
            os.replace(fixed, dest)
        else:
            _verify_region(fixed, ins, path)
            with fixed.open("rb+") as f:
                os.fsync(f.fileno())
            os.replace(fixed, dest)
            if not ins.fec_intact:
                p = _plan_for_rebuild(ins)
                with generated(dest, report.set_name, p, engine) as gen:
                    _sidecar.write_sidecars(gen, p, report.set_name, dest)
                rebuilt = True
            elif dest != path:
                _copy_sidecars(ins, dest)
            final = inspect(dest)
            if not final.report.ok:
                raise FormatError(
                    "the repaired file does not verify: " + "; ".join(final.report.problems[:3]),
                    subject=str(dest),
                )
    where = "" if dest == path else f"; written to {dest}"
    parts = []
    if report.damaged_slices:
        parts.append(
            f"{len(report.damaged_slices)} damaged slices rebuilt "
            f"from {report.recovery_slices} intact recovery slices"
        )
    if rebuilt:
        parts.append(
            "FEC data rebuilt"
            + ("" if report.canonical else " in archiver's layout (it was made by another tool)")
        )
    if resized and not report.damaged_slices:
        parts.append("extra bytes removed")
    return RepairResult(
        "repaired",
        "repaired: " + ", ".join(parts or ["nothing was damaged"]) + where,
        dest,
        report,
        repaired_slices=len(report.damaged_slices),
        fec_rebuilt=rebuilt,
        damaged=damaged,
    )


def member_spans(path: Path) -> list[Span] | None:
    """The members of a gwtar file as ``(path, start, end)`` absolute byte ranges of their data, as
    ``verify`` maps damaged slices to members; None when ``path`` is not a gwtar whose header can
    be read (a ZIM, or a gwtar whose header is itself damaged: the slices are then named only)."""
    from archiver import gwtar
    from archiver.gwtar import rules

    try:
        with path.open("rb") as f:
            if rules.MAGIC_COMMENT not in f.read(1024):
                return None
        with gwtar.open(path) as reader:
            return [(m.path, m.offset, m.end) for m in reader.members]
    except (ArchiverError, OSError, ValueError):
        return None


def _damaged(report: FecReport, spans: list[Span] | None, path: Path) -> tuple[DamagedMember, ...]:
    """The damaged members, as ``verify`` names them: of the members that damaged slices overlap
    (a slice is the unit PAR2 checks, so it can hold the end of one member and the start of the
    next), those whose bytes no longer match the SHA-256 the archive records; a member without a
    recorded hash is named when a damaged slice touches it. In file order, with byte ranges and
    the slices."""
    if not spans or not report.damaged_slices:
        return ()
    where = {name: (start, end) for name, start, end in spans}
    slices: dict[str, list[int]] = {}
    for s in report.damaged_slices:
        for name in s.members:
            slices.setdefault(name, []).append(s.index)
    out = [DamagedMember(n, *where[n], tuple(ix)) for n, ix in slices.items() if n in where]
    recorded = _recorded_hashes(path, {d.member for d in out})
    out = [
        d
        for d in out
        if recorded.get(d.member) is None or _sha256_of(path, d.offset, d.end) != recorded[d.member]
    ]
    return tuple(sorted(out, key=lambda d: d.offset))


def _recorded_hashes(path: Path, names: set[str]) -> dict[str, str | None]:
    from archiver import gwtar

    try:
        with gwtar.open(path) as reader:
            return {m.path: m.sha256 for m in reader.members if m.path in names}
    except (ArchiverError, OSError, ValueError):
        return {}


def _sha256_of(path: Path, start: int, end: int) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def _copy_sidecars(ins: Inspection, dest: Path) -> None:
    source = ins.report.path
    for src, _, _ in ins.regions:
        target = dest.with_name(dest.name + src.name[len(source.name) :])
        if target.resolve() != src.resolve():
            _copy_atomic(src, target)


def repair_main(path: str | Path, out: str | Path | None = None, *, as_json: bool = False) -> int:
    """``archiver repair FILE [-o OUT] [--json]``: repair and print one line (or one JSON object) on
    stdout. Exit 0 repaired or already intact, 1 not repairable, 2 no FEC data or a usage error;
    other archiver errors print ``archiver: <input>: <what>`` on stderr and return their exit code."""
    try:
        result = repair(Path(path), Path(out) if out is not None else None)
    except ArchiverError as e:
        if as_json:
            print(json.dumps({"status": "error", "exit_code": e.exit_code, "message": str(e)}))
        print(f"archiver: {e}", file=sys.stderr)
        return e.exit_code
    if as_json:
        print(json.dumps(result.to_json()))
    else:
        print(f"{path}: {result.message}")
    return result.exit_code
