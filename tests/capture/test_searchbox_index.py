"""Capture ships the search page (formats/tree.md §9.4): a run that ends builds ``_archiver/search/``
with the bytes ``archiver index`` writes; a run stopped by a signal leaves none (never half of one);
the resumed run builds it; ``--no-search-index`` leaves it out."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.search import store

ROOT = Path(__file__).resolve().parents[2]


def _index_files(tree: Path) -> dict[str, bytes]:
    folder = tree / store.INDEX_DIR
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_interrupted_run_has_no_index_and_the_resumed_run_builds_the_one_archiver_index_builds(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "archiver", "capture", "", "-o", str(out), "--no-render", "--search-index"]
    argv += ["--depth", "10", "--delay", "0"]
    with FixtureServer(FixtureConfig(latency=0.02)) as server:
        argv[4] = server.url
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        manifest = out / "_archiver" / "manifest.jsonl"
        deadline = time.monotonic() + 120
        while not (manifest.exists() and len(manifest.read_bytes().splitlines()) > 10):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert not (out / store.INDEX_DIR).exists()
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
    built = _index_files(out)
    assert "index.html" in built and "manifest.js" in built
    again = tmp_path / "again"
    shutil.copytree(out, again, symlinks=True)
    shutil.rmtree(again / store.INDEX_DIR)
    store.write_index(again)
    assert _index_files(again) == built  # the same files, byte for byte
    assert (
        not any((out / "_archiver" / "tmp").glob("search-*"))
        if (out / "_archiver" / "tmp").exists()
        else True
    )


def test_no_search_index_leaves_it_out_and_a_resume_builds_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with FixtureServer() as server:
        capture([server.url], out, render=False, depth=1, delay=0, progress=False, search_index=False)
        assert not (out / store.INDEX_DIR).exists()
        capture([server.url], out, render=False, depth=1, delay=0, progress=False)  # the default unrendered
        assert not (out / store.INDEX_DIR).exists()
        capture([server.url], out, render=False, depth=1, delay=0, progress=False, search_index=True)
    built = _index_files(out)  # the resumed run (which had nothing left to fetch) built it
    assert "manifest.js" in built and "index.html" in built
    _manifest, pages, _ = store.write_index(out)
    assert pages > 1 and _index_files(out) == built
