"""archiver.gwtar.refs: what a page needs first, found with real parsers."""

from __future__ import annotations

import pytest

from archiver import srcset
from archiver.gwtar import refs


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("a.png", ["a.png"]),
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a%20b.png 1x,hash%231.png 2x", ["a%20b.png", "hash%231.png"]),
        ("a,b.png 100w, c.png 200w", ["a,b.png", "c.png"]),
        ("a.png,, b.png", ["a.png", "b.png"]),
        (
            "data:image/png;base64,AAA= 1x, b.png (max-width: 1px, x) 2x, c.png",
            ["data:image/png;base64,AAA=", "b.png", "c.png"],
        ),
        ("", []),
    ],
)
def test_srcset(value: str, urls: list[str]) -> None:
    assert srcset.urls(value) == urls


def test_css_refs() -> None:
    css = """@import url(a.css); @import "b.css" screen;
    @font-face { font-family: F; src: url("f.woff2") format("woff2"), url(f.woff); }
    @media print { .x { background: url('p.png') } }
    .y { background-image: image-set("y1.png" 1x, "y2.png" 2x); }
    /* url(comment.png) */ .z { content: "url(not.png)"; }"""
    assert [(r.url, r.category) for r in refs.css_refs(css)] == [
        ("a.css", "style"), ("b.css", "style"), ("f.woff2", "font"), ("f.woff", "font"),
        ("p.png", "image"), ("y1.png", "image"), ("y2.png", "image"),
    ]  # fmt: skip


def test_html_refs_in_document_order() -> None:
    html = b"""<!DOCTYPE html><html><head><link rel="icon" href="i.ico">
    <link rel=stylesheet href="s.css"><link rel="preload" as="font" href="f.woff2">
    <script src="j.js"></script>
    <style>body { background: url(bg.png) }</style></head>
    <body style="background: url(&quot;b.png&quot;)"><img src="a&amp;b.png" srcset="x.png 2x">
    <picture><source srcset="p.webp"></picture><video poster="v.jpg"><source src="v.mp4"></video>
    <svg><image href="s.svg"/></svg><a href="page.html">not a ref</a><iframe src="frame.html"></iframe>"""
    assert [(r.url, r.category) for r in refs.html_refs(html)] == [
        ("i.ico", "image"), ("s.css", "style"), ("f.woff2", "font"), ("j.js", "script"), ("bg.png", "image"),
        ("b.png", "image"), ("a&b.png", "image"), ("x.png", "image"), ("p.webp", "image"), ("v.jpg", "image"),
        ("v.mp4", "media"), ("s.svg", "image"), ("frame.html", "other"),
    ]  # fmt: skip


def test_hostile_markup_never_raises() -> None:
    for text in (
        b"<" * 10000,
        b"<style>" + b"{" * 100000,
        b"<img srcset='" + b"(" * 5000,
        b"\xff\xfe<![CDATA[",
    ):
        refs.html_refs(text)
    refs.css_refs("(" * 100000)


@pytest.mark.parametrize(
    ("base", "ref", "want"),
    [
        ("index.html", "_archiver/ex.com/a%20b.png", "_archiver/ex.com/a b.png"),
        ("docs/intro/index.html", "../../_archiver/ex.com/x.css?v=1#f", "_archiver/ex.com/x.css"),
        ("index.html", "hash%231.png", "hash#1.png"),
        ("index.html", "a%252Fb", "a%2Fb"),
        ("docs/index.html", "/img/x.png", "img/x.png"),
        ("index.html", "../x.png", None),
        ("index.html", "https://ex.com/x.png", None),
        ("index.html", "//cdn/x.png", None),
        ("index.html", "data:image/png;base64,AA", None),
        ("index.html", "#top", None),
        ("index.html", "", None),
        ("index.html", "caf%C3%A9%20menu/index.html", "café menu/index.html"),
    ],
)
def test_resolve(base: str, ref: str, want: str | None) -> None:
    assert refs.resolve(base, ref) == want
