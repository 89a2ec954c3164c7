"""kill -9 at three random moments of a capture, resume each time: the final tree and manifest are
those of an uninterrupted capture (file hashes and records compared; only times differ)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import is_private

from .conftest import Captured

SCRIPT = """
import sys
from pathlib import Path
from archiver.capture import capture
capture([sys.argv[1]], Path(sys.argv[2]), render=False, depth=10, delay=0, progress=False)
"""
ROOT = Path(__file__).resolve().parents[2]


def _files(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not is_private(rel) and rel != "_archiver/manifest.jsonl":  # the run's own files
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _manifest(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = (root / "_archiver/manifest.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header.pop("created")
    records = [json.loads(line) for line in lines[1:]]
    for r in records:
        r.pop("fetched", None)
        # of URLs sharing one file the one met first is fetched and listed first, which depends on
        # timing (tree.md §11): the same URLs must be listed; the referrer names none by timing (§8)
        r["urls"] = sorted(r["urls"])
    return header, records


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _pending(out: Path) -> int:
    db = sqlite3.connect(out / "_archiver/crawl.sqlite")
    try:
        return int(db.execute("SELECT COUNT(*) FROM urls WHERE state = 'pending'").fetchone()[0])
    finally:
        db.close()


def test_kill_9_three_times_then_resume(tmp_path: Path) -> None:
    seed = int(os.environ.get("ARCHIVER_KILL_SEED", "2026"))
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FixtureServer(FixtureConfig(latency=0.01)) as server:
        reference = tmp_path / "reference"
        capture([server.url], reference, render=False, depth=10, delay=0, progress=False)
        total = _lines(reference / "_archiver/manifest.jsonl")
        out = tmp_path / "killed"
        manifest = out / "_archiver/manifest.jsonl"
        moments = sorted(rng.sample(range(5, total - 10), 3))  # manifest lines written before each kill
        for moment in moments:
            proc = subprocess.Popen([sys.executable, "-c", SCRIPT, server.url, str(out)], env=env, cwd=ROOT)
            deadline = time.monotonic() + 120
            while _lines(manifest) < moment and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            assert proc.poll() is None, f"the capture ended before line {moment} (seed {seed})"
            proc.kill()  # SIGKILL: no clean-up of any kind
            proc.wait()
            assert _pending(out) > 0  # it really stopped mid-crawl
        header = json.loads(manifest.read_text(encoding="utf-8").splitlines()[0])
        assert header["options"]["incomplete"] is True
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, server.url, str(out)], env=env, cwd=ROOT, timeout=300
        )
        assert done.returncode == 0
    assert _pending(out) == 0
    assert _files(out) == _files(reference)
    assert _manifest(out) == _manifest(reference)


RENDERED = """
import sys
from pathlib import Path
from archiver.capture import capture
capture([sys.argv[1]], Path(sys.argv[2]), render=True, depth=10, delay=0, tabs=3, progress=False)
"""


@pytest.mark.browser
def test_kill_9_a_rendered_capture_twice_then_resume(tmp_path: Path, rendered: Captured) -> None:
    # the whole process group (the capture and its Chromium) killed mid-crawl, twice; the resumed
    # tree and manifest equal an uninterrupted rendered capture's (the session's reference)
    seed = int(os.environ.get("ARCHIVER_KILL_SEED", "2026"))
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    url = rendered.server.url
    total = _lines(rendered.out / "_archiver/manifest.jsonl")
    out = tmp_path / "killed"
    manifest = out / "_archiver/manifest.jsonl"
    for moment in sorted(rng.sample(range(5, total - 10), 2)):
        proc = subprocess.Popen(
            [sys.executable, "-c", RENDERED, url, str(out)], env=env, cwd=ROOT, start_new_session=True
        )
        deadline = time.monotonic() + 180
        while _lines(manifest) < moment and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.poll() is None, f"the capture ended before line {moment} (seed {seed})"
        os.killpg(proc.pid, signal.SIGKILL)  # SIGKILL to the capture and its browser at once
        proc.wait()
        assert _pending(out) > 0
    done = subprocess.run([sys.executable, "-c", RENDERED, url, str(out)], env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0
    assert _pending(out) == 0
    got, want = _files(out), _files(rendered.out)
    assert sorted(p for p in got.keys() | want.keys() if got.get(p) != want.get(p)) == []
    assert _manifest(out) == _manifest(rendered.out)
