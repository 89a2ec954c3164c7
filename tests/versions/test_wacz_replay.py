"""ReplayWeb.page shows each capture of a versioned ``--warc`` capture's WACZ (issue 25 acceptance;
formats/history.md §6): a page changed between two runs replays with the first run's words at the
first run's timestamp and the second run's at the second's, in ReplayWeb.page 2.4.6 (npm, unpacked by
tools/bootstrap) in Chromium, everything from 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "node_modules" / "replaywebpage-2.4.6"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=180
    )


def _replay(wacz: Path, url: str, ts: str, text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools/replay_wacz.py"), str(PACKAGE), str(wacz), url,
         "--ts", ts, "--text", text, "--wait", "60"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.mark.timeout(900)
def test_replaywebpage_shows_each_capture_at_its_time(tmp_path: Path) -> None:
    assert (PACKAGE / "ui.js").is_file(), "run `bash tools/bootstrap test` (it unpacks ReplayWeb.page)"
    site = tmp_path / "live"
    site.mkdir()
    (site / "index.html").write_text('<!doctype html><title>H</title><a href="a.html">a</a>')
    (site / "a.html").write_text("<!doctype html><title>A</title><p>FIRST-RUN-WORDS</p>")
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        common = ["--no-render", "--delay", "0", "--warc"]
        assert _cli("capture", server.url, "-o", str(out), *common).returncode == 0
        time.sleep(2.1)  # WARC-Dates to the second: the two runs apart
        (site / "a.html").write_text("<!doctype html><title>A</title><p>SECOND-RUN-WORDS</p>")
        again = _cli("capture", server.url, "-o", str(out), *common, "--new-version")
        assert again.returncode == 0, again.stderr
        url = server.url + "a.html"
    wacz = tmp_path / "t.wacz"
    assert _cli("pack", str(out), "--format", "wacz", "-o", str(wacz)).returncode == 0
    with zipfile.ZipFile(wacz) as z:
        rows = [line.split(" ", 2) for line in z.read("indexes/index.cdxj").decode().splitlines()]
    stamps = sorted(
        stamp for key, stamp, doc in rows if key.endswith("/a.html") and json.loads(doc)["status"]
    )
    assert len(stamps) == 2
    for stamp, words in zip(stamps, ["FIRST-RUN-WORDS", "SECOND-RUN-WORDS"], strict=True):
        shown = _replay(wacz, url, stamp, words)
        assert shown.returncode == 0, f"at {stamp}: " + shown.stdout + shown.stderr[-2000:]
