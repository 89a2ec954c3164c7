"""A signal that lands anywhere while ``pack --format gwtar`` runs is an interruption (exit 130,
"archiver: interrupted", nothing left beside the output), never an internal error, a hang or a
folder left behind.

Found by a random-signal stress of `pack` (SIGINT, SIGTERM or SIGHUP at a random moment, 40-60
runs each): the body writer, whose hashing and writeback threads the main thread feeds through a
queue and an event, once hung for good (the main thread joining the hasher, which waited on an empty
queue: a KeyboardInterrupt raised while the main thread took a condition's lock back leaves the lock
released by a thread that did not hold it), and ended in "RuntimeError: release unlocked lock"
(exit 70) when the signal came as the threads started; the search page's temporary folder, made
before the writer's interruptible block, was left behind by a SIGTERM that killed the process; and
the PAR2 engine's folder stayed when its engine, killed, had not yet exited. Here each spot is hit
on purpose: the process signals itself from inside ``threading.Condition`` as the body's threads
start (in process), and from the search page's making (a separate process: before the fix SIGTERM
killed it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from archiver import gwtar, safefs
from archiver.gwtar import body

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
ROOT = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> Path:
    root.mkdir()
    for n in range(20):
        (root / f"p{n}.html").write_text(f"<!DOCTYPE html><title>Page {n}</title><p>{'word ' * 200}{n}</p>")
    (root / "index.html").write_text("<!DOCTYPE html><title>Home</title><a href='p1.html'>one</a>")
    (root / "big.bin").write_bytes(os.urandom(3 << 20))  # copied by the kernel, hashed by the thread
    return root


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    return seen


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_as_the_writer_threads_start_interrupts_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unraisable: list[str], sig: signal.Signals
) -> None:
    """The signal arrives as the main thread takes back a condition's lock, waiting for the hashing
    thread to start: raised there (before), the condition's lock was released twice and pack ended
    in RuntimeError, an internal error."""
    src = _tree(tmp_path / "tree")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    armed: list[bool] = []
    real_restore = threading.Condition._acquire_restore  # type: ignore[attr-defined]
    real_start = body._Hasher.start

    def restore(self: threading.Condition, state: Any) -> None:
        if armed and threading.current_thread() is threading.main_thread():
            armed.clear()
            os.kill(os.getpid(), sig)
        real_restore(self, state)

    def start(self: body._Hasher) -> None:
        armed.append(True)
        real_start(self)

    monkeypatch.setattr(threading.Condition, "_acquire_restore", restore)
    monkeypatch.setattr(body._Hasher, "start", start)
    with pytest.raises(KeyboardInterrupt, match=sig.name), safefs.interruptible():
        gwtar.pack(src, out_dir / "a.gwtar.html")
    assert not armed  # the signal was sent
    assert list(out_dir.iterdir()) == []
    assert unraisable == []
    assert not [t.name for t in threading.enumerate() if t.name.startswith("gwtar-")]  # threads ended


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_while_the_search_page_is_made_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    """`pack --search-index` makes the index and search page in a temporary folder beside the output
    before writing: a signal then (SIGTERM before the fix: the process was killed with the folder
    left) ends the run as an interruption, the folder removed."""
    src = _tree(tmp_path / "tree")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    script = (
        "import os, signal, sys\n"
        "from archiver.gwtar import write\n"
        "real = write.add_search_index\n"
        "def trap(*a, **k):\n"
        f"    os.kill(os.getpid(), {int(sig)})\n"
        "    return real(*a, **k)\n"
        "write.add_search_index = trap\n"
        "from archiver.cli import entry\n"
        "sys.argv = ['archiver', *sys.argv[1:]]\n"
        "sys.exit(entry())\n"
    )
    argv = [str(src), "--format", "gwtar", "--search-index", "-o", str(out_dir / "a.gwtar.html")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", script, "pack", *argv], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 130, (done.returncode, done.stderr[-2000:])
    assert done.stderr.strip().splitlines()[-1] == "archiver: interrupted"
    assert "Traceback" not in done.stderr
    assert list(out_dir.iterdir()) == []


def test_the_signal_blocks_leave_an_ignored_signal_ignored() -> None:
    """``nohup``: SIGHUP ignored stays ignored inside interruptible and deferred blocks."""
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with safefs.interruptible():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) != signal.SIG_DFL
            with safefs.deferred():
                assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
                os.kill(os.getpid(), signal.SIGHUP)
                safefs.checkpoint()
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)
