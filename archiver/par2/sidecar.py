"""FEC for ZIM files: sidecar ``.par2`` files next to the ZIM, never a tail inside it.

Measured (tests/par2/test_zim_sidecar.py): libzim's reader refuses a ZIM with bytes appended
(``Archive()`` raises "Zim file(s) is of bad size or corrupted"), kiwix-serve will not load it
("Unable to add the ZIM file"), and zimcheck fails it. So a ZIM keeps its exact bytes and its FEC data
lives beside it as ``NAME.zim.par2`` (checksums) and ``NAME.zim.vol00+R.par2`` (recovery data): plain
PAR2 2.0 files in archiver's canonical layout, usable with any par2 program
(``par2 r NAME.zim.par2``). :func:`archiver.par2.check` and :func:`archiver.par2.repair` find them
by these names.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from archiver.errors import FormatError, UsageError
from archiver.par2.build import Generated, generated, write_slots
from archiver.par2.engine import Engine, find_engine
from archiver.par2.layout import DEFAULT_REDUNDANCY, Member, Plan, members, plan, set_name_for
from archiver.par2.results import FecResult

__all__ = ["add_sidecar", "sidecar_files", "sidecar_name", "write_sidecars"]

_VOL = re.compile(r"\.vol[0-9]+\+[0-9]+\.par2\Z")


def sidecar_files(path: Path) -> list[Path]:
    """The sidecar files of ``path`` that exist: ``NAME.par2`` then ``NAME.vol*.par2``, sorted."""
    path = Path(path)
    index = path.with_name(path.name + ".par2")
    prefix = path.name
    vols = sorted(
        p
        for p in path.parent.glob(glob_escape(prefix) + ".vol*.par2")
        if p.name.startswith(prefix) and _VOL.fullmatch(p.name[len(prefix) :])
    )
    return ([index] if index.is_file() else []) + [p for p in vols if p.is_file()]


def glob_escape(text: str) -> str:
    """``text`` with glob metacharacters escaped (``[*]``, ``[?]``, ``[[]``)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def sidecar_name(data_name: str, set_name: str, member: Member) -> str:
    """The file name of ``member``'s sidecar for a data file called ``data_name``."""
    return data_name + member.name[len(set_name) :]


def write_sidecars(gen: Generated, p: Plan, set_name: str, data_path: Path) -> list[Path]:
    """Write every sidecar of ``data_path`` from ``gen``, each atomically (temp file + rename)."""
    written: list[Path] = []
    for m in members(p, set_name):
        final = data_path.with_name(sidecar_name(data_path.name, set_name, m))
        fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name[:60]}.", suffix=".tmp", dir=final.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as f:
                write_slots(m.slots, gen, f)
                f.flush()
                if f.tell() != m.size:
                    raise FormatError(f"wrote {f.tell()} bytes, the layout says {m.size}", subject=str(final))
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, final)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        written.append(final)
    return written


def add_sidecar(
    path: Path, *, redundancy: float = DEFAULT_REDUNDANCY, engine: Engine | None = None
) -> FecResult:
    """Write sidecar PAR2 files protecting all of ``path`` (a ZIM, or any file that must keep its
    exact bytes), replacing older sidecars of it."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", subject=str(path))
    length = path.stat().st_size
    p = plan(length, redundancy)
    set_name = set_name_for(path.name)
    engine = engine or find_engine()
    old = sidecar_files(path)
    with generated(path, set_name, p, engine) as gen:
        written = write_sidecars(gen, p, set_name, path)
    for stale in old:
        if stale not in written:
            with contextlib.suppress(OSError):
                stale.unlink()
    return FecResult(
        path,
        length,
        p.slice_size,
        p.slice_count,
        p.recovery_count,
        set_name,
        tuple(w.name for w in written),
        sum(w.stat().st_size for w in written),
        engine.version,
        kind="sidecar",
    )
