"""The index build's process is one of its workers (archiver/search/store.py, formats/search.md §5):
``workers=2`` is a pool of one process and this one, which extracts and prepares batches itself
while the next one in order is not back, with its markup-guard child forked before the pool's
threads start (not an interpreter) and ended with the pool. In a fork of the test process: one
thread, as an ``archiver index`` has."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from archiver import markup_guard
from archiver.search import store
from tests.one_thread import in_one_thread
from tests.search.helpers import html


def _tree(root: Path) -> None:
    """90 pages, every fifth of more than TRUSTED_TAGS tags (read in a guard child)."""
    for i in range(90):
        many = (
            "".join(f"<span>w{k}</span>" for k in range(markup_guard.TRUSTED_TAGS + 10)) if i % 5 == 0 else ""
        )
        body = f"<nav>Home About</nav><p>page {i} about widgets</p><p>{many}</p><p>Edit this page</p>"
        (root / f"p{i:03}.html").write_text(html(f"Page {i}", body), encoding="utf-8")


def test_this_process_works_beside_the_pool_and_writes_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_one_thread(lambda: _works_beside_the_pool(tmp_path, monkeypatch))


#: the batches this process did (module-level: the pool pickles the job's function by its name)
_HERE: list[str] = []
_REAL_BATCH = store._run_batch


def _spy_batch(work: Any, root: str, batch: list[Any]) -> list[Any]:
    _HERE.append(f"{os.getpid()} {getattr(work, 'func', work).__name__}")
    return _REAL_BATCH(work, root, batch)


def _works_beside_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.setattr(store, "_BATCH_PAGES", 4)
    monkeypatch.setattr(store, "_run_batch", _spy_batch)  # a worker appends to its own copy
    children: list[tuple[Any, int]] = []
    real_init = store._Extractor.__init__

    def spy_init(self: store._Extractor, root: Path, workers: int) -> None:
        real_init(self, root, workers)
        child = markup_guard._child
        children.append((child and type(child.proc), self._pool._processes if self._pool else 0))

    monkeypatch.setattr(store._Extractor, "__init__", spy_init)
    two: dict[str, bytes] = {}
    assert store.build_index(tmp_path, two.__setitem__, workers=2)[1] == 90
    assert children == [(markup_guard._Forked, 1)]  # its child forked, and a pool of one
    assert markup_guard._child is None  # ended with the pool
    assert {f"{os.getpid()} _extract_one", f"{os.getpid()} _prepare_one"} <= set(_HERE)
    one: dict[str, bytes] = {}
    store.build_index(tmp_path, one.__setitem__, workers=1)
    assert one == two
