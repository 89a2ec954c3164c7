"""Render pages in headless Chromium (Playwright, async API) with no network of the browser's own.

The browser is launched with :data:`archiver.capture.browser.NO_NETWORK_ARGS`: it resolves no host
name, so it cannot reach anything by itself. Every request it makes (documents, frames, styles,
images, fonts, scripts, XHR/fetch, a dedicated worker's) is paused by CDP's Fetch domain on a
session of its tab's own (:meth:`Renderer._intercept`) and answered by the caller's ``answer``
function, which fetches through :class:`archiver.capture.fetch.Fetcher` (every politeness and safety
rule applies) and keeps what it fetched, so nothing is fetched twice. Requests other than GET/HEAD
and anything ``answer`` declines are aborted; WebSockets are closed before they connect; service
workers are blocked (they would bypass routing); pop-ups are closed (no session routes them: what
they ask for fails); once a page has loaded, further top-level navigations (a script or meta refresh
moving on) are refused with "204 No Content", so the browser stays on the page it was rendering (an
aborted navigation would show Chromium's error page in its place). A page that moves on before it
has loaded, to a URL ``answer`` declines, fails to render (the caller keeps the page as fetched).

Not Playwright's ``context.route``: with a route set, Playwright turns the browser's cache off for
every page (``Network.setCacheDisabled``), so each page of a site asked archiver again for every
script, stylesheet and image the pages share, each a round trip through Playwright's pipe with its
body in base 64, then parsed and compiled again (python3-doc: 17 requests and 440 KB a page). With
the cache on, a tab's next page takes what the pages share from Blink's memory cache: nothing is asked
again, and what the page does not have cached is asked of ``answer`` as before (a failure is never
cached: a refused request is asked, and recorded, by each page making it). Site isolation is off
(:data:`archiver.capture.browser.NO_NETWORK_ARGS`) so that a frame of another site stays in its tab's
target, whose session routes it.

The launch flags map every host name *and IP literal* to "not found", so a request Chromium makes
without routing it (``<link rel=preconnect>``, ``dns-prefetch``, anything Playwright cannot
intercept) connects nowhere: every connection a render causes is one the fetcher opened, through its
address guard, for that origin (tests/capture/test_guard_origin.py counts them).

A render is (formats/tree.md §9.6): ``goto`` until ``load`` → a bounded settle (:meth:`Renderer._settle`,
at most ``settle`` seconds): the renderer counts the page's requests in flight itself (every one
passes through its request handler, and the page's ``request``/``requestfinished``/``requestfailed``
events cover what the browser still does with an answer after it is fulfilled), and the page is
settled when none is in flight, none started or ended for ``quiet`` seconds (50 ms), the page has
drawn two animation frames and run a task since, and it has no pending one-shot timer of at most
:data:`TIMER_LIMIT_MS` (1 s: a script fetching or building something a moment after ``load``; a
pending one is waited for, then the page is looked at again) → the scroll (:data:`_SCROLL_JS`, by the
page's measured height): a page that reacts to scrolling (a scroll/wheel listener on the window or
document, an ``onscroll`` handler, an IntersectionObserver observing anything) one viewport at a
time to the bottom, at most ``scroll_steps`` steps, each waited for (two frames and a task, at most
``frame_wait`` seconds); any other page only to each viewport holding a ``loading=lazy`` image or
frame not yet near the viewport (none: no scroll), then back to the top → if the scroll made the page
request anything, another bounded settle → the DOM serialised with its doctype (``page.content()``).
The timers and scroll reactions are known from a script installed before the page's own
(:data:`_INIT_JS`; it changes nothing in the DOM). A tab is kept for the next page once its page is
serialised, its ``sessionStorage`` emptied first (what a new tab would have); a tab whose render
failed is closed.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from archiver.capture.browser import NO_NETWORK_ARGS, launch_async
from archiver.errors import CaptureError
from archiver.media import media_type_for

__all__ = ["Answer", "Renderer", "Reply"]


@dataclass
class Reply:
    """What the browser gets for one request: status, headers and a body (bytes or a file)."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    path: Path | None = None


#: ``answer(url, resource_type, referrer, source)`` → the reply, or None to abort the request;
#: ``source`` is what :meth:`Renderer.render` was given for the page making the request.
Answer = Callable[[str, str, "str | None", "str | None"], Awaitable["Reply | None"]]

#: Timers the settle waits for: a one-shot ``setTimeout`` of at most this many milliseconds that has
#: not fired yet keeps the page unsettled (a script that fetches or builds something a moment after
#: ``load``); longer ones (a carousel, a session timeout) and intervals do not.
TIMER_LIMIT_MS = 1000

