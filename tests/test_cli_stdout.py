"""A standard output that refuses the command's lines: one error line or a silent end, never a traceback.

Before (dab4b1c): ``archiver ls X > /dev/full`` (or ``verify``, ``map``, ``index``, ``pack --json``)
ended in a traceback of ``print``'s OSError, exit 70, and a second ``Exception ignored`` at the
interpreter's exit (120); a listing cut by a closed pipe (``| head -1``) with stdout buffered (no
``PYTHONUNBUFFERED``) printed ``Exception ignored … BrokenPipeError`` and exited 120. Now
(archiver/cli/stdout.py): ``archiver: stdout: no space left on device``, exit 1; a closed pipe ends
the command silently with 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"


def _env(buffered: bool) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stdout") / "mini.gwtar.html"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(MINI), "--format", "gwtar", "-o", str(out)],
        env=_env(True), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("buffered", [True, False])
@pytest.mark.parametrize("command", ["ls", "ls --json", "verify", "map"])
def test_a_full_stdout_is_one_line(packed: Path, command: str, buffered: bool) -> None:
    words = command.split()
    args = ["map", "http://a.test/x"] if words == ["map"] else [words[0], str(packed), *words[1:]]
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "archiver", *args], stdout=full, stderr=subprocess.PIPE, text=True,
            env=_env(buffered), timeout=120,
        )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, "archiver: stdout: no space left on device\n"), done.stderr


@pytest.mark.parametrize("buffered", [True, False])
@pytest.mark.parametrize("command", ["map", "verify"])
def test_a_closed_pipe_ends_the_command_silently(packed: Path, command: str, buffered: bool) -> None:
    """``map`` prints 3,000 lines (~400 KB, more than a pipe holds); ``verify`` 40 archives, a line
    each, flushed line by line (the flush refused left its line for the exit's flush: exit 120)."""
    if command == "map":
        args = ["map", *(f"http://a.test/{i}/{'x' * 60}" for i in range(3000))]
    else:
        copies = [packed.with_name(f"c{i}.gwtar.html") for i in range(40)]
        for c in copies:
            if not c.exists():
                os.link(packed, c)
        args = ["verify", "--no-links", *map(str, copies)]
    with subprocess.Popen(
        [sys.executable, "-m", "archiver", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=_env(buffered),
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        proc.stdout.close()  # as `head -1` does
        err = proc.stderr.read()
        code = proc.wait(timeout=120)
    assert first.endswith(
        b"x" * 60 + b"\n" if command == "map" else b"c0.gwtar.html: OK (15 members; archiver extension 1)\n"
    ), first
    assert (code, err) == (0, b""), err.decode()


def test_a_command_whose_stdout_is_fine_prints_it_all(packed: Path, tmp_path: Path) -> None:
    for buffered in (True, False):
        out = tmp_path / f"ls-{buffered}.txt"
        with out.open("w") as f:
            done = subprocess.run(
                [sys.executable, "-m", "archiver", "ls", str(packed)], stdout=f, stderr=subprocess.PIPE,
                env=_env(buffered), timeout=120,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "index.html" in out.read_text()
