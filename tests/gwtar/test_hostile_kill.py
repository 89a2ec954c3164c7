"""A killed ``pack`` (issue 14 point 7): SIGTERM or SIGHUP in the middle leaves no file at the output
path and no temporary file (exit 130, one line); after ``kill -9`` the temporary file stays, is
recognisable as that run's (``.OUT.archiver-tmp-PID-RAND``), and the next pack to the same output
removes it. The pack runs as a real subprocess on a tree big enough to take a moment; the signal goes
as soon as its temporary file appears."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def make_tree(root: Path, files: int, big: int = 0) -> Path:
    """A tree of ``files`` small files, and one sparse file of ``big`` bytes (reads as zeros, costs
    no disk) that keeps the writer busy for a moment."""
    (root / "a").mkdir(parents=True)
    (root / "index.html").write_text('<html lang="en"><title>x</title><body>hi</body></html>')
    for i in range(files):
        (root / "a" / f"f{i}.txt").write_bytes(b"%d" % i * 40)
    if big:
        with (root / "big.bin").open("wb") as f:
            f.truncate(big)
    return root


def temps(out: Path) -> list[str]:
    """The hidden files beside ``out`` that start with its name (any temporary file of that output)."""
    return sorted(n for n in os.listdir(out.parent) if n.startswith(f".{out.name}."))


Run = tuple[subprocess.CompletedProcess[str], int]


def start_and_signal(args: list[str], out: Path, sig: signal.Signals) -> Run | None:
    """Run ``archiver ARGS``; send ``sig`` once its temporary file shows; the result and the pid.
    None when it finished first."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", *args],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60  # a bound, not a timing assertion
    while proc.poll() is None and not temps(out) and time.monotonic() < deadline:
        time.sleep(0.002)
    if proc.poll() is not None:
        proc.communicate()
        return None
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), proc.pid


def killed(tmp_path: Path, fmt: str, sig: signal.Signals) -> tuple[Path, Path, Run]:
    tree = tmp_path / "tree"
    for big in (96 << 20, 384 << 20):  # bigger until the signal lands mid-run
        if tree.exists():
            shutil.rmtree(tree)
        make_tree(tree, 200, big)
        out = tmp_path / "outdir" / f"site.{fmt}"
        out.parent.mkdir(exist_ok=True)
        for p in out.parent.iterdir():
            p.unlink()
        done = start_and_signal(["pack", str(tree), "--format", fmt, "-o", str(out)], out, sig)
        if done is not None:
            return tree, out, done
    pytest.fail("pack always finished before the signal could land")


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_pack_stopped_by_a_signal_leaves_nothing(tmp_path: Path, fmt: str, sig: signal.Signals) -> None:
    _, out, (done, _) = killed(tmp_path, fmt, sig)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "archiver: interrupted"
    assert not os.path.lexists(out)
    assert os.listdir(out.parent) == []


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
def test_the_next_pack_removes_what_kill_9_left(tmp_path: Path, fmt: str) -> None:
    tree, out, (done, pid) = killed(tmp_path, fmt, signal.SIGKILL)
    assert done.returncode == -signal.SIGKILL
    assert not os.path.lexists(out)
    left = temps(out)
    assert left and all(n.startswith(f".{out.name}.archiver-tmp-{pid}-") for n in left)
    other = out.parent / ".other.zim.archiver-tmp-1-dead"  # another output's: not ours to remove
    other.write_bytes(b"x")
    again = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(tree), "--format", fmt, "-o", str(out)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert sorted(os.listdir(out.parent)) == sorted([out.name, other.name])


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("many")
    archive = base / "site.gwtar.html"
    packed = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(make_tree(base / "tree", 3000)), "--format", "gwtar",
         "-o", str(archive)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    return archive


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_extract_stopped_by_a_signal_leaves_dir_as_it_was(
    tmp_path: Path, many_files: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "outdir" / "out"
    out.parent.mkdir()
    run = start_and_signal(["extract", str(many_files), "-o", str(out)], out, sig)
    assert run is not None, "extract finished before the signal"
    done, _ = run
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "archiver: interrupted" and "Traceback" not in done.stderr
    assert os.listdir(out.parent) == []


@pytest.mark.parametrize("existing", [False, True])
def test_the_next_extract_removes_what_kill_9_left(tmp_path: Path, many_files: Path, existing: bool) -> None:
    out = tmp_path / "outdir" / "out"
    out.parent.mkdir()
    if existing:
        out.mkdir()  # staging goes inside it

    def staged() -> list[str]:
        inside = [n for n in os.listdir(out) if n.startswith(".archiver-tmp-")] if existing else []
        return inside + temps(out)

    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "extract", str(many_files), "-o", str(out)], env=ENV,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60  # a bound, not a timing assertion
    while proc.poll() is None and not staged() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert proc.poll() is None, "extract finished before the signal"
    proc.kill()
    proc.wait(timeout=60)
    left = staged()
    assert left and all(f"archiver-tmp-{proc.pid}-" in n for n in left)
    again = subprocess.run(
        [sys.executable, "-m", "archiver", "extract", str(many_files), "-o", str(out)],
        env=ENV, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert os.listdir(out.parent) == ["out"] and staged() == []
    assert (out / "index.html").is_file()