#: A page counts as settled when no request has been in flight, and none started or ended, for this
#: long (then two animation frames and a task, see :data:`_IDLE_JS`) and no short timer is pending.
QUIET = 0.05

#: Installed before any script of every document (``add_init_script``): what the page has scheduled
#: and what reacts to scrolling, kept under a symbol no page names (``Symbol.for("archiver.render")``;
#: nothing in the DOM changes). Wrapped: ``setTimeout``/``clearTimeout``/``clearInterval`` (the
#: pending one-shot timers of at most :data:`TIMER_LIMIT_MS` and when each is due),
#: ``IntersectionObserver.prototype.observe`` and ``addEventListener`` of ``scroll``/``wheel`` on the
#: window or the document (counted: such a page is scrolled step by step, see :data:`_SCROLL_JS`).
_INIT_JS = (
    """(() => {
  const key = Symbol.for("archiver.render");
  if (window[key]) return;
  const st = window.setTimeout, ct = window.clearTimeout, ci = window.clearInterval;
  const pending = new Map();
  const state = { setTimeout: st, observed: 0, listeners: 0 };
  state.nextDue = () => {
    const now = performance.now();
    let next = -1;
    for (const [id, due] of pending) {
      if (due < now - 100) { pending.delete(id); continue; }  // cleared some other way, or long late
      const left = Math.max(due - now, 0);
      if (next < 0 || left < next) next = left;
    }
    return next;
  };
  state.reacts = () => state.observed > 0 || state.listeners > 0 || !!window.onscroll
    || !!document.onscroll || !!(document.body && document.body.onscroll);
  state.lazy = () => [...document.querySelectorAll('img[loading="lazy" i], iframe[loading="lazy" i]')]
    .map((e) => e.getBoundingClientRect().top + window.scrollY).sort((a, b) => a - b);
  state.scrollable = () => state.reacts() || state.lazy().some((top) => top >= window.innerHeight);
  Object.defineProperty(window, key, { value: state });
  window.setTimeout = function setTimeout(fn, ms, ...rest) {
    const delay = Number(ms) || 0;
    if (typeof fn !== "function" || !(delay <= LIMIT)) return st(fn, ms, ...rest);
    const id = st(function () { pending.delete(id); return fn.apply(this, arguments); }, ms, ...rest);
    pending.set(id, performance.now() + delay);
    return id;
  };
  window.clearTimeout = function clearTimeout(id) { pending.delete(id); return ct(id); };
  window.clearInterval = function clearInterval(id) { pending.delete(id); return ci(id); };
  const IO = window.IntersectionObserver;
  if (IO) {
    const observe = IO.prototype.observe;
    IO.prototype.observe = function observe_(target) {
      state.observed += 1;
      return observe.call(this, target);
    };
  }
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function addEventListener(type, ...rest) {
    const target = this === window || this === document;
    if (target && (type === "scroll" || type === "wheel")) state.listeners += 1;
    return add.call(this, type, ...rest);
  };
})()"""
).replace("LIMIT", str(TIMER_LIMIT_MS))

#: Wait until the page has processed what it was doing: two animation frames (the first runs before
#: the next frame is drawn, the second after it, when IntersectionObserver callbacks and scroll
#: handlers have been queued) and one task (so those have run), at most ``ms`` milliseconds for a
#: page whose frames never come; then the milliseconds until its next pending short timer is due
#: (-1: none) and whether the scroll (:data:`_SCROLL_JS`) has anything to do on the page.
_IDLE_JS = """(ms) => new Promise((resolve) => {
  const s = window[Symbol.for("archiver.render")];
  const st = s ? s.setTimeout : setTimeout;
  let done = false;
  const finish = () => {
    if (!done) { done = true; resolve(s ? [s.nextDue(), s.scrollable()] : [-1, true]); }
  };
  st(finish, ms);
  requestAnimationFrame(() => requestAnimationFrame(() => st(finish, 0)));
})"""

