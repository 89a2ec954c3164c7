"""The search page of a gwtar opened from ``file://`` through the picker (formats/search.md §8.2): the
index files are read from the picked file through the loader (never as ``file://`` URLs), the query
lives in the loader's route, a result opens inside the loader; Chinese and Japanese pages are found by
a two-character word inside a longer run; a damaged index member is said, not waited on; no request
leaves the archive (only the gwtar's own ``file:`` URL, ``blob:`` and ``data:``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from archiver import gwtar
from archiver.capture.browser import launch
from archiver.search import store
from tests.search.helpers import html

SEARCH = "_archiver/search/index.html"

PAGES = {
    "index.html": html("Home", "<main><h1>Field notes</h1><p>Start at the guide.</p></main>"),
    "docs/install guide.html": html("Installing the kit", "<h1>Installing</h1><p>Unpack the kit first.</p>"),
    "docs/other.html": html("Other", "<p>Nothing about installation here, only weather.</p>"),
    # a site's own search box as capture rewrites it (formats/search.md §9.2)
    "docs/manual.html": html(
        "Manual",
        '<form method="get" action="../_archiver/search/index.html" role="search">'
        '<input type="search" name="q" aria-label="Search"></form><p>The reference manual.</p>',
    ),
    "zh/index.html": html("中文页面", "<p>中华人民共和国成立于一九四九年。</p>"),
    "ja/index.html": html("日本語のページ", "<p>東京都の天気予報です。明日は晴れ。</p>"),
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _tree(root: Path) -> Path:
    for path, text in PAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    store.write_index(root)
    return root


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("gwtar-search")
    out = top / "site.gwtar.html"
    gwtar.pack(_tree(top / "tree"), out, search_index=True)
    return out


def _open(browser: Browser, archive: Path, route: str = "") -> tuple[Page, list[str]]:
    """The archive opened from disk at ``route``, its file chosen in the picker."""
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(archive.as_uri() + route, wait_until="commit")
    _pick(page, archive)
    return page, requests


def _pick(page: Page, archive: Path) -> None:
    page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
    with page.expect_file_chooser() as chooser:
        page.click("#gwtar-file")
    chooser.value.set_files(str(archive))


def _search_page(page: Page) -> None:
    page.wait_for_function(f"window.gwtar && gwtar.page === {SEARCH!r} && !!document.getElementById('q')")


def _done(page: Page) -> str:
    page.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=60_000)
    return page.get_attribute("body", "data-state") or ""


def _left_the_archive(requests: list[str], archive: Path) -> list[str]:
    own = archive.as_uri()
    return [u for u in requests if u.split("#")[0] != own and not u.startswith(("blob:", "data:"))]


def test_type_see_click_land_inside_the_loader(browser: Browser, packed: Path) -> None:
    page, requests = _open(browser, packed, "#/" + SEARCH)
    _search_page(page)
    page.locator("#q").press_sequentially("instal")  # the last word is a prefix as one types
    # keys further apart than the page's 150 ms pause (a loaded machine) search "ins" first: the
    # answer looked at is the whole word's, which starts once the address holds it
    page.wait_for_function("location.hash.endsWith('?q=instal')")
    assert _done(page) == "done"
    assert page.locator("#results li a").all_inner_texts()[0] == "Installing the kit"
    assert page.locator("#results li mark").first.inner_text().lower().startswith("instal")
    # the query is in the loader's route, the gwtar was not loaded again (no picker)
    assert page.url == packed.as_uri() + "#/" + SEARCH + "?q=instal"
    assert page.evaluate("gwtar.state") != "picker"
    files = page.evaluate("archiverSearchStats.files")
    assert "manifest" in files and "t/0" in files
    link = page.locator("#results li a").first
    assert link.get_attribute("href") == packed.as_uri() + "#/docs/install%20guide.html"
    link.click()
    page.wait_for_function("gwtar.page === 'docs/install guide.html' && gwtar.state === 'ready'")
    assert page.title() == "Installing the kit"
    assert page.url == packed.as_uri() + "#/docs/install%20guide.html"
    page.go_back()  # back to the search page, with its query, still inside the loader
    _search_page(page)
    assert _done(page) == "done"
    assert page.locator("#q").input_value() == "instal"
    assert _left_the_archive(requests, packed) == []
    page.close()


@pytest.mark.parametrize("pause", [False, True], ids=["enter-at-once", "enter-after-typing-results"])
def test_enter_pushes_the_query_without_loading_and_back_restores_the_previous_one(
    browser: Browser, packed: Path, pause: bool
) -> None:
    """Enter at once, or after the typing's own pause has shown the new query's results (as on a
    loaded machine, where Playwright's Enter came late: the typing then replaced the entry of "kit",
    Enter pushed a second "weather" and Back stayed on "weather"): one entry either way, and Back
    returns to "kit"."""
    page, requests = _open(browser, packed, "#/" + SEARCH + "?q=kit")
    _search_page(page)
    assert _done(page) == "done"
    assert page.locator("#q").input_value() == "kit"
    entries = page.evaluate("window.stillHere = true; history.length")
    page.locator("#q").fill("weather")
    if pause:
        page.wait_for_function("document.querySelector('#results li a')?.textContent === 'Other'")
        assert page.url.endswith("#/" + SEARCH + "?q=weather")
    page.locator("#q").press("Enter")
    page.wait_for_function("document.querySelector('#results li a')?.textContent === 'Other'")
    assert page.url.endswith("#/" + SEARCH + "?q=weather")
    assert page.evaluate("history.length") == entries + 1  # one entry pushed
    assert page.evaluate("window.stillHere === true")  # the same document: nothing was loaded again
    page.go_back()
    page.wait_for_function("document.querySelector('#q')?.value === 'kit'")
    assert _done(page) == "done"
    assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
    page.keyboard.press("ArrowDown")  # the keyboard reaches the result; Enter opens it in the loader
    assert page.evaluate("document.activeElement.textContent") == "Installing the kit"
    page.keyboard.press("Enter")
    page.wait_for_function("gwtar.page === 'docs/install guide.html' && gwtar.state === 'ready'")
    assert _left_the_archive(requests, packed) == []
    page.close()


def test_reloading_a_bookmarked_query_asks_for_the_file_then_shows_the_results(
    browser: Browser, packed: Path
) -> None:
    """A page opened from disk cannot read its file again after a reload (the browser keeps no access
    to it): the picker comes back, and once the file is chosen the search page runs the query of the
    address."""
    page, _ = _open(browser, packed, "#/" + SEARCH)
    _search_page(page)
    page.locator("#q").fill("unpack")
    page.locator("#q").press("Enter")
    assert _done(page) == "done"
    bookmarked = page.url
    page.reload(wait_until="commit")
    _pick(page, packed)
    _search_page(page)
    assert _done(page) == "done"
    assert page.url == bookmarked
    assert page.locator("#q").input_value() == "unpack"
    assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
    page.close()


@pytest.mark.parametrize(
    ("query", "expected"), [("人民", "zh/index.html"), ("共和", "zh/index.html"), ("天気", "ja/index.html")]
)
def test_cjk_two_character_word_inside_a_run(
    browser: Browser, packed: Path, query: str, expected: str
) -> None:
    page, requests = _open(browser, packed, "#/" + SEARCH)
    _search_page(page)
    page.locator("#q").fill(query)
    page.locator("#q").press("Enter")
    assert _done(page) == "done"
    hrefs = [a.get_attribute("href") for a in page.locator("#results li a").all()]
    assert hrefs == [f"{packed.as_uri()}#/{expected}"]
    assert query in page.locator("#results li mark").all_inner_texts()
    page.locator("#results li a").first.click()
    page.wait_for_function(f"gwtar.page === {expected!r} && gwtar.state === 'ready'")
    assert _left_the_archive(requests, packed) == []
    page.close()


def _damage_member(archive: Path, path: str) -> None:
    """Change one byte inside a member: its SHA-256 no longer matches the site index's."""
    with gwtar.open(archive) as g:
        member = next(m for m in g.members if m.path == path)
    with open(archive, "r+b") as f:
        f.seek(member.offset + member.size // 2)
        byte = f.read(1)
        f.seek(member.offset + member.size // 2)
        f.write(bytes([byte[0] ^ 0x01]))


def test_a_damaged_index_member_is_said(browser: Browser, packed: Path, tmp_path: Path) -> None:
    damaged = Path(shutil.copy(packed, tmp_path / "damaged.gwtar.html"))
    _damage_member(damaged, "_archiver/search/t/0.js")
    page, requests = _open(browser, damaged, "#/" + SEARCH + "?q=kit")
    _search_page(page)
    assert _done(page) == "damaged"
    status = page.locator("#status").inner_text()
    assert status.startswith("The index is damaged: t/0.js"), status
    assert "SHA-256" in status
    assert _left_the_archive(requests, damaged) == []
    page.close()


def test_the_sites_own_search_box_submits_to_the_search_page_inside_the_loader(
    browser: Browser, packed: Path
) -> None:
    page, requests = _open(browser, packed, "#/docs/manual.html")
    page.wait_for_function("gwtar.page === 'docs/manual.html' && gwtar.state === 'ready'")
    page.locator("input[name=q]").fill("unpack kit")
    page.locator("input[name=q]").press("Enter")
    _search_page(page)
    assert _done(page) == "done"
    assert page.url == packed.as_uri() + "#/" + SEARCH + "?q=unpack+kit"
    assert page.locator("#q").input_value() == "unpack kit"
    assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
    assert page.evaluate("gwtar.state") != "picker"
    assert _left_the_archive(requests, packed) == []
    page.close()


@pytest.mark.parametrize("mode", ["range", "nomulti", "norange"])
def test_the_search_page_inside_the_loader_over_http(browser: Browser, packed: Path, mode: str) -> None:
    """Served by archiver serve (member URLs), by a static server with single ranges only (no member
    URLs: the index files come by Range through the loader), by one that ignores Range."""
    from tests.loader.harness import serve

    with serve(mode, packed) as served:
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(served.url + "#/" + SEARCH + "?q=kit")
        _search_page(page)
        assert _done(page) == "done"
        assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
        page.locator("#q").fill("人民")
        page.locator("#q").press("Enter")
        page.wait_for_function("document.querySelector('#results li a')?.textContent === '中文页面'")
        here = page.url.split("#")[0]  # archiver serve redirects to the mount's own origin
        assert page.url == here + "#/" + SEARCH + "?q=" + quote("人民")
        page.locator("#results li a").first.click()
        page.wait_for_function("gwtar.page === 'zh/index.html' && gwtar.state === 'ready'")
        origins = tuple("/".join(u.split("/")[:3]) + "/" for u in (served.url, here))
        assert [u for u in requests if not u.startswith((*origins, "blob:", "data:"))] == []
        page.close()
