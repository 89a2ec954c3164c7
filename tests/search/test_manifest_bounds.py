"""The bounds of a search index's manifest (formats/search.md §4.2, Bounds): a forged manifest with more
rows or text files than the format allows, or more bytes, is refused as it is opened with one
problem line (``verify`` of one of 1,000,000 shard rows took 13 s of CPU and 848 MB, and printed a
million lines: one a missing shard); the problems of an index's files are reported one by one up to
:data:`~archiver.search.store.MAX_FILE_PROBLEMS`, then counted in one line; the builder never writes
an index past the bounds."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from archiver.errors import FormatError
from archiver.search import build, query, store
from tests.search.helpers import build_files, html

ROOT = Path(__file__).resolve().parents[2]
PAGES = [(f"p{i}.html", html(f"Page {i}", f"<p>river number {i} delta</p>")) for i in range(20)]


def _tree(root: Path, change: Any) -> Path:
    """A tree with a real index of PAGES whose manifest ``change(manifest)`` rewrites (wrapped as the
    builder wraps it, past the bounds the builder keeps)."""
    root.mkdir()
    for path, text in PAGES:
        (root / path).write_text(text, encoding="utf-8")
    store.write_index(root)
    where = root / store.INDEX_DIR / "manifest.js"
    manifest = json.loads(build.payload_of("manifest", where.read_bytes()))
    change(manifest)
    where.write_bytes(build.wrap("manifest", json.dumps(manifest, separators=(",", ":")).encode()))
    return root


def _verify(tree: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "verify", "--no-links", str(tree)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    return [line for line in (done.stdout + done.stderr).splitlines() if "search index" in line]


def _shard_rows(n: int) -> Any:
    def change(m: dict[str, Any]) -> None:
        first = m["shards"][0]
        m["shards"] = [[f"a{i:07d}", f"a{i:07d}z", first[2], first[3], 1] for i in range(n)]

    return change


def test_a_manifest_of_more_shard_rows_than_the_format_allows_is_one_line(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", _shard_rows(build.MAX_SHARDS + 1))
    lines = _verify(tree)  # old code: 262,144 lines, one a shard that is not there
    assert len(lines) == 1 and "manifest.js" in lines[0], lines[:3]
    assert f"its shards table has {build.MAX_SHARDS + 1} rows, more than the format allows" in lines[0]


def test_a_manifest_of_more_bytes_than_the_format_allows_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    tree = _tree(tmp_path / "t", lambda m: m.update(pad="x" * build.MAX_MANIFEST_BYTES))
    lines = _verify(tree)
    assert len(lines) == 1 and "more than the format allows (33554432)" in lines[0], lines


@pytest.mark.parametrize("files", [build.MAX_TEXT_FILES + 1, 10**12])
def test_a_format_3_manifest_counting_too_many_text_files_is_refused(tmp_path: Path, files: int) -> None:
    """``text_files`` is a bare count: old code tried to read every one (10**12 reads, each a problem)."""
    tree = _tree(tmp_path / "t", lambda m: m.update(text_files=files))
    found = list(itertools.islice(store.check_index(tree), 200))  # old code: 200, and more to come
    assert len(found) == 1 and f"says {files} text files" in found[0][1], found[:3]


def test_problems_of_the_files_are_counted_past_the_first_hundred(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "t", _shard_rows(store.MAX_FILE_PROBLEMS + 50))
    lines = _verify(tree)  # the shards after the first are not there: 149 problems
    assert len(lines) == store.MAX_FILE_PROBLEMS + 1, len(lines)
    assert all("cannot be read" in line for line in lines[:-1])
    assert lines[-1].endswith("_archiver/search: search index: and 49 more damaged or missing files")


def test_every_reader_refuses_the_manifest_and_the_builder_never_writes_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = build_files(PAGES, version=2, text_bytes=200)  # (format 2: a row a text file)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    rows = len(manifest["text"])
    assert rows > 1
    monkeypatch.setattr(build, "MAX_TEXT_FILES", rows - 1)
    with pytest.raises(FormatError, match=f"its text table has {rows} rows, more than the format allows"):
        query.Index(files.__getitem__, "mem")
    with pytest.raises(FormatError, match="the site is too large for one search index"):
        build_files(PAGES, version=2, text_bytes=200)


_JS_BOUNDS = """
const s = require(process.argv[1]);
const shapes = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(shapes.map(([key, n, extra]) => {
  const m = Object.assign({}, extra);
  if (key) { m[key] = new Array(n).fill(0); }
  return s.boundsProblem(m);
})));
"""


def test_the_search_page_refuses_what_python_refuses() -> None:
    """The page in a browser checks the manifest's bounds as Python does, with the same words (it did
    not: a forged manifest of a million shard rows was taken as it was)."""
    import shutil

    shapes = [("shards", build.MAX_SHARDS + 1, {}), ("shards", build.MAX_SHARDS, {}),
              ("docs", build.MAX_GROUPS + 1, {}), ("text", build.MAX_TEXT_FILES + 1, {}),
              ("text", build.MAX_TEXT_FILES, {}), (None, 0, {"text_files": 10**12}),
              (None, 0, {"text_files": build.MAX_TEXT_FILES}), (None, 0, {"text_files": "x"})]  # fmt: skip
    done = subprocess.run(
        [shutil.which("node") or "node", "-e", _JS_BOUNDS, str(ROOT / "js" / "search.js")],
        input=json.dumps(shapes),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    python = [build.bounds_problem({**extra, **({key: [0] * n} if key else {})}) for key, n, extra in shapes]
    assert json.loads(done.stdout) == python
    assert [bool(p) for p in python] == [True, False, True, True, False, True, False, False]
