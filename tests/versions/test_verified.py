"""A re-capture trusts a tree file without reading it only while the file's status (size, mtime,
ctime, inode) is the one the crawl state noted when its bytes were known (formats/crawl-state.md §1,
``verified``), written as the attacks it must survive: a file changed in place with its size kept
and its mtime set back, a file replaced by a copy, a state whose record names other bytes; and
what it is for: a file noted unchanged is not read again."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from archiver.capture import stage as stage_mod
from archiver.capture.stage import Stage
from archiver.capture.state import State
from archiver.capture.writer import TreeWriter
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import Record, read_records
from tests.versions.test_recapture import _capture, _page


def _record(path: str, data: bytes) -> Record:
    return Record(path=path, kind="page", media_type="text/html", size=len(data),
                  sha256=hashlib.sha256(data).hexdigest())  # fmt: skip


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files stage._whole reads and hashes (counting)."""
    seen: list[str] = []
    real = stage_mod._whole

    def counting(path: str, size: int, sha256: str) -> os.stat_result | None:
        seen.append(os.path.basename(path))
        return real(path, size, sha256)

    monkeypatch.setattr(stage_mod, "_whole", counting)
    return seen


def _stage(out: Path, state: State) -> Stage:
    context = SimpleNamespace(out=out, state=state, writer=TreeWriter(out, out / "_archiver" / "tmp"))
    return Stage(context, None, None)  # type: ignore[arg-type]


def _written(out: Path, state: State, files: dict[str, bytes]) -> None:
    """``files`` written as a capture writes them, and what the writer noted kept by the state."""
    writer = TreeWriter(out, out / "_archiver" / "tmp")
    (out / "_archiver" / "tmp").mkdir(parents=True, exist_ok=True)
    for path, data in files.items():
        writer.write(path, data, sha256=hashlib.sha256(data).hexdigest())
    state.note_verified(writer.verified)
    assert state.verified() == writer.verified


def test_a_file_noted_unchanged_is_not_read_and_any_change_is(tmp_path: Path, reads: list[str]) -> None:
    out = tmp_path / "tree"
    state = State(tmp_path / "crawl.sqlite")
    data = b"<p>the page as written</p>"
    _written(out, state, {"a.html": data, "b.html": data, "c.html": data, "d.html": data})
    stage = _stage(out, state)
    assert stage._holds(_record("a.html", data)) and reads == []  # trusted: not read

    # b: changed in place, its size kept and its mtime set back (ctime moves: it cannot be set)
    before = (out / "b.html").stat()
    with open(out / "b.html", "r+b") as f:
        f.write(b"<P>")
    os.utime(out / "b.html", ns=(before.st_atime_ns, before.st_mtime_ns))
    after = (out / "b.html").stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert not stage._holds(_record("b.html", data)) and reads == ["b.html"]

    # c: replaced by a copy of the same bytes (another inode): read, found whole, noted anew
    (out / "c2.html").write_bytes(data)
    os.replace(out / "c2.html", out / "c.html")
    assert stage._holds(_record("c.html", data)) and reads == ["b.html", "c.html"]
    assert stage.context.writer.verified["c.html"][4] == (out / "c.html").stat().st_ino

    # d: a record (the state edited, or another run's) that names other bytes than those noted
    other = b"<p>other bytes, same size</p>"[: len(data)].ljust(len(data))
    assert not stage._holds(_record("d.html", other)) and reads[-1] == "d.html"

    # gone: not trusted, not read
    (out / "a.html").unlink()
    assert not stage._holds(_record("a.html", data)) and reads[-1] == "d.html"
    state.close()


def test_a_hard_link_to_another_file_is_not_noted(tmp_path: Path) -> None:
    """A page whose bytes equal an earlier page's is a hard link to that file: it holds that file's
    bytes as they are now, which the writer does not know to be the SHA-256 it is given."""
    out = tmp_path / "tree"
    (out / "_archiver" / "tmp").mkdir(parents=True)
    writer = TreeWriter(out, out / "_archiver" / "tmp")
    data = b"<p>the same page</p>"
    sha = hashlib.sha256(data).hexdigest()
    writer.write("a.html", data, sha256=sha)
    writer.write("b.html", data, link_from="a.html", sha256=sha)
    assert (out / "b.html").stat().st_ino == (out / "a.html").stat().st_ino
    assert set(writer.verified) == {"a.html"}
    writer.write("a.html", b"<p>now written without its hash</p>")
    assert writer.verified == {}


def test_a_tree_without_noted_files_is_read(tmp_path: Path, reads: list[str]) -> None:
    """A state an earlier release wrote (no ``verified`` rows): every file read, as before."""
    out = tmp_path / "tree"
    out.mkdir()
    (out / "a.html").write_bytes(b"x")
    state = State(tmp_path / "crawl.sqlite")
    assert _stage(out, state)._holds(_record("a.html", b"x")) and reads == ["a.html"]
    state.close()


def test_a_page_changed_behind_the_states_back_is_fetched_again(tmp_path: Path) -> None:
    """End to end: after a capture (whose files the state noted as written), a page's file changed
    in place with its size and mtime kept is asked unconditionally and stored again, the others are
    asked conditionally and kept."""
    site = tmp_path / "live"
    site.mkdir()
    (site / "s.css").write_text("body { color: #123 }")
    (site / "index.html").write_text(
        _page("Home", '<p><a href="/p0.html">0</a> <a href="/p1.html">1</a></p>')
    )
    for i in range(2):
        (site / f"p{i}.html").write_text(_page(f"P{i}", f"<p>page {i}</p>"))
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        assert _capture(server.url, out).returncode == 0
        first = (out / "p0.html").read_bytes()
        before = (out / "p0.html").stat()
        with open(out / "p0.html", "r+b") as f:
            f.write(b"X" * 15)
        os.utime(out / "p0.html", ns=(before.st_atime_ns, before.st_mtime_ns))
        time.sleep(1.1)
        n = len(server.requests)
        again = _capture(server.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
        asked = {r.path: r for r in server.requests[n:]}
    assert "if-none-match" not in asked["/p0.html"].headers and asked["/p0.html"].status == 200
    assert "if-none-match" in asked["/p1.html"].headers and asked["/p1.html"].status == 304
    assert (out / "p0.html").read_bytes() == first
    records = {r.path: r for r in read_records(out)}
    assert not records["p0.html"].revalidated and records["p1.html"].revalidated


@pytest.mark.timeout(30)
def test_a_fifo_under_a_tree_files_name_is_not_waited_on(tmp_path: Path) -> None:
    """The attack: a tree from elsewhere with a FIFO where a page should be held a re-capture for
    good in the check of that file (the open of a FIFO waits for a writer). It is no file of the
    size and hash noted: None (fetched again), at once. The same for the version store's readers."""
    from archiver.versions import store

    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    assert stage_mod._whole(str(fifo), 0, hashlib.sha256(b"").hexdigest()) is None
    with pytest.raises(Exception, match="is not a regular file"):
        store.open_in_tree(tmp_path, "page.html")
    empty = (0, hashlib.sha256(b"").hexdigest())
    assert store.hash_path(fifo) == empty  # non-blocking: no writer reads as the end, at once
