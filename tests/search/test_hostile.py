"""Hostile pages (issue 23 acceptance): a 50 MiB page, binary bytes, a million distinct words, a
10,000-character term, 50,000 nested elements, 250,000 elements in a row. The build finishes in a
child process whose peak memory (VmHWM, from /proc) stays bounded, the indexed text is cut at the
documented bounds (formats/search.md §2.3), and search still works on the other pages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.search import query, store
from archiver.search.text import MAX_TEXT, extract

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, sys
from pathlib import Path
from archiver.search import store
manifest, pages, size = store.write_index(Path(sys.argv[1]))
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
terms = sum(s[4] for s in manifest["shards"])
print(json.dumps({"pages": pages, "bytes": size, "hwm_kib": hwm, "terms": terms}))
"""


def _page(title: str, body: bytes) -> bytes:
    return (
        b"<!DOCTYPE html><html><head><title>"
        + title.encode()
        + b"</title></head><body>"
        + body
        + b"</body></html>"
    )


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "tree"
    root.mkdir()
    # 50 MiB of text in one paragraph, a few words over and over with a counter every 1000 words.
    chunk = b" ".join(b"lorem ipsum dolor sit amet w%d" % i for i in range(200)) + b" "
    with open(root / "huge.html", "wb") as f:
        f.write(_page("Huge", b"<p>"))
        while f.tell() < 50 << 20:
            f.write(chunk)
        f.write(b"</p>tailmarker</body></html>")
    (root / "binary.html").write_bytes(os.urandom(1 << 20))
    words = b" ".join(b"u%07d" % i for i in range(1_000_000))  # a million distinct words, 8.6 MB
    (root / "distinct.html").write_bytes(_page("Distinct", b"<p>" + words + b"</p>"))
    (root / "longterm.html").write_bytes(_page("Long term", b"<p>before " + b"x" * 10_000 + b" after</p>"))
    (root / "normal.html").write_bytes(_page("Normal page", b"<p>an ordinary needle in the text</p>"))
    nested = b"<div>" * 50_000 + b"<p>deepword</p><script>scriptword</script>" + b"</div>" * 50_000
    (root / "nested.html").write_bytes(_page("Nested", nested))  # quadratic in the parser unbounded
    (root / "elements.html").write_bytes(_page("Elements", b"<span>w</span> " * 250_000 + b"lastspan"))
    return root


def test_hostile_pages_build_bounded(hostile: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(hostile)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout)
    assert stats["pages"] == 7
    # Peak memory of the whole child (interpreter, lexbor's DOM of the 8 MiB read, the index).
    assert stats["hwm_kib"] < 600 * 1024, stats
    # The distinct-word page is cut at 1 MiB of text: ~131,000 of its million words are terms.
    assert stats["terms"] < 200_000, stats

    index = store.open_index(hostile)
    assert query.search([index], "needle ").results[0].path == "normal.html"
    assert query.search([index], "tailmarker ").total == 0  # past the 8 MiB read
    assert query.search([index], "u0000001 ").results[0].path == "distinct.html"
    assert query.search([index], "u0999999 ").total == 0  # past the 1 MiB of text kept
    assert {r.path for r in query.search([index], "before after").results} == {"longterm.html"}
    assert query.search([index], "x" * 10_000).total == 0
    assert query.search([index], "deepword ").results[0].path == "nested.html"
    assert query.search([index], "scriptword ").total == 0
    assert query.search([index], "lastspan ").total == 0  # past the 200,000 nodes walked
    assert query.search([index], '"before after"').total == 0  # the dropped term kept its position
    for doc in range(index.documents):
        path, _title, _headings, starts = index.fragment(doc)
        assert sum(len(index.chunk(doc, k)) for k in range(len(starts))) <= MAX_TEXT, path
    assert list(store.check_index(hostile)) == []


_WORKERS_CHILD = """
import hashlib, json, resource, sys
from pathlib import Path
from archiver.search import store
digests = []
for workers in (1, 2):
    files = {}
    store.build_index(Path(sys.argv[1]), files.__setitem__, workers=workers)
    whole = b"".join(k.encode() + b"\\0" + files[k] for k in sorted(files))
    digests.append(hashlib.sha256(whole).hexdigest())
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
workers_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"digests": digests, "hwm_kib": hwm, "workers_kib": workers_kib}))
"""


def test_hostile_pages_build_bounded_in_worker_processes(hostile: Path) -> None:
    """The same hostile pages prepared by two worker processes (extraction and tokenising, §5):
    the builder's process and each worker stay bounded in memory, and the index is byte for byte
    the one a single process builds."""
    done = subprocess.run(
        [sys.executable, "-c", _WORKERS_CHILD, str(hostile)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout)
    one, two = stats["digests"]
    assert one == two
    assert stats["hwm_kib"] < 600 * 1024, stats
    assert stats["workers_kib"] < 600 * 1024, stats


def test_a_page_nested_past_the_depth_limit_keeps_its_text() -> None:
    """Past html_depth's 512 levels an element becomes a sibling of the deepest (Blink's rule): its
    text stays, and the walk over 50,000 would-be levels still finds it."""
    page = b"<p>" + b"<b>x</b>" * 600 + b"<div>" * 50_000 + b"<p>deepword</p>" + b"</div>" * 50_000 + b"</p>"
    assert "deepword" in " ".join(t for _, t in extract(_page("Deep", page)).blocks)


def test_elements_nested_under_the_depth_limit_keep_their_blocks() -> None:
    """Elements 300 levels deep (under html_depth's 512) keep their tags: a heading and two blocks,
    not one run of text (the extraction no longer strips the tags past 256 levels)."""
    inner = b"<h2>deep title</h2><div>first block</div><div>second block</div>"
    page = b"<b>x</b>" * 600 + b"<div>" * 300 + inner + b"</div>" * 300
    assert extract(_page("Deep", page)).blocks[1:] == [
        (True, "deep title"),
        (False, "first block"),
        (False, "second block"),
    ]
