"""A versioned ``--warc`` capture packs into one WACZ holding every capture (formats/history.md §6):
the WARC files of every run stay in ``_archiver/warc/``, so the WACZ's index has each URL once per
run, a changed page with its new payload, an unchanged one as a revisit (ReplayWeb.page shows such
an index as the URL's timeline)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from archiver.fixture import FixtureConfig, FixtureServer


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=180
    )


def test_the_wacz_of_a_versioned_capture_holds_every_run(tmp_path: Path) -> None:
    site = tmp_path / "live"
    site.mkdir()
    (site / "index.html").write_text('<!doctype html><title>H</title><a href="a.html">a</a>')
    (site / "a.html").write_text("<!doctype html><title>A</title><p>first</p>")
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        common = ["--no-render", "--delay", "0", "--warc"]
        assert _cli("capture", server.url, "-o", str(out), *common).returncode == 0
        time.sleep(1.1)
        (site / "a.html").write_text("<!doctype html><title>A</title><p>second</p>")
        again = _cli("capture", server.url, "-o", str(out), *common, "--new-version")
        assert again.returncode == 0, again.stderr
    wacz = tmp_path / "t.wacz"
    packed = _cli("pack", str(out), "--format", "wacz", "-o", str(wacz))
    assert packed.returncode == 0, packed.stderr
    with zipfile.ZipFile(wacz) as z:
        names = z.namelist()
        cdxj = z.read("indexes/index.cdxj").decode()
    rows = []
    for line in cdxj.splitlines():
        key, stamp, doc = line.split(" ", 2)
        rows.append((key, stamp, json.loads(doc)))
    page_a = [(stamp, doc) for key, stamp, doc in rows if key.endswith("/a.html")]
    home = [(stamp, doc) for key, stamp, doc in rows if key.endswith(")/")]
    assert len(page_a) == 2 and page_a[0][0] != page_a[1][0]  # two captures, two times
    assert page_a[0][1]["digest"] != page_a[1][1]["digest"]  # the changed page, its new payload
    assert [d["mime"] for _, d in sorted(home, key=lambda h: h[0])] == ["text/html", "warc/revisit"]
    assert home[0][1]["digest"] == home[1][1]["digest"]  # unchanged: a revisit of the same payload
    assert len([n for n in names if n.startswith("archive/") and n.endswith(".warc.gz")]) == 2
    assert _cli("verify", str(wacz)).returncode == 0
