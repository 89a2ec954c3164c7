"""The rendered import in real Chromium (formats/warc.md §8): a WARC written by warcio's own
``capture_http`` (every request a live rendered capture of the fixture site made), imported with the
fixture server stopped and sockets forbidden, Chromium rendering every page from the records. The
JavaScript-built page comes out whole, and every page opened from disk differs from the live page in
at most 0.5 % of its pixels (the comparison of tests/capture/test_offline.py)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from warcio.capture_http import capture_http

from archiver.capture import capture
from archiver.fixture import JS_MARKER, JS_PAGE, FixtureServer
from archiver.tree import read_records
from tests.capture.test_capture_site import PAGES
from tests.capture.test_offline import SCROLL_THROUGH, STILL, _differing_share, settle_scrolled
from tests.pixels import both, follow_refresh, settle, settled_share
from tests.warc.conftest import no_network
from tests.warc.test_warc import run

pytestmark = pytest.mark.browser


@dataclass
class Imported:
    server: FixtureServer  # the live site again, on the port the WARC names
    tree: Path
    report: dict[str, Any]
    connects: list[object]
    records: int


def record_site(folder: Path) -> tuple[Path, int, int]:
    """A live rendered capture of the fixture site, then every request it made fetched again through
    warcio's ``capture_http`` into ``folder/site.warc.gz``: (WARC, port, requests recorded)."""
    with FixtureServer() as server:
        capture([server.url], folder / "live", render=True, depth=10, delay=0, progress=False)
        targets = sorted({r.target for r in server.requests if r.method == "GET"})
        warc = folder / "site.warc.gz"
        with capture_http(str(warc)):
            for target in targets:
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                conn.request("GET", target, headers={"Accept-Encoding": "identity"})
                conn.getresponse().read()
                conn.close()
        return warc, server.port, len(targets)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Imported]:
    import json

    folder = tmp_path_factory.mktemp("import-render")
    warc, port, count = record_site(folder)
    with no_network() as tried:  # the server is stopped too: nothing could answer
        r = run("capture", "--from-warc", warc, "-o", folder / "tree", "--depth", "10", "--json")
    assert r.returncode == 0, r.stderr
    with FixtureServer(port=port) as server:
        yield Imported(server, folder / "tree", json.loads(r.stdout), tried, count)


def test_rendered_import_is_whole(imported: Imported) -> None:
    assert imported.connects == []
    stored = {rec.path for rec in read_records(imported.tree)}
    missing = [p for p in PAGES if p not in stored and p != "docs/this-page-does-not-exist.html"]
    assert missing == []
    assert imported.report["complete"] and imported.report["requests"] > 0
    js = (imported.tree / JS_PAGE).read_text()
    assert JS_MARKER in js and 'data-state="ready"' in js  # built by the page's script, from the records
    assert 'data-module="ready"' in js  # the module chain fetched data/notes.json from the records
    assert any(p.endswith("img/js/built.png") for p in stored)


@pytest.mark.parametrize("page_path", PAGES)
def test_imported_page_looks_like_the_live_one(
    imported: Imported, contexts: tuple[Any, Any], page_path: str
) -> None:
    if page_path == "docs/this-page-does-not-exist.html":
        pytest.skip("broken on purpose: not a page of the site")
    disk, live = contexts
    page = disk.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((imported.tree / page_path).as_uri(), wait_until="load")
    follow_refresh(page)
    page.evaluate(SCROLL_THROUGH)
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:", "about:"))] == []
    settle(page)
    page.add_style_tag(content=STILL)
    other = live.new_page()
    other.goto(imported.server.url_for(page_path.replace("?", "%3F")), wait_until="load")
    follow_refresh(other)  # as the page from disk did: else the refresh may land mid-screenshot
    settle_scrolled(other)
    other.add_style_tag(content=STILL)
    shoot = both(other, page, again=settle_scrolled, full_page=True)
    share = settled_share(shoot, _differing_share, name=f"import-{page_path}")
    page.close()
    other.close()
    print(f"import fidelity {page_path}: {share:.4%} of pixels differ")
    assert share <= 0.005
