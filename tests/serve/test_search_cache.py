"""The search's bounded cache of open indexes (formats/serve.md §8, Memory): a tree re-indexed while
served is searched afresh, the cache never holds more than its budget (the one just used stays), and
a damaged index file is said on every query, not once; a damaged mount is left out of the answer
(named in ``skipped``), not the whole answer blanked."""

from __future__ import annotations

import gc
import random
import shutil
from pathlib import Path

import pytest

from archiver.search import store
from archiver.serve import search as serve_search
from archiver.serve.sources import mounts_for
from tests.search.helpers import html
from tests.search.test_forged_documents import HUGE, _forged


def _tree(root: Path, pages: dict[str, str]) -> Path:
    for path, body in pages.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(html(path, body), encoding="utf-8")
    store.write_index(root)
    return root


def _origin(m: object) -> str:
    return "http://x.localhost:1"


def test_a_tree_indexed_again_while_served_is_searched_afresh(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", {"index.html": "<p>volcano</p>"})
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        assert searcher.search("glacier", 10, 0, _origin)["total"] == 0
        _tree(tree, {"ice.html": "<p>glacier</p>"})
        found = searcher.search("glacier", 10, 0, _origin)
        assert [r["path"] for r in found["results"]] == ["ice.html"]
    finally:
        searcher.close()


def test_the_cache_keeps_to_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trees = [_tree(tmp_path / f"t{i}", {"index.html": f"<p>river number {i}</p>"}) for i in range(3)]
    searcher = serve_search.Searcher(mounts_for(trees))
    try:
        assert searcher.search("river", 10, 0, _origin)["total"] == 3
        kept, size = searcher.cached()
        assert kept == 3 and size > 0
        monkeypatch.setattr(serve_search, "CACHE_BYTES", 1)
        assert searcher.search("river", 10, 0, _origin)["total"] == 3
        assert searcher.cached()[0] == 1  # the one used last stays
    finally:
        searcher.close()


def test_a_damaged_file_is_said_on_every_query(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", {"index.html": "<p>volcano</p>"})
    shard = tree / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 1
    shard.write_bytes(bytes(data))
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        for _ in range(2):
            doc = searcher.search("volcano", 10, 0, _origin)
            assert "damaged index" in doc.get("error", "")
    finally:
        searcher.close()


def _flip(tree: Path) -> Path:
    shard = tree / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 1
    shard.write_bytes(bytes(data))
    return shard


def test_one_damaged_mount_does_not_blank_the_others(tmp_path: Path) -> None:
    """The attack: one archive's damaged shard answered an error and 0 results for every mount."""
    good = [_tree(tmp_path / f"g{i}", {"index.html": f"<p>volcano {i}</p>"}) for i in range(2)]
    bad = _tree(tmp_path / "bad", {"index.html": "<p>volcano</p>", "b.html": "<p>volcano ash</p>"})
    saved = _flip(bad).read_bytes()
    shard = bad / "_archiver" / "search" / "t" / "0.js"
    searcher = serve_search.Searcher(mounts_for([good[0], bad, good[1]]))
    name = searcher.mounts[1].name
    try:
        for _ in range(3):
            doc = searcher.search("volcano", 10, 0, _origin)
            assert "error" not in doc
            assert doc["total"] == 2 and {r["mount"] for r in doc["results"]} == {
                m.name for m in searcher.mounts[::2]
            }
            assert [s["mount"] for s in doc["skipped"]] == [name]
            reason = doc["skipped"][0]["reason"]
            assert (
                reason.startswith(f"damaged index: {name}/_archiver/search/t/0.js: ") and "\n" not in reason
            )
        shard.write_bytes(bytes(b ^ (1 if i == len(saved) // 2 else 0) for i, b in enumerate(saved)))
        doc = searcher.search("volcano", 10, 0, _origin)  # repaired: searched again, not the kept answer
        assert doc["total"] == 4 and doc["skipped"] == []
    finally:
        searcher.close()


def test_every_mount_damaged_is_an_error(tmp_path: Path) -> None:
    trees = [_tree(tmp_path / f"t{i}", {"index.html": "<p>volcano</p>"}) for i in range(2)]
    for tree in trees:
        _flip(tree)
    searcher = serve_search.Searcher(mounts_for(trees))
    try:
        doc = searcher.search("volcano", 10, 0, _origin)
        assert doc["total"] == 0 and "damaged index" in doc["error"] and len(doc["skipped"]) == 2
        assert not searcher._answers
        page = serve_search.results_page(doc, "").decode()
        assert page.count("damaged index") == 2  # the error is one of the skipped reasons: said once each
    finally:
        searcher.close()


def test_a_forged_document_count_skips_only_its_mount(tmp_path: Path) -> None:
    """formats/search.md §4.2: a format 2 manifest claiming 2,000,000,001 documents made the engine
    build a 250 MB bitmask per term (MemoryError, a 500); now its mount is skipped as it is opened."""
    good = _tree(tmp_path / "g", {"index.html": "<p>volcano page</p>"})
    forged = shutil.copytree(good, tmp_path / "f")
    folder = forged / "_archiver" / "search"
    for sub in ("t", "d", "x"):
        shutil.rmtree(folder / sub)
    for name, data in _forged(2, HUGE).items():  # 64 terms naming document 2,000,000,000
        (folder / f"{name}.js").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.js").write_bytes(data)
    searcher = serve_search.Searcher(mounts_for([good, forged]))
    try:
        doc = searcher.search("page", 10, 0, _origin)
        assert doc["total"] == 1 and "error" not in doc
        assert "says 2000000001 documents" in doc["skipped"][0]["reason"]
    finally:
        searcher.close()


def test_a_query_asked_again_is_answered_from_its_kept_results_until_the_index_changes(
    tmp_path: Path,
) -> None:
    tree = _tree(tmp_path / "t", {"index.html": "<p>glacier volcano</p>", "b.html": "<p>glacier</p>"})
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        first = searcher.search("glacier", 10, 0, _origin)
        assert first["total"] == 2 and len(searcher._answers) == 1
        assert searcher.search("glacier", 10, 0, _origin) == first  # the same answer, kept
        assert searcher.search("glacier", 1, 0, _origin)["results"] == first["results"][:1]
        assert len(searcher._answers) == 2  # another limit is another answer
        _tree(tree, {"c.html": "<p>glacier</p>"})  # indexed again: ranked afresh
        assert searcher.search("glacier", 10, 0, _origin)["total"] == 3
    finally:
        searcher.close()


def test_a_kept_answer_holds_nothing_the_collector_walks(tmp_path: Path) -> None:
    """An answer is kept as tuples of strings and numbers (formats/search.md §6.5, The collector): once
    the collector has passed over them they are untracked, where a kept Result, its Snippet and its
    marks would be walked at every collection; the answer given again is the same."""
    tree = _tree(tmp_path / "t", {f"p{i}.html": f"<p>glacier ice {i}</p><p>glacier</p>" for i in range(12)})
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        first = searcher.search("glacier", 10, 0, _origin)
        assert first["total"] == 12 and all(r["marks"] for r in first["results"])
        for _ in range(5):  # (a tuple is untracked once the ones it holds are)
            gc.collect()
        kept = searcher._answers[("glacier", 10, 0)][1]
        assert not gc.is_tracked(kept)
        assert searcher.search("glacier", 10, 0, _origin) == first
    finally:
        searcher.close()


def test_the_pages_read_are_forgotten_between_queries_and_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no fragment row kept between queries (each index forgets its rows and the text files
    their groups listed), every answer is the one a searcher that keeps them gives."""
    rng = random.Random(4)
    words = ["glacier", "ice", "moraine", "firn", "serac", "cirque"]
    pages = {
        f"p{i}.html": "".join(f"<p>{' '.join(rng.choices(words, k=80))}</p>" for _ in range(6))
        for i in range(40)
    }
    tree = _tree(tmp_path / "t", pages)
    queries = [*words, "glacier ice", "firn ser", "ci", "ice moraine"]
    keeping = serve_search.Searcher(mounts_for([tree]))
    try:
        want = [keeping.search(q, 10, 0, _origin) for q in queries]
    finally:
        keeping.close()
    monkeypatch.setattr(serve_search, "KEPT_FRAGMENTS", 0)
    monkeypatch.setattr(serve_search, "KEPT_CHUNKS", 0)
    forgetting = serve_search.Searcher(mounts_for([tree]))
    try:
        for q, doc in zip(queries, want, strict=True):
            assert forgetting.search(q, 10, 0, _origin) == doc
            index = forgetting._indexes[tree.name][0]
            assert not index._fragments and not index.texts and not index._group_texts
        assert any(r["snippet"] for doc in want for r in doc["results"])
    finally:
        forgetting.close()


def test_the_per_query_log_says_each_querys_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ARCHIVER_SEARCH_LOG (formats/serve.md §8, Per-query log): one JSON line a query, with the
    process, its CPU and wall time, the collections of each generation during it, the total and the
    query; without it nothing is written."""
    import json
    import os

    tree = _tree(tmp_path / "t", {"index.html": "<p>glacier volcano</p>", "b.html": "<p>glacier</p>"})
    log = tmp_path / "search.log"
    monkeypatch.setenv("ARCHIVER_SEARCH_LOG", str(log))
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        assert searcher.search("glacier", 10, 0, _origin)["total"] == 2
        assert searcher.search("volcano", 10, 0, _origin)["total"] == 1
    finally:
        searcher.close()
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert [(x["q"], x["total"], x["pid"]) for x in lines] == [
        ("glacier", 2, os.getpid()),
        ("volcano", 1, os.getpid()),
    ]
    assert all(x["cpu_ms"] >= 0 and x["wall_ms"] >= 0 and len(x["gc"]) == 3 for x in lines)
    monkeypatch.delenv("ARCHIVER_SEARCH_LOG")
    quiet = serve_search.Searcher(mounts_for([tree]))
    try:
        quiet.search("glacier", 10, 0, _origin)
    finally:
        quiet.close()
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2


def _word(i: int) -> str:
    return "abcdefghijklmnopqrst"[i] * 4


def test_the_kept_answers_keep_to_their_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path / "t", {f"p{i}.html": f"<p>{_word(i)} river</p>" for i in range(20)})
    monkeypatch.setattr(serve_search, "ANSWER_BYTES", 4000)
    searcher = serve_search.Searcher(mounts_for([tree]))
    try:
        for i in range(20):
            assert searcher.search(_word(i), 10, 0, _origin)["total"] == 1
        assert 0 < searcher._answer_bytes <= 4000
        assert sum(x[2] for x in searcher._answers.values()) == searcher._answer_bytes
        assert (_word(19), 10, 0) in searcher._answers and (_word(0), 10, 0) not in searcher._answers
    finally:
        searcher.close()


@pytest.mark.parametrize("size", [0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 200_000])
def test_a_trees_index_file_is_read_whole_whatever_its_size(tmp_path: Path, size: int) -> None:
    """The tree reader reads with os.read calls until the end of the file: every byte, in order, at
    every size around its read size; a name with an empty, '.' or '..' part and a missing file are
    no file (KeyError); a symbolic link is named as one (tests/search/test_special_files.py)."""
    data = bytes((i * 7 + i // 251) % 256 for i in range(size))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.js").write_bytes(data)
    (tmp_path / "link.js").symlink_to(tmp_path / "d" / "f.js")
    read = serve_search._tree_read(str(tmp_path))
    assert read("d/f.js") == data
    for bad in ["d/../d/f.js", "d//f.js", "./d/f.js", "d/none.js", ""]:
        with pytest.raises(KeyError):
            read(bad)
    with pytest.raises(OSError, match="is a symbolic link"):
        read("link.js")
