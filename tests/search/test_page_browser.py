"""The tree's search page from ``file://`` in Chromium (formats/search.md §7): a query typed, results
shown with the match marked, a result clicked (and one reached with the keyboard), the page opened;
a Chinese and a Japanese page found by a two-character word inside a longer run; ``?q=`` in the
address; no request outside the tree; a damaged index said, not waited on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from archiver.capture.browser import launch
from archiver.search import store
from tests.search.helpers import html


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("searchpage") / "tree"
    pages = {
        "index.html": html("Home", "<main><h1>Field notes</h1><p>Start at the guide.</p></main>"),
        "docs/install guide.html": html(
            "Installing the kit", "<h1>Installing</h1><p>Unpack the kit first.</p>"
        ),
        "docs/other.html": html("Other", "<p>Nothing about installation here, only weather.</p>"),
        "zh/index.html": html("中文页面", "<p>中华人民共和国成立于一九四九年。</p>"),
        "ja/index.html": html("日本語のページ", "<p>東京都の天気予報です。明日は晴れ。</p>"),
    }
    for path, text in pages.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    store.write_index(root)
    return root


def _open(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url)
    return page, requests


def _done(page: Page) -> str:
    page.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=20_000)
    return page.get_attribute("body", "data-state") or ""


def test_type_see_click_land(browser: Browser, tree: Path) -> None:
    search = tree / "_archiver" / "search" / "index.html"
    page, requests = _open(browser, search.as_uri())
    page.locator("#q").press_sequentially("instal")  # the last word is a prefix as one types
    # typed slowly (a loaded machine) a shorter prefix was searched and done before the last key:
    # wait for the search of the whole word (the address names it once its search has begun)
    # (polled from here: the page's CSP refuses the eval wait_for_function would use)
    deadline = time.monotonic() + 20
    while page.evaluate("new URLSearchParams(location.search).get('q')") != "instal":
        assert time.monotonic() < deadline, page.url
        page.wait_for_timeout(50)
    assert _done(page) == "done"
    titles = page.locator("#results li a").all_inner_texts()
    assert titles[0] == "Installing the kit"
    assert page.locator("#results li mark").first.inner_text().lower().startswith("instal")
    assert "q=instal" in page.url  # bookmarkable
    page.locator("#results li a").first.click()
    page.wait_for_load_state()
    assert page.url == (tree / "docs" / "install guide.html").as_uri()
    root = tree.as_uri() + "/"
    assert requests and all(u.startswith(root) for u in requests), requests
    page.close()


def test_keyboard_and_a_bookmarked_query(browser: Browser, tree: Path) -> None:
    search = tree / "_archiver" / "search" / "index.html"
    page, _ = _open(browser, search.as_uri() + "?q=kit")
    assert _done(page) == "done"
    assert page.locator("#q").input_value() == "kit"
    page.locator("#q").focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.textContent") == "Installing the kit"
    page.keyboard.press("Enter")
    page.wait_for_url((tree / "docs" / "install guide.html").as_uri())
    page.close()


def _until(page: Page, predicate: str, seconds: float = 20) -> None:
    """Poll ``predicate`` from here (the page's CSP refuses the eval that wait_for_function's polling
    uses: it fails as soon as the condition is not true at once, as on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(predicate):
        assert time.monotonic() < deadline, f"{predicate} not true in {seconds:g} s at {page.url}"
        page.wait_for_timeout(25)


@pytest.mark.parametrize("pause", [False, True], ids=["enter-at-once", "enter-after-typing-results"])
def test_back_and_forward_show_each_entrys_query(browser: Browser, tree: Path, pause: bool) -> None:
    """Enter pushes one entry whether or not the typing's pause came first, and Back and Forward show
    the query of the entry they reach (they change only the address: the page follows it)."""
    search = tree / "_archiver" / "search" / "index.html"
    page, _ = _open(browser, search.as_uri() + "?q=kit")
    assert _done(page) == "done"
    entries = page.evaluate("window.stillHere = true; history.length")
    page.locator("#q").fill("weather")
    if pause:
        _until(page, "location.search === '?q=weather'")
    page.locator("#q").press("Enter")
    _until(page, "document.querySelector('#results li a')?.textContent === 'Other'")
    assert page.url.endswith("?q=weather")
    assert page.evaluate("history.length") == entries + 1
    page.go_back()
    _until(page, "document.querySelector('#q').value === 'kit'")
    assert page.url.endswith("?q=kit")
    assert _done(page) == "done"
    assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
    page.go_forward()
    _until(page, "document.querySelector('#results li a')?.textContent === 'Other'")
    assert page.locator("#q").input_value() == "weather"
    assert page.evaluate("window.stillHere === true")  # the same document all along
    page.close()


@pytest.mark.parametrize(
    ("query", "expected"), [("人民", "zh/index.html"), ("共和", "zh/index.html"), ("天気", "ja/index.html")]
)
def test_cjk_two_character_word_inside_a_run(browser: Browser, tree: Path, query: str, expected: str) -> None:
    search = tree / "_archiver" / "search" / "index.html"
    page, _ = _open(browser, search.as_uri())
    page.locator("#q").fill(query)
    page.locator("#q").press("Enter")
    assert _done(page) == "done"
    hrefs = [a.get_attribute("href") for a in page.locator("#results li a").all()]
    assert hrefs == [f"../../{expected}"]
    assert query in page.locator("#results li mark").all_inner_texts()
    page.close()


def _damaged_copy(tree: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(tree, tmp_path / "tree"))


def test_a_missing_shard_is_said(browser: Browser, tree: Path, tmp_path: Path) -> None:
    copy = _damaged_copy(tree, tmp_path)
    for shard in (copy / "_archiver" / "search" / "t").glob("*.js"):
        shard.unlink()
    page, _ = _open(browser, (copy / "_archiver" / "search" / "index.html").as_uri() + "?q=kit")
    assert _done(page) == "damaged"
    assert "The index is damaged: t/0.js" in page.locator("#status").inner_text()
    page.close()


def test_a_changed_shard_is_said(browser: Browser, tree: Path, tmp_path: Path) -> None:
    """A byte changed inside the shard's payload (format 3: its base-64 text, the same size): the
    registered value no longer hashes to the manifest's SHA-256."""
    copy = _damaged_copy(tree, tmp_path)
    shard = copy / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    at = data.index(b',"') + 10  # inside the payload string
    data[at] = ord("A") if data[at] != ord("A") else ord("B")
    shard.write_bytes(bytes(data))
    page, _ = _open(browser, (copy / "_archiver" / "search" / "index.html").as_uri() + "?q=unpack")
    assert page.evaluate("!!(window.crypto && crypto.subtle)")  # file:// is a secure context here
    assert _done(page) == "damaged"
    assert "SHA-256" in page.locator("#status").inner_text()
    page.close()


def test_a_shard_that_never_registers_is_said(browser: Browser, tree: Path, tmp_path: Path) -> None:
    copy = _damaged_copy(tree, tmp_path)
    shard = copy / "_archiver" / "search" / "t" / "0.js"
    shard.write_bytes(b"/* truncated */\n")
    page, _ = _open(browser, (copy / "_archiver" / "search" / "index.html").as_uri() + "?q=kit")
    assert _done(page) == "damaged"
    assert "did not register itself" in page.locator("#status").inner_text()
    page.close()
