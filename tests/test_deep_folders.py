"""Making and removing folders nested thousands deep, written as the attack. ``os.makedirs`` and
``Path.mkdir(parents=True)`` recurse once a missing level, ``shutil.rmtree`` once a level below: a
site linking a page 1,200 folders deep lost it at every capture ("internal error: RecursionError",
run again: the same), and an ``extract`` that failed after writing such a member ended in a
RecursionError traceback (exit 70) leaving its half-written staging folder beside the target. Now
:func:`archiver.walk.makedirs` and :func:`archiver.walk.rmtree` loop, and every writer of paths from
elsewhere uses them (tree, capture, WARC import, merge, versions, extract's staging)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from archiver.gwtar.read import GwtarReader
from archiver.walk import makedirs, rmtree

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 1200  # 2,400 characters of path: under PATH_MAX, over the recursion limit
DEEP = "/".join(["a"] * DEPTH)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=cwd,
    )  # fmt: skip


def test_makedirs_makes_1500_levels_where_os_makedirs_cannot(tmp_path: Path) -> None:
    target = tmp_path / "/".join(["d"] * 1500)
    with pytest.raises(RecursionError):
        os.makedirs(target)
    makedirs(target)
    assert target.is_dir()
    makedirs(target)  # there already: nothing to do, as exist_ok=True
    rmtree(tmp_path / "d")
    assert not (tmp_path / "d").exists()


def test_makedirs_refuses_a_file_on_the_way(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(FileExistsError):
        makedirs(tmp_path / "f")
    with pytest.raises((FileExistsError, NotADirectoryError)):
        makedirs(tmp_path / "f" / "g")


def test_rmtree_removes_1500_levels_and_never_follows_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    top = tmp_path / "top"
    bottom = top / "/".join(["d"] * 1500)
    makedirs(bottom)
    (bottom / "x").write_text("x")
    (bottom / "link").symlink_to(outside)
    (top / "link").symlink_to(outside)
    rmtree(top)
    assert not top.exists()
    assert (outside / "keep.txt").read_text() == "mine"


@pytest.fixture(scope="module")
def deep_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = tmp_path_factory.mktemp("deep-site")
    (site / "index.html").write_text(
        f"<html><head><title>top</title></head><body><a href='{DEEP}/x.html'>deep</a>"
        " <a href='z.html'>z</a></body></html>"
    )
    (site / "z.html").write_text("<html><body>zzzz zzzz</body></html>")
    makedirs(site / DEEP)
    (site / DEEP / "x.html").write_text("<html><body>abyssal</body></html>")
    yield site
    rmtree(site / "a")


@pytest.fixture(scope="module")
def deep_capture(deep_site: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("deep-capture") / "tree"
    with FixtureServer(FixtureConfig(root=deep_site, robots=None)) as server:
        done = _cli("capture", server.url, "-o", str(out), "--no-render", "--delay", "0", "--warc")
    # before: "failed page …/x.html: internal error: RecursionError", exit 3, the page never stored
    assert done.returncode == 0 and "RecursionError" not in done.stdout + done.stderr, (
        done.stdout + done.stderr
    )
    yield out
    rmtree(out)


def test_a_capture_stores_a_page_1200_folders_deep(deep_capture: Path) -> None:
    assert (deep_capture / DEEP / "x.html").read_text().count("abyssal") == 1
    done = _cli("verify", str(deep_capture))
    assert done.returncode == 0, done.stdout


def test_a_warc_import_stores_the_page_1200_folders_deep(deep_capture: Path, tmp_path: Path) -> None:
    (warc,) = sorted((deep_capture / "_archiver" / "warc").glob("*.warc.gz"))
    out = tmp_path / "imported"
    done = _cli("capture", "--from-warc", str(warc), "-o", str(out))
    try:  # before: "failed page …/x.html", the page not imported
        assert done.returncode == 0 and "failed" not in done.stdout, done.stdout + done.stderr
        assert (out / DEEP / "x.html").read_text().count("abyssal") == 1
    finally:
        rmtree(out, ignore_errors=True)


def test_a_failed_extract_leaves_no_deep_staging_folder(deep_capture: Path, tmp_path: Path) -> None:
    packed = tmp_path / "deep.gwtar.html"
    assert _cli("pack", str(deep_capture), "-o", str(packed), "--format", "gwtar").returncode == 0
    data = bytearray(packed.read_bytes())
    (z,) = [m for m in GwtarReader(packed).members if m.path == "z.html"]  # after the deep page
    data[z.offset + 5] ^= 1
    packed.write_bytes(bytes(data))
    where = tmp_path / "into"
    where.mkdir()
    done = _cli("extract", str(packed), "-o", str(where / "out"), "--no-check")
    # before: RecursionError traceback, exit 70, and '.out.archiver-tmp-PID-…' left, 1,200 deep
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "member 'z.html'" in done.stderr and done.stderr.count("\n") == 1
    assert list(where.iterdir()) == []
