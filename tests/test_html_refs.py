"""One definition of "what is a reference" (archiver.html_refs, archiver.css_refs), and the three
consumers held to it: capture's rewrite offers every reference to its ``change``, gwtar lists every
embedded one for the first render, the ZIM link checker checks every one. One document holds every row
of the table; each consumer reads it with its own parser (selectolax, html.parser, lxml)."""

from __future__ import annotations

from collections import Counter

from archiver import css_refs, html_refs
from archiver.capture import rewrite_html
from archiver.gwtar import refs as gwtar_refs
from archiver.zim.links import check_document

# (tag, attribute, use, other attributes the row needs) — the HTML standard's URL attributes. The
# table in archiver.html_refs must be exactly this; each row becomes one element of DOCUMENT.
ROWS: list[tuple[str, str, html_refs.Use, str]] = [
    ("a", "href", "link", ""),
    ("area", "href", "link", ""),
    ("iframe", "src", "frame", ""),
    ("script", "src", "script", ""),
    ("img", "src", "image", ""),
    ("input", "src", "image", "type=image"),
    ("video", "src", "media", ""),
    ("video", "poster", "image", ""),
    ("audio", "src", "media", ""),
    ("source", "src", "media", ""),
    ("track", "src", "other", ""),
    ("embed", "src", "other", ""),
    ("object", "data", "other", ""),
    ("body", "background", "image", ""),
    ("table", "background", "image", ""),
    ("tr", "background", "image", ""),
    ("td", "background", "image", ""),
    ("th", "background", "image", ""),
    ("form", "action", "absolute", ""),
    ("button", "formaction", "absolute", ""),
    ("input", "formaction", "absolute", ""),
    ("blockquote", "cite", "absolute", ""),
    ("q", "cite", "absolute", ""),
    ("del", "cite", "absolute", ""),
    ("ins", "cite", "absolute", ""),
]
FRAME_ROW = ("frame", "src", "frame", "")  # only inside a <frameset>: a document of its own
_SVG_IMAGE_TAGS = ("image", "use", "feImage", "pattern", "linearGradient", "radialGradient", "textPath",
                   "mpath", "filter")  # fmt: skip
SVG_ROWS: list[tuple[str, str, html_refs.Use, str]] = [
    ("a", "xlink:href", "link", ""),
    ("script", "href", "script", ""),
    ("script", "xlink:href", "script", ""),
    *[(tag, attr, "image", "") for tag in _SVG_IMAGE_TAGS for attr in ("href", "xlink:href")],
]
SRCSET_ROWS: list[tuple[str, str, html_refs.Use]] = [
    ("img", "srcset", "image"),
    ("source", "srcset", "image"),
    ("link", "imagesrcset", "image"),
]
# <link rel> (and as=) → use
LINK_ROWS: list[tuple[str, str, html_refs.Use]] = [
    ("stylesheet", "", "style"),
    ("alternate stylesheet", "", "style"),
    ("icon", "", "image"),
    ("shortcut icon", "", "image"),
    ("apple-touch-icon", "", "image"),
    ("apple-touch-icon-precomposed", "", "image"),
    ("mask-icon", "", "image"),
    ("fluid-icon", "", "image"),
    ("image_src", "", "image"),
    ("manifest", "", "other"),
    ("modulepreload", "", "script"),
    ("preload", "style", "style"),
    ("preload", "font", "font"),
    ("preload", "image", "image"),
    ("preload", "script", "script"),
    ("preload", "audio", "media"),
    ("preload", "video", "media"),
    ("preload", "document", "frame"),
    ("preload", "fetch", "other"),
    ("canonical", "", "link"),
    ("alternate", "", "link"),
    ("prefetch", "", "link"),
    ("preconnect", "", "link"),
    ("next", "", "link"),
]
# What capture drops from a script-free copy (a policy, not a different idea of a reference).
CAPTURE_DROPS = {"script", "modulepreload", "preload-script", "preload-audio", "preload-video",
                 "preload-document", "preload-fetch", "prefetch", "preconnect"}  # fmt: skip
HINTS = {"link": "link", "frame": "link", "absolute": "absolute", "style": "stylesheet"}


def _name(tag: str, attr: str) -> str:
    return f"{tag.lower()}-{attr.replace(':', '_')}"


def _link_name(rel: str, as_: str) -> str:
    return "link-" + "-".join(rel.split() + ([as_] if as_ else []))


