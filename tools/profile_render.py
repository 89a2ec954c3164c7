"""Where the time of a rendered capture's page goes (issue 24 point 1): the generated site of
``tools/bench_capture.py`` served on 127.0.0.1, ``--pages`` of its pages captured with rendering and
``--tabs`` tabs, with the phases of each page's render timed from outside the code (wrappers around
Playwright's ``Page.goto``, ``wait_for_load_state``, ``evaluate`` and ``content`` and the renderer's
route handler, which fetches and answers each request of the browser):

    python tools/profile_render.py [--pages 30] [--tabs 3] [--settle 1.5]

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
from playwright.async_api._generated import Page  # noqa: E402

import archiver.capture.render as render  # noqa: E402
from archiver.capture import capture  # noqa: E402
from archiver.fixture import FixtureConfig, FixtureServer  # noqa: E402

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


def _timed_route() -> None:
    # Playwright passes (route, request) to a handler that takes two parameters: keep the one-argument form
    original = render.Renderer._route
    label = "route handler (fetch + fulfill), all requests"

    async def wrapper(self: Any, route: Any) -> None:
        started = time.perf_counter()
        try:
            await original(self, route)
        finally:
            SECONDS[label] += time.perf_counter() - started
            CALLS[label] += 1

    render.Renderer._route = wrapper  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=30)
    ap.add_argument("--tabs", type=int, default=3)
    ap.add_argument("--settle", type=float, default=1.5)
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    _timed(Page, "goto", "goto (until load)")
    _timed(Page, "wait_for_load_state", "settle (Playwright networkidle: 500 ms quiet)")
    _timed(Page, "evaluate", "scroll steps and back to the top")
    _timed(Page, "content", "serialise (page.content)")
    _timed(render.Renderer, "render", "render() in all")
    _timed_route()
    work = Path(tempfile.mkdtemp(prefix="profile-render-"))
    try:
        site = work / "site"
        bench_capture.make_site(site, max(args.pages, 6))
        with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
            urls = [server.url] + [f"{server.url}p/{i}.html" for i in range(1, args.pages)]
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
