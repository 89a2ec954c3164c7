"""pywb replays the WARCs that ``capture --warc`` writes (issue 16 §5): ``wb-manager add`` indexes them
and ``wayback`` answers every stored page's URL from them, byte for byte as the server sent it (the
``id_`` modifier: no rewriting), with the fixture server stopped. pywb lives in ``.venv-pywb`` (see
test_import_pywb.py); without it the test is skipped and says why."""

from __future__ import annotations

import hashlib
import subprocess
import urllib.request
from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.fixture import FixtureServer
from archiver.tree import read_records
from tests.warc.test_import_pywb import _free_port, _pywb_bin, _wait_for


def test_pywb_replays_our_warcs(tmp_path: Path) -> None:
    pywb = _pywb_bin()
    if pywb is None:
        pytest.skip("pywb not installed: `bash tools/bootstrap test` makes .venv-pywb (or set ARCHIVER_PYWB)")
    out = tmp_path / "tree"
    with FixtureServer() as server:
        capture([server.url], out, render=False, depth=10, delay=0, warc=True, progress=False)
        live = {}
        for record in read_records(out):
            if record.kind == "page" and record.status == 200 and record.title != "Moved":
                with urllib.request.urlopen(record.urls[0], timeout=10) as r:
                    live[record.urls[0]] = hashlib.sha256(r.read()).hexdigest()
    assert len(live) >= 30
    work = tmp_path / "pywb"
    work.mkdir()
    subprocess.run(
        [pywb / "wb-manager", "init", "ours"], cwd=work, check=True, capture_output=True, timeout=60
    )
    warcs = sorted((out / "_archiver/warc").glob("*.warc.gz"))
    subprocess.run(
        [pywb / "wb-manager", "add", "ours", *map(str, warcs)],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=120,
    )
    port = _free_port()
    proc = subprocess.Popen(
        [pywb / "wayback", "-p", str(port)], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(port, proc)
        replayed = {}
        for url in live:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ours/id_/{url}", timeout=30) as r:
                assert r.status == 200, url
                replayed[url] = hashlib.sha256(r.read()).hexdigest()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
    assert replayed == live
