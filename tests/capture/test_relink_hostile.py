"""Relinking a resumed tree's documents (capture/relink.py) when the tree came from elsewhere, written
as the attacks: the document the state says to relink replaced by bytes that are not UTF-8, by a sparse
file of a terabyte, or reached through a folder linked out of the tree. Before: a traceback (exit 70:
UnicodeDecodeError, MemoryError) at the end of the run, or that file read outside the tree. Now the
document is left as it is, and the run ends as usual."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from tests.search.test_cli_search import run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = tmp_path_factory.mktemp("relinksite")
    (site / "d").mkdir()
    (site / "index.html").write_text("<html><body><a href='d/p.html'>p</a></body></html>")
    (site / "d" / "p.html").write_text("<html><body><a href='../a.html'>a</a><a href='../b.html'>b</a>")
    (site / "a.html").write_text("<p>a</p>")
    (site / "b.html").write_text("<p>b</p>")
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        yield server.url


def _half(url: str, out: Path) -> None:
    """A capture to depth 1: d/p.html links to a.html and b.html as live URLs, which a run to depth
    2 then stores: d/p.html is relinked at its end."""
    done = run("capture", url, "-o", str(out), "--no-render", "--delay", "0", "--depth", "1")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["not-utf-8", "sparse-terabyte", "linked-folder"])
def test_a_hostile_document_to_relink_is_left_as_it_is(served: str, tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    _half(served, out)
    doc = out / "d" / "p.html"
    if kind == "not-utf-8":
        doc.write_bytes(b"<a href='../a.html'>\xff\xfe\xfd</a>")
    elif kind == "sparse-terabyte":
        os.truncate(doc, 1 << 40)
    else:
        elsewhere = tmp_path / "elsewhere"
        shutil.move(out / "d", elsewhere)
        (out / "d").symlink_to(elsewhere)
    before = (tmp_path / "elsewhere" / "p.html").read_bytes() if kind == "linked-folder" else None
    done = run("capture", served, "-o", str(out), "--no-render", "--delay", "0", "--depth", "2")
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr
    if before is not None:
        assert (tmp_path / "elsewhere" / "p.html").read_bytes() == before
