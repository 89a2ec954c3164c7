"""The site's own search box, rewritten to submit to the archive's search page (formats/search.md §9;
archiver/capture/searchbox.py): table-driven vectors (formats/vectors/searchbox.json) for each
generator's markup and the forms that are not search, and properties (idempotent; a page without a
box is byte-identical to the rewrite without the pass)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver.capture import rewrite_html, searchbox
from archiver.capture.policy import Hint
from archiver.fixture import site_root

VECTORS = json.loads((Path(__file__).parents[2] / "formats/vectors/searchbox.json").read_text("utf-8"))
TARGET = searchbox.Target(VECTORS["action"], VECTORS["page_url"])


def _page(body: str) -> str:
    head = '<head><meta charset="utf-8"><title>T</title></head>'
    return f'<!DOCTYPE html><html lang="en">{head}<body>{body}</body></html>'


def _members(doc: LexborHTMLParser, form: LexborNode) -> list[LexborNode]:
    """The inputs whose form owner is ``form`` (inside it, or naming it by their form attribute)."""
    inside = [i for i in form.css("input") if "form" not in i.attributes]
    form_id = form.attributes.get("id")
    named = [i for i in doc.css("input[form]") if form_id and i.attributes.get("form") == form_id]
    return inside + named


def _keep(ref: str, hint: Hint) -> str | None:
    return None


def _run(text: str, search: searchbox.Target | None = TARGET) -> str:
    return rewrite_html.rewrite(rewrite_html.parse(text), _keep, search=search).html


def _hidden(node: LexborNode) -> str | None:
    """What hides ``node`` or an ancestor without scripts (None: nothing)."""
    while node is not None and node.tag not in ("body", "html"):
        attrs = node.attributes
        style = (attrs.get("style") or "").replace(" ", "").lower()
        if "hidden" in attrs or "inert" in attrs or attrs.get("aria-hidden") == "true":
            return f"{node.tag} attribute"
        if "display:none" in style or "visibility:hidden" in style:
            return f"{node.tag} style"
        if "hidden" in (attrs.get("class") or "").split():
            return f"{node.tag} class"
        if node.tag == "dialog" and "open" not in attrs:
            return "closed dialog"
        node = node.parent
    return None


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=[v["name"] for v in VECTORS["vectors"]])
def test_vector(vector: dict) -> None:
    before = _page(vector["html"])
    target = searchbox.Target(TARGET.href, vector.get("page_url", TARGET.page_url))
    out = _run(before, target)
    doc = rewrite_html.parse(out)
    forms = [f for f in doc.css("form") if f.attributes.get("action") == VECTORS["action"]]
    assert len(forms) == len(vector["boxes"]), out
    if not vector["boxes"]:
        assert out == _run(before, None), "a page with no search box must not change"
        return
    for form in forms:
        assert form.attributes.get("method") == "get"
        for gone in ("enctype", "target"):
            assert gone not in form.attributes
        assert not form.css("input[type=hidden]"), "the site's hidden parameters are gone"
        assert not form.css("[formaction], [formmethod]")
        queries = [i for i in _members(doc, form) if i.attributes.get("name") == "q"]
        assert len(queries) == 1, form.html
        box = queries[0]
        assert (box.attributes.get("type") or "text").lower() in ("text", "search")
        assert "disabled" not in box.attributes and "readonly" not in box.attributes
        assert _hidden(box) is None, (_hidden(box), out)
    # the rewrite is idempotent
    assert _run(out, target) == out


def test_names_before_are_the_sites_own() -> None:
    """``name_was`` in the vectors is the input's name as the site wrote it (checks the table)."""
    for vector in VECTORS["vectors"]:
        doc = rewrite_html.parse(_page(vector["html"]))
        names = {i.attributes.get("name") for i in doc.css("input")}
        for box in vector["boxes"]:
            assert box["name_was"] is None or box["name_was"] in names, vector["name"]


def test_unmarked_dialog_and_the_rest_of_the_page_stay() -> None:
    """Only the box's own chain is shown: a closed dialog elsewhere, a hidden element beside it, the
    text and links of the page are as the rewrite without the pass leaves them."""
    body = (
        '<div id="search-wrapper" class="hidden"><form id="searchbar-outer">'
        '<input type="search" id="searchbar" name="searchbar"></form>'
        '<div id="searchresults-outer" class="searchresults-outer hidden"></div></div>'
        '<dialog id="d"><p>x</p></dialog><p hidden>secret</p><a href="a.html">a</a>'
    )
    out = _run(_page(body))
    doc = rewrite_html.parse(out)
    assert "open" not in doc.css_first("#d").attributes
    assert "hidden" in doc.css("p")[1].attributes
    assert doc.css_first("#searchresults-outer").attributes["class"] == "searchresults-outer hidden"
    assert doc.css_first("#search-wrapper").attributes.get("class") is None
    plain = _run(_page(body), None)
    assert out.split("</form>", 1)[1] == plain.split("</form>", 1)[1]


def _site_pages() -> list[Path]:
    return sorted(p for p in site_root().rglob("*.html") if p.is_file())


def test_fixture_pages_without_boxes_are_byte_identical() -> None:
    """Every page of the fixture site (none has a search box) comes out as without the pass."""
    pages = _site_pages()
    assert len(pages) > 20
    for path in pages:
        text = path.read_text("utf-8", errors="replace")
        assert _run(text) == _run(text, None), path


_TAGS = st.sampled_from(["div", "p", "span", "nav", "section", "header", "main", "aside"])
_ATTRS = st.sampled_from(
    [
        "",
        " hidden",
        ' style="display: none"',
        ' class="hidden x"',
        ' role="dialog"',
        ' role="search"',
        ' id="searchbox"',
    ]
)
_LEAVES = st.sampled_from(
    [
        "text",
        '<input type="search" name="query">',
        '<input name="q">',
        '<input type="email" name="q">',
        '<input type="hidden" name="area" value="x">',
        '<form action="search.html"><input name="s"></form>',
        '<form action="https://elsewhere.example/search"><input name="q"></form>',
        '<form class="md-search__form"><input class="md-search__input" name="query">'
        '<button formaction="x">b</button></form>',
        '<button class="DocSearch DocSearch-Button">Search</button>',
        "<rustdoc-search></rustdoc-search>",
        '<a href="x.html">x</a>',
    ]
)


@st.composite
def _bodies(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(_LEAVES)
    tag = draw(_TAGS)
    kids = draw(st.lists(_bodies(depth - 1), max_size=3))
    return f"<{tag}{draw(_ATTRS)}>{''.join(kids)}</{tag}>"


@settings(max_examples=300, deadline=None)
@given(_bodies())
def test_rewrite_is_idempotent_and_every_box_submits_q(body: str) -> None:
    out = _run(_page(body))
    assert _run(out) == out
    doc = rewrite_html.parse(out)
    for form in doc.css("form"):
        if form.attributes.get("action") == TARGET.href:
            boxes = [i for i in _members(doc, form) if i.attributes.get("name") == "q"]
            assert len(boxes) == 1, out
            assert _hidden(boxes[0]) is None, out
