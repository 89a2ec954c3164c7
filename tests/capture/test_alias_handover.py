"""Several URLs share one tree path (formats/tree.md §3.3: ``/x`` and ``/x/`` are ``x/index.html``):
the one linked first owns the path and is the only one fetched. When that owner fails (a 404, an
archive that never recorded it), the file must still come from an alias that works: the owner hands
the path to the smallest alias never tried (crawl-state.md §2), in the SQLite state and in the Redis
state alike, live and from a WARC. And a referrer is named by the smallest key of its page's file,
not by whichever alias was fetched (tree.md §8)."""

from __future__ import annotations

import http.client
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from warcio.capture_http import capture_http

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
from tests.capture.redis_server import redis_server
from tests.capture.test_redis_crawl import _finish, _merged_is_single, _worker
from tests.warc.conftest import no_network
from tests.warc.test_warc import run

pytestmark = pytest.mark.timeout(300)

X_TEXT = "THE-X-FOLDER-PAGE"


def _site(root: Path, links: list[str]) -> Path:
    (root / "x").mkdir(parents=True)
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    (root / "index.html").write_text(f"<!DOCTYPE html><title>Home</title><p>{anchors}</p>")
    (root / "x" / "index.html").write_text(
        f'<!DOCTYPE html><title>X</title><p>{X_TEXT}</p><a href="child.html">child</a>'
    )
    (root / "x" / "child.html").write_text("<!DOCTYPE html><title>Child</title><p>child</p>")
    return root


def _records(tree: Path) -> dict[str, dict[str, Any]]:
    lines = (tree / "_archiver/manifest.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    return {r["path"]: r for r in map(json.loads, lines)}


def _rows(tree: Path) -> dict[str, tuple[str, str | None, str | None]]:
    db = sqlite3.connect(tree / "_archiver/crawl.sqlite")
    try:
        query = "SELECT key, state, outcome, final_url FROM urls"
        return {str(k): (str(s), o, f) for k, s, o, f in db.execute(query)}
    finally:
        db.close()


def test_a_first_linked_alias_that_404s_hands_the_file_to_the_one_that_works(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["x", "x/"])
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None, status={"/x": 404})) as server:
        report = capture([server.url], out, render=False, depth=5, delay=0, progress=False)
        asked = [r.path for r in server.requests]
        base = server.url
    assert asked.count("/x") == 1 and asked.count("/x/") == 1
    records = _records(out)
    assert "x/index.html" in records, "the folder page was lost with its first-linked alias"
    assert X_TEXT in (out / "x/index.html").read_text(encoding="utf-8")
    assert "x/child.html" in records  # found through the page the alias stored
    assert records["x/index.html"]["urls"] == [f"{base}x/", f"{base}x"]  # the fetched one first
    assert 'href="x/index.html"' in (out / "index.html").read_text(encoding="utf-8")
    # the report still says what /x answered; the row is merged into the key that holds the file
    failed = {i.url: i for i in report.items if i.outcome == "failed"}
    assert f"{base}x" in failed and failed[f"{base}x"].status == 404
    assert _rows(out)[f"{base}x"] == ("merged", "failed", f"{base}x/")
    # the child's referrer is the smallest key of the page that linked it, not the fetched alias
    assert records["x/child.html"]["referrer"] == f"{base}x"


def test_the_path_goes_on_until_an_alias_works_and_each_is_tried_once(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["x", "x/", "x/index.html"])
    forced = {"/x": 404, "/x/": 404}
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None, status=forced)) as server:
        capture([server.url], out, render=False, depth=5, delay=0, progress=False)
        asked = [r.path for r in server.requests]
        base = server.url
    assert [asked.count(p) for p in ("/x", "/x/", "/x/index.html")] == [1, 1, 1]
    records = _records(out)
    assert X_TEXT in (out / "x/index.html").read_text(encoding="utf-8")
    assert records["x/index.html"]["urls"][0] == f"{base}x/index.html"
    keys = sorted(f"{base}{p}" for p in ("x", "x/", "x/index.html"))
    assert sorted(records["x/index.html"]["urls"]) == keys


