"""A capture whose output cannot be written stops with one line and exit 1, and resumes later.

Written as the attacks, on a real 1 MiB tmpfs (we run as root; elsewhere RLIMIT_FSIZE stands in, as
in tests/gwtar/test_hostile_disk.py). Before: a capture filling its disk ended in a traceback (exit 70:
the manifest's temporary file refused); a body over the spool limit on a full disk was retried and
reported as a "network error" (exit 3, "run again to retry"); a page folder of the tree linked out of
it failed its pages as "internal error: archiver.errors.FormatError" with exit 3. Now each is a
StoreError: ``archiver: OUT: WHAT; the capture stopped, keeping what it stored (run the same command
again to resume)``, exit 1, no temporary file left, and the same command on a disk with room ends
the capture: the tree verifies and holds every page."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records
from tests.gwtar.test_hostile_disk import LIMIT, SmallDisk, small_disk  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parents[2]
PAGES = 40
STOPPED = "; the capture stopped, keeping what it stored (run the same command again to resume)"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("fullsite")
    (root / "p").mkdir()
    links = "".join(f"<a href='p/{i}.html'>{i}</a>" for i in range(PAGES))
    (root / "index.html").write_text(f"<html><body>{links}<img src='big.bin'></body></html>")
    for i in range(PAGES):  # 40 pages of 40 KB: more than the disk holds
        (root / "p" / f"{i}.html").write_text(f"<html><body><p>{i} {'w' * 40_000}</p></body></html>")
    (root / "big.bin").write_bytes(os.urandom(LIMIT + (LIMIT >> 1)))  # spooled (> 1 MiB)
    with FixtureServer(FixtureConfig(root=root, robots=None)) as server:
        yield server.url


def _capture(out: Path, url: str, disk: SmallDisk | None, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["capture", url, "-o", str(out), "--no-render", "--delay", "0", *extra]
    if disk is not None:
        return disk.run(*args, cwd=out.parent)
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def _stopped(done: subprocess.CompletedProcess[str], out: Path) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith(f"archiver: {out}: "), line
    assert line.endswith(STOPPED), line


def test_a_full_disk_stops_the_capture_with_one_line_and_the_same_command_resumes_it(
    site: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    disk: SmallDisk = request.getfixturevalue("small_disk")
    out = disk.path / "out"
    done = _capture(out, site, disk)
    _stopped(done, out)
    assert any(w in done.stderr for w in ("no space left on device", "disk is full", "file too large"))
    tmp = out / "_archiver" / "tmp"
    assert not tmp.exists() or not any(tmp.iterdir())  # no write, spool or index file of the run left
    # room again: the tree moves to a disk with room (the same files), the same command ends it
    moved = Path(shutil.copytree(out, tmp_path / "out", symlinks=True))
    again = _capture(moved, site, None)
    assert again.returncode == 0, again.stderr
    paths = {r.path for r in read_records(moved)}
    assert {f"p/{i}.html" for i in range(PAGES)} <= paths and any(p.endswith("/big.bin") for p in paths)
    check = subprocess.run(
        [sys.executable, "-m", "archiver", "verify", str(moved)], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_large_body_on_a_full_disk_is_no_network_error(site: str, request: pytest.FixtureRequest) -> None:
    """Only the home page and the 1.5 MiB image (spooled to a temporary file past 1 MiB): the disk
    refuses the spool. Before: retried, then "network error: [Errno 28] …", exit 3."""
    disk: SmallDisk = request.getfixturevalue("small_disk")
    out = disk.path / "out"
    done = _capture(out, site, disk, "--depth", "0")
    _stopped(done, out)
    assert "network" not in done.stderr


def test_a_page_folder_linked_out_of_the_tree_stops_the_capture(site: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _capture(out, site, None).returncode == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    shutil.rmtree(out / "p")
    (out / "p").symlink_to(victim)
    done = _capture(out, site, None, "--new-version")
    _stopped(done, out)
    assert f"{out}/p: is a symbolic link, not a folder of the tree: refused;" in done.stderr
    assert list(victim.iterdir()) == []
