"""archiver.css_refs: references found by tinycss2 tokens: url(), @import, image-set(), nesting, comments."""

from __future__ import annotations

import contextlib

import pytest
import tinycss2
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import css_refs
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
    assert out.text == "background: url(\"T\"); background-image:url('T'); height: 48px"  # quotes kept
    assert [r for r, _ in out.refs] == ["x", "/img/inline/tile.png"]


def test_hostile_input_does_not_raise() -> None:
    for css in ["url(", "@import", "@import ;", "a{b:url(\\", "image-set(", "}}}{{{", "\x00", "url(  )"]:
        rewrite_stylesheet(css, lambda ref, role: "x")


def test_absurd_nesting_is_returned_as_it_was_not_an_exception() -> None:
    css = "a{" * 5000 + "background:url(x.png)" + "}" * 5000
    result = rewrite_stylesheet(css, lambda ref, role: "changed")
    assert result.text == css
    assert rewrite_declarations("(" * 5000 + "url(y.png)", lambda ref, role: "z").text.startswith("(((")


# ---- the cheap pre-check (may_reference): never False where the tokenizer finds a reference


_PIECES = st.sampled_from(
    [
        "url(", "URL(", "u", "r", "l", "src(", "image-set(", "-webkit-image-set(", "@import", "@IMPORT",
        "@", "i", "m", "p", "o", "t", "(", ")", '"a.png"', "'b.css'", "a.png", " ", "\n", "\r\n", "\t",
        "/*", "*/", ";", "{", "}", "\\", "\\75", "\\75 ", "\\000075", "\\55\r\n", "\\72", "\\6c", "\\l",
        "\\69", "\\6d", "\\0", "-", "_", "é", "€", "x", "0", "\\\n", "@\\69mport", "u\\rl(",
    ]
)  # fmt: skip


def _full_references(css: str) -> list[tuple[str, str]]:
    walker = css_refs._Walker(css_refs._keep)
    with contextlib.suppress(RecursionError):
        walker.walk(tinycss2.parse_component_value_list(css, skip_comments=False))
    return [(r.url, r.role) for r in walker.found]


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_may_reference_never_misses_a_reference(css: str) -> None:
    if not css_refs.may_reference(css):
        assert _full_references(css) == []


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2048))
def test_may_reference_on_random_bytes(data: bytes) -> None:
    css = css_refs.decode(data)
    if not css_refs.may_reference(css):
        assert _full_references(css) == []


@pytest.mark.parametrize(
    "css",
    [
        "a{background:url(x.png)}", "a{background:U\\52L(x.png)}", "a{b:\\75\\72\\6c(x.png)}",
        "a{b:\\75\r\nrl(x.png)}", "@import 'a.css';", "@\\69mport 'a.css';", "a{b:src('f.woff')}",
        "a{b:image-set('a.png' 1x)}", "a{b:-webkit-image-set('a.png' 1x)}", "a{b:url(\"x\")}",
    ],
)  # fmt: skip
def test_may_reference_sees_escaped_names(css: str) -> None:
    assert _full_references(css), css
    assert css_refs.may_reference(css)
    assert css_refs.references(css) == _full_references(css)


def test_may_reference_false_on_plain_css() -> None:
    assert not css_refs.may_reference(
        "a{color:red} @media (min-width: 3px) { b { margin: calc(1px + 2px) } }"
    )
    assert css_refs.rewrite_stylesheet("a{color:red}", lambda r, role: "z").text == "a{color:red}"


# ---- rewriting touches only the changed tokens (every other byte as it was)


def test_rewrite_changes_only_the_changed_tokens() -> None:
    css = "/* é */ a{b:url('x.png');c:'q'}\r\n@import 'i.css';\fd{e:url(z.gif)}\rf{g:'k'}"
    out = rewrite_stylesheet(css, lambda ref, role: {"x.png": "y.png", "z.gif": "w w.gif"}.get(ref)).text
    assert out == "/* é */ a{b:url('y.png');c:'q'}\r\n@import 'i.css';\fd{e:url(w\\ w.gif)}\rf{g:'k'}"


_NEWLINE = st.sampled_from(["\n", "\r\n", "\r", "\f", " "])
_REF = st.text(alphabet="abcxyz/._-0123456789é", min_size=1, max_size=12)


@st.composite
def _stylesheets(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 8))):
        ref = draw(_REF)
        form = draw(
            st.sampled_from(
                ["url-bare", "url-spaced", "url-dq", "url-sq", "import-sq", "import-dq", "image-set"]
            )
        )
        parts.append(
            {
                "url-bare": f"a{{b:url({ref})}}",
                "url-spaced": f"a{{b:URL( {ref}\t)}}",
                "url-dq": f'a{{b:url("{ref}")}}',
                "url-sq": f"a{{b:url('{ref}')}}",
                "import-sq": f"@import '{ref}';",
                "import-dq": f'@import url("{ref}");',
                "image-set": f"a{{b:image-set('{ref}' 1x, \"{ref}\" 2x)}}",
            }[form]
        )
        parts.append(draw(st.sampled_from(["", "/* it's */", "p{content:'it\\'s'}", 'q{x:"y"}'])))
        parts.append(draw(_NEWLINE))
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(_stylesheets())
def test_rewrite_there_and_back_gives_the_same_bytes(css: str) -> None:
    there = rewrite_stylesheet(css, lambda ref, role: f"http://h.example/{ref}").text
    assert [r for r, _ in references(there)] == [f"http://h.example/{r}" for r, _ in references(css)]
    back = rewrite_stylesheet(there, lambda ref, role: ref.removeprefix("http://h.example/")).text
    assert back == css


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_may_reference_bytes_never_misses_a_reference(css: str) -> None:
    data = css.encode("utf-8")
    if not css_refs.may_reference_bytes(data):
        assert _full_references(css_refs.decode(data)) == []


@settings(max_examples=1000, deadline=None)
@given(st.binary(max_size=2048))
def test_may_reference_bytes_on_random_bytes(data: bytes) -> None:
    if not css_refs.may_reference_bytes(data):
        assert _full_references(css_refs.decode(data)) == []


@pytest.mark.parametrize(
    "data",
    [
        b"a{b:\\000055 RL(x)}", b"a{b:\\75\r\nrl(x)}", b"@\\69mport 'a';", b"a{b:\\73\\72\\63('f')}",
        b"a{b:-\\77 ebkit-image-set('a.png' 1x)}", "a{b:url('é.png')}".encode("utf-16"),
        b'@charset "utf-8"; a{b:url(x)}', b"\xef\xbb\xbfa{b:url(x)}",
    ],
)  # fmt: skip
def test_may_reference_bytes_sees_escapes_and_encodings(data: bytes) -> None:
    assert _full_references(css_refs.decode(data))
    assert css_refs.may_reference_bytes(data)
