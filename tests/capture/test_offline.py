"""Captured pages opened from disk (file://) in Chromium: no network at all, every image and the web
font shown, and the same pixels as the live page (at most 0.5 % differ)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image, ImageChops
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from archiver.capture import browser
from tests.capture.conftest import Captured
from tests.capture.test_capture_site import PAGES
from tests.pixels import both, follow_refresh, settle, settled_share

pytestmark = pytest.mark.browser

# Bounded in the page (page.evaluate has no timeout of its own): at most 400 steps of at least 200
# px, and at most 10 s each for the images' decoding and the fonts. A CI run's worker once stayed in
# this evaluate on demo/lazy.html until pytest-timeout's 900 s; why is not known (a page that grows as
# it is scrolled, a zero-height viewport and a decode that never settles are the loop's unbounded
# cases): a page that is not settled now shows in the comparison instead of hanging the run.
SCROLL_THROUGH = """async () => {
  const h = () => document.documentElement.scrollHeight;
  const within = (p, ms) => Promise.race([p, new Promise(r => setTimeout(r, ms))]);
  const step = Math.max(200, window.innerHeight / 2);
  for (let y = 0, n = 0; y < h() && n < 400; y += step, n++) {
    window.scrollTo(0, y);
    await new Promise(r => setTimeout(r, 15));
  }
  window.scrollTo(0, 0);
  await within(Promise.all([...document.images].map(i => i.decode().catch(() => null))), 10000);
  await within(document.fonts.ready, 10000);
}"""
# Animated GIFs show whichever frame the clock has reached: hidden in both screenshots (their bytes are
# compared by test_capture_site.py), so the comparison is about layout, text, fonts and still images.
STILL = 'img[src*=".gif" i] { visibility: hidden !important; }'
IMAGES_NOT_SHOWN = """() => [...document.images]
  .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.currentSrc || i.src)"""
FONTS = """async () => {
  await document.fonts.ready;
  return [...document.fonts].map(f => [f.family.replace(/"/g, ''), f.status]);
}"""


def settle_scrolled(page: Page) -> None:
    """Scroll through (lazy images load), let scripts, modules and lazy images finish (bounded: a
    busy machine may never be idle), then settle for the screenshot."""
    page.evaluate(SCROLL_THROUGH)
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_load_state("networkidle", timeout=15_000)
    settle(page)


@pytest.fixture(scope="module")
def contexts() -> Iterator[tuple[Any, Any]]:
    """One browser; a context for pages from disk and one for the live site, same viewport."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = browser.launch(pw)
        try:
            yield (
                b.new_context(viewport={"width": 1280, "height": 800}),
                b.new_context(viewport={"width": 1280, "height": 800}),
            )
        finally:
            b.close()


def _differing_share(a: bytes, b: bytes) -> float:
    one, two = Image.open(io.BytesIO(a)).convert("RGB"), Image.open(io.BytesIO(b)).convert("RGB")
    width, height = min(one.width, two.width), min(one.height, two.height)
    diff = ImageChops.difference(one.crop((0, 0, width, height)), two.crop((0, 0, width, height)))
    changed = width * height - diff.convert("L").histogram()[0]  # pixels whose difference is not zero
    total = max(one.width * one.height, two.width * two.height)
    return (changed + total - width * height) / total


@pytest.mark.parametrize("page_path", PAGES)
def test_page_from_disk(rendered: Captured, contexts: tuple[Any, Any], page_path: str) -> None:
    """Opened from disk: zero network requests, every image shown (lazy ones included), the web font
    loaded; and against the live page (scripts running, served by the fixture server) in the same
    browser and viewport, at most 0.5 % of the pixels of a full-page screenshot differ."""
    disk, live = contexts
    page = disk.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto((rendered.out / page_path).as_uri(), wait_until="load")
    follow_refresh(page)
    page.evaluate(SCROLL_THROUGH)
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:", "about:"))] == []
    assert page.evaluate(IMAGES_NOT_SHOWN) == []
    assert ["Acme Field Sans", "loaded"] in page.evaluate(FONTS)
    settle(page)
    page.add_style_tag(content=STILL)

    live_page = live.new_page()
    live_page.goto(rendered.server.url_for(page_path.replace("?", "%3F")), wait_until="load")
    follow_refresh(live_page)
    settle_scrolled(live_page)
    live_page.add_style_tag(content=STILL)
    shoot = both(live_page, page, again=settle_scrolled, full_page=True)
    share = settled_share(shoot, _differing_share, name=f"offline-{page_path}")
    page.close()
    live_page.close()
    print(f"fidelity {page_path}: {share:.4%} of pixels differ")
    assert share <= 0.005
