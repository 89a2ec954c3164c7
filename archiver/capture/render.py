"""Render pages in headless Chromium (Playwright, async API) with no network of the browser's own.

The browser is launched with :data:`archiver.capture.browser.NO_NETWORK_ARGS`: it resolves no host
name, so it cannot reach anything by itself. Every request it makes (documents, frames, styles,
images, fonts, scripts, XHR/fetch) is intercepted with ``context.route`` and answered by the
caller's ``answer`` function, which fetches through :class:`archiver.capture.fetch.Fetcher` (every
politeness and safety rule applies) and keeps what it fetched, so nothing is fetched twice. Requests
other than GET/HEAD and anything ``answer`` declines are aborted; WebSockets are closed before they
connect; service workers are blocked (they would bypass routing); pop-ups are closed; once a page
has loaded, further top-level navigations (a script or meta refresh moving on) are refused with
"204 No Content", so the browser stays on the page it was rendering (an aborted navigation would
show Chromium's error page in its place). A page that moves on before it has loaded, to a URL
``answer`` declines, fails to render (the caller keeps the page as fetched).

The launch flags map every host name *and IP literal* to "not found", so a request Chromium makes
without routing it (``<link rel=preconnect>``, ``dns-prefetch``, anything Playwright cannot
intercept) connects nowhere: every connection a render causes is one the fetcher opened, through its
address guard, for that origin (tests/capture/test_guard_origin.py counts them).

A render is: ``goto`` until ``load`` → a bounded settle (network idle, at most ``settle`` seconds) →
a bounded scroll to the bottom, one viewport at a time (at most ``scroll_steps`` steps), each step
waiting until the page has processed it (two animation frames and a task, at most ``frame_wait``
seconds), so lazy content loads whatever the machine's load → if the scroll made the page request
anything, another bounded settle → the DOM serialised with its doctype (``page.content()``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.capture.browser import NO_NETWORK_ARGS, launch_async
from archiver.errors import CaptureError

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

#: One scroll step: scroll a viewport down, then wait until the page has processed the scroll: two
#: animation frames (the first runs before the frame that shows the new position is drawn, the
#: second after it, when IntersectionObserver callbacks and scroll handlers have been queued) and one
#: task (so those callbacks have run), bounded by ``ms`` milliseconds for a page whose frames never
#: come; no wait when the step scrolled nothing (a page that fits the viewport). Then where the
#: bottom of the viewport is, how tall the document is, and whether the step scrolled.
_SCROLL_JS = """(ms) => new Promise((resolve) => {
  const el = document.scrollingElement || document.documentElement;
  const from = window.scrollY;
  window.scrollBy(0, window.innerHeight);
  const moved = window.scrollY !== from;
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    resolve([window.scrollY + window.innerHeight, el ? el.scrollHeight : 0, moved]);
  };
  if (!moved) { finish(); return; }  // nothing scrolled (the page fits): nothing to wait for
  setTimeout(finish, ms);
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(finish, 0)));
})"""

#: Back to the top, waited for the same way (a page may react to the top being visible again).
_TOP_JS = """(ms) => new Promise((resolve) => {
  window.scrollTo(0, 0);
  let done = false;
  const finish = () => { if (!done) { done = true; resolve(null); } };
  setTimeout(finish, ms);
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(finish, 0)));
})"""


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
        scroll_pause: float = 0.1,
        frame_wait: float = 2.0,
        viewport: tuple[int, int] = (1280, 800),
    ) -> None:
        self.answer = answer
        self.chromium = chromium
        self.timeout = timeout
        self.settle = settle
        self.scroll_steps = scroll_steps
        self.scroll_pause = scroll_pause
        self.frame_wait = frame_wait
        self.viewport = viewport
        self._tabs = asyncio.Semaphore(max(tabs, 1))
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._loaded: set[Any] = set()
        self._background: set[asyncio.Future[None]] = set()
        self._requests: dict[Any, int] = {}
        self._sources: dict[Any, str | None] = {}

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
        await self._context.route("**/*", self._route)
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

    async def _route(self, route: Any) -> None:
        request = route.request
        try:
            if request.method not in ("GET", "HEAD"):
                await route.abort("blockedbyclient")
                return
            frame = request.frame
            page = frame.page if frame is not None else None
            top = request.is_navigation_request() and page is not None and frame == page.main_frame
            # A loaded page moving on by itself (script, meta refresh) is answered "204 No Content":
            # the browser then stays on the page. An abort would replace it with Chromium's error page.
            if top and page in self._loaded:
                await route.fulfill(status=204, body=b"")
                return
            if page is not None:
                self._requests[page] = self._requests.get(page, 0) + 1
            referrer = request.headers.get("referer")
            reply = await self.answer(request.url, request.resource_type, referrer, self._sources.get(page))
            if reply is None:
                await route.abort("blockedbyclient")
                return
            if reply.path is not None:
                await route.fulfill(status=reply.status, headers=reply.headers, path=reply.path)
            else:
                await route.fulfill(status=reply.status, headers=reply.headers, body=reply.body or b"")
        except Exception:
            with contextlib.suppress(Exception):
                await route.abort("failed")

    async def _idle(self, page: Any) -> None:
        with contextlib.suppress(Exception):
            await page.wait_for_load_state("networkidle", timeout=self.settle * 1000)

    async def render(self, url: str, source: str | None = None) -> str:
        """The rendered DOM of ``url`` with its doctype; ``source`` goes to ``answer`` with every
        request the page makes. Raises :class:`CaptureError` when the page does not load."""
        if self._context is None:
            raise CaptureError("the renderer is not started", subject=url)
        async with self._tabs:
            page = await self._context.new_page()
            self._sources[page] = source
            try:
                try:
                    await page.goto(url, wait_until="load", timeout=self.timeout * 1000)
                except Exception as e:
                    raise CaptureError(f"render failed: {str(e).splitlines()[0]}", subject=url) from None
                self._loaded.add(page)
                await self._idle(page)
                before = self._requests.get(page, 0)
                scrolled = False
                wait_ms = int(self.frame_wait * 1000)
                for _ in range(self.scroll_steps):
                    try:
                        # waits for the page to have processed the step (_SCROLL_JS), even the last
                        reached, height, moved = await page.evaluate(_SCROLL_JS, wait_ms)
                    except Exception:
                        break
                    scrolled = scrolled or bool(moved)
                    if reached >= height or not moved:
                        break
                    await asyncio.sleep(self.scroll_pause)
                if scrolled:
                    with contextlib.suppress(Exception):
                        await page.evaluate(_TOP_JS, wait_ms)
                    if self._requests.get(page, 0) != before:
                        await self._idle(page)  # the scroll loaded more: let it settle
                if str(page.url).startswith("chrome-error:"):
                    # the page moved on before it loaded, to a URL that was refused or failed:
                    # what the tab shows is Chromium's error page, not the page
                    raise CaptureError("render failed: the page moved on to a URL not fetched", subject=url)
                try:
                    return str(await page.content())
                except Exception as e:
                    raise CaptureError(f"cannot read the rendered page: {e}", subject=url) from None
            finally:
                self._loaded.discard(page)
                self._requests.pop(page, None)
                self._sources.pop(page, None)
                with contextlib.suppress(Exception):
                    await page.close()
