"""The fixture site as ``archiver capture`` writes it (a canonical tree, pages linking relatively),
packed into a gwtar: each page rendered by the loader matches the captured tree opened from disk
(≤ 0.5 % of pixels differ), on a Range-capable server.

The capture is limited to 8 pages to keep the suite fast (a full capture, checked by hand: all 41
pages match, the worst 0.08 %); test_render.py covers all 41 pages of the site in all four serving
modes."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from archiver import gwtar
from archiver.capture import capture
from archiver.fixture import FixtureServer
from tests.loader.harness import ANIMATED_JS, open_gwtar, pixel_diff, serve, wait_ready
from tests.pixels import REFRESHES, both, follow_refresh, settle, settled_share

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    tree = tmp_path_factory.mktemp("captured") / "tree"
    with FixtureServer() as server, ThreadPoolExecutor(1) as pool:
        # capture() runs its own event loop, which cannot start in the thread of the sync Playwright.
        kwargs = {"render": True, "depth": 10, "max_pages": 8, "delay": 0, "tabs": 2, "progress": False}
        pool.submit(capture, [server.url], tree, **kwargs).result()
    out = tree.parent / "captured.gwtar.html"
    gwtar.pack(tree, out)
    yield tree, out


def test_captured_pages_match_the_tree_from_disk(browser: Browser, captured: tuple[Path, Path]) -> None:
    tree, archive = captured
    pages = sorted(
        str(p.relative_to(tree)) for p in tree.rglob("*.html") if p.relative_to(tree).parts[0] != "_archiver"
    )
    assert len(pages) >= 8
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    try:
        ref, scratch, page = context.new_page(), context.new_page(), context.new_page()
        differ = {}
        with serve("range", archive) as served:
            open_gwtar(page, served)
            for path in pages:
                ref.goto((tree / path).as_uri())
                follow_refresh(ref)
                settle(ref)
                mask = ref.evaluate(ANIMATED_JS)
                page.evaluate("p => gwtar.go(p)", path)
                wait_ready(page, REFRESHES.get(path, path))
                share = settled_share(
                    both(ref, page), partial(pixel_diff, scratch, mask=mask), name=f"captured-{path}"
                )
                if share > 0.005:
                    differ[path] = share
            problems = page.evaluate("gwtar.problems.filter(p => p.kind !== 'missing')")
        assert (differ, problems) == ({}, [])  # both shown when one fails (a page that differs may say why)
    finally:
        context.close()
