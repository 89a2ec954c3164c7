"""The renderer's requests after issue 24 point 2 (archiver/capture/render.py, formats/tree.md §9.6):
each tab's requests are paused through CDP's Fetch domain on a session of its own instead of
Playwright's ``context.route``, which turns the browser's cache off for every page. The mistakes
that change would invite, each written as a test against a real Chromium:

- a tab that renders page after page asks archiver again for every script, stylesheet and image the
  pages share (the cost the change removes: 17 round trips a python3-doc page, 440 KB base-64 over
  the pipe), and a page whose script comes from the cache must still run it;
- a request nobody intercepts: a frame of another site (Chromium puts it in a process of its own, a
  target the tab's session does not see unless site isolation is off) and a dedicated worker's
  fetches must still be answered by archiver, since the browser can reach nothing by itself;
- a refused request must be asked again by the next page (a failure is never cached), so that each
  page that asks for it is recorded.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import pytest

from archiver.capture.render import Renderer, Reply

pytestmark = pytest.mark.browser

SHARED_JS = b"document.documentElement.dataset.ran = (window.name || '') + 'shared-ran';\n" + b"//" * 50_000
SHARED_CSS = b"body { color: rgb(1, 2, 3); }\n"


def _page(n: int, tail: str = "") -> bytes:
    return (
        f"<!DOCTYPE html><html><head><title>P{n}</title><link rel=stylesheet href=/s.css>"
        f"<script src=/s.js></script></head><body><p>page {n}</p>{tail}</body></html>"
    ).encode()


OTHER = "http://localhost:9/"  # never connected to: every answer comes from the callback below
FRAME_PAGE = (
    f'<!DOCTYPE html><title>F</title><iframe src="{OTHER}frame.html"></iframe>'
    "<script>const w = new Worker('/worker.js'); w.onmessage = (e) => {"
    " const p = document.createElement('p'); p.id = 'worker'; p.textContent = e.data;"
    " document.body.appendChild(p); };</script>"
).encode()
FRAME = b'<!DOCTYPE html><title>inner</title><img src="/inner.png"><script src="/inner.js"></script>'
WORKER = b"fetch('/from-worker.txt').then((r) => r.text()).then((t) => postMessage(t.trim()));"
HEADERS = {"last-modified": "Mon, 01 Jan 2024 00:00:00 GMT", "date": "Tue, 01 Dec 2026 00:00:00 GMT"}


class Site:
    """The answers the renderer gets (the capture's Responses.answer in a real run), counted."""

    def __init__(self) -> None:
        self.asked: collections.Counter[str] = collections.Counter()
        self.refuse: set[str] = set()
        self.tail = ""  # markup every page p<n>.html ends with

    async def answer(self, url: str, kind: str, referrer: str | None, source: str | None) -> Reply | None:
        self.asked[url] += 1
        path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
        if path in self.refuse:
            return None
        bodies: dict[str, tuple[str, bytes]] = {
            "s.js": ("text/javascript", SHARED_JS),
            "s.css": ("text/css", SHARED_CSS),
            "frames.html": ("text/html", FRAME_PAGE),
            "frame.html": ("text/html", FRAME),
            "inner.js": ("text/javascript", b"1;"),
            "inner.png": ("image/png", b"\x89PNG\r\n\x1a\n"),
            "worker.js": ("text/javascript", WORKER),
            "from-worker.txt": ("text/plain", b"WORKER-FETCHED"),
            "refused.png": ("image/png", b""),
        }
        if path.startswith("p") and path.endswith(".html"):
            body = _page(int(path[1:-5]), self.tail)
            return Reply(200, {"content-type": "text/html", **HEADERS}, body=body)
        if path not in bodies:
            return Reply(404, {"content-type": "text/plain"}, body=b"no")
        kind_, body = bodies[path]
        return Reply(200, {"content-type": kind_, **HEADERS}, body=body)


def _render(site: Site, urls: list[str], tabs: int = 1, **options: Any) -> list[str]:
    async def run() -> list[str]:
        async with Renderer(site.answer, tabs=tabs, settle=5, **options) as renderer:
            return [await renderer.render(u, source=u) for u in urls]

    return asyncio.run(run())


def test_a_tab_asks_once_for_what_its_pages_share_and_each_page_runs_it() -> None:
    site = Site()
    base = "http://127.0.0.1:9/"
    pages = _render(site, [f"{base}p{n}.html" for n in range(5)])
    assert all("shared-ran" in html for html in pages), "a script the cache gave was not run"
    assert site.asked[f"{base}s.js"] == 1, site.asked
    assert site.asked[f"{base}s.css"] == 1, site.asked
    assert all(site.asked[f"{base}p{n}.html"] == 1 for n in range(5))


def test_a_frame_of_another_site_and_a_workers_fetch_are_answered_by_archiver() -> None:
    site = Site()
    base = "http://127.0.0.1:9/"
    (html,) = _render(site, [f"{base}frames.html"])
    for url in (f"{OTHER}frame.html", f"{OTHER}inner.png", f"{OTHER}inner.js"):
        assert site.asked[url] == 1, f"{url} was not asked of archiver: {dict(site.asked)}"
    assert site.asked[f"{base}worker.js"] == 1 and site.asked[f"{base}from-worker.txt"] == 1
    assert "WORKER-FETCHED" in html


def test_a_refused_request_is_asked_again_by_the_next_page() -> None:
    site = Site()
    site.refuse.add("refused.png")
    site.tail = '<img src="/refused.png">'
    base = "http://127.0.0.1:9/"
    _render(site, [f"{base}p{n}.html" for n in range(3)])
    assert site.asked[f"{base}refused.png"] == 3


def test_a_tab_moving_between_sites_keeps_routing_every_request() -> None:
    """A reused tab taken to another site (another process) and back: its session still pauses every
    request, and a page's own document is still the one answered (not refused as a page moving on)."""
    site = Site()
    urls = ["http://127.0.0.1:9/p0.html", f"{OTHER}p1.html", "http://127.0.0.1:9/p2.html"]
    pages = _render(site, urls)
    for n, (url, html) in enumerate(zip(urls, pages, strict=True)):
        assert f"page {n}" in html and "shared-ran" in html, url
        assert site.asked[url] == 1
    assert site.asked[f"{OTHER}s.js"] == 1


def test_a_pop_up_is_closed_unanswered_and_the_page_still_renders() -> None:
    """A page opening a window on load: the pop-up is a tab no session routes (closed at once; what it
    asks for fails in the browser, which resolves no name), so nothing is fetched for it, and the page
    itself renders. A guard: the code before passes too (its pop-up was closed before asking)."""
    site = Site()
    site.tail = "<script>window.open('/p9.html?popup', '_blank')</script>"
    base = "http://127.0.0.1:9/"
    (html,) = _render(site, [f"{base}p0.html"])
    assert "page 0" in html and "shared-ran" in html
    assert site.asked[f"{base}p9.html?popup"] == 0, dict(site.asked)
