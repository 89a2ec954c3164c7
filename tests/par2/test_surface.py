"""The public surface of archiver.par2 (the names other modules and the CLI rely on) and the purity
(its pure modules are checked in tests/test_purity.py)."""

from __future__ import annotations

import inspect
from pathlib import Path

import archiver.par2 as par2

PACKAGE = Path(__file__).resolve().parents[2] / "archiver" / "par2"


def test_exports_are_pinned() -> None:
    assert par2.__all__ == sorted(par2.__all__)
    assert set(par2.__all__) == {
        "DEFAULT_REDUNDANCY", "DamagedSlice", "Engine", "FecReport", "FecResult", "Plan", "RepairResult",
        "TailDamage", "add_fec", "add_sidecar", "append_fec", "check", "check_tail", "find_engine",
        "find_protected_length", "gwtar_total_size", "plan", "repair", "repair_main", "sidecar_files",
    }  # fmt: skip
    for name in par2.__all__:
        obj = getattr(par2, name)
        if callable(obj):
            assert obj.__doc__ and obj.__module__.startswith("archiver.par2."), name


def test_the_contract_for_other_modules() -> None:
    """What gwtar verify and the CLI call (issue 5 brief): names, parameters and report fields."""
    assert list(inspect.signature(par2.add_fec).parameters) == [
        "path",
        "protected_length",
        "redundancy",
        "engine",
    ]
    assert list(inspect.signature(par2.check).parameters) == ["path", "protected_length", "spans"]
    assert list(inspect.signature(par2.check_tail).parameters) == ["path", "protected_length", "spans"]
    assert list(inspect.signature(par2.repair).parameters) == ["path", "out", "engine"]
    assert list(inspect.signature(par2.repair_main).parameters) == ["path", "out", "as_json"]
    report = par2.FecReport(Path("x"), has_fec=False)
    for field in ("problems", "damaged_slices", "recovery_slices", "repairable", "ok"):
        assert hasattr(report, field), field
    assert par2.DEFAULT_REDUNDANCY == 0.10
