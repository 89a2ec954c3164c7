"""Helpers for the loader's browser tests: build gwtar files, serve them four ways, open them in
Chromium, wait for the loader, compare screenshots, count what went over the wire.

The four ways (issue 4): ``range`` is ``archiver serve`` (Range and multi-range, member URLs);
``nomulti`` is the fixture server with Range on, which answers a multi-range request with 200 and the
whole file (a server that refuses multi-range); ``norange`` is the fixture server with Range off (a
server that ignores Range, like Python's http.server); ``file`` opens the file from disk and chooses
it through the file picker.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, BrowserContext, Page

from archiver.fixture import FixtureConfig, FixtureServer, load_generated, site_root
from tests.pixels import settle

__all__ = [
    "MODES",
    "Served",
    "StallingServer",
    "Wire",
    "copy_site",
    "open_gwtar",
    "pixel_diff",
    "serve",
    "settle",
    "solo_pages",
    "wait_ready",
]

MODES = ("range", "nomulti", "norange", "file")
NAME = "site.gwtar.html"


def copy_site(dest: Path) -> Path:
    """The fixture site as a folder to pack: testdata/site with its generated files written out."""
    shutil.copytree(site_root(), dest)
    for url_path, generated in load_generated(site_root()).items():
        target = dest / url_path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as fh:
            for chunk in generated.chunks():
                fh.write(chunk)
    return dest


@dataclass
class Served:
    """One gwtar file being served (or opened from disk): where to point the browser, and the
    server's own request log when it has one."""

    mode: str
    path: Path
    url: str
    fixture: FixtureServer | None = None

    def server_log(self) -> list[tuple[str, str, str | None, int]]:
        """(method, path, Range header, status) of every request the server answered."""
        if self.fixture is None:
            return []
        return [(r.method, r.path, r.headers.get("range"), r.status) for r in self.fixture.requests]


@contextlib.contextmanager
def serve(mode: str, gwtar: Path) -> Iterator[Served]:
    """Serve ``gwtar`` the way ``mode`` says (see the module docstring)."""
    if mode == "file":
        yield Served(mode, gwtar, gwtar.as_uri())
    elif mode == "range":
        from archiver.serve import running

        with running([gwtar]) as base:
            yield Served(mode, gwtar, base + gwtar.name)
    else:
        config = FixtureConfig(root=gwtar.parent, range=mode == "nomulti", robots=None)
        with FixtureServer(config) as server:
            yield Served(mode, gwtar, server.url + gwtar.name, server)


class StallingServer:
    """A server that ignores Range (every GET is a 200 with the whole file) and stops sending after
    ``stall_at`` bytes until :meth:`release` is called: what a slow link looks like, made exact."""

    def __init__(self, path: Path, stall_at: int) -> None:
        import http.server
        import threading

        self.path, self.stall_at, self.gate, self.gets = path, stall_at, threading.Event(), 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/" + outer.path.name:
                    self.send_error(404)
                    return
                outer.gets += 1
                data = outer.path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data[: outer.stall_at])
                    self.wfile.flush()
                    outer.gate.wait(60)
                    self.wfile.write(data[outer.stall_at :])
                except OSError:
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{self.path.name}"

    def release(self) -> None:
        self.gate.set()

    def __enter__(self) -> StallingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@dataclass
class Wire:
    """What went over the wire, from Chromium's own network events (CDP), the browser cache off."""

    responses: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def attach(cls, context: BrowserContext, page: Page) -> Wire:
        wire = cls()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})

        def request(ev: dict[str, Any]) -> None:
            req = ev["request"]
            wire.responses[ev["requestId"]] = {
                "url": req["url"],
                "method": req["method"],
                "range": req["headers"].get("Range"),
                "status": None,
                "bytes": 0,
            }

        def response(ev: dict[str, Any]) -> None:
            if ev["requestId"] in wire.responses:
                wire.responses[ev["requestId"]]["status"] = ev["response"]["status"]

        def data(ev: dict[str, Any]) -> None:
            if ev["requestId"] in wire.responses:
                wire.responses[ev["requestId"]]["bytes"] += ev["dataLength"]

        cdp.on("Network.requestWillBeSent", request)
        cdp.on("Network.responseReceived", response)
        cdp.on("Network.dataReceived", data)
        return wire

    def network(self) -> list[dict[str, Any]]:
        """Requests that left the browser (http, https, ws), in order."""
        return [
            r for r in self.responses.values() if r["url"].split(":", 1)[0] in ("http", "https", "ws", "wss")
        ]