def test_when_every_alias_fails_each_is_tried_once_and_the_capture_ends(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["x", "x/"])
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None, status={"/x": 404, "/x/": 404})) as server:
        report = capture([server.url], out, render=False, depth=5, delay=0, progress=False)
        asked = [r.path for r in server.requests]
        base = server.url
    assert asked.count("/x") == 1 and asked.count("/x/") == 1
    assert report.complete and "x/index.html" not in _records(out)
    assert {i.url for i in report.items if i.outcome == "failed"} == {f"{base}x", f"{base}x/"}


def test_a_redis_crawl_hands_the_path_over_and_merges_into_the_single_capture(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["x", "x/"])
    single = tmp_path / "single"
    with FixtureServer(FixtureConfig(root=site, robots=None, status={"/x": 404})) as server:
        capture([server.url], single, render=False, depth=10, delay=0, progress=False)
        with redis_server(tmp_path / "redis") as redis:
            shards = [tmp_path / f"shard{i}" for i in range(2)]
            results = _finish([_worker(server, s, redis, "alias", "--delay", "0") for s in shards])
            assert [code for code, _ in results] == [0, 0], results
            client = redis.client()
            assert client.hget("archiver:{alias}:paths", "x/index.html") == f"{server.url}x/"
            assert client.hget(f"archiver:{{alias}}:u:{server.url}x", "state") == "merged"
    assert "x/index.html" in _records(single)
    _merged_is_single(shards, single)
    merged = _records(tmp_path / "merged")
    assert X_TEXT in (tmp_path / "merged/x/index.html").read_text(encoding="utf-8")
    assert "x/child.html" in merged


def test_a_warc_without_the_first_linked_alias_still_gives_the_file(tmp_path: Path) -> None:
    """The import's case (tests/warc/test_import_render.py): the live run merged ``/x`` into ``/x/``
    and never fetched it, so the WARC has no record of it; the import meets ``/x`` first."""
    site = _site(tmp_path / "site", ["x", "x/"])
    warc = tmp_path / "site.warc.gz"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        port = server.port
        with capture_http(str(warc)):
            for target in ("/robots.txt", "/", "/x/", "/x/child.html"):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("GET", target, headers={"Accept-Encoding": "identity"})
                conn.getresponse().read()
                conn.close()
    out = tmp_path / "tree"
    with no_network() as tried:
        r = run("capture", "--from-warc", warc, "-o", out, "--depth", "5", "--no-render", "--json")
    assert r.returncode == 0, r.stderr
    assert tried == []
    records = _records(out)
    assert "x/index.html" in records and "x/child.html" in records
    assert X_TEXT in (out / "x/index.html").read_text(encoding="utf-8")


def test_a_referrer_is_the_smallest_alias_of_its_page_whichever_was_fetched(tmp_path: Path) -> None:
    # ``x/`` is linked first, so it is fetched; the child it reveals names ``x``, the smaller key
    # of the same file, as it would had ``x`` been met first (the order of finishing pages decides
    # that under several tabs or workers)
    site = _site(tmp_path / "site", ["x/", "x"])
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        capture([server.url], out, render=False, depth=5, delay=0, progress=False)
        base = server.url
    records = _records(out)
    assert records["x/index.html"]["urls"] == [f"{base}x/", f"{base}x"]
    assert records["x/child.html"]["referrer"] == f"{base}x"
    assert records["x/child.html"]["depth"] == 2


def test_the_heir_takes_the_failed_owners_place_in_the_page_budget(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", ["x", "x/"])
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None, status={"/x": 404})) as server:
        report = capture([server.url], out, render=False, depth=5, delay=0, max_pages=2, progress=False)
    assert report.pages == 2  # the home and x/index.html: the child waits beyond the budget
    assert sorted(r for r in _records(out) if r.endswith(".html")) == ["index.html", "x/index.html"]
