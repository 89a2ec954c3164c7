"""Chromium alone on a list of pages: the floors a rendered ``archiver capture`` is read against
(issue 24 point 1).

    python tools/chromium_floor.py bare|careful OUT_DIR --tabs N URL...

One headless Chromium (the one archiver uses, with the same flags), one browser context, ``--tabs``
pages at a time, each taking the next URL of the list as soon as it is free (a queue per tab, as
Browsertrix keeps its windows busy):

- **bare**: navigate, wait for the ``load`` event, serialise the DOM (``page.content()``) and write it
  to a file (the least any rendered capture does);
- **careful**: the same, plus one scroll to the bottom of the page (``window.scrollTo`` to the
  document's height, so lazy images start) and a wait of at most 2 s for the network to be idle
  (Playwright's ``networkidle``: no request for 500 ms) before serialising.

Nothing else: no request interception, no storing of subresources, no rewriting. Prints the number
of pages written. It is a measuring instrument: any page that fails stops it with an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import Browser, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeout

from archiver.capture.browser import launch_async


async def _tab(
    browser: Browser, queue: asyncio.Queue[str], out: Path, careful: bool, done: list[str]
) -> None:
    context = await browser.new_context()
    page = await context.new_page()
    try:
        while True:
            try:
                url = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            await page.goto(url, wait_until="load", timeout=60_000)
            if careful:
                await page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
                # Playwright's TimeoutError when the 2 s are up: go on, as a capture would
                with contextlib.suppress(PlaywrightTimeout):
                    await page.wait_for_load_state("networkidle", timeout=2_000)
            html = await page.content()
            name = hashlib.sha256(url.encode()).hexdigest()[:16] + ".html"
            (out / name).write_text(html, encoding="utf-8")
            done.append(url)
    finally:
        await context.close()


async def run(mode: str, out: Path, tabs: int, urls: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for u in urls:
        queue.put_nowait(u)
    done: list[str] = []
    async with async_playwright() as p:
        browser = await launch_async(p)
        try:
            await asyncio.gather(*(_tab(browser, queue, out, mode == "careful", done) for _ in range(tabs)))
        finally:
            await browser.close()
    return len(done)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["bare", "careful"])
    ap.add_argument("out", type=Path)
    ap.add_argument("--tabs", type=int, default=3)
    ap.add_argument("urls", nargs="+")
    args = ap.parse_args(argv)
    print(asyncio.run(run(args.mode, args.out, args.tabs, args.urls)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
