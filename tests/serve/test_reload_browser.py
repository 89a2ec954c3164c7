"""A page served by ``archiver serve`` and reloaded in Chromium looks as it did: the reload revalidates
the page from the browser's cache (If-None-Match → 304), and the 304 once said the errors' policy
(`default-src 'none'`), which Chromium then kept for the page (RFC 9111 §4.3.4: a 304 updates the
stored headers): the reloaded page had no stylesheet, no image, and refused an inline style.

Chromium runs in a thread of its own (as tests/serve/test_browser.py explains)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from archiver import gwtar, zim
from archiver.capture.browser import launch
from archiver.serve import running

MINI = Path(__file__).resolve().parents[2] / "testdata" / "trees" / "mini"
#: What the mini home page's stylesheet gives it, and whether an inline style may be added.
LOOK = """() => {
  const s = document.createElement("style");
  s.textContent = "#reload-probe { width: 7px }";
  document.head.append(s);
  const p = document.createElement("div");
  p.id = "reload-probe";
  document.body.append(p);
  return {
    font: getComputedStyle(document.body).fontFamily,
    background: getComputedStyle(document.body).backgroundImage !== "none",
    h1: getComputedStyle(document.querySelector("h1")).color,
    inline: getComputedStyle(p).width,
    images: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
  };
}"""

pytestmark = pytest.mark.browser


def _looks(url: str) -> tuple[dict[str, object], list[dict[str, object]], list[str], list[int]]:
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page()
            refused: list[str] = []
            statuses: list[int] = []
            page.on("console", lambda m: refused.append(m.text) if "Security Policy" in m.text else None)
            page.on("response", lambda r: statuses.append(r.status) if r.url.endswith(".html") else None)
            page.goto(url, wait_until="load")
            first = page.evaluate(LOOK)
            again = []
            for _ in range(2):  # a reload, then another: each revalidates the page
                page.reload(wait_until="load")
                again.append(page.evaluate(LOOK))
            return first, again, refused, statuses
        finally:
            browser.close()


@pytest.mark.parametrize("kind", ["tree", "gwtar", "zim"])
def test_a_reloaded_page_keeps_its_stylesheets_images_and_policy(tmp_path: Path, kind: str) -> None:
    if kind == "tree":
        path, route = MINI, "mini/index.html"
    elif kind == "gwtar":
        path, route = tmp_path / "mini.gwtar.html", "mini.gwtar.html/~/index.html"
        gwtar.pack(MINI, path)
    else:
        path, route = tmp_path / "mini.zim", "mini/index.html"
        zim.pack(MINI, path)
    with running([path]) as base, ThreadPoolExecutor(1) as pool:
        first, again, refused, statuses = pool.submit(_looks, base + route).result()
    assert first["background"] and first["inline"] == "7px" and first["images"], first
    assert again == [first, first]
    assert not refused, refused
    assert statuses.count(200) == 3, statuses  # each reload answered (a 304 shows as its cached 200)