@contextlib.contextmanager
def solo_pages(browser: Browser, n: int) -> Iterator[list[Page]]:
    """``n`` pages (1024 x 768), each in a browser context of its own. Chromium treats pages that
    share a context as tabs of one window and throttles all but the newest one: their animation
    frames, idle checks and screenshots then take seconds instead of milliseconds."""
    contexts = [browser.new_context(viewport={"width": 1024, "height": 768}) for _ in range(n)]
    try:
        yield [c.new_page() for c in contexts]
    finally:
        for c in contexts:
            c.close()


def open_gwtar(page: Page, served: Served, route: str = "") -> None:
    """Point ``page`` at the archive (through the file picker for ``file``) and wait until ready."""
    page.goto(served.url + route, wait_until="commit")
    if served.mode == "file":
        page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
        with page.expect_file_chooser() as chooser:
            page.click("#gwtar-file")
        chooser.value.set_files(str(served.path))
    wait_ready(page)


def wait_ready(page: Page, path: str | None = None, timeout: float = 20_000) -> None:
    """Wait until the loader shows ``path`` (any page if None) and nothing is loading."""
    page.wait_for_function(
        "p => window.gwtar && (gwtar.state === 'ready' || gwtar.state === 'error')"
        " && (p === null || gwtar.page === p)",
        arg=path,
        timeout=timeout,
    )
    page.evaluate("gwtar.idle()")
    settle(page)


_DIFF_JS = """async ([a, b, mask]) => {
  const load = s => new Promise((ok, bad) => {
    const i = new Image();
    i.onload = () => ok(i);
    i.onerror = bad;
    i.src = "data:image/png;base64," + s;
  });
  const [x, y] = [await load(a), await load(b)], w = x.width, h = x.height;
  if (w !== y.width || h !== y.height) return 1;
  const pixels = img => {
    const c = document.createElement("canvas");
    c.width = w;
    c.height = h;
    const g = c.getContext("2d");
    g.drawImage(img, 0, 0);
    return g.getImageData(0, 0, w, h).data;
  };
  const p = pixels(x), q = pixels(y), skip = new Uint8Array(w * h);
  for (const [l, t, r, bt] of mask) {
    for (let yy = Math.max(0, Math.floor(t)); yy < Math.min(h, Math.ceil(bt)); yy++) {
      for (let xx = Math.max(0, Math.floor(l)); xx < Math.min(w, Math.ceil(r)); xx++) skip[yy * w + xx] = 1;
    }
  }
  let d = 0;
  for (let i = 0, k = 0; i < p.length; i += 4, k++) {
    if (!skip[k] && (p[i] !== q[i] || p[i + 1] !== q[i + 1] || p[i + 2] !== q[i + 2])) d++;
  }
  return d / (w * h);
}"""


def pixel_diff(scratch: Page, a: bytes, b: bytes, mask: list[list[float]] | None = None) -> float:
    """The fraction of pixels that differ between two PNG screenshots of the same size (compared in
    Chromium on a canvas: no image library needed), ignoring the ``mask`` rectangles."""
    if a == b:
        return 0.0
    return float(
        scratch.evaluate(_DIFF_JS, [base64.b64encode(a).decode(), base64.b64encode(b).decode(), mask or []])
    )


#: Rectangles of animated images (their frame depends on when the screenshot is taken).
ANIMATED_JS = (
    "[...document.images].filter(i => /\\.gif$/i.test(i.currentSrc))"
    ".map(i => { const r = i.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"
)
