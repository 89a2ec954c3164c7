"""Every capture module has ``__all__`` and postponed annotations (its pure modules are checked in
tests/test_purity.py)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "archiver" / "capture"


def test_every_module_has_all_and_future_annotations() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "from __future__ import annotations" in text, path.name
        assert "__all__" in text, path.name
