"""Attacks in real Chromium (formats/serve.md §5.2–§5.3): a script inside one served archive (a tree's
HTML page and SVG, a gwtar page that keeps its script, a ZIM entry with a script) tries every way to
read another mount, the index of mounts and the server's pages (tests/serve/attack.js: relative and
absolute URLs, the bare host, other mounts' host names, another port; fetch, XHR, iframe +
contentDocument, img + canvas readback, window.open + opener, service worker registration) and reads
nothing, while its own page renders. And a page that names external hosts makes no request outside
its own origin. Chromium resolves no name but loopback ones (``--host-resolver-rules``): no packet
leaves the machine.

Playwright's sync API refuses to start in a thread where another sync Playwright is active, so
Chromium is driven from a thread of its own (as tests/serve/test_browser.py does)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from PIL import Image
from playwright.sync_api import Browser, Request, Route, sync_playwright

from archiver import gwtar, zim
from archiver.capture.browser import launch
from archiver.serve import running

ATTACK = (Path(__file__).parent / "attack.js").read_text(encoding="utf-8")
SECRET = "VICTIM-SECRET-7c2e"
RESOLVE_NOTHING = (
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE *.localhost, EXCLUDE 127.0.0.1",
)

pytestmark = pytest.mark.browser


def _page(title: str, body: str = "") -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><h1>{title}</h1>{body}<script>{ATTACK}</script></body></html>\n"
    )


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return root


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    top = tmp_path_factory.mktemp("isolation")
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="50"><text x="5" y="30">Own svg</text>'
        f"<script><![CDATA[{ATTACK}]]></script></svg>\n"
    )
    attacker = _write(top / "t", {"index.html": _page("Own page"), "pic.svg": svg, "sw.js": "self.x = 1;\n"})
    live = (
        '<link rel="preconnect" href="https://pre.example"><link rel="dns-prefetch" href="//dns.example">'
        "<style>@import url(https://fonts.example/x.css); body{background:url(https://bg.example/b.png)}</style>"
        '<img src="https://tracker.example/p.gif"><script src="http://cdn.example/x.js"></script>'
        "<script>fetch('https://api.example/').catch(() => {}); new Image().src = 'http://1.example/i';</script>"
        '<iframe src="https://frame.example/"></iframe><link rel="stylesheet" href="https://css.example/s.css">'
        '<form action="https://form.example/"></form>'
    )
    (attacker / "live.html").write_text(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Live</title></head>'
        f"<body><h1>Live</h1>{live}</body></html>\n",
        encoding="utf-8",
    )
    src = _write(top / "gsrc", {"index.html": _page("Own gwtar")})
    gwtar.pack(src, top / "g.gwtar.html")
    zsrc = _write(top / "zsrc", {"index.html": _page("Own zim")})
    zim.pack(zsrc, top / "z.zim")
    victim = _write(top / "victim", {"index.html": f"<p>{SECRET}</p>", "secret.txt": SECRET, "sw.js": "1;"})
    Image.new("RGB", (4, 4), (201, 13, 77)).save(victim / "secret.png")
    vsrc = _write(top / "vsrc", {"index.html": f"<p>{SECRET}</p>", "secret.txt": SECRET})
    gwtar.pack(vsrc, top / "vgwtar.gwtar.html")
    paths = [attacker, top / "g.gwtar.html", top / "z.zim", victim, top / "vgwtar.gwtar.html"]
    with running(paths) as base, running([victim]) as other:
        yield {"base": base.rstrip("/"), "other": urlsplit(other).port, "paths": paths}


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


def _attack(browser: Browser, urls: list[str]) -> list[dict[str, Any]]:
    results = []
    for url in urls:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.goto(url)
            root = "document.documentElement"
            page.wait_for_function(f"() => {root}.hasAttribute('data-report')", timeout=60_000)
            report = json.loads(page.evaluate(f"() => {root}.getAttribute('data-report')"))
            text = page.evaluate("() => document.documentElement.textContent")
            results.append({"url": url, "at": page.url, "report": report, "text": text})
        finally:
            context.close()
    return results


@pytest.mark.parametrize("live", [False, True], ids=["default", "allow-live"])
def test_one_archive_cannot_read_another(served: dict[str, Any], live: bool, tmp_path: Path) -> None:
    base, other = served["base"], served["other"]
    pages = {
        "tree html": ("/t/?other=%d", "http://t.localhost:", "Own page"),
        "tree svg": ("/t/pic.svg?other=%d", "http://t.localhost:", "Own svg"),
        "gwtar": ("/g.gwtar.html?other=%d", "http://g-gwtar-html.localhost:", "Own gwtar"),
        "zim": ("/z/?other=%d", "http://z.localhost:", "Own zim"),
    }
    if live:  # --allow-live lifts the CSP's fetch limits: the origins alone keep the archives apart
        pages = {"tree html": pages["tree html"], "gwtar": pages["gwtar"]}
        with running(served["paths"], allow_live=True) as b:
            results = _in_chromium(_attack, [b.rstrip("/") + p % other for p, _, _ in pages.values()])
    else:
        results = _in_chromium(_attack, [base + p % other for p, _, _ in pages.values()])
    for (kind, (_, origin, title)), got in zip(pages.items(), results, strict=True):
        assert got["at"].startswith(origin), (kind, got["at"])  # moved to the mount's own origin
        assert title in got["text"], (kind, got["text"][:200])  # its own page renders
        assert got["report"]["tried"] > 30 and got["report"]["own"], (kind, got["report"])
        assert got["report"]["leaks"] == [], (kind, got["report"]["leaks"])


def _visit(browser: Browser, url: str) -> tuple[list[str], str]:
    """Open ``url``; (every request that reached the network stack or failed for any reason but the
    page's CSP, the page's h1). Chromium reports a request the CSP blocked too (it never leaves the
    renderer): those are told apart by their failure, ``csp`` (net::ERR_BLOCKED_BY_CSP)."""
    context = browser.new_context()
    try:
        routed: list[str] = []
        asked: list[Request] = []
        failed: dict[str, str] = {}

        def route(r: Route, request: Request) -> None:
            routed.append(request.url)
            r.continue_()

        context.route("**/*", route)
        context.on("request", lambda request: asked.append(request))
        context.on("requestfailed", lambda request: failed.setdefault(request.url, request.failure or ""))
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_timeout(1500)  # the late fetch() and Image() get their chance
        title = page.evaluate("() => document.querySelector('h1').textContent")
        went = set(routed) | {r.url for r in asked if failed.get(r.url) != "csp"}
        return sorted(went), title
    finally:
        context.close()


def test_archived_page_makes_no_request_to_the_live_web(served: dict[str, Any]) -> None:
    port = urlsplit(served["base"]).port
    own = f"t.localhost:{port}"
    seen, title = _in_chromium(_visit, f"http://{own}/t/live.html")
    assert title == "Live"
    assert f"http://{own}/t/live.html" in seen  # the page itself went out, and is counted
    outside = [u for u in seen if urlsplit(u).netloc != own and not u.startswith(("data:", "blob:"))]
    assert outside == [], outside