def _document(prefix: str) -> tuple[str, list[tuple[str, str, str, html_refs.Use]]]:
    """The document with every row, and each row as (url, tag, attribute, use); ``prefix`` starts
    every URL (a relative folder, or an absolute origin)."""
    rows: list[tuple[str, str, str, html_refs.Use]] = []

    def url(tag: str, attr: str, use: html_refs.Use, name: str | None = None) -> str:
        u = f"{prefix}{name or _name(tag, attr)}.x"
        rows.append((u, tag.lower(), attr, use))
        return u

    def el(tag: str, attr: str, use: html_refs.Use, extra: str, inner: str = "") -> str:
        return f'<{tag} {extra} {attr}="{url(tag, attr, use)}">{inner}</{tag}>'

    by = {(t, a): (u, x) for t, a, u, x in ROWS}
    parts = ["<!DOCTYPE html><html><head><title>t</title>"]
    for rel, as_, use in LINK_ROWS:
        name = _link_name(rel, as_)
        parts.append(f'<link rel="{rel}" as="{as_}" href="{url("link", "href", use, name)}">')
    parts.append(f'<link rel="preload" as="image" imagesrcset="{url("link", "imagesrcset", "image")} 2x">')
    parts.append(f'</head><body background="{url("body", "background", "image")}">')
    for (tag, attr), (use, extra) in by.items():
        if tag in ("body", "table", "tr", "td", "th", "video", "audio", "source", "track", "area"):
            continue
        void = tag in ("img", "input", "embed")
        parts.append(
            el(tag, attr, use, extra) if not void else f'<{tag} {extra} {attr}="{url(tag, attr, use)}">'
        )
    parts.append(f"<map name=m>{el('area', 'href', 'link', '')}</map>")
    parts.append(f'<img srcset="{url("img", "srcset", "image")} 2x">')
    parts.append(f'<picture><source srcset="{url("source", "srcset", "image")} 1x"></picture>')
    parts.append(
        f'<video src="{url("video", "src", "media")}" poster="{url("video", "poster", "image")}">'
        f'<source src="{url("source", "src", "media")}"><track src="{url("track", "src", "other")}"></video>'
    )
    parts.append(el("audio", "src", "media", ""))
    parts.append(
        f'<table background="{url("table", "background", "image")}">'
        f'<tr background="{url("tr", "background", "image")}">'
        f'<th background="{url("th", "background", "image")}">h</th>'
        f'<td background="{url("td", "background", "image")}">d</td></tr></table>'
    )
    parts.append("<svg>")
    for tag, attr, use, extra in SVG_ROWS:
        parts.append(el(tag, attr, use, extra))
    parts.append("</svg></body></html>")
    return "".join(parts), rows


def _frameset(prefix: str) -> tuple[str, list[tuple[str, str, str, html_refs.Use]]]:
    u = f"{prefix}frame-src.x"
    return f'<html><frameset><frame src="{u}"></frameset></html>', [(u, "frame", "src", "frame")]


def _both(prefix: str) -> list[tuple[str, list[tuple[str, str, str, html_refs.Use]]]]:
    return [_document(prefix), _frameset(prefix)]


def _capture(text: str) -> tuple[list[tuple[str, str]], str]:
    """Every (reference, hint) capture's rewrite offers to its ``change``, and the rewritten page."""
    offered: list[tuple[str, str]] = []

    def change(ref: str, hint: str) -> None:
        offered.append((ref, hint))

    return offered, rewrite_html.rewrite(rewrite_html.parse(text), change).html


def _dropped_by_capture(url: str) -> bool:
    name = url.rsplit("/", 1)[-1].removesuffix(".x")
    return name.removeprefix("link-") in CAPTURE_DROPS or name.startswith("script-")


def test_the_table_is_these_rows() -> None:
    want = {(t.lower(), a): u for t, a, u, _ in [*ROWS, FRAME_ROW, *SVG_ROWS]}
    assert want == html_refs.URL_ATTRIBUTES
    assert {(t, a): u for t, a, u in SRCSET_ROWS} == html_refs.SRCSET_ATTRIBUTES
    for rel, as_, use in LINK_ROWS:
        assert html_refs.link_use(rel, as_) == use, (rel, as_)


def test_every_row_is_in_the_document() -> None:
    _, rows = _document("r/")
    seen = {(tag, attr) for _, tag, attr, _ in rows}
    table = {(t.lower(), a) for t, a, _, _ in [*ROWS, *SVG_ROWS]} | {(t, a) for t, a, _ in SRCSET_ROWS}
    assert table | {("link", "href")} == seen


def test_capture_offers_every_reference_with_its_hint() -> None:
    for text, rows in _both("r/"):
        offered, out = _capture(text)
        kept = [(u, HINTS.get(use, "embed")) for u, _, _, use in rows if not _dropped_by_capture(u)]
        assert Counter(offered) == Counter(kept)
        for u, *_ in rows:
            if _dropped_by_capture(u):
                assert u not in out, u  # the element is gone from the script-free copy


