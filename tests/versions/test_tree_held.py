"""A recorded version whose file only the tree holds (store format 2, formats/history.md §1–§3): no
blob is stored while the file stays; every reader (extract, ``pack --all-versions`` and its
``extract --version``, serve's Memento, ``diff``) reads it from the tree; a tree file replaced by a
symbolic link is refused with nothing read outside; one edited in place is named by verify, and
refused by a running serve at the next request; one asked again and again is hashed once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from archiver.serve import make_app, running
from archiver.versions import keeper, store
from tests.serve.helpers import get_on
from tests.versions.helpers import page, settle, tree_files, write_tree

V1 = {
    "index.html": page("Home", "<p>one</p>"),
    "docs/a.html": page("A", "<p>first</p>"),
    "docs/b.html": page("B", "<p>the same in both</p>"),
    "_archiver/site.localhost/s.css": "body{color:#111}",
}
V2 = {**V1, "index.html": page("Home", "<p>two</p>")}
del V2["docs/a.html"]
FIRST = "20261130T090000Z"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def two(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    write_tree(root, V2, "2026-12-01T09:00:00Z")  # index replaced, a removed: both kept first
    store.record(root)
    return root


def _memento(base: str, path: str) -> tuple[int, dict[str, str], bytes]:
    return get_on(base, f"/site@{FIRST}/{path}", f"site-{FIRST.lower()}.localhost:{urlsplit(base).port}")


@pytest.fixture
def small_cache(two: Path) -> Iterator[str]:
    """serve of ``two`` whose answer cache holds one answer (a server allowed 64 files holds 16)."""
    app = make_app([two])
    app.site.cache_entries = 1
    try:
        with running(app) as base:
            yield base
    finally:
        app.site.close()


def _blob(root: Path, path: str) -> Path:
    r = next(r for r in store.version_records(store.versions(root)[0]) if r.path == path)
    return store.blob_path(root, r.sha256)


def test_only_the_files_that_left_the_tree_have_a_blob(two: Path, tmp_path: Path) -> None:
    assert _blob(two, "index.html").is_file() and _blob(two, "docs/a.html").is_file()
    assert (
        not _blob(two, "docs/b.html").exists() and not _blob(two, "_archiver/site.localhost/s.css").exists()
    )
    out = tmp_path / "v1"
    done = _cli("extract", str(two), "--version", FIRST, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert tree_files(out) == {p: c.encode() for p, c in V1.items()}
    assert _cli("verify", str(two)).returncode == 0


def test_all_versions_gwtar_holds_a_file_the_tree_holds(two: Path, tmp_path: Path) -> None:
    packed = tmp_path / "all.gwtar.html"
    done = _cli("pack", str(two), "--format", "gwtar", "--all-versions", "-o", str(packed))
    assert done.returncode == 0, done.stderr
    assert _cli("verify", str(packed)).returncode == 0
    out = tmp_path / "v1"
    done = _cli("extract", str(packed), "--version", FIRST, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert tree_files(out) == {p: c.encode() for p, c in V1.items()}


def test_a_memento_of_a_file_the_tree_holds(two: Path) -> None:
    with running([two]) as base:
        origin = f"site-{FIRST.lower()}.localhost:{urlsplit(base).port}"
        status, got, body = get_on(base, f"/site@{FIRST}/docs/b.html", origin)
        assert status == 200 and body == V1["docs/b.html"].encode()
        assert got["memento-datetime"] == "Mon, 30 Nov 2026 09:00:00 GMT"
        status, _, body = get_on(base, f"/site@{FIRST}/docs/a.html", origin)  # from its blob
        assert status == 200 and body == V1["docs/a.html"].encode()
    # the tree file edited in place: its bytes are not the version's, never served as them
    with open(two / "docs/b.html", "r+b") as f:
        f.write(b"<!doctype")
    with running([two]) as base:
        origin = f"site-{FIRST.lower()}.localhost:{urlsplit(base).port}"
        assert get_on(base, f"/site@{FIRST}/docs/b.html", origin)[0] == 404


def test_a_tree_file_replaced_by_a_symlink_is_refused(two: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text(V1["docs/b.html"])  # the very bytes: only the link gives it away
    (two / "docs/b.html").unlink()
    (two / "docs/b.html").symlink_to(secret)
    checked = _cli("verify", str(two))
    assert checked.returncode == 1 and "docs/b.html" in checked.stdout
    out = tmp_path / "v1"
    done = _cli("extract", str(two), "--version", FIRST, "-o", str(out))
    assert done.returncode == 1 and not out.exists()
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    packed = tmp_path / "all.gwtar.html"
    done = _cli("pack", str(two), "--format", "gwtar", "--all-versions", "-o", str(packed))
    assert done.returncode == 1 and not packed.exists()
    with running([two]) as url:
        port = int(urlsplit(url).port or 0)
        got = get_on(url, f"/site@{FIRST}/docs/b.html", f"site-{FIRST.lower()}.localhost:{port}")
    assert got[0] == 404
    assert not _blob(two, "docs/b.html").exists()


def test_diff_reads_a_page_the_tree_holds(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    changed = {**V1, "docs/a.html": page("A", "<p>second</p>")}
    write_tree(root, changed, "2026-12-01T09:00:00Z")
    store.record(root)
    done = _cli("diff", str(root), "--text")
    assert done.returncode == 0, done.stderr
    assert re.search(r"^changed +docs/a\.html$", done.stdout, re.M) and "+second" in done.stdout


def test_a_format_1_store_reads_as_before(tmp_path: Path) -> None:
    """A store recorded before 2026-12 (every file's blob stored at every recording, no store.json):
    every reader takes the blobs, a capture keeps nothing more, and the tree's files may change."""
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    folders = keeper.TreeFolders(root)
    try:
        for r in store.version_records(store.versions(root)[0]):
            assert keeper.store_blob(root, r.path, r.sha256, r.size, folders)
    finally:
        folders.close()
    (store.store_dir(root) / "store.json").unlink()
    k = keeper.for_tree(root)
    assert k is not None and k.pending == {}
    write_tree(root, V2, "2026-12-01T09:00:00Z")
    store.record(root)
    for r in store.version_records(store.versions(root)[0]):
        assert store.source(root, r) == store.blob_path(root, r.sha256)
    out = tmp_path / "v1"
    assert _cli("extract", str(root), "--version", FIRST, "-o", str(out)).returncode == 0
    assert tree_files(out) == {p: c.encode() for p, c in V1.items()}
    assert _cli("verify", str(root)).returncode == 0


def test_a_memento_asked_50_times_hashes_its_tree_file_once(
    two: Path, hashes: list[int], small_cache: str
) -> None:
    """An old version's page the tree holds, asked 50 times while serve's answer cache cycles (each
    request evicts the other's answer): checked once, not hashed at every request."""
    settle(two)
    want = V1["docs/b.html"].encode()
    for _ in range(50):
        status, got, body = _memento(small_cache, "docs/b.html")
        assert status == 200 and body == want and got["memento-datetime"] == "Mon, 30 Nov 2026 09:00:00 GMT"
        assert _memento(small_cache, "docs/a.html")[0] == 200  # from its blob: never hashed to serve
    assert hashes == [len(want)]


def test_a_tree_file_edited_in_place_is_refused_at_the_next_request(two: Path, hashes: list[int]) -> None:
    """The attack: a served old version's page edited in place in the tree (same size), even with
    its mtime put back, is not served under the version's Memento-Datetime at the next request
    (serve's cached answer included): 404. A file changed less than ``SETTLE_NS`` ago is checked at
    every request (an edit within the same timestamp tick leaves mtime and ctime as they were)."""
    target = two / "docs/b.html"
    want = V1["docs/b.html"].encode()
    evil = b"<script>alert(1)</script>".ljust(len(want), b" ")
    with running([two]) as base:
        for settled in (False, True):
            if settled:
                settle(two)
            assert _memento(base, "docs/b.html")[2] == want
            assert _memento(base, "docs/b.html")[2] == want
            before = os.stat(target)
            with open(target, "r+b") as f:
                f.write(evil)
            os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))  # the ctime still tells
            assert os.stat(target).st_size == len(want)
            for _ in range(3):
                status, got, body = _memento(base, "docs/b.html")
                assert status == 404 and b"alert" not in body and "memento-datetime" not in got
            with open(target, "r+b") as f:  # the version's bytes back: served again
                f.write(want)
            assert _memento(base, "docs/b.html")[:3:2] == (200, want)
    assert hashes.count(len(want)) >= 5  # checked again after each change, never trusted blind


def test_a_tree_file_replaced_by_a_capture_is_served_from_its_blob(two: Path, hashes: list[int]) -> None:
    """A served old version's page that a capture then replaces (its blob kept first, §2.1): the
    version's bytes still, from the blob."""
    settle(two)
    want = V1["docs/b.html"].encode()
    with running([two]) as base:
        assert _memento(base, "docs/b.html")[2] == want
        write_tree(two, {**V2, "docs/b.html": page("B", "<p>changed</p>")}, "2026-12-02T09:00:00Z")
        status, _, body = _memento(base, "docs/b.html")
        assert status == 200 and body == want
    assert _blob(two, "docs/b.html").is_file() and hashes == [len(want)]
