"""The site's own search box as a reader meets it (formats/search.md §9): a site whose pages carry
Sphinx-, MkDocs-Material-, mdBook- and rustdoc-like search boxes is captured with rendering; the
capture ships the search page (``_archiver/search/``); a captured page opened from ``file://``, a
word typed in its own box and Enter pressed shows the archive's search page with results, and the
result clicked opens the page. A WARC import of the same pages gets the same rewrite and index; a
gwtar and a ZIM packed from the tree keep the rewritten forms, pointing at the search page's
member path. The pages are written here (our own markup after the generators' patterns)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest
from playwright.sync_api import Browser, sync_playwright
from selectolax.lexbor import LexborHTMLParser

from archiver.capture import capture
from archiver.capture.browser import launch
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.search.store import INDEX_DIR
from tests.warc.test_warc import run

pytestmark = pytest.mark.browser

SEARCH_PAGE = f"{INDEX_DIR}/index.html"
_NAV = '<nav><a href="/index.html">Home</a> <a href="/animals/quokka.html">Quokka</a></nav>'


def _page(title: str, body: str, script: str = "") -> str:
    tail = f"<script>{script}</script>" if script else ""
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body>{body}{_NAV}{tail}</body></html>"
    )


#: Our pages, each with one generator's search box as its rendered DOM has it.
PAGES = {
    "index.html": _page(
        "Field guide",
        "<h1>Field guide</h1><p>Animals of the coast.</p>"
        '<a href="sphinx/intro.html">Sphinx</a> <a href="material/index.html">Material</a> '
        '<a href="book/chapter_1.html">Book</a> <a href="rustdoc/guide/index.html">Rustdoc</a>',
    ),
    "animals/quokka.html": _page(
        "The quokka", "<main><h1>The quokka</h1><p>A small marsupial of Rottnest island.</p></main>"
    ),
    # Sphinx (older basic theme): the box hidden until a script shows it; the script did not run.
    "sphinx/intro.html": _page(
        "Sphinx intro",
        '<div role="main"><h1>Intro</h1><p>Written with Sphinx.</p></div>'
        '<div id="searchbox" style="display: none"><h3>Quick search</h3>'
        '<form class="search" action="search.html" method="get"><input type="text" name="q">'
        '<input type="submit" value="Go"><input type="hidden" name="check_keywords" value="yes">'
        '<input type="hidden" name="area" value="default"></form></div>',
    ),
    # MkDocs Material: the form in the header's search dialog, no action, the field named query.
    "material/index.html": _page(
        "Material home",
        '<header><div class="md-search" data-md-component="search" role="dialog">'
        '<div class="md-search__inner" role="search"><form class="md-search__form" name="search">'
        '<input type="text" class="md-search__input" name="query" aria-label="Search" required>'
        "</form></div></div></header><article><h1>Material</h1><p>Written with MkDocs.</p></article>",
    ),
    # mdBook 0.4: the search bar's wrapper hidden by its class until the toggle is clicked.
    "book/chapter_1.html": _page(
        "Chapter 1",
        '<div id="search-wrapper" class="hidden"><form id="searchbar-outer" class="searchbar-outer">'
        '<input type="search" id="searchbar" name="searchbar" placeholder="Search this book ...">'
        "</form></div><main><h1>Chapter 1</h1><p>Written with mdBook.</p></main>",
    ),
    # rustdoc: an empty <rustdoc-search> that the page's script fills (the capture renders it).
    "rustdoc/guide/index.html": _page(
        "Crate guide",
        "<rustdoc-search></rustdoc-search><section><h1>Crate guide</h1><p>Written by rustdoc.</p></section>",
        script="document.querySelector('rustdoc-search').innerHTML = '<nav class=\"sub\"><form class="
        '"search-form"><input class="search-input" name="search" type="search" disabled '
        'placeholder="Type S or / to search"></form></nav>\';',
    ),
}
BOXES = [p for p in PAGES if p not in ("index.html", "animals/quokka.html")]


@dataclass
class Site:
    tree: Path
    imported: Path
    folder: Path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("searchbox")
    root = folder / "site"
    for path, text in PAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    tree = folder / "tree"
    with FixtureServer(FixtureConfig(root=root)) as server:
        report = capture([server.url], tree, render=True, depth=5, delay=0, tabs=2, progress=False, warc=True)
    assert report.complete
    warcs = sorted((tree / "_archiver" / "warc").glob("*.warc*"))
    assert warcs
    r = run("capture", "--from-warc", *warcs, "-o", folder / "imported", "--depth", "5", "--json")
    assert r.returncode == 0, r.stderr
    yield Site(tree, folder / "imported", folder)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _boxes(text: str, page: str) -> list[tuple[str, str]]:
    """(the tree path its action leads to, the name of its text field) for each search form."""
    doc = LexborHTMLParser(text)
    out = []
    for form in doc.css("form"):
        action = form.attributes.get("action") or ""
        if "_archiver/search" not in action:
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(action)))
        form_id = form.attributes.get("id")
        fields = [i for i in form.css("input") if "form" not in i.attributes]
        fields += [i for i in doc.css("input[form]") if form_id and i.attributes.get("form") == form_id]
        names = [i.attributes.get("name") or "" for i in fields if i.attributes.get("name")]
        out.append((target, ",".join(names)))
    return out


@pytest.mark.parametrize("page", BOXES)
def test_capture_and_import_rewrite_the_box_and_ship_the_search_page(site: Site, page: str) -> None:
    for tree in (site.tree, site.imported):
        assert (tree / INDEX_DIR / "manifest.js").is_file(), tree
        assert (tree / SEARCH_PAGE).is_file()
        text = (tree / page).read_text("utf-8")
        assert _boxes(text, page) == [(SEARCH_PAGE, "q")], (tree, text)
        assert "check_keywords" not in text


@pytest.mark.parametrize("page", BOXES)
def test_type_in_the_sites_own_box_see_results_click_land(site: Site, browser: Browser, page: str) -> None:
    tab = browser.new_page()
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    tab.goto((site.tree / page).as_uri())
    box = tab.locator("input[name=q]")
    assert box.count() == 1
    box.click()  # visible and enabled without any script: a hidden or disabled box fails here
    box.press_sequentially("quokka")
    box.press("Enter")
    tab.wait_for_url(re.compile(r".*/_archiver/search/index\.html\?q=quokka$"))
    tab.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=20_000)
    assert tab.get_attribute("body", "data-state") == "done"
    titles = tab.locator("#results li a").all_inner_texts()
    assert titles and titles[0] == "The quokka", titles
    tab.locator("#results li a").first.click()
    tab.wait_for_load_state()
    assert tab.url == (site.tree / "animals" / "quokka.html").as_uri()
    root = site.tree.as_uri() + "/"
    assert requests and all(u.startswith(root) for u in requests), requests
    tab.close()


def test_gwtar_and_zim_keep_the_rewritten_forms(site: Site) -> None:
    from libzim.reader import Archive

    gwtar = site.folder / "site.gwtar.html"
    zim = site.folder / "site.zim"
    for fmt, out in (("gwtar", gwtar), ("zim", zim)):
        r = run("pack", site.tree, "--format", fmt, "-o", out)
        assert r.returncode == 0, r.stderr
    extracted = site.folder / "from-gwtar"
    r = run("extract", gwtar, "-o", extracted)
    assert r.returncode == 0, r.stderr
    archive = Archive(str(zim))
    for page in BOXES:
        from_gwtar = (extracted / page).read_text("utf-8")
        from_zim = bytes(archive.get_entry_by_path(page).get_item().content).decode("utf-8")
        for text in (from_gwtar, from_zim):
            assert _boxes(text, page) == [(SEARCH_PAGE, "q")]
