"""The search's bounded cache of open indexes (formats/serve.md §8, Memory): a tree re-indexed while
served is searched afresh, the cache never holds more than its budget (the one just used stays), and
a damaged index file is said on every query, not once."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.search import store
from archiver.serve import search as serve_search
from archiver.serve.sources import mounts_for
from tests.search.helpers import html


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
