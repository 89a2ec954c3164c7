"""`archiver demo` end to end: the fixture server, a real capture in Chromium, both packers, verify."""

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
    assert report["capture"]["pages"] >= 30 and report["capture"]["complete"] is True
    assert report["gwtar"]["valid"] is True and report["gwtar"]["fec"] is True
    assert report["zim"]["valid"] is True
    assert Path(report["gwtar"]["path"]).is_file() and Path(report["zim"]["path"]).is_file()
    assert (tmp_path / "tree" / "index.html").is_file()
    # the capture indexes the tree and both outputs carry its search page, as `archiver pack` does
    assert (tmp_path / "tree" / "_archiver" / "search" / "index.html").is_file()
    assert report["gwtar"]["search"] is True and report["zim"]["search"] is True
    from archiver.gwtar import read

    with read.open(Path(report["gwtar"]["path"])) as archive:
        assert "_archiver/search/index.html" in {m.path for m in archive.members}
