"""``archiver demo``: serve the bundled demo site on 127.0.0.1 and run every stage that exists on it.

Stages that have landed: the fixture server, the URL→path mapping core (run over every page reachable
from the home page, written as a plan of where each URL lands in a tree), and the Chromium launcher
(which renders the site's JavaScript page). Capture, packing and verification are announced as not
implemented yet; the demo runs them as they land.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx
import lxml.html

from archiver import urls
from archiver.errors import ArchiverError, CaptureError
from archiver.fixture import JS_MARKER, JS_PAGE, FixtureServer, site_root

__all__ = ["run_demo"]

_PAGE_TAGS = {"a", "area", "iframe", "frame"}


def _plan(client: httpx.Client, home: str) -> list[dict[str, Any]]:
    """Breadth-first over the home site's pages by plain HTTP (no rendering), mapping every page and
    every reference in it to its tree path. URLs that share a tree path (``/docs`` and ``/docs/``)
    are one row, as they are one file in a tree."""
    rows: dict[str, dict[str, Any]] = {}  # by tree path
    queue = deque([(home, 0)])
    rows[urls.local_path(home, kind="page", home=home)] = {"url": home, "kind": "page", "depth": 0}
    while queue:
        url, depth = queue.popleft()
        response = client.get(url, follow_redirects=True)
        if response.status_code != 200 or not response.headers.get("content-type", "").startswith(
            "text/html"
        ):
            continue
        doc = lxml.html.document_fromstring(response.content)
        for element, _attr, link, _pos in doc.iterlinks():
            if urls.ref_action(link) == "keep":
                continue
            try:
                target = urls.dedup_key(urls.canonicalize(link, str(response.url)))
            except ArchiverError:
                continue
            is_page = element.tag in _PAGE_TAGS and urls.likely_page(target)
            if is_page and not urls.in_scope(home, target):
                continue  # an outside page keeps its absolute URL in a tree
            kind = "page" if is_page else "asset"
            path = urls.local_path(target, kind=kind, home=home)
            if path not in rows:
                rows[path] = {"url": target, "kind": kind, "depth": depth + 1}
                if is_page:
                    queue.append((target, depth + 1))
    plan = [{"path": path, **row} for path, row in rows.items()]
    return sorted(plan, key=lambda r: (r["kind"] != "page", r["path"]))


def _render_check(base: str) -> dict[str, Any]:
    """Open the site's JavaScript-built page in real Chromium and look for the text its script adds."""
    from playwright.sync_api import sync_playwright

    from archiver.capture.browser import launch

    url = base + urls.rel("index.html", JS_PAGE)
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            page = browser.new_page()
            page.goto(url, wait_until="load")
            page.wait_for_function(f"document.body.innerText.includes({JS_MARKER!r})", timeout=10_000)
            return {"url": url, "browser": browser.version, "marker_found": True}
        finally:
            browser.close()


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def run_demo(*, out: str, serve: bool, as_json: bool) -> int:
    out_dir = Path(out)
    report: dict[str, Any] = {}
    say = (lambda *_: None) if as_json else (lambda text: print(text, flush=True))
    with FixtureServer() as server:
        home = server.url
        files = sum(1 for p in site_root().rglob("*") if p.is_file())
        say(f"archiver demo: serving the demo site ({files} files from {site_root()}) at {home}")
        report["site"] = {"url": home, "root": str(site_root()), "files": files}

        with httpx.Client(timeout=30) as client:
            try:
                plan = _plan(client, home)
            except httpx.HTTPError as e:
                raise CaptureError(f"the demo site did not answer: {e}", subject=home) from None
        plan_path = out_dir / "plan.tsv"
        _write_atomic(plan_path, "".join(f"{r['kind']}\t{r['path']}\t{r['url']}\n" for r in plan))
        pages = sum(r["kind"] == "page" for r in plan)
        say(
            f"  map:     {pages} pages and {len(plan) - pages} assets reachable from the home page; "
            f"where each lands in a tree: {plan_path}"
        )
        report["map"] = {"pages": pages, "assets": len(plan) - pages, "plan": str(plan_path)}

        started = time.monotonic()
        render = _render_check(home)
        render["seconds"] = round(time.monotonic() - started, 2)
        say(
            f"  render:  Chromium {render['browser']} ran the JavaScript of {render['url']} "
            f"({render['seconds']} s)"
        )
        report["render"] = render

        pending = "capture, pack (ZIM, gwtar with FEC), verify"
        say(f"  pending: {pending}: not implemented yet; this demo runs them as they land")
        report["pending"] = ["capture", "pack-zim", "pack-gwtar", "verify"]
        if as_json:
            print(json.dumps(report, ensure_ascii=False))
        if serve:
            print(f"serving {home} until Ctrl-C", file=sys.stderr, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    return 0
