"""The search page of a ZIM in Debian's kiwix-serve (formats/search.md §8.3): the archive packed by
``archiver pack --format zim`` from a tree with an index, served on a free loopback port, its
``_archiver/search/index.html`` opened through kiwix-serve's content URL in Chromium: a query typed,
results shown with the match marked, the query in the address, a result clicked, the page opened;
a Chinese and a Japanese page found by a two-character word inside a longer run; every request goes
to kiwix-serve (the archive's entries and kiwix-serve's own toolbar)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from archiver.capture.browser import launch
from tests.search.test_gwtar_page import SEARCH, _tree

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _content_url(base: str, book: str) -> str | None:
    """The book's content prefix: ``/<book>/`` (kiwix-tools 3.3, Debian 12), ``/content/<book>/``
    (later releases)."""
    for prefix in (f"{base}/{book}/", f"{base}/content/{book}/"):
        try:
            if httpx.get(prefix + SEARCH, timeout=2).status_code == 200:
                return prefix
        except httpx.TransportError:
            return None
    return None


@pytest.fixture(scope="module")
def kiwix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    top = tmp_path_factory.mktemp("kiwix-search")
    tree = _tree(top / "tree")
    book = top / "site.zim"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(tree), "--format", "zim", "-o", str(book)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            ["kiwix-serve", "-i", "127.0.0.1", "-p", str(port), str(book)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base, prefix = f"http://127.0.0.1:{port}", None
        deadline = time.monotonic() + 10
        while prefix is None and time.monotonic() < deadline and proc.poll() is None:
            prefix = _content_url(base, "site")
            if prefix is None:
                time.sleep(0.05)
        if prefix is not None:
            break
        proc.terminate()
        proc.wait()
    else:
        pytest.fail("kiwix-serve did not start")
    try:
        yield prefix
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _open(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    return page, requests


def _done(page: Page) -> str:
    page.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=20_000)
    return page.get_attribute("body", "data-state") or ""


def _origin(url: str) -> str:
    return "/".join(url.split("/")[:3]) + "/"


def test_type_see_click_land_in_kiwix_serve(browser: Browser, kiwix: str) -> None:
    page, requests = _open(browser, kiwix + SEARCH)
    page.locator("#q").press_sequentially("instal")
    assert _done(page) == "done"
    assert page.locator("#results li a").all_inner_texts()[0] == "Installing the kit"
    assert page.locator("#results li mark").first.inner_text().lower().startswith("instal")
    assert page.url == kiwix + SEARCH + "?q=instal"  # bookmarkable
    page.locator("#results li a").first.click()
    page.wait_for_url(kiwix + "docs/install%20guide.html")
    assert page.title() == "Installing the kit"
    page.go_back()
    assert _done(page) == "done"
    assert page.locator("#q").input_value() == "instal"
    assert requests and all(u.startswith(_origin(kiwix)) for u in requests), requests
    page.close()


@pytest.mark.parametrize(("query", "expected"), [("人民", "zh/index.html"), ("天気", "ja/index.html")])
def test_cjk_two_character_word_inside_a_run(browser: Browser, kiwix: str, query: str, expected: str) -> None:
    page, _ = _open(browser, kiwix + SEARCH + "?q=" + query)
    assert _done(page) == "done"
    assert page.locator("#q").input_value() == query
    assert [a.get_attribute("href") for a in page.locator("#results li a").all()] == [f"../../{expected}"]
    assert query in page.locator("#results li mark").all_inner_texts()
    page.locator("#results li a").first.click()
    page.wait_for_url(kiwix + expected)
    page.close()
