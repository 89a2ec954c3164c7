"""Where the time of a rendered capture's page goes (issue 24 point 1): the generated site of
``tools/bench_capture.py`` served on 127.0.0.1, ``--pages`` of its pages captured with rendering and
``--tabs`` tabs, with the phases of each page's render timed from outside the code (wrappers around
Playwright's ``Page.goto``, ``wait_for_load_state``, ``evaluate`` and ``content`` and the renderer's
request handler, which fetches and answers each request of the browser):

    python tools/profile_render.py [--pages 30] [--tabs 3] [--settle 1.5] [--site DIR]

``--site DIR`` (for example ``/usr/share/doc/python3/html``): nginx serves that folder instead and
``--pages`` of its pages are taken as ``tools/bench_capture.py --site`` takes them (spread evenly over
its sorted ``.html`` files).

Printed: pages, wall time, pages/s, then each phase's wall time summed over the tabs (so the phases
add up to about ``tabs`` × wall), its calls, and its share per page. ``goto`` includes the route
handler's time for the requests made before ``load``. A measuring instrument: it changes nothing in
archiver, and its figures are for the closing notes (run on a quiet machine; the load average is
printed).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_capture  # noqa: E402
from playwright.async_api._generated import BrowserContext, Page  # noqa: E402

import archiver.capture.render as render  # noqa: E402
from archiver.capture import capture  # noqa: E402
from archiver.capture import page as page_stage  # noqa: E402
from archiver.capture.fetch import Fetcher  # noqa: E402
from archiver.capture.responses import Responses  # noqa: E402
from archiver.capture.stage import Stage  # noqa: E402

SECONDS: collections.defaultdict[str, float] = collections.defaultdict(float)
CALLS: collections.Counter[str] = collections.Counter()


def _timed(cls: Any, name: str, label: str) -> None:
    original = getattr(cls, name)

    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started
            CALLS[label] += 1

    setattr(cls, name, wrapper)


def _timed_function(module: Any, name: str, label: str) -> None:
    """A module-level coroutine function timed as :func:`_timed` times a method (the page stage is
    ``archiver.capture.page.page``, looked up in its module at each call)."""
    original = getattr(module, name)

    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - started
            CALLS[label] += 1

    setattr(module, name, wrapper)


def _timed_route() -> None:
    original = render.Renderer._paused
    label = "request handler (answer + fulfil), all requests"

    async def wrapper(self: Any, *args: Any) -> None:
        started = time.perf_counter()
        try:
            await original(self, *args)
        finally:
            SECONDS[label] += time.perf_counter() - started
            CALLS[label] += 1

    render.Renderer._paused = wrapper  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=30)
    ap.add_argument("--tabs", type=int, default=3)
    ap.add_argument("--settle", type=float, default=1.5)
    ap.add_argument(
        "--site", type=Path, help="a folder of HTML served by nginx instead of the generated site"
    )
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _timed(Page, "goto", "goto (until load)")
    _timed(render.Renderer, "_settle", "settle (quiet network, frames, short timers)")
    _timed(BrowserContext, "new_page", "new_page")
    _timed(Page, "close", "page close")
    _timed(Page, "evaluate", "scroll steps and back to the top")
    _timed(Page, "content", "serialise (page.content)")
    _timed(render.Renderer, "render", "render() in all")
    _timed_function(page_stage, "page", "page stage in all (fetch, render, rewrite, write)")
    _timed(Stage, "finish", "page stage: state transaction (finish)")
    _timed(Stage, "write", "page stage: write")
    _timed(Responses, "answer", "answer (a browser request: tree, cache or fetch)")
    _timed(Fetcher, "fetch", "fetch through the network (politeness included)")
    _timed(render._Tab, "fulfill", "Fetch.fulfillRequest (CDP)")
    _timed_route()
    work = Path(tempfile.mkdtemp(prefix="profile-render-"))
    try:
        with bench_capture._serving(work, max(args.pages, 6), args.site) as (base, paths):
            urls = [base + p for p in bench_capture.spread(paths, args.pages)]
            started = time.perf_counter()
            options = {"render": True, "depth": 0, "delay": 0, "progress": False, "search_index": False}
            report = capture(urls, work / "out", tabs=args.tabs, settle=args.settle, **options)
            wall = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pages = max(report.pages, 1)
    print(f"{report.pages} pages in {wall:.2f} s: {report.pages / wall:.2f} pages/s with {args.tabs} tabs")
    for label, seconds in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
        print(f"  {label:50} {seconds:8.2f} s  {CALLS[label]:5} calls  {seconds / pages:6.3f} s a page")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
