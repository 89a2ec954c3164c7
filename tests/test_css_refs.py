"""archiver.css_refs: references found by tinycss2 tokens: url(), @import, image-set(), nesting, comments."""

from __future__ import annotations

import tinycss2

from archiver.css_refs import references, rewrite_declarations, rewrite_stylesheet
from archiver.fixture import site_root

SITE = site_root()


def _css(name: str) -> str:
    return (SITE / "css" / name).read_text(encoding="utf-8")


def test_theme_sheet_every_reference() -> None:
    refs = [ref for ref, _role in references(_css("theme.css"))]
    assert refs == [
        "../img/bg/paper.png",  # url() in a custom property
        "../img/bg/texture-1x.png",
        "../img/bg/texture-2x.png",  # -webkit-image-set(url() …)
        "../img/bg/texture-1x.png",
        "../img/bg/texture-2x.png",  # image-set("…" 1x, …)
        "../img/bg/texture.avif",
        "../img/bg/texture-1x.png",  # image-set(url("…") type(…))
        "../img/spaced.png",  # URL( … ) upper case, spaces
        "../img/we(ird).png",  # escaped parentheses, decoded
        "../img/bg/hero-wide.png",  # @media inside @supports
        "../img/bg/grid.png",  # @supports inside @media
        "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 8 8'%3E%3Cpath "
        "d='M1 4l2 2 4-4' stroke='green' fill='none'/%3E%3C/svg%3E",
        "data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==",
    ]


def test_type_strings_in_image_set_are_not_urls() -> None:
    refs = [ref for ref, _ in references(_css("theme.css"))]
    assert "image/avif" not in refs and "image/png" not in refs


def test_import_chain_forms_and_roles() -> None:
    assert references(_css("main.css")) == [
        ("base.css", "import"),
        ("components/cards.css", "import"),
        ("print.css", "import"),
        ("../img/bg/paper.png", "url"),
    ]
    assert references(_css("reset.css")) == [
        ("vendor/normalize.css", "import"),
        ("../img/bg/list-bullet.gif", "url"),
    ]
    assert references(_css("cycle-b.css")) == [("cycle-a.css", "import")]


def test_url_inside_a_comment_is_not_a_reference() -> None:
    css = _css("main.css")
    assert "url(/img/commented-out.png)" in css
    assert all("commented-out" not in ref for ref, _ in references(css))
    out = rewrite_stylesheet(css, lambda ref, role: "X-" + ref)
    assert "url(/img/commented-out.png)" in out.text  # the comment is kept as written


def test_font_face_sources() -> None:
    refs = [ref for ref, _ in references(_css("base.css"))]
    assert refs == [
        "reset.css",
        "../fonts/acme-field-sans.woff2",
        "../fonts/acme-field-sans.woff",
        "../fonts/acme-field-sans.ttf",
    ]


def test_rewrite_sets_value_and_representation() -> None:
    css = (
        '@import "a b.css";\n.x { background: url(we\\(ird\\).png) } .y { b: url("q.png") }\n/* url(c.png) */'
    )
    out = rewrite_stylesheet(css, lambda ref, role: f"new/{role}/{ref}")
    assert out.text == (
        '@import "new/import/a b.css";\n.x { background: url(new/url/we\\(ird\\).png) }'
        ' .y { b: url("new/url/q.png") }\n/* url(c.png) */'
    )
    # and the output parses back to the new values
    again = [ref for ref, _ in references(out.text)]
    assert again == ["new/import/a b.css", "new/url/we(ird).png", "new/url/q.png"]


def test_rewrite_nested_at_rules_and_image_set() -> None:
    out = rewrite_stylesheet(
        _css("theme.css"), lambda ref, role: None if ref.startswith("data:") else "L/" + ref
    )
    refs = [ref for ref, _ in references(out.text)]
    assert "L/../img/bg/hero-wide.png" in refs and "L/../img/bg/grid.png" in refs
    assert refs.count("L/../img/bg/texture-1x.png") == 3
    assert any(ref.startswith("data:image/gif") for ref in refs)
    # untouched structure: same token types in the same order
    before = [t.type for t in tinycss2.parse_component_value_list(_css("theme.css"))]
    after = [t.type for t in tinycss2.parse_component_value_list(out.text)]
    assert before == after


def test_nothing_changed_returns_the_text_byte_for_byte() -> None:
    css = _css("theme.css")
    assert rewrite_stylesheet(css, lambda ref, role: None).text == css


def test_style_attribute_declarations() -> None:
    style = "background: url(&quot;x&quot;); background-image:url('/img/inline/tile.png'); height: 48px"
    out = rewrite_declarations(style.replace("&quot;", '"'), lambda ref, role: "T")
    assert out.text == 'background: url("T"); background-image:url("T"); height: 48px'
    assert [r for r, _ in out.refs] == ["x", "/img/inline/tile.png"]


def test_hostile_input_does_not_raise() -> None:
    for css in ["url(", "@import", "@import ;", "a{b:url(\\", "image-set(", "}}}{{{", "\x00", "url(  )"]:
        rewrite_stylesheet(css, lambda ref, role: "x")


def test_absurd_nesting_is_returned_as_it_was_not_an_exception() -> None:
    css = "a{" * 5000 + "background:url(x.png)" + "}" * 5000
    result = rewrite_stylesheet(css, lambda ref, role: "changed")
    assert result.text == css
    assert rewrite_declarations("(" * 5000 + "url(y.png)", lambda ref, role: "z").text.startswith("(((")
