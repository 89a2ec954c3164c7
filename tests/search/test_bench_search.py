"""tools/bench_search.py runs end to end on a tiny generated corpus (no timing is asserted)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from archiver.search import store

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_search", ROOT / "tools" / "bench_search.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_search"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_generated_corpus_has_chinese_and_japanese_pages_and_is_searchable(tmp_path: Path) -> None:
    bench = _bench()
    [folder] = bench.generate(tmp_path / "src", 20, 1)
    texts = [p.read_text(encoding="utf-8") for p in sorted(folder.glob("page*.html"))]
    assert len(texts) == 20
    assert any('lang="zh"' in t for t in texts) and any('lang="ja"' in t for t in texts)
    run, size = bench.ours(folder)
    assert size > 0 and run.cpu > 0
    words = bench.query_words(folder)
    assert words
    read = bench.ours_bytes(folder, words[0])
    manifest = (folder / store.INDEX_DIR / "manifest.js").stat().st_size
    assert read > manifest  # the manifest, then at least a shard


def test_the_bench_prints_its_table(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "bench_search.py"),
            "--only",
            "generated",
            "--pages",
            "12",
            "--no-zim",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    assert "load average" in out
    assert "== generated: 1 folder(s), 13 pages" in out
    assert "ours" in out and "bytes/query" in out


def test_pagefind_meta_and_index_files_decode(tmp_path: Path) -> None:
    """The CBOR reader the bench uses on Pagefind's files reads what it is given."""
    bench = _bench()
    data = bytes([0x83, 0x01, 0x63]) + b"abc" + bytes([0x82, 0x18, 0x20, 0x40])
    assert bench._cbor(data)[0] == [1, "abc", [32, b""]]