#: The scroll, in the page. A page that reacts to scrolling itself (a ``scroll``/``wheel`` listener
#: on the window or document, an ``onscroll`` handler, an IntersectionObserver observing anything) is
#: scrolled one viewport at a time to the bottom of its *measured* height (which may grow as it
#: scrolls), at most ``steps`` steps, each waited for (two frames and a task, at most ``ms``). Any
#: other page can only load something by scrolling through its lazy elements (``loading=lazy``
#: images and frames): it jumps to each viewport that holds one not yet near the viewport (at most
#: ``steps`` jumps), each waited for the same way, and is not scrolled at all when it has none. Then
#: back to the top, waited for too. Returns whether it scrolled.
_SCROLL_JS = """async ([steps, ms]) => {
  const s = window[Symbol.for("archiver.render")];
  const st = s ? s.setTimeout : setTimeout;
  const el = document.scrollingElement || document.documentElement;
  const frames = () => new Promise((resolve) => {
    let done = false;
    const finish = () => { if (!done) { done = true; resolve(); } };
    st(finish, ms);
    requestAnimationFrame(() => requestAnimationFrame(() => st(finish, 0)));
  });
  const reacts = !s || s.reacts();
  let scrolled = false;
  if (reacts) {
    for (let i = 0; i < steps; i++) {
      const from = window.scrollY;
      window.scrollBy(0, window.innerHeight);
      if (window.scrollY === from) break;
      scrolled = true;
      await frames();
      if (window.scrollY + window.innerHeight >= (el ? el.scrollHeight : 0)) break;
    }
  } else {
    const tops = s.lazy();
    let covered = window.innerHeight;  // what the viewport at the top has brought near already
    for (const top of tops) {
      if (steps-- <= 0) break;
      if (top < covered) continue;
      window.scrollTo(0, top);
      scrolled = scrolled || window.scrollY > 0;
      covered = window.scrollY + window.innerHeight;
      await frames();
    }
  }
  if (scrolled) { window.scrollTo(0, 0); await frames(); }
  return scrolled;
}"""


#: Before a tab is reused: its ``sessionStorage`` emptied (a new tab has none); true when done.
_LEAVE_JS = """() => { try { sessionStorage.clear(); } catch (e) { /* an opaque origin */ } return true; }"""


class _Traffic:
    """The requests of one page in flight (from ``request`` to ``requestfinished``/``requestfailed``,
    and each request handler, :meth:`Renderer._paused`, from its start to its fulfil or abort) and
    when that last changed."""

    def __init__(self) -> None:
        self.requests: set[Any] = set()
        self.routes = 0
        self.started = 0
        self.changed = time.monotonic()
        self.event = asyncio.Event()

    def busy(self) -> bool:
        return bool(self.requests) or self.routes > 0

    def touch(self) -> None:
        self.changed = time.monotonic()
        self.event.set()

    def begin(self, request: Any) -> None:
        self.requests.add(request)
        self.started += 1
        self.touch()

    def end(self, request: Any) -> None:
        self.requests.discard(request)
        self.touch()


def _cors(headers: dict[str, str], url: str, origin: str) -> None:
    """What Playwright's ``route.fulfill`` added (and so the renderer always did): a cross-origin
    request answered without an ``access-control-allow-origin`` gets one naming its origin."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.scheme.startswith("http") or f"{parts.scheme}://{parts.netloc}" == origin.strip():
        return
    if "access-control-allow-origin" in headers:
        return
    headers["access-control-allow-origin"] = origin
    headers["access-control-allow-credentials"] = "true"
    headers["vary"] = "Origin"


class _Tab:
    """A tab's own CDP session: its Fetch domain pauses each request for :meth:`Renderer._paused`."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.main_frame: str | None = None

    async def fail(self, rid: str, reason: str = "BlockedByClient") -> None:
        await self.session.send("Fetch.failRequest", {"requestId": rid, "errorReason": reason})

    async def fulfill(self, rid: str, status: int, headers: dict[str, str], body: bytes) -> None:
        if body and "content-length" not in headers:
            headers["content-length"] = str(len(body))
        fields = [
            {"name": name, "value": line}
            for name, value in headers.items()
            for line in (value.split("\n") if name == "set-cookie" else [value])
        ]
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        await self.session.send(
            "Fetch.fulfillRequest",
            {
                "requestId": rid,
                "responseCode": status,
                "responsePhrase": phrase,
                "responseHeaders": fields,
                "body": base64.b64encode(body).decode("ascii"),
            },
        )


