"""Time to first results of the archive's own search page in Chromium (issue 23 point 5: ≤ 300 ms from
a ``file://`` gwtar of the Python docs), for a tree from ``file://``, a gwtar from ``file://`` (through
the loader's file picker) and both through ``archiver serve``.

    python tools/bench_search_page.py TREE [--gwtar FILE] [--queries WORD,WORD…] [--no-serve] [--json]

TREE must have its index (``archiver index TREE``); ``--gwtar`` a gwtar packed from it with its index
(``archiver pack TREE --format gwtar -o FILE``). For each query and each way of opening, a new page
opens the search page with the query in its address (``?q=`` for a tree and serve, the hash route
``#/_archiver/search/index.html?q=`` for a gwtar from disk) and the clock runs from the navigation (for
the gwtar, from the file being given to the picker) to the page saying it is done
(``body[data-state=done]``, formats/search.md §7), in whichever frame the page runs. Printed: p50, p95
and the largest, and the bytes of index files the page read (the sizes of the responses it got; for
the gwtar, of the members it read, when the loader reports them). One warm-up query first. Nothing
leaves 127.0.0.1 and ``file://``.

The wall clock above holds Playwright's own costs (opening the tab, giving the file to the picker,
polling for the answer: 100-700 ms on a loaded machine). So each row also prints the page's own clock
(``in page``: from the navigation's start, for the gwtar from the picker's ``change`` event, to the
page's ``done`` mark) and where that time went, the median time of each mark search.js records in
``archiverSearchStats.marks`` (formats/search.md §7.1): ``script`` (search.js runs), ``manifest``,
``shards``, ``ranked``, ``snippets`` (fragment groups and text files read), ``done`` (rendered); for the
gwtar they count from the picker's event too. A page without the marks (an older search.js) prints
no such columns.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from playwright.sync_api import Browser, Frame, Page, sync_playwright  # noqa: E402

from archiver.capture.browser import launch  # noqa: E402

QUERIES = "dictionary,socket,asyncio,tuple,decorator,unicode,subprocess,logging,iterator,exception"
_DONE = "body[data-state=done], body[data-state=damaged]"
# The page's marks (ms), from the navigation's start or from the picker's change event (gwtar).
_MARKS = """() => {
  const s = window.archiverSearchStats, zero = window.__benchPicked || 0;
  if (!s || !s.marks) return null;
  const out = {};
  for (const [name, at] of s.marks) out[name] = at - zero;
  return out;
}"""
_PICKED = """() => document.getElementById("gwtar-file").addEventListener("change", () => {
  window.__benchPicked = performance.now();
})"""


def _index_file(url: str) -> bool:
    """A file of the index (manifest, shards, fragments, text), not the page or its script."""
    path = urllib.parse.urlsplit(url).path
    return "/_archiver/search/" in path and not path.endswith((".html", "/search.js"))


def _done_frame(page: Page, timeout_s: float) -> Frame:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for frame in page.frames:
            try:
                if frame.query_selector(_DONE):
                    return frame
            except Exception:  # a frame navigating away: look again
                continue
        time.sleep(0.005)
    raise SystemExit(f"bench_search_page: {page.url}: no results after {timeout_s:.0f} s")


def measure(browser: Browser, open_page: Callable[[Page, str], None], queries: list[str]) -> dict[str, Any]:
    times: list[float] = []
    sizes: list[int] = []
    states: list[str] = []
    phases: dict[str, list[float]] = {}
    for n, q in enumerate([queries[0], *queries]):
        page = browser.new_page()
        got: list[tuple[str, int]] = []
        files: list[str] = []
        page.on("response", lambda r, got=got: got.append((r.url, int(r.headers.get("content-length") or 0))))
        page.on("request", lambda r, files=files: files.append(r.url) if r.url.startswith("file:") else None)
        started = time.perf_counter()
        open_page(page, q)
        frame = _done_frame(page, 60)
        elapsed = time.perf_counter() - started
        states.append(frame.get_attribute("body", "data-state") or "")
        marks = frame.evaluate(_MARKS)
        on_disk = sum(  # file:// has no responses: the index files' sizes on disk
            os.path.getsize(urllib.parse.unquote(urllib.parse.urlsplit(u).path))
            for u in set(files)
            if _index_file(u)
        )
        if n:  # the first is the warm-up
            times.append(elapsed)
            for name, at in (marks or {}).items():
                phases.setdefault(name, []).append(at)
            sizes.append(sum(size for u, size in got if _index_file(u)) + on_disk)
        page.close()
    times.sort()
    return {
        "queries": len(times),
        "p50_ms": round(statistics.median(times) * 1000, 1),
        "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] * 1000, 1),
        "max_ms": round(times[-1] * 1000, 1),
        "bytes_p50": int(statistics.median(sizes)),
        "damaged": states.count("damaged"),
        "in_page_ms": {name: round(statistics.median(at), 1) for name, at in phases.items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("--gwtar", type=Path)
    ap.add_argument("--queries", default=QUERIES)
    ap.add_argument("--no-serve", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    search = args.tree / "_archiver" / "search" / "index.html"
    if not search.is_file():
        ap.error(f"{args.tree}: no search page (run archiver index {args.tree})")
    queries = [q for q in args.queries.split(",") if q]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows: dict[str, Any] = {}
    server = None
    with sync_playwright() as p:
        browser = launch(p)
        try:

            def tree_file(page: Page, q: str) -> None:
                page.goto(search.as_uri() + "?" + urllib.parse.urlencode({"q": q}), wait_until="commit")

            rows["tree file://"] = measure(browser, tree_file, queries)
            if args.gwtar:
                gwtar = args.gwtar.resolve()

                def gwtar_file(page: Page, q: str) -> None:
                    route = "#/_archiver/search/index.html?" + urllib.parse.urlencode({"q": q})
                    page.goto(gwtar.as_uri() + route)
                    page.evaluate(_PICKED)
                    page.set_input_files("#gwtar-file", str(gwtar))

                rows["gwtar file://"] = measure(browser, gwtar_file, queries)
            if not args.no_serve:
                import socket

                sys.path.insert(0, str(REPO / "tools"))
                from nginx_static import free_port

                port = free_port()
                mounts = [str(args.tree)] + ([str(args.gwtar)] if args.gwtar else [])
                server = subprocess.Popen(
                    [sys.executable, "-m", "archiver", "serve", "--quiet", "--port", str(port), *mounts],
                    cwd=REPO,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                deadline = time.monotonic() + 30
                while True:
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            raise SystemExit("bench_search_page: archiver serve did not start") from None
                        time.sleep(0.1)
                tree_origin = _mount_origin(port, queries[0], "tree")

                def tree_served(page: Page, q: str) -> None:
                    url = tree_origin + "_archiver/search/index.html?" + urllib.parse.urlencode({"q": q})
                    page.goto(url, wait_until="commit")

                rows["tree via serve"] = measure(browser, tree_served, queries)
        finally:
            browser.close()
            if server is not None:
                server.terminate()
                server.wait(timeout=20)
    for name, row in rows.items():
        print(
            f"  {name:15} p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms"
            f"  max {row['max_ms']:7.1f} ms  bytes read (p50) {row['bytes_p50']}  damaged {row['damaged']}"
        )
        if row["in_page_ms"]:
            marks = "  ".join(f"{k} {v:.0f}" for k, v in row["in_page_ms"].items())
            print(f"  {'':15} in page (p50 of each mark, ms): {marks}")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


def _mount_origin(port: int, q: str, kind: str) -> str:
    """The origin and path of the first mount of ``kind`` with results for ``q`` (from serve's own API)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "GET", "/~/api/search?" + urllib.parse.urlencode({"q": q}), headers={"Host": f"localhost:{port}"}
    )
    doc = json.loads(conn.getresponse().read())
    conn.close()
    for r in doc["results"]:
        if r["kind"] == kind:
            split = urllib.parse.urlsplit(r["url"])
            mount = split.path.lstrip("/").split("/", 1)[0]
            return f"{split.scheme}://{split.netloc}/{mount}/"
    raise SystemExit(f"bench_search_page: serve found nothing for {q!r} in a {kind}")


if __name__ == "__main__":
    raise SystemExit(main())
