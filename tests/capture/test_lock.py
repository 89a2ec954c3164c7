"""One capture at a time per folder: a second run on a folder whose capture is running is refused
with one line (exit 2), ``--no-resume`` does not delete the running capture's files, and the lock
goes with the process however it ends (kill -9 included), so the next run resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archiver import cli
from archiver.fixture import FixtureConfig, FixtureServer

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_run_on_a_running_capture_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(latency=0.05)) as server:
        first = subprocess.Popen(
            [sys.executable, "-m", "archiver", "capture", server.url, "-o", str(out), "--no-render",
             "--delay", "0.3", "--depth", "10"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            manifest = out / "_archiver/manifest.jsonl"
            while (
                not manifest.is_file() or manifest.read_text().count("\n") < 3
            ) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert first.poll() is None, "the first capture ended too soon"
            before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
            for extra in ([], ["--no-resume"]):
                code = cli.main(["capture", server.url, "-o", str(out), "--no-render", *extra])
                err = capsys.readouterr().err
                assert (
                    code == 2 and "another capture is running in this folder" in err and err.count("\n") == 1
                )
            after = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
            assert set(before) <= set(after)  # nothing of the running capture deleted
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            # the lock went with the killed process: the next run resumes and finishes
            assert (
                cli.main(
                    ["capture", server.url, "-o", str(out), "--no-render", "--delay", "0", "--depth", "10"]
                )
                == 0
            )
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait()
