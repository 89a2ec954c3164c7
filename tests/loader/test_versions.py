"""The version picker and the diff view of an ``--all-versions`` gwtar (formats/gwtar.md §13.4), in
Chromium, over ``archiver serve`` and from ``file://`` (the file chosen through the picker): the
newest version shows by default, the picker switches to an earlier version (its own text and its own
stylesheet, read from the blobs), a link inside an earlier version stays in that version, and the
diff page shows the changed text; an archive without versions shows no picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from archiver import gwtar
from archiver.versions import store
from tests.loader.harness import open_gwtar, serve, wait_ready
from tests.versions.helpers import write_tree

IDS = ["20261129T090000Z", "20261130T090000Z", "20261201T090000Z"]
CSS = "_archiver/site.localhost/css/site.css"


def _page(title: str, body: str, css: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title>"
        f"<link rel=stylesheet href='{css}'></head>"
        f"<body><nav>Home</nav><main><h1>{title}</h1>{body}</main></body></html>\n"
    )


def _state(home: str, intro: str, color: str) -> dict[str, str]:
    return {
        "index.html": _page("Home", f"<p>{home}</p><p><a id=intro href='docs/intro.html'>Intro</a></p>", CSS),
        "docs/intro.html": _page("Intro", intro, "../" + CSS),
        CSS: f"body{{color:{color}}}",
    }


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("versions") / "site"
    states = [
        _state("Welcome.", "<p>Step one.</p>", "rgb(17, 17, 17)"),
        _state("Welcome.", "<p>Step one.</p><p>Step two.</p>", "rgb(0, 0, 200)"),
        _state("Welcome back.", "<p>Step one.</p><p>Step two.</p>", "rgb(0, 0, 200)"),
    ]
    for files, when in zip(states, ("2026-11-29", "2026-11-30", "2026-12-01"), strict=True):
        write_tree(root, files, f"{when}T09:00:00Z")
        store.record(root)
    out = root.parent / "site.gwtar.html"
    gwtar.pack(root, out, all_versions=True)
    return out


def _picker(page: Page) -> dict[str, object]:
    page.wait_for_function("document.querySelector('[data-gwtar-versions]')", timeout=20_000)
    return page.evaluate(
        """() => { const r = document.querySelector('[data-gwtar-versions]').shadowRoot,
                          s = r.querySelector('select'), a = r.querySelector('a');
                   return {options: [...s.options].map(o => o.value), value: s.value,
                           changes: a ? a.href : null}; }"""
    )


def _pick(page: Page, vid: str) -> None:
    page.wait_for_function("document.querySelector('[data-gwtar-versions]')", timeout=20_000)
    page.evaluate(
        """v => { const r = document.querySelector('[data-gwtar-versions]').shadowRoot,
                  s = r.querySelector('select'); s.value = v; s.dispatchEvent(new Event('change')); }""",
        vid,
    )


def _text(page: Page) -> str:
    return page.evaluate("document.querySelector('main').textContent")


def _color(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.body).color")


@pytest.mark.parametrize("mode", ["range", "file"])
def test_picker_switches_versions_and_the_diff_shows_the_change(
    browser: Browser, archive: Path, mode: str
) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        with serve(mode, archive) as served:
            open_gwtar(page, served)
            assert "Welcome back." in _text(page) and _color(page) == "rgb(0, 0, 200)"
            picker = _picker(page)
            assert picker["options"] == IDS and picker["value"] == IDS[2]
            _pick(page, IDS[0])
            wait_ready(page, f"@{IDS[0]}/index.html")
            assert "Welcome." in _text(page) and "back" not in _text(page)
            assert _color(page) == "rgb(17, 17, 17)"  # the first version's stylesheet, from its blob
            assert _picker(page)["value"] == IDS[0]
            page.click("#intro")  # a link inside an earlier version stays in it
            wait_ready(page, f"@{IDS[0]}/docs/intro.html")
            assert "Step two." not in _text(page)
            _pick(page, IDS[1])
            wait_ready(page, f"@{IDS[1]}/docs/intro.html")
            assert "Step two." in _text(page)
            changes = _picker(page)["changes"]
            assert isinstance(changes, str) and "diff.html" in changes
            page.evaluate("u => { location.href = u; }", changes)
            wait_ready(page, "_archiver/versions/diff.html")
            page.wait_for_selector("#gwtar-diff[data-done]", state="attached", timeout=20_000)
            rows = page.evaluate(
                "[...document.querySelectorAll('#gwtar-diff div')].map(d => [d.className, d.textContent])"
            )
            assert ["add", "+ Step two."] in rows
            assert ["same", "  Step one."] in rows
            assert not [r for r in rows if r[0] == "del"]
            page.wait_for_function("window.gwtar.archive.index")
            assert page.evaluate("gwtar.archive.versions().then(v => v.list.length)") == 3
            assert page.evaluate("document.querySelector('[data-gwtar-versions]')") is None  # not here
    finally:
        context.close()


def test_no_picker_without_versions(browser: Browser, archive: Path, tmp_path: Path) -> None:
    root = archive.parent / "site"
    plain = tmp_path / "plain.gwtar.html"
    gwtar.pack(root, plain)
    context = browser.new_context()
    page = context.new_page()
    try:
        with serve("range", plain) as served:
            open_gwtar(page, served)
            page.wait_for_function("window.gwtar.archive.index", timeout=20_000)  # read after the render
            assert page.evaluate("gwtar.archive.versions()") is None  # what the picker asks: no table
            assert page.evaluate("document.querySelector('[data-gwtar-versions]')") is None
            assert page.evaluate("window.gwtar.problems.length") == 0
    finally:
        context.close()
