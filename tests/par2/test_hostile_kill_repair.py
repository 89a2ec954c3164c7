"""A killed ``repair`` (issue 14 point 7): SIGTERM or SIGHUP while par2 works leaves no file at the
output path and no temporary folder (exit 130, par2 stopped too); after ``kill -9`` of the whole job
the next repair to the same output removes what was left and succeeds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gwtar.test_hostile_kill import ENV, temps


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A damaged FEC'd gwtar (repair -o never changes it, so the tests share it)."""
    tmp_path = tmp_path_factory.mktemp("damaged")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "index.html").write_text('<html lang="en"><title>x</title><body>hi</body></html>')
    (tree / "big.bin").write_bytes(os.urandom(48 << 20))
    archive = tmp_path / "site.gwtar.html"
    packed = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(tree), "--format", "gwtar", "--add-fec-data", "-o",
         str(archive)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    with archive.open("r+b") as f:
        for at in range(1 << 20, 40 << 20, 4 << 20):  # one byte in each of several slices
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0xFF]))
    return archive


def _repair_signalled(archive: Path, out: Path, sig: signal.Signals) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "repair", str(archive), "-o", str(out)],
        env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60  # a bound, not a timing assertion
    while proc.poll() is None and not temps(out) and time.monotonic() < deadline:
        time.sleep(0.002)
    assert proc.poll() is None, "repair finished before the signal"
    if sig == signal.SIGKILL:
        os.killpg(proc.pid, signal.SIGKILL)  # kill -9 of the job: archiver and its par2
    else:
        proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    return proc, stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_repair_stopped_by_a_signal_leaves_nothing(
    tmp_path: Path, damaged: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "outdir" / "fixed.gwtar.html"
    out.parent.mkdir()
    proc, stderr = _repair_signalled(damaged, out, sig)
    assert proc.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "archiver: interrupted" and "Traceback" not in stderr
    assert os.listdir(out.parent) == []


def test_the_next_repair_removes_what_kill_9_left(tmp_path: Path, damaged: Path) -> None:
    out = tmp_path / "outdir" / "fixed.gwtar.html"
    out.parent.mkdir()
    proc, _ = _repair_signalled(damaged, out, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.lexists(out) and temps(out)
    again = subprocess.run(
        [sys.executable, "-m", "archiver", "repair", str(damaged), "-o", str(out)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert os.listdir(out.parent) == [out.name]
