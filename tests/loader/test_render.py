"""Every page of the fixture site, packed into one gwtar, renders in each of the four serving modes and
looks like the original (≤ 0.5 % of pixels differ); every page of the mini tree looks like the
extracted tree opened from disk.

The fixture site links root-absolute (``/css/main.css``), so its extracted folder cannot be opened
from disk as is; its reference is the original site served by the fixture server. Animated GIFs are
masked (their frame depends on the moment of the screenshot) and checked to be decoded instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from archiver import gwtar
from archiver.fixture import JS_PAGE, FixtureConfig, FixtureServer, site_root
from tests.loader.harness import (
    ANIMATED_JS,
    MODES,
    open_gwtar,
    pixel_diff,
    serve,
    settle,
    solo_pages,
    wait_ready,
)
from tests.pixels import REFRESHES, both, follow_refresh, settled_share

pytestmark = pytest.mark.browser

VIEWPORT = {"width": 1024, "height": 768}
LIMIT = 0.005
PAGES = sorted(str(p.relative_to(site_root())) for p in site_root().rglob("*.html"))


def _settle(page: Page, path: str) -> None:
    if path == JS_PAGE:  # its last node arrives 300 ms after load
        page.wait_for_selector("#late-marker")
        page.wait_for_selector("#module-notes[data-module]")
    settle(page)


class Viewers:
    """One open archive per serving mode, reused by every page test (navigation is by route). The
    first test of a page starts rendering it in all four modes at once (four contexts work in
    parallel), so the tests of the other modes find it already loaded."""

    def __init__(self, browser: Browser, gwtar_path: Path) -> None:
        self.browser = browser
        self.gwtar_path = gwtar_path
        self.stack = contextlib.ExitStack()
        self.pages: dict[str, Page] = {}
        self.errors: dict[str, list[str]] = {}
        self.shown: str | None = None

    def get(self, mode: str) -> Page:
        if mode not in self.pages:
            served = self.stack.enter_context(serve(mode, self.gwtar_path))
            context = self.browser.new_context(viewport=VIEWPORT)
            self.stack.callback(context.close)
            page = context.new_page()
            errors = self.errors.setdefault(mode, [])
            page.on("pageerror", lambda e: errors.append(str(e)))
            open_gwtar(page, served)
            self.pages[mode] = page
        return self.pages[mode]

    def show(self, path: str) -> None:
        """Start rendering ``path`` in every mode (without waiting), once per page."""
        if self.shown != path:
            self.shown = path
            for mode in MODES:
                self.get(mode).evaluate("p => gwtar.go(p)", path)


@pytest.fixture(scope="module")
def viewers(browser: Browser, site_gwtar: Path) -> Iterator[Viewers]:
    v = Viewers(browser, site_gwtar)
    with v.stack:
        yield v


@pytest.fixture(scope="module")
def reference(browser: Browser, site_dir: Path) -> Iterator[dict[str, Any]]:
    """Screenshots of the original site (computed once per page) and a scratch page for diffs."""
    with FixtureServer(FixtureConfig(root=site_dir)) as server, solo_pages(browser, 2) as (page, scratch):
        shots: dict[str, tuple[bytes, list[list[float]]]] = {}

        def shot(path: str, again: bool = False) -> tuple[bytes, list[list[float]]]:
            if path not in shots or again:
                page.goto(server.url_for("/" + path.replace("?", "%3F")))
                follow_refresh(page)
                _settle(page, path)
                shots[path] = (page.screenshot(), page.evaluate(ANIMATED_JS))
            return shots[path]

        yield {"shot": shot, "scratch": scratch}


@pytest.mark.parametrize(
    ("path", "mode"), [(path, mode) for path in PAGES for mode in MODES], ids=lambda v: str(v)
)
def test_fixture_page_matches_original(
    viewers: Viewers, reference: dict[str, Any], mode: str, path: str
) -> None:
    viewers.show(path)
    mask = reference["shot"](path)[1]
    page = viewers.get(mode)
    wait_ready(page, REFRESHES.get(path, path))  # a page that sends the browser on: where it ends
    _settle(page, path)
    state = page.evaluate(
        "({state: gwtar.state, compat: document.compatMode, problems: gwtar.problems.splice(0)})"
    )
    assert state["state"] == "ready"
    assert state["compat"] == "CSS1Compat"
    assert [p for p in state["problems"] if p["kind"] != "missing"] == []
    animated = page.evaluate("[...document.images].filter(i => i.complete && i.naturalWidth > 0).length")
    assert animated >= len(mask), "every image, animated ones included, is decoded"

    def shoot(look: int) -> tuple[bytes, bytes]:
        if look:  # a late paint on either side: both settle again (the reference is shot anew)
            _settle(page, path)
        return reference["shot"](path, again=look > 0)[0], page.screenshot()

    diff = settled_share(
        shoot, lambda a, b: pixel_diff(reference["scratch"], a, b, mask), limit=LIMIT, name=f"{path}-{mode}"
    )
    assert diff <= LIMIT, f"{path} in mode {mode}: {diff:.2%} of pixels differ"
    assert viewers.errors.get(mode, []) == []


@pytest.fixture(scope="module")
def mini_extracted(mini_gwtar: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mini-extracted")
    gwtar.extract(mini_gwtar, out)
    return out


MINI_PAGES = [
    "index.html",
    "docs/index.html",
    "docs/intro/index.html",
    "greatwork.html",
    "what?.html",
    "café menu/index.html",
    "search/index__q-84c0b0.html",
]


def test_mini_tree_matches_extracted_tree_from_disk(
    browser: Browser, mini_gwtar: Path, mini_extracted: Path
) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    try:
        # One context: the archive's page, opened last, is the one Chromium does not throttle.
        ref, scratch, page = context.new_page(), context.new_page(), context.new_page()
        with serve("range", mini_gwtar) as served:
            open_gwtar(page, served)
            for path in MINI_PAGES:
                ref.goto((mini_extracted / path).as_uri())
                settle(ref)
                page.evaluate("p => gwtar.go(p)", path)
                wait_ready(page, path)
                diff = settled_share(
                    both(ref, page), partial(pixel_diff, scratch), limit=LIMIT, name=f"mini-{path}"
                )
                assert diff <= LIMIT, f"{path}: {diff:.2%} of pixels differ"
    finally:
        context.close()
