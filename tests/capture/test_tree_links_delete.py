"""Removing a tree's files by their recorded paths, written as the attacks: a tree from elsewhere
whose page folder is a symbolic link to another folder. Before, ``capture --no-resume`` (which
deletes the previous capture's files) deleted the files of that other folder named as the tree's
records are, and a re-capture deleted there the pages gone from the site; now a file behind a folder
that links out of the tree is not the tree's, and is left alone (``tree.own_parent``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from tests.search.test_cli_search import run


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "site"
    (root / "gone").mkdir(parents=True)
    (root / "index.html").write_text("<html><body><a href='gone/x.html'>x</a><a href='b.html'>b</a>")
    (root / "b.html").write_text("<p>b</p>")
    (root / "gone" / "x.html").write_text("<p>x</p>")
    with FixtureServer(FixtureConfig(root=root, robots=None)) as server:
        yield server.url, root


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x.html").write_text("someone's own x.html")
    return victim


def test_no_resume_leaves_the_files_behind_a_linked_folder(site: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = site
    out = tmp_path / "out"
    assert run("capture", url, "-o", str(out), "--no-render", "--delay", "0").returncode == 0
    victim = _victim(tmp_path)
    shutil.rmtree(out / "gone")
    (out / "gone").symlink_to(victim)
    run("capture", url, "-o", str(out), "--no-render", "--delay", "0", "--no-resume")
    assert (victim / "x.html").read_text() == "someone's own x.html"  # before: deleted


def test_a_recapture_leaves_the_files_behind_a_linked_folder(site: tuple[str, Path], tmp_path: Path) -> None:
    url, root = site
    out = tmp_path / "out"
    assert run("capture", url, "-o", str(out), "--no-render", "--delay", "0").returncode == 0
    shutil.rmtree(root / "gone")  # the page is gone from the site: a re-capture takes it out of the tree
    (root / "index.html").write_text("<html><body><a href='b.html'>b</a></body></html>")
    victim = _victim(tmp_path)
    shutil.rmtree(out / "gone")
    (out / "gone").symlink_to(victim)
    done = run("capture", url, "-o", str(out), "--no-render", "--delay", "0", "--new-version")
    assert done.returncode == 0, done.stderr
    assert (victim / "x.html").read_text() == "someone's own x.html"  # before: deleted
