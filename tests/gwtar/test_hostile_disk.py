"""A full disk (issue 14 point 7): ``pack`` (gwtar and ZIM), ``extract`` (gwtar and ZIM) and ``repair``
writing onto a 1 MiB tmpfs give one error line and exit 1, never a traceback (exit 70), and leave
nothing on that disk: no output, no partial tree, no temporary file.

The small disk is a real tmpfs mounted for the test (we run as root here). Where mounting is not
allowed, the same limit comes from RLIMIT_FSIZE on the command's process (EFBIG instead of ENOSPC,
with SIGXFSZ ignored), so the test still runs the real command against a real refusal to write."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1 << 20


@dataclass
class SmallDisk:
    path: Path
    preexec: Callable[[], None] | None  # None: a real tmpfs (ENOSPC)

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run(
            [sys.executable, "-m", "archiver", *args], cwd=cwd, env=env, capture_output=True, text=True,
            timeout=120, preexec_fn=self.preexec,
        )  # fmt: skip

    def contents(self) -> list[str]:
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*"))


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={LIMIT}", "tmpfs", str(disk)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield SmallDisk(disk, None if mounted else _limit_file_size)
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=True)


@pytest.fixture
def big_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "index.html").write_text(
        '<html lang="en"><title>x</title><body>hi <a href="sub/b.html">b</a></body></html>'
    )
    (tree / "sub" / "b.html").write_text('<html lang="en"><title>b</title><body>b</body></html>')
    (tree / "sub" / "big.bin").write_bytes(os.urandom(3 * LIMIT))
    return tree


def _one_line(done: subprocess.CompletedProcess[str], disk: SmallDisk, *, par2: bool = False) -> None:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    # libzim's C++ side prints "ERROR Detected" on its own before its exception reaches Python
    noise = ("ERROR Detected", "Language defaults to eng")
    lines = [line for line in done.stderr.splitlines() if not any(n in line for n in noise)]
    assert len(lines) == 1 and lines[0].startswith("archiver: "), done.stderr
    if disk.preexec is None:
        assert "no space left on device" in lines[0]
    elif not par2:  # under RLIMIT_FSIZE the par2 child dies of SIGXFSZ: only "par2 failed" is known
        assert "file too large" in lines[0].lower()


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
def test_pack_onto_a_full_disk(tmp_path: Path, small_disk: SmallDisk, big_tree: Path, fmt: str) -> None:
    out = small_disk.path / f"site.{fmt}"
    _one_line(
        small_disk.run("pack", str(big_tree), "--format", fmt, "-o", str(out), cwd=tmp_path), small_disk
    )
    assert small_disk.contents() == []


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
def test_extract_onto_a_full_disk(tmp_path: Path, small_disk: SmallDisk, big_tree: Path, fmt: str) -> None:
    archive = tmp_path / f"site.{fmt}"
    packed = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(big_tree), "--format", fmt, "-o", str(archive)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    (small_disk.path / "out").mkdir()
    (small_disk.path / "out" / "keep.txt").write_text("mine")
    for target in (small_disk.path / "new", small_disk.path / "out"):
        done = small_disk.run("extract", str(archive), "-o", str(target), "--force", cwd=tmp_path)
        _one_line(done, small_disk)
        assert "while writing" in done.stderr
    assert small_disk.contents() == ["out", "out/keep.txt"]


def test_repair_onto_a_full_disk(tmp_path: Path, small_disk: SmallDisk, big_tree: Path) -> None:
    archive = tmp_path / "site.gwtar.html"
    packed = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(big_tree), "--format", "gwtar", "--add-fec-data",
         "-o", str(archive)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    data = bytearray(archive.read_bytes())
    data[len(data) // 3] ^= 0xFF
    archive.write_bytes(bytes(data))
    out = small_disk.path / "fixed.gwtar.html"
    _one_line(small_disk.run("repair", str(archive), "-o", str(out), cwd=tmp_path), small_disk, par2=True)
    assert small_disk.contents() == []
