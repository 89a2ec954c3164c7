"""archiver.capture.interrupt: with ``terminate`` (every capture), SIGTERM and SIGHUP cancel the
capture's main task as Ctrl-C does, its clean-up runs, and the run ends in KeyboardInterrupt (the
CLI's exit 130); without it the handlers are left as they are. And the whole command: a
single-process ``archiver capture`` stopped by SIGTERM or SIGHUP exits 130 with its tree finalized
as an interrupted run (manifest marked incomplete, nothing temporary left), and a resume finishes
the same tree an uninterrupted capture writes."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from archiver.capture import capture, interrupt
from archiver.capture.state import Row, State
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records


@pytest.fixture(autouse=True)
def _default_stop_signals() -> Any:
    """SIGTERM and SIGHUP at their default disposition, as a terminal gives them: a run started under
    ``nohup`` inherits SIGHUP ignored, and archiver then leaves it ignored (interrupt.run)."""
    old = {s: signal.signal(s, signal.SIG_DFL) for s in interrupt.STOP_SIGNALS}
    yield
    for s, handler in old.items():
        signal.signal(s, handler)


def _default_signals_in_child() -> None:
    for s in interrupt.STOP_SIGNALS:
        signal.signal(s, signal.SIG_DFL)


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_cancels_the_run_after_its_clean_up(sig: signal.Signals) -> None:
    steps: list[str] = []

    async def main() -> str:
        try:
            os.kill(os.getpid(), sig)
            await asyncio.sleep(30)
            return "not interrupted"
        finally:
            await asyncio.sleep(0)  # the clean-up may still await (cancel tasks, close the browser)
            steps.append("clean-up ran")

    with pytest.raises(KeyboardInterrupt, match=sig.name):
        interrupt.run(main(), terminate=True)
    assert steps == ["clean-up ran"]
    assert signal.getsignal(sig) == signal.SIG_DFL  # given back


def test_a_second_signal_during_the_clean_up_stops_at_once() -> None:
    steps: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("not reached")

    with pytest.raises(KeyboardInterrupt):
        interrupt.run(main(), terminate=True)
    assert steps == []


def test_without_terminate_or_when_ignored_the_handlers_stay() -> None:
    async def handler() -> object:
        return signal.getsignal(signal.SIGTERM)

    assert interrupt.run(handler(), terminate=False) == signal.SIG_DFL
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
    try:

        async def main() -> str:
            os.kill(os.getpid(), signal.SIGHUP)
            await asyncio.sleep(0.05)
            return "ran to the end"

        assert interrupt.run(main(), terminate=True) == "ran to the end"
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and "_archiver" not in p.relative_to(root).parts
    }


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_single_process_capture_stopped_by_a_signal_exits_130_and_resumes(
    sig: signal.Signals, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FixtureServer(FixtureConfig(latency=0.02)) as server:
        reference = tmp_path / "reference"
        capture([server.url], reference, render=False, depth=10, delay=0, progress=False)
        out = tmp_path / "out"
        argv = [sys.executable, "-m", "archiver", "capture", server.url, "-o", str(out), "--no-render"]
        argv += ["--depth", "10", "--delay", "0"]
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_default_signals_in_child,
        )
        manifest = out / "_archiver" / "manifest.jsonl"
        deadline = time.monotonic() + 120
        while not (manifest.exists() and len(manifest.read_bytes().splitlines()) > 10):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        lines = stderr.decode().strip().splitlines()
        assert proc.returncode == 130 and lines[-1] == "archiver: interrupted", stderr
        assert "Traceback" not in stderr.decode()
        header = json.loads(manifest.read_text(encoding="utf-8").splitlines()[0])
        assert header["options"]["incomplete"] is True
        assert not (out / "_archiver" / "tmp").exists() or not any((out / "_archiver" / "tmp").iterdir())
        assert len(_files(out)) < len(_files(reference))
        done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, timeout=300, check=False)
        assert done.returncode == 0, done.stderr
    assert _files(out) == _files(reference)


def _options(out: Path) -> dict[str, Any]:
    manifest = out / "_archiver" / "manifest.jsonl"
    return dict(json.loads(manifest.read_text(encoding="utf-8").splitlines()[0])["options"])


def test_an_interrupt_while_the_depths_settle_leaves_an_incomplete_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frontier is empty and the end of the crawl settles the depths (one transaction) when
    Ctrl-C comes: nothing is pending, yet the run did not end. Its manifest is marked incomplete
    (it said complete, with depths left unsettled and no resume to settle them), and the resume
    settles and finishes: the tree of an uninterrupted run, its records' depths included."""
    settle = State.settle_depths
    calls: list[int | None] = []

    def interrupted(self: State, max_depth: int | None = None) -> list[Row]:
        calls.append(max_depth)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return settle(self, max_depth)

    with FixtureServer() as server:
        kwargs: dict[str, Any] = {"render": False, "depth": 3, "delay": 0, "progress": False}
        capture([server.url], tmp_path / "reference", **kwargs)
        out = tmp_path / "out"
        monkeypatch.setattr(State, "settle_depths", interrupted)
        with pytest.raises(KeyboardInterrupt):
            capture([server.url], out, **kwargs)
        assert _options(out)["incomplete"] is True
        report = capture([server.url], out, **kwargs)
    assert report.complete and len(calls) >= 2
    assert "incomplete" not in _options(out)
    assert _files(out) == _files(tmp_path / "reference")
    depth = {r.path: (r.depth, r.referrer) for r in read_records(out)}
    assert depth == {r.path: (r.depth, r.referrer) for r in read_records(tmp_path / "reference")}


def test_under_the_commands_own_handler_a_stop_signal_still_cancels_in_order() -> None:
    """The CLI holds SIGTERM and SIGHUP as Ctrl-C for the whole command (archiver.cli); a capture's
    loop puts its orderly stop in place of it (the task cancelled at an await, its clean-up run),
    where before it kept the CLI's, which raised KeyboardInterrupt wherever the signal landed (an
    import stopped so left a spooled body in _archiver/tmp: random-signal stress, 7 runs of 24)."""
    from archiver.cli import _signals_interrupt

    steps: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            steps.append("cancelled")
            raise

    with _signals_interrupt():
        commands = signal.getsignal(signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            interrupt.run(main(), terminate=True)
        assert signal.getsignal(signal.SIGTERM) is commands  # given back
    assert steps == ["cancelled"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
