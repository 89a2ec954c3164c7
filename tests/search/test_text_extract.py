"""The extraction's walk over Lexbor's nodes (archiver/search/text.py, formats/search.md §2.1): the
blocks ``extract`` gives are those of a plain recursive walk by tag names (the rules as written),
on tag soups hypothesis makes up and on the repository's test pages. The walk itself is iterative,
reads tag ids instead of names and keeps each element's flags on its stack: this is its reference."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver.html_depth import bound_depth
from archiver.search import text
from archiver.search.text import Page, extract

ROOT = Path(__file__).resolve().parents[2]


def _reference(html: bytes) -> Page:
    """§2.1 by tag names, recursively (small pages only: no text or node bound is reached)."""
    tree = LexborHTMLParser(bound_depth(text.decode(html)))
    page = Page()
    title = tree.css_first("title")
    if title is not None:
        page.title = " ".join(title.text(deep=True).split())[:1024]
    body = tree.body
    if body is None:
        return page
    hidden = {n.mem_id for n in body.css("*") if text._hidden_by(n.attributes)}
    parts: list[str] = []

    def flush(heading: bool) -> None:
        block = " ".join("".join(parts).split())
        parts.clear()
        if block:
            page.blocks.append((heading, block))

    def walk(node: LexborNode, heading: bool, sectioned: bool) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag or ""
            if tag == "-text":
                parts.append(child.text_content or "")
                continue
            if (
                tag in text._SKIP
                or tag.startswith("-")
                or child.mem_id in hidden
                or (tag in ("header", "footer") and not sectioned)
            ):
                continue
            block = tag in text._BLOCKS or tag in text._HEADINGS
            if block:
                flush(heading)
            inner = heading or tag in text._HEADINGS
            walk(child, inner, sectioned or tag in text._SECTIONING)
            if block:
                flush(inner)

    walk(body, False, False)
    flush(False)
    return page


_NAMES = [
    "div", "p", "span", "b", "h1", "h3", "H2", "li", "ul", "td", "tr", "table", "br", "hr", "pre",
    "header", "footer", "article", "main", "section", "nav", "aside", "search", "hgroup", "script",
    "style", "template", "svg", "math", "button", "select", "option", "x-custom", "my-h1", "summary",
    "details", "dialog", "title", "noscript", "center", "form", "label", "a", "em",
]  # fmt: skip
_ATTRIBUTES = [
    "", " hidden", ' aria-hidden="true"', ' aria-hidden="false"', ' role="navigation"', " role=main",
    ' style="display: none"', ' style="color:red"', ' style="visibility:hidden"', ' class="x"',
]  # fmt: skip
_soup = st.lists(
    st.one_of(
        st.sampled_from(
            ["word", " two words ", "\n", "日本語", "<!-- c -->", "<", "&amp;", "<!doctype html>"]
        ),
        st.builds(
            lambda name, attrs: f"<{name}{attrs}>", st.sampled_from(_NAMES), st.sampled_from(_ATTRIBUTES)
        ),
        st.builds(lambda name: f"</{name}>", st.sampled_from(_NAMES)),
    ),
    max_size=120,
).map("".join)


@given(_soup)
@settings(max_examples=600, deadline=None)
def test_the_walk_gives_the_blocks_of_the_rules_on_tag_soup(soup: str) -> None:
    html = f"<html><head><title>T {soup[:40]}</title></head><body>{soup}</body></html>".encode()
    assert extract(html) == _reference(html)


def test_the_walk_gives_the_blocks_of_the_rules_on_the_test_pages() -> None:
    pages = sorted(p for p in (ROOT / "testdata").rglob("*") if p.suffix in (".html", ".htm"))
    assert len(pages) > 20
    for path in pages:
        html = path.read_bytes()
        assert extract(html) == _reference(html), path


def test_headings_sections_and_hidden_elements_by_their_tag_ids() -> None:
    html = (
        b"<body><header>site</header><nav>menu</nav><main><header>own <b>head</b></header>"
        b"<h2>Title <em>here</em></h2><search>find</search><p>one<br>two</p>"
        b"<div hidden>gone</div><x-custom>custom</x-custom></main><footer>end</footer></body>"
    )
    assert extract(html).blocks == [
        (False, "own head"),
        (True, "Title here"),
        (False, "find"),
        (False, "one"),
        (False, "two"),
        (False, "custom"),
    ]


def test_a_deep_page_is_walked_without_recursion() -> None:
    html = b"<body>" + b"<div><span>w</span>" * 5000 + b"</div>" * 5000
    assert sys.getrecursionlimit() < 5000
    assert extract(html).blocks == [(False, "w")] * 5000  # each div (a sibling past 512 levels)