class Renderer:
    """A browser and one context whose requests are all answered by ``answer``."""

    def __init__(
        self,
        answer: Answer,
        *,
        chromium: str | None = None,
        tabs: int = 2,
        timeout: float = 30.0,
        settle: float = 1.5,
        scroll_steps: int = 20,
        frame_wait: float = 2.0,
        quiet: float = QUIET,
        viewport: tuple[int, int] = (1280, 800),
    ) -> None:
        self.answer = answer
        self.chromium = chromium
        self.timeout = timeout
        self.settle = settle
        self.scroll_steps = scroll_steps
        self.frame_wait = frame_wait
        self.quiet = quiet
        self.viewport = viewport
        self.tabs = max(tabs, 1)
        self._tabs = asyncio.Semaphore(self.tabs)
        self._idle_tabs: list[Any] = []
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._loaded: set[Any] = set()
        self._background: set[asyncio.Future[None]] = set()
        self._traffic: dict[Any, _Traffic] = {}
        self._sources: dict[Any, str | None] = {}
        self._tabs_cdp: dict[Any, _Tab] = {}

    async def __aenter__(self) -> Renderer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start Playwright, launch Chromium (see :func:`archiver.capture.browser.find_chromium`)."""
        from playwright.async_api import async_playwright

        self._pw = await async_playwright().start()
        try:
            self._browser = await launch_async(self._pw, self.chromium, args=NO_NETWORK_ARGS)
            await self._new_context()
        except BaseException:
            await self.close()
            raise

    async def _new_context(self) -> None:
        width, height = self.viewport
        self._context = await self._browser.new_context(
            service_workers="block",
            viewport={"width": width, "height": height},
            accept_downloads=False,
        )
        await self._context.add_init_script(_INIT_JS)
        with contextlib.suppress(AttributeError):  # Playwright < 1.48 has no WebSocket routing
            await self._context.route_web_socket("**/*", self._websocket)
        self._context.on("page", self._on_page)

    async def close(self) -> None:
        for closer in (self._context, self._browser):
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer.close()
        if self._pw is not None:
            with contextlib.suppress(Exception):
                await self._pw.stop()
        self._context = self._browser = self._pw = None

    def _on_page(self, page: Any) -> None:
        if getattr(page, "opener", None) is not None:
            task = asyncio.ensure_future(self._close_popup(page))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _close_popup(self, page: Any) -> None:
        with contextlib.suppress(Exception):
            opener = await page.opener()
            if opener is not None:
                await page.close()

    async def _websocket(self, ws: Any) -> None:
        with contextlib.suppress(Exception):
            await ws.close(code=1008, reason="archiver: no live connections while rendering")

    async def _intercept(self, page: Any) -> None:
        """Route every request of ``page``'s tab through :meth:`_paused` (CDP's Fetch domain on a
        session of the tab's own, so the browser's memory cache stays on: see the module docstring)."""
        session = await self._context.new_cdp_session(page)
        tab = _Tab(session)
        self._tabs_cdp[page] = tab

        def paused(event: dict[str, Any]) -> None:
            task = asyncio.ensure_future(self._paused(page, tab, event))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

        session.on("Fetch.requestPaused", paused)
        tree = await session.send("Page.getFrameTree")
        tab.main_frame = tree["frameTree"]["frame"]["id"]
        await session.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})

    async def _paused(self, page: Any, tab: _Tab, event: dict[str, Any]) -> None:
        request = event["request"]
        rid = event["requestId"]
        traffic: _Traffic | None = None
        try:
            if request.get("method") not in ("GET", "HEAD"):
                await tab.fail(rid)
                return
            kind = str(event.get("resourceType", "Other")).lower()
            top = kind == "document" and event.get("frameId") == tab.main_frame
            # A loaded page moving on by itself (script, meta refresh) is answered "204 No Content":
            # the browser then stays on the page. An abort would replace it with Chromium's error page.
            if top and page in self._loaded:
                await tab.fulfill(rid, 204, {}, b"")
                return
            traffic = self._traffic.get(page)
            if traffic is not None:
                traffic.routes += 1
                traffic.started += 1
                traffic.touch()
            headers = {k.lower(): v for k, v in (request.get("headers") or {}).items()}
            url = request["url"] + request.get("urlFragment", "")
            reply = await self.answer(url, kind, headers.get("referer"), self._sources.get(page))
            if reply is None:
                await tab.fail(rid)
                return
            body = reply.path.read_bytes() if reply.path is not None else (reply.body or b"")
            out = {k.lower(): str(v) for k, v in reply.headers.items()}
            if reply.path is not None and "content-type" not in out:
                out["content-type"] = media_type_for(reply.path.name)
            origin = headers.get("origin")
            if origin is not None:
                _cors(out, url, origin)
            await tab.fulfill(rid, reply.status, out, body)
        except Exception:
            with contextlib.suppress(Exception):
                await tab.fail(rid, "Failed")
        finally:
            if traffic is not None:
                traffic.routes -= 1
                traffic.touch()

    async def _settle(self, page: Any) -> bool | None:
        """Wait, at most ``settle`` seconds, until the page is settled: no request in flight, none
        started or ended for ``quiet`` seconds, the page's frames and tasks processed
        (:data:`_IDLE_JS`) and no short timer pending (:data:`_INIT_JS`); a pending timer is waited
        for and the page looked at again after it has fired. Returns whether the settled page has
        anything to scroll to (None: not known, the bound ran out first)."""
        traffic = self._traffic[page]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settle
        wait_ms = int(self.frame_wait * 1000)
        while (left := deadline - loop.time()) > 0:
            if traffic.busy():
                traffic.event.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(traffic.event.wait(), left)
                continue
            stamp = traffic.changed
            # the page's frames are waited for while the quiet window runs, not after it
            quiet = max(self.quiet - (time.monotonic() - stamp), 0)
            try:
                (due, scrollable), _ = await asyncio.wait_for(
                    asyncio.gather(page.evaluate(_IDLE_JS, wait_ms), asyncio.sleep(quiet)), left
                )
            except Exception:
                return None  # the bound is up, or the page cannot be asked (it is going away)
            if traffic.busy() or traffic.changed != stamp:
                continue
            if not isinstance(due, (int, float)) or due < 0:
                return bool(scrollable)
            await asyncio.sleep(min(due / 1000 + self.quiet, max(deadline - loop.time(), 0)))
        return None

    async def _take_tab(self) -> Any:
        """A tab for the next page: one a finished render left (kept for reuse, as a browser's user
        keeps a tab), or a new one whose requests are counted in its page's :class:`_Traffic`."""
        while self._idle_tabs:
            page = self._idle_tabs.pop()
            if not page.is_closed():
                return page
        page = await self._context.new_page()
        try:
            await self._intercept(page)
        except BaseException:
            with contextlib.suppress(Exception):
                await page.close()
            raise
        page.on("request", lambda request: self._count(page, request, True))
        page.on("requestfinished", lambda request: self._count(page, request, False))
        page.on("requestfailed", lambda request: self._count(page, request, False))
        return page

    def _count(self, page: Any, request: Any, begins: bool) -> None:
        traffic = self._traffic.get(page)
        if traffic is not None:
            (traffic.begin if begins else traffic.end)(request)

    async def render(self, url: str, source: str | None = None) -> str:
        """The rendered DOM of ``url`` with its doctype; ``source`` goes to ``answer`` with every
        request the page makes. Raises :class:`CaptureError` when the page does not load."""
        if self._context is None:
            raise CaptureError("the renderer is not started", subject=url)
        async with self._tabs:
            page = await self._take_tab()
            traffic = self._traffic[page] = _Traffic()
            self._sources[page] = source
            reuse = False
            try:
                try:
                    await page.goto(url, wait_until="load", timeout=self.timeout * 1000)
                except Exception as e:
                    raise CaptureError(f"render failed: {str(e).splitlines()[0]}", subject=url) from None
                self._loaded.add(page)
                scrollable = await self._settle(page)
                before = traffic.started
                scrolled = False
                if scrollable is not False:  # no round trip for a page with nothing to scroll to
                    with contextlib.suppress(Exception):
                        steps = [self.scroll_steps, int(self.frame_wait * 1000)]
                        scrolled = await page.evaluate(_SCROLL_JS, steps)
                if scrolled and traffic.started != before:
                    await self._settle(page)  # the scroll loaded more: let it settle
                if str(page.url).startswith("chrome-error:"):
                    # the page moved on before it loaded, to a URL that was refused or failed:
                    # what the tab shows is Chromium's error page, not the page
                    raise CaptureError("render failed: the page moved on to a URL not fetched", subject=url)
                # asked together, answered in order: the DOM first, then the tab emptied of what it
                # would carry to the next page of the same origin beyond the context's shared storage
                content, leave = await asyncio.gather(
                    page.content(), page.evaluate(_LEAVE_JS), return_exceptions=True
                )
                if isinstance(content, BaseException):
                    raise CaptureError(f"cannot read the rendered page: {content}", subject=url) from None
                reuse = leave is True
                return str(content)
            finally:
                self._loaded.discard(page)
                self._traffic.pop(page, None)
                self._sources.pop(page, None)
                if reuse and len(self._idle_tabs) < self.tabs:
                    self._idle_tabs.append(page)
                else:
                    self._tabs_cdp.pop(page, None)
                    with contextlib.suppress(Exception):
                        await page.close()
