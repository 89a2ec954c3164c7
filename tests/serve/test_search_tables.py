"""The search's postings tables on disk (formats/search.md §6.5, Tables; formats/serve.md §8): built
once per index before serving, in the user's cache folder, opened by every later server, checked when
read (a changed or planted file is refused, removed and built again), another index for a tree indexed
again, a damaged index still said, the folder kept to its budget; answers equal to the engine's
without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archiver.search import store, table, tables
from archiver.serve import search as serve_search
from archiver.serve.sources import mounts_for
from tests.search.helpers import html


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "archiver" / "search-tables"


def _tree(root: Path, n: int, word: str = "river") -> Path:
    for i in range(n):
        body = f"<p>{word} {' '.join(['delta'] * (i % 5))} bank{i % 7} {word}s number {i}</p>"
        (root / f"p{i}.html").parent.mkdir(parents=True, exist_ok=True)
        (root / f"p{i}.html").write_text(html(f"page {i} {word}", body), encoding="utf-8")
    store.write_index(root)
    return root


def _origin(m: object) -> str:
    return "http://x.localhost:1"


QUERIES = ["river", "riv", "r", "delta river", "bank", "ban", "number 3", "nothing", '"river delta"']


def _answers(searcher: serve_search.Searcher) -> list[object]:
    return [searcher.search(q, 7, off, _origin) for q in QUERIES for off in (0, 5)]


def test_tables_are_built_once_and_answer_as_the_engine_alone(tmp_path: Path, cache: Path) -> None:
    trees = [_tree(tmp_path / f"t{i}", 30 + i, ["river", "rivet", "delta"][i]) for i in range(3)]
    plain = serve_search.Searcher(mounts_for(trees))
    want = _answers(plain)
    plain.close()
    first = serve_search.Searcher(mounts_for(trees))
    done = first.prepare()
    assert done["tables"] == 3 and done["built"] == 3, done
    assert len(list(cache.glob(f"*.v{table.VERSION}"))) == 3
    assert _answers(first) == want
    assert len(first.engine.tables) == 3  # the answers came through the tables
    first.close()
    again = serve_search.Searcher(mounts_for(trees))
    assert again.prepare()["built"] == 0  # opened from the cache folder
    assert _answers(again) == want
    again.close()


def test_a_changed_or_planted_table_is_refused_and_built_again(tmp_path: Path, cache: Path) -> None:
    tree = _tree(tmp_path / "t", 40)
    searcher = serve_search.Searcher(mounts_for([tree]))
    searcher.prepare()
    want = _answers(searcher)
    searcher.close()
    (made,) = cache.glob(f"*.v{table.VERSION}")
    data = bytearray(made.read_bytes())
    data[len(data) - 10] ^= 0x20  # in the body: its SHA-256 no longer matches
    made.write_bytes(bytes(data))
    other = _tree(tmp_path / "o", 12, "rivet")
    searcher = serve_search.Searcher(mounts_for([tree]))
    assert searcher.prepare()["built"] == 1
    assert _answers(searcher) == want
    searcher.close()
    # A table of another index planted under this index's name: its header names another identity.
    searcher = serve_search.Searcher(mounts_for([other]))
    searcher.prepare()
    searcher.close()
    theirs = next(p for p in cache.glob(f"*.v{table.VERSION}") if p != made)
    made.write_bytes(theirs.read_bytes())
    searcher = serve_search.Searcher(mounts_for([tree]))
    assert searcher.prepare()["built"] == 1
    assert _answers(searcher) == want
    searcher.close()


def test_a_table_of_an_earlier_version_is_not_read_but_built_again(tmp_path: Path, cache: Path) -> None:
    """Table version 2 (prefixes' completions stored merged) replaces version 1: a version 1 file of
    the same index is never opened; the new one is built and the old one removed."""
    tree = _tree(tmp_path / "t", 30)
    searcher = serve_search.Searcher(mounts_for([tree]))
    searcher.prepare()
    want = _answers(searcher)
    searcher.close()
    (made,) = cache.glob(f"*.v{table.VERSION}")
    old = made.with_suffix(".v1")
    made.rename(old)  # under the name an earlier archiver gave its table of this index
    searcher = serve_search.Searcher(mounts_for([tree]))
    assert searcher.prepare()["built"] == 1
    assert _answers(searcher) == want
    searcher.close()
    assert made.is_file() and not old.exists()


def test_a_tree_indexed_again_while_served_is_another_index(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", 20)
    searcher = serve_search.Searcher(mounts_for([tree]))
    searcher.prepare()
    try:
        assert searcher.search("glacier", 10, 0, _origin)["total"] == 0
        (tree / "ice.html").write_text(html("ice", "<p>glacier river</p>"), encoding="utf-8")
        store.write_index(tree)
        found = searcher.search("glacier", 10, 0, _origin)
        assert [r["path"] for r in found["results"]] == ["ice.html"]
        assert searcher.search("river", 100, 0, _origin)["total"] == 21
    finally:
        searcher.close()


def test_a_damaged_index_gets_no_table_and_is_said(tmp_path: Path, cache: Path) -> None:
    tree = _tree(tmp_path / "t", 20, "rivet")  # (the same pages would be the same index: one table)
    for shard in (tree / "_archiver" / "search" / "t").iterdir():
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 1
        shard.write_bytes(bytes(data))
    good = _tree(tmp_path / "g", 20)
    searcher = serve_search.Searcher(mounts_for([tree, good]))
    try:
        assert searcher.prepare()["tables"] == 1
        for _ in range(2):  # the healthy mount answers; the damaged one is named, every time
            doc = searcher.search("river", 10, 0, _origin)
            assert "error" not in doc and doc["total"] == 20
            assert [s["mount"] for s in doc["skipped"]] == [searcher.mounts[0].name]
            assert "damaged index" in doc["skipped"][0]["reason"]
    finally:
        searcher.close()


@pytest.mark.parametrize("cached_first", [False, True])
def test_a_damaged_copy_of_a_healthy_index_is_said_not_answered_from_its_table(
    tmp_path: Path, cache: Path, cached_first: bool
) -> None:
    """Two mounts of the same pages have the same manifest; the shards of one are damaged. Each mount
    gets its own table, built from its own shards (old code: one table by the manifest's hash, so the
    damaged mount answered from the healthy one's, its damage never seen), whether the healthy one's
    table was in the cache folder already or is built in the same start."""
    good = _tree(tmp_path / "g", 20)
    if cached_first:
        searcher = serve_search.Searcher(mounts_for([good]))
        assert searcher.prepare()["built"] == 1
        searcher.close()
    bad = _tree(tmp_path / "b", 20)
    assert (bad / "_archiver/search/manifest.js").read_bytes() == (
        good / "_archiver/search/manifest.js"
    ).read_bytes()
    for shard in (bad / "_archiver" / "search" / "t").iterdir():
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 1
        shard.write_bytes(bytes(data))
    searcher = serve_search.Searcher(mounts_for([good, bad]))
    try:
        assert searcher.prepare()["tables"] == 1
        damaged = next(m.name for m in searcher.mounts if Path(m.path).name == "b")
        for _ in range(2):
            doc = searcher.search("river", 10, 0, _origin)
            assert "error" not in doc and doc["total"] == 20
            assert [s["mount"] for s in doc["skipped"]] == [damaged]  # old code: none skipped, 40 found
            assert "damaged index" in doc["skipped"][0]["reason"]
    finally:
        searcher.close()


def test_the_cache_folder_keeps_to_its_budget(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i, word in enumerate(["river", "rivet", "delta"]):
        searcher = serve_search.Searcher(mounts_for([_tree(tmp_path / f"t{i}", 20, word)]))
        searcher.prepare()
        searcher.close()
        for p in cache.glob(f"*.v{table.VERSION}"):  # the one just made is the newest
            if p.stat().st_mtime_ns > 10**15:
                os.utime(p, ns=((i + 1) * 10**9, (i + 1) * 10**9))
    files = sorted(cache.glob(f"*.v{table.VERSION}"), key=lambda p: p.stat().st_mtime_ns)
    assert len(files) == 3
    monkeypatch.setattr(tables, "DISK_BYTES", sum(p.stat().st_size for p in files[1:]) + 10)
    searcher = serve_search.Searcher(mounts_for([_tree(tmp_path / "n", 20, "number")]))
    searcher.prepare()
    searcher.close()
    left = set(cache.glob(f"*.v{table.VERSION}"))
    assert files[0] not in left and len(left) <= 3  # the least recently used went first
    assert sum(p.stat().st_size for p in left) <= tables.DISK_BYTES
    assert not list(cache.glob(".tmp-*"))
