"""Screenshot comparisons that do not flake on a loaded machine.

Two screenshots taken while one page still paints a late image, font or background differ for a
moment, not for good: :func:`settled_share` looks again (settling both pages, waiting a little longer
each time) before it calls a difference real, and keeps the last pair of a difference that stays, so
a failing run shows what differed. :func:`settle` waits for what a screenshot needs: fonts, every
``<img>`` decoded, every CSS background image decoded, two frames painted.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page

__all__ = ["REFRESHES", "SETTLE_JS", "both", "follow_refresh", "settle", "settled_share"]

SETTLE_JS = """async () => {
  await document.fonts.ready;
  const urls = new Set();
  for (const el of document.querySelectorAll("*")) {
    for (const pseudo of [null, "::before", "::after"]) {
      const bg = getComputedStyle(el, pseudo).backgroundImage;
      if (bg && bg !== "none") for (const m of bg.matchAll(/url\\("([^"]*)"\\)/g)) urls.add(m[1]);
    }
  }
  const css = [...urls].map(u => { const i = new Image(); i.src = u; return i; });
  const imgs = [...document.images].filter(i => i.currentSrc);
  await Promise.all([...imgs, ...css].map(i => i.decode().catch(() => null)));
  await document.fonts.ready;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""


#: The fixture site's pages that send the browser on with ``<meta http-equiv=refresh>`` (start.html,
#: after 3 s), and the page each ends on. Their comparisons are of the page they end on: before the
#: refresh, whether a screenshot shows the first page, the next one or the moment between (its
#: document parsed, its stylesheets not yet loaded) depends on how long a loaded machine took.
REFRESHES = {"start.html": "docs/guide/index.html"}

_REFRESH_JS = """() => {
  const m = document.querySelector('meta[http-equiv="refresh" i]');
  return m ? m.getAttribute("content") : null;
}"""


def follow_refresh(page: Page, timeout: float = 20_000) -> bool:
    """If ``page``'s document asks for a refresh to another address, wait until the browser has
    followed it and the next page has loaded; whether there was one."""
    content = page.evaluate(_REFRESH_JS)
    if not content or "url" not in content.lower():
        return False
    start = page.url
    page.wait_for_url(lambda url: url != start, timeout=timeout)
    page.wait_for_load_state("load")
    return True


def settle(page: Page) -> None:
    """Wait until fonts are loaded, every image with a source and every CSS background image is
    decoded (or has failed), and two frames have been painted: what a screenshot needs, for an
    archive and its reference alike."""
    page.evaluate(SETTLE_JS)


def settled_share(
    shoot: Callable[[int], tuple[bytes, bytes]],
    share: Callable[[bytes, bytes], float],
    *,
    limit: float = 0.005,
    looks: int = 4,
    name: str = "page",
) -> float:
    """The share of differing pixels between the two screenshots ``shoot(look)`` returns, looked at
    up to ``looks`` times: the first look within ``limit`` ends it; before each further look the
    pause grows (0.5 s, 1 s, 1.5 s) and ``shoot`` is told which look it is (to settle its pages
    again). A difference that stays is kept as two PNG files, whose folder is printed."""
    for look in range(looks):
        a, b = shoot(look)
        found = share(a, b)
        if found <= limit:
            return found
        if look + 1 < looks:
            time.sleep(0.5 * (look + 1))
    folder = Path(os.environ.get("ARCHIVER_TEST_ARTIFACTS") or tempfile.gettempdir()) / "archiver-pixels"
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120]
    (folder / f"{stem}.want.png").write_bytes(a)
    (folder / f"{stem}.got.png").write_bytes(b)
    print(f"{name}: {found:.4%} of pixels differ after {looks} looks; screenshots in {folder}/{stem}.*.png")
    return found


def both(
    want: Page, got: Page, *, again: Callable[[Page], None] = settle, full_page: bool = False
) -> Callable[[int], tuple[bytes, bytes]]:
    """A ``shoot`` for :func:`settled_share`: screenshots of ``want`` and ``got``, each page settled
    again by ``again`` before every look after the first."""

    def shoot(look: int) -> tuple[bytes, bytes]:
        if look:
            again(want)
            again(got)
        return want.screenshot(full_page=full_page), got.screenshot(full_page=full_page)

    return shoot
