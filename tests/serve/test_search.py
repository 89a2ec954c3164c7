"""Search through ``archiver serve`` (formats/serve.md §8): the bare host's JSON API and search box
rank a tree, a gwtar and a ZIM mounted together and link each result to its mount's own origin; the
API is not on a mount's origin; a mount without an index is skipped and named; each mount's own
search page (formats/search.md §7) works on its origin, for a gwtar through its member URLs, and says
when the index is damaged. Chromium resolves only loopback names."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, sync_playwright

from archiver import gwtar, zim
from archiver.capture.browser import launch
from archiver.search import store
from archiver.serve import running
from tests.serve.helpers import REPO

SITE = REPO / "testdata" / "site"
RESOLVE_NOTHING = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost, EXCLUDE 127.0.0.1",
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    top = tmp_path_factory.mktemp("serve-search")
    site = Path(shutil.copytree(SITE, top / "site"))
    store.write_index(site)
    gwtar.pack(site, top / "g.gwtar.html", search_index=True)
    zim.pack(site, top / "book.zim", search_index=True)
    gwtar.pack(site, top / "plain.gwtar.html")  # no index
    damaged = Path(shutil.copytree(site, top / "dsrc"))
    shard = damaged / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    gwtar.pack(damaged, top / "damaged.gwtar.html", search_index=True)
    paths = [site, top / "g.gwtar.html", top / "book.zim", top / "plain.gwtar.html"]
    with running(paths) as url, running([top / "damaged.gwtar.html"]) as other:
        yield url.rstrip("/") + " " + other.rstrip("/")


def _get(url: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(
            f"GET {target} HTTP/1.1\r\nHost: {host or parts.netloc}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    return int(lines[0].split(" ")[1]), headers, body


def test_the_api_ranks_every_mount_together(base: str) -> None:
    url, _ = base.split(" ")
    port = urlsplit(url).port
    status, headers, body = _get(f"{url}/~/api/search?q=field&limit=6")
    assert status == 200 and headers["content-type"].startswith("application/json")
    doc = json.loads(body)
    kinds = [(r["mount"], r["kind"]) for r in doc["results"][:3]]
    assert kinds == [("site", "tree"), ("g.gwtar.html", "gwtar"), ("book", "zim")]  # same page, same score
    assert len({(r["path"], r["score"]) for r in doc["results"][:3]}) == 1
    first = doc["results"][:3]
    assert first[0]["url"] == f"http://site.localhost:{port}/site/{first[0]['path']}"
    assert first[1]["url"] == f"http://g-gwtar-html.localhost:{port}/g.gwtar.html#/{first[1]['path']}"
    assert first[2]["url"] == f"http://book.localhost:{port}/book/{first[2]['path']}"
    assert doc["skipped"] == [
        {"mount": "plain.gwtar.html", "reason": "no search index (archiver index or pack it)"}
    ]
    page2 = json.loads(_get(f"{url}/~/api/search?q=field&limit=3&offset=3")[2])
    assert [r["url"] for r in page2["results"]] == [r["url"] for r in doc["results"][3:6]]
    assert page2["total"] == doc["total"] > 6
    # the library lives on the bare host: not on a mount's origin
    assert _get(f"{url}/~/api/search?q=field", host=f"site.localhost:{port}")[0] == 404
    assert _get(f"{url}/~/search?q=field", host=f"book.localhost:{port}")[0] == 404


def test_each_mounts_search_page_is_served_on_its_origin(base: str) -> None:
    url, _ = base.split(" ")
    port = urlsplit(url).port
    for label, path in [
        ("site", "/site/_archiver/search/index.html"),
        ("g-gwtar-html", "/g.gwtar.html/~/_archiver/search/index.html"),
        ("book", "/book/_archiver/search/index.html"),
    ]:
        status, headers, body = _get(url + path, host=f"{label}.localhost:{port}")
        assert status == 200 and headers["content-type"].startswith("text/html"), (label, status)
        assert b'<script src="search.js"' in body


def _in_chromium(job: Any, *args: Any) -> Any:
    def run() -> Any:
        with sync_playwright() as p:
            browser = launch(p, args=RESOLVE_NOTHING)
            try:
                return job(browser, *args)
            finally:
                browser.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result(timeout=300)


def _type_and_click(browser: Browser, url: str) -> dict[str, Any]:
    page = browser.new_page()
    page.goto(url + "/")
    page.locator("#q").fill("marsh recording")
    page.locator("#q").press("Enter")
    page.wait_for_selector("#results li")
    links = page.locator("#results li a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    links.first.click()
    page.wait_for_load_state()
    out = {"hrefs": hrefs, "at": page.url, "title": page.title()}
    page.close()
    return out


def test_a_query_typed_in_the_index_page_opens_a_page_on_its_mounts_origin(base: str) -> None:
    url, _ = base.split(" ")
    got = _in_chromium(_type_and_click, url)
    hosts = {urlsplit(h).hostname for h in got["hrefs"]}
    assert {"site.localhost", "g-gwtar-html.localhost", "book.localhost"} <= hosts
    assert urlsplit(got["at"]).hostname == "site.localhost"
    assert got["at"].endswith("/site/blog/2026/04/field-recording.html")
    assert got["title"].startswith("Field recording")


def _mount_page(browser: Browser, url: str) -> tuple[str, list[str], str]:
    page = browser.new_page()
    page.goto(url)
    page.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=30_000)
    state = page.get_attribute("body", "data-state") or ""
    titles = page.locator("#results li a").all_inner_texts()
    status = page.locator("#status").inner_text()
    page.close()
    return state, titles, status


def test_the_search_page_of_a_gwtar_mount_and_a_damaged_one(base: str) -> None:
    url, other = base.split(" ")
    state, titles, _ = _in_chromium(_mount_page, f"{url}/g.gwtar.html/~/_archiver/search/index.html?q=marsh")
    assert state == "done" and any(t.startswith("Field recording") for t in titles)
    state, _, _ = _in_chromium(_mount_page, f"{url}/book/_archiver/search/index.html?q=marsh")
    assert state == "done"
    state, _, status = _in_chromium(
        _mount_page, f"{other}/damaged.gwtar.html/~/_archiver/search/index.html?q=field"
    )
    assert state == "damaged" and "t/0" in status


@pytest.mark.interop
def test_nginx_with_the_printed_config_serves_a_trees_search_page(tmp_path: Path) -> None:
    from archiver.serve import print_config
    from tests.serve.helpers import free_port, nginx_block

    site = Path(shutil.copytree(SITE, tmp_path / "www" / "site"))
    store.write_index(site)
    for p in [tmp_path, *tmp_path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)  # nginx's workers read the files too
    port = free_port()
    (tmp_path / "nginx").mkdir()
    with nginx_block(
        tmp_path / "nginx", print_config("nginx", [site], listen=f"127.0.0.1:{port}"), port
    ) as url:
        for name in ("index.html", "search.js", "manifest.js", "t/0.js"):
            status, _headers, body = _get(f"{url}site/_archiver/search/{name}", host=f"site.localhost:{port}")
            assert status == 200 and body == (site / "_archiver" / "search" / name).read_bytes(), name