def test_gwtar_lists_every_embedded_reference() -> None:
    for text, rows in _both("r/"):
        got = [(r.url, r.category) for r in gwtar_refs.html_refs(text)]
        want = [(u, "other" if use == "frame" else use) for u, _, _, use in rows if use in html_refs.EMBEDDED]
        assert Counter(got) == Counter(want)


def test_zim_reports_every_missing_target() -> None:
    for text, rows in _both("r/"):
        checked, problems = check_document("index.html", text.encode(), "text/html", lambda path: False)
        got = Counter((p.ref, p.where) for p in problems)
        want = Counter((u, f"<{tag} {attr}>") for u, tag, attr, use in rows if use != "absolute")
        assert got == want
        assert all("is not in the archive" in p.message for p in problems)
        assert checked == sum(want.values())


def test_zim_reports_every_external_embedded_reference() -> None:
    for text, rows in _both("https://ex.com/"):
        _, problems = check_document("index.html", text.encode(), "text/html", lambda path: False)
        got = Counter((p.ref, p.where) for p in problems)
        want = Counter((u, f"<{tag} {attr}>") for u, tag, attr, use in rows if use in html_refs.EMBEDDED)
        assert got == want


# Not references by the HTML standard: no consumer may read them.
NOT_REFERENCES = (
    '<html><body><input type=text src="r/no-1.x"><input src="r/no-2.x"><audio poster="r/no-3.x"></audio>'
    '<div background="r/no-4.x" data="r/no-5.x"></div><img data-src-x="r/no-6.x"><p cite="r/no-7.x">p</p>'
    '<link rel="silicon" href="r/no-8.x"><object src="r/no-9.x"></object></body></html>'
)


def test_no_consumer_reads_what_is_not_a_reference() -> None:
    offered, _ = _capture(NOT_REFERENCES)
    assert offered == [("r/no-8.x", "link")]  # a <link> whose rel embeds nothing: navigation
    assert gwtar_refs.html_refs(NOT_REFERENCES) == []
    _, problems = check_document("index.html", NOT_REFERENCES.encode(), "text/html", lambda path: False)
    assert [p.ref for p in problems] == ["r/no-8.x"]  # a navigation <link>: checked, not needed


CSS = """@namespace svg url(http://www.w3.org/2000/svg);
@import url(i1.css) screen; @import "i2.css";
@font-face { font-family: F; src: url("f1.woff2") format("woff2"), url(f2.woff); }
@media print { @font-face { font-family: G; src: local(G), url(f3.woff) } .a { background: url('a.png') } }
.b { background-image: image-set("b1.png" 1x, url(b2.png) 2x); } /* url(comment.png) */
.c { mask: -webkit-image-set("c.png" 1x); content: "url(not.png)" } .d { background: src("d.png") }"""
CSS_WANT = [
    ("i1.css", "import", False), ("i2.css", "import", False), ("f1.woff2", "url", True),
    ("f2.woff", "url", True), ("f3.woff", "url", True), ("a.png", "url", False), ("b1.png", "url", False),
    ("b2.png", "url", False), ("c.png", "url", False), ("d.png", "url", False),
]  # fmt: skip


def test_one_css_walker_for_all_three() -> None:
    found = [(r.url, r.role, r.font_face) for r in css_refs.references_detailed(CSS)]
    assert found == CSS_WANT
    categories = {"import": "style"}
    assert [(r.url, r.category) for r in gwtar_refs.css_refs(CSS)] == [
        (u, categories.get(role, "font" if font else "image")) for u, role, font in CSS_WANT
    ]
    _, problems = check_document("s.css", CSS.encode(), "text/css", lambda path: False)
    assert sorted(p.ref for p in problems) == sorted(u for u, _, _ in CSS_WANT)
    offered, _ = _capture(f"<html><head><style>{CSS}</style></head><body></body></html>")
    assert offered == [(u, "stylesheet" if role == "import" else "embed") for u, role, _ in CSS_WANT]


def test_meta_refresh_is_read_the_same_way() -> None:
    for content, want in [
        ("0; url=n1.html", "n1.html"),
        ("0;URL='n2.html'", "n2.html"),
        ("5, n3.html", "n3.html"),
    ]:
        text = f'<html><head><meta http-equiv="refresh" content="{content}"></head></html>'
        offered, _ = _capture(text)
        _, problems = check_document("index.html", text.encode(), "text/html", lambda path: False)
        assert offered == [(want, "link")], content
        assert [p.ref for p in problems] == [want], content
