"""`archiver demo` end to end: the real fixture server, the mapping core and real Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver.cli import main


@pytest.mark.browser
def test_demo_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--json", "-o", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["site"]["url"].startswith("http://127.0.0.1:")
    assert report["map"]["pages"] >= 30
    assert report["render"]["marker_found"] is True
    plan = (tmp_path / "plan.tsv").read_text(encoding="utf-8").splitlines()
    assert len(plan) == report["map"]["pages"] + report["map"]["assets"]
    paths = [line.split("\t")[1] for line in plan]
    assert len(paths) == len(set(paths)), "one row per tree path"
    assert "index.html" in paths
    assert all(
        not p.startswith("_archiver/") for p, kind in zip(paths, plan, strict=True) if kind.startswith("page")
    )
    assert report["pending"] == ["capture", "pack-zim", "pack-gwtar", "verify"]
