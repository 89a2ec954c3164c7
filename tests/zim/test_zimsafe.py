"""zimcheck-safe serialisation: same DOM, no false alarm, original bytes back on extract."""

from __future__ import annotations

from pathlib import Path

import pytest
from selectolax.lexbor import LexborHTMLParser

from archiver.zim import extract, open, pack, verify
from archiver.zim.source import STORED_EDITS
from archiver.zim.zimsafe import Edit, decode_edits, encode_edits, restore, zimcheck_safe

from .conftest import MakeTree, page, tree_files

SHOWN = b"<p>Write <code>&lt;base href=\"/docs/\"&gt;</code> or <code>&lt;img src='x.png'&gt;</code>.</p>"
EMPTY = b'<a href="">this page</a> <img src=\'\' alt="none"> <a href = "" >spaced</a>'
UNTOUCHED = (
    b"<script>el.innerHTML = ' href=\"x\"'; a.href='';</script>"
    b'<style>/* src="y" */</style><!-- a href="z" -->'
    b'<a title="a href=\'q\'" href="real.html">real</a>'
)


def _dom(data: bytes) -> str | None:
    return LexborHTMLParser(data).html


@pytest.mark.parametrize("body", [SHOWN, EMPTY, SHOWN + EMPTY + UNTOUCHED])
def test_rewrite_keeps_the_dom_and_restores_the_bytes(body: bytes) -> None:
    doc = page("Page", body.decode())
    out, edits = zimcheck_safe(doc)
    assert edits and out != doc
    assert _dom(out) == _dom(doc)
    assert restore(out, edits) == doc
    assert zimcheck_safe(out) == (out, [])  # idempotent: nothing left to rewrite
    shown = out.split(b"<script>")[0].replace(b'href="shown.html"', b"")
    assert b'href="' not in shown and b"src='" not in shown and b'href=""' not in shown


def test_what_is_rewritten_and_what_is_not() -> None:
    out, _ = zimcheck_safe(page("P", (SHOWN + EMPTY + UNTOUCHED).decode()))
    assert b'&lt;base href=&quot;/docs/"&gt;' in out and b"&lt;img src=&#39;x.png'&gt;" in out
    assert b"<a href>this page</a> <img src alt=" in out and b"<a href >spaced</a>" in out
    assert UNTOUCHED.replace(b"a href='q'", b"a href=&#39;q'") in out  # only the attribute value


def test_a_page_without_a_pattern_is_not_touched() -> None:
    doc = page("Plain", '<a href="a.html">a</a><img src="b.png" srcset="c.png 2x">')
    assert zimcheck_safe(doc) == (doc, [])


def test_edits_encode_and_decode() -> None:
    edits = {
        "b.html": [Edit(3, b'=""', b"")],
        "a b.html": [Edit(0, b'"', b"&quot;"), Edit(9, b"'", b"&#39;")],
    }
    assert decode_edits(encode_edits(edits)) == edits
    with pytest.raises(ValueError):
        decode_edits(b'{"path": "a", "edits": [[-1, "x", "y"]]}\n')
    with pytest.raises(ValueError, match="does not match"):
        restore(b"abc", [Edit(1, b'"', b"&quot;")])


def test_pack_extract_and_zim_to_zim_give_the_original_bytes(make_tree: MakeTree, tmp_path: Path) -> None:
    files = {
        "index.html": page("Home", '<a href="shown.html">shown</a>' + EMPTY.decode()),
        "shown.html": page("Shown", SHOWN.decode() + '<a href="index.html">home</a>'),
    }
    tree = make_tree(files)
    first = pack(tree, tmp_path / "a.zim").path
    with open(first) as z:
        assert set(decode_edits(z.get(STORED_EDITS).read())) == {"index.html", "shown.html"}
        assert z.get("shown.html").read() != files["shown.html"]
    assert verify(first).ok
    second = pack(first, tmp_path / "b.zim").path  # ZIM → ZIM: undone, then redone
    for zim, out in ((first, tmp_path / "x1"), (second, tmp_path / "x2")):
        extract(zim, out)
        assert tree_files(out) == tree_files(tree)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<a title="1 > 0" href="">x</a>', '<a title="1 > 0" href>x</a>'),
        ('<img alt=\'<a href="">\' src="a.png">', None),  # '<' inside a value: not a tag
        (
            '<script>s = \'<a href="">\';</script><a href="">y</a>',
            "<script>s = '<a href=\"\">';</script><a href>y</a>",
        ),
        ('<!-- <a href=""> --><p> src="z"</p>', '<!-- <a href=""> --><p> src=&quot;z"</p>'),
        ('<iframe src=""></iframe>', "<iframe src></iframe>"),
        ('<a href=""title="t">z</a>', None),  # no room for the empty-attribute syntax
        ('<a HREF="">z</a>', None),  # zimcheck only sees lowercase
    ],
)
def test_the_tokeniser_knows_where_a_pattern_is(body: str, expected: str | None) -> None:
    doc = page("T", body)
    out, edits = zimcheck_safe(doc)
    assert out == (doc if expected is None else page("T", expected))
    assert _dom(out) == _dom(doc) and restore(out, edits) == doc
