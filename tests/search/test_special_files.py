"""A tree's index files and pages that are not plain files (formats/search.md §4.1): a FIFO under an
index file's or a page's name, a symbolic link, a file of a terabyte (sparse). Every reader of a
tree's index (``archiver search``, ``verify``, ``serve``'s search, a sidecar) and the index build name
the file in one line and go on or stop; none waits on a FIFO for good or reads a huge file whole.
The attacks: ``archiver search`` and ``archiver verify`` of a tree whose term shards are FIFOs, and
``archiver index`` of a tree with a FIFO page, waited forever (the open of a FIFO blocks until a
writer comes); a sparse manifest of 1 TiB was read whole."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from archiver.search import archive, store
from archiver.serve import search as serve_search
from archiver.serve.sources import mounts_for
from tests.search.helpers import html
from tests.search.test_cli_search import run

WAIT = 60  # seconds, for the in-process test (the subprocesses' bound is run's: the old code never ended)


def _tree(root: Path, words: str = "volcano") -> Path:
    for i in range(3):
        (root / f"p{i}.html").parent.mkdir(parents=True, exist_ok=True)
        (root / f"p{i}.html").write_text(html(f"Page {i}", f"<p>{words} {i} page{i}</p>"), encoding="utf-8")
    (root / "index.html").write_text(html("Home", f"<p>{words} home</p>"), encoding="utf-8")
    store.write_index(root)
    return root


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _shards(tree: Path) -> list[Path]:
    return sorted((tree / "_archiver" / "search" / "t").glob("*.js"))


def test_search_and_verify_of_fifo_shards_end_with_the_file_named(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    for shard in _shards(tree):
        _fifo(shard)
    done = run("search", str(tree), "-q", "volcano")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "t/0.js" in done.stderr and "is not a regular file" in done.stderr
    checked = run("verify", str(tree), "--no-links")
    assert checked.returncode == 1
    assert "_archiver/search/t/0.js: search index: cannot be read: is not a regular file" in checked.stdout


def test_a_fifo_manifest_is_no_index_and_no_wait(tmp_path: Path) -> None:
    """A FIFO where the manifest should be: the tree counts as one without an index (searched through
    one built in memory), and ``verify`` names the file."""
    tree = _tree(tmp_path / "tree")
    _fifo(tree / "_archiver" / "search" / "manifest.js")
    done = run("search", str(tree), "-q", "volcano", "--json")
    assert done.returncode == 0 and '"total": 4' in done.stdout
    with pytest.raises(OSError, match="is not a regular file"):
        store.read_file(tree / "_archiver" / "search" / "manifest.js")


def test_index_of_a_tree_with_a_fifo_page_stops_with_one_line(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    _fifo(tree / "p1.html")
    before = sorted(p.relative_to(tree).as_posix() for p in (tree / "_archiver").rglob("*"))
    done = run("index", str(tree))
    assert done.returncode == 1
    assert done.stderr.strip().endswith("p1.html: is not a regular file") and done.stderr.count("\n") == 1
    after = sorted(p.relative_to(tree).as_posix() for p in (tree / "_archiver").rglob("*"))
    assert after == before  # the index as it was, nothing of the failed build left


def test_a_terabyte_manifest_is_refused_unread(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    manifest = tree / "_archiver" / "search" / "manifest.js"
    with open(manifest, "r+b") as f:
        f.truncate(1 << 40)  # sparse: no disk used
    with pytest.raises(OSError, match=f"is larger than {store.MAX_FILE} bytes"):
        store.read_file(manifest)
    done = run("search", str(tree), "-q", "volcano")
    assert done.returncode == 1 and "manifest.js" in done.stderr and "larger than" in done.stderr


def test_a_file_growing_past_the_bound_is_not_read_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size seen at the open is not trusted: the bound holds on the bytes read."""
    path = tmp_path / "x.js"
    path.write_bytes(b"x" * 5000)
    monkeypatch.setattr(store, "MAX_FILE", 4096)
    real_fstat = os.fstat

    def small(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, *st[1:6], 10, *st[7:]))

    monkeypatch.setattr(store.os, "fstat", small)
    with pytest.raises(OSError, match="is larger than 4096 bytes"):
        store.read_file(path)


def test_links_and_missing_files(tmp_path: Path) -> None:
    outside = tmp_path / "secret.js"
    outside.write_bytes(b"secret")
    link = tmp_path / "link.js"
    link.symlink_to(outside)
    with pytest.raises(OSError, match="is a symbolic link"):
        store.read_file(link)
    with pytest.raises(FileNotFoundError):
        store.read_file(tmp_path / "none.js")
    side = tmp_path / "side"
    side.mkdir()
    os.mkfifo(side / "manifest.js")
    read = archive.sidecar_read(side)
    with pytest.raises(KeyError):
        read("_archiver/search/t/0.js")
    with pytest.raises(OSError, match="is not a regular file"):
        read("_archiver/search/manifest.js")


def _origin(m: object) -> str:
    return "http://x.localhost:1"


@pytest.mark.timeout(WAIT)
def test_serve_names_a_mount_whose_shards_are_fifos_and_answers_the_others(tmp_path: Path) -> None:
    good = _tree(tmp_path / "good")
    bad = _tree(tmp_path / "bad", words="volcano basalt")  # a manifest of its own (tables are by manifest)
    for shard in _shards(bad):
        _fifo(shard)
    searcher = serve_search.Searcher(mounts_for([good, bad]))
    try:
        doc = searcher.search("volcano", 10, 0, _origin)
        assert doc["total"] == 4 and {r["mount"] for r in doc["results"]} == {searcher.mounts[0].name}
        [skipped] = doc["skipped"]
        assert skipped["mount"] == searcher.mounts[1].name and "is not a regular file" in skipped["reason"]
    finally:
        searcher.close()


def test_an_archives_index_file_too_large_is_refused_unread() -> None:
    """A gwtar member or ZIM entry said to be 1 TiB (a forged archive, or a sparse one): refused by
    its size, its bytes never asked for; the others read by their size."""
    asked: list[tuple[str, int]] = []

    def head(path: str, n: int) -> bytes:
        asked.append((path, n))
        return b"x" * n

    sizes = {"_archiver/search/manifest.js": 1 << 40, "_archiver/search/t/0.js": 10}
    read = archive.bounded(sizes.__getitem__, head)
    with pytest.raises(OSError, match=f"is larger than {store.MAX_FILE} bytes"):
        read("_archiver/search/manifest.js")
    assert read("_archiver/search/t/0.js") == b"x" * 10
    with pytest.raises(KeyError):
        read("_archiver/search/t/1.js")
    assert asked == [("_archiver/search/t/0.js", 10)]


def test_an_archives_pages_are_read_no_further_than_the_indexed_bytes() -> None:
    """Building a sidecar index reads each page's first MAX_HTML bytes (a page member of gigabytes
    was read whole, then cut)."""
    from archiver.search.text import MAX_HTML

    asked: list[int] = []

    def head(path: str, n: int) -> bytes:
        asked.append(n)
        return html(path, "<p>volcano</p>").encode()[:n]

    files: dict[str, bytes] = {}
    archive.build_pages(["a.html", "b.html"], head, files.__setitem__)
    assert asked and set(asked) == {MAX_HTML} and "manifest" in files


@pytest.mark.parametrize("linked", ["_archiver/search", "_archiver/search/t"])
def test_an_index_folder_linked_to_another_trees_is_not_read(tmp_path: Path, linked: str) -> None:
    """A tree whose index folder (or its shards' folder) is a symbolic link to another tree's: before,
    ``archiver search`` and serve's search answered from the other archive's index, snippets and all
    (someone's private archive shown through a public one), and ``verify`` called the tree valid."""
    private = _tree(tmp_path / "private", words="confidentialzebra")
    public = _tree(tmp_path / "public", words="volcano")
    target = public / linked
    shutil.rmtree(target)
    target.symlink_to(private / linked)
    done = run("search", str(public), "-q", "confidentialzebra")
    assert done.returncode == 1 and "confidentialzebra" not in done.stdout, done.stdout
    assert f"its folder {linked} is a symbolic link out of the tree" in done.stderr
    checked = run("verify", str(public), "--no-links")
    assert checked.returncode == 1 and f"its folder {linked} is a symbolic link" in checked.stdout
    searcher = serve_search.Searcher(mounts_for([public]))
    try:
        doc = searcher.search("confidentialzebra", 10, 0, _origin)
        assert doc["total"] == 0 and doc["results"] == []
        [skipped] = doc["skipped"]
        assert f"its folder {linked} is a symbolic link out of the tree" in skipped["reason"]
        assert str(tmp_path) not in skipped["reason"]  # no host path in serve's answer
    finally:
        searcher.close()
