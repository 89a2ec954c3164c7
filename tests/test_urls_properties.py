"""Hypothesis properties of the mapping core (tree.md §7). The "ci" profile in conftest.py runs each
property with at least 1,000 examples, derandomized."""

from __future__ import annotations

import posixpath
from urllib.parse import quote, unquote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from archiver import urls
from archiver.errors import URLError

HOME = "https://ex.com/"

_seg_chars = st.characters(codec="utf-8", exclude_characters="/\\?#\t\n\r", exclude_categories=("Cs",))
# what local_path can put in a name: no separator, no control character (those stay %XX-escaped)
_name_chars = st.characters(codec="utf-8", exclude_characters="/", exclude_categories=("Cs", "Cc"))
segments = st.one_of(
    st.text(_seg_chars, min_size=0, max_size=12),
    st.sampled_from(
        [".", "..", "%2e%2E", "index.html", "a.html", "_archiver", "%2F", "%25", "cdn.io", "x__q-1"]
    ),
)
hosts = st.sampled_from(
    ["ex.com", "EX.com", "sub.ex.com", "cdn.io", "127.0.0.1", "[::1]", "b\u00fccher.example", "localhost"]
)
ports = st.sampled_from(["", ":80", ":443", ":8080"])
queries = st.one_of(
    st.none(),
    st.lists(
        st.tuples(st.sampled_from(["q", "utm_source", "ref", "page", "a b", "\u00e9"]), st.text(max_size=6)),
        max_size=4,
    ).map(lambda kv: "&".join(f"{k}={v}" for k, v in kv)),
)


@st.composite
def url_strings(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTPS"]))
    path = "/".join(quote(s, safe="%.") if draw(st.booleans()) else s for s in draw(st.lists(segments)))
    url = f"{scheme}://{draw(hosts)}{draw(ports)}/{path}"
    query = draw(queries)
    if query is not None:
        url += "?" + query.replace("#", "%23")
    if draw(st.booleans()):
        url += "#" + draw(st.sampled_from(["top", "!/route", "/r/1", ""]))
    return url


def _canonical(text: str) -> str:
    try:
        return urls.canonicalize(text)
    except URLError:
        assume(False)
        raise


@given(url_strings())
def test_canonicalize_is_idempotent(text: str) -> None:
    once = _canonical(text)
    assert urls.canonicalize(once) == once
    key = urls.dedup_key(once)
    assert urls.dedup_key(key) == key
    assert urls.canonicalize(key) == key


@given(url_strings(), st.sampled_from(["", ".png", ".PNG", ".tar.gz", ".%50ng", ".", ".css", ".Html", "%2E"]))
def test_a_keys_extension_read_from_its_text_is_the_parsed_one(text: str, extension: str) -> None:
    """urls.key_ext reads a canonical URL's extension from its text; it must be what urls.ext parses
    (and key_kind what guess_kind says), for keys with and without queries and route fragments."""
    head, sep, tail = text.partition("?") if "?" in text else text.partition("#")
    for url in (text, head + extension + sep + tail):
        key = urls.dedup_key(_canonical(url))
        assert urls.key_ext(key) == urls.ext(key)
        assert urls.key_kind(key) == urls.guess_kind(key)


@given(url_strings(), st.sampled_from(["page", "asset"]))
def test_local_path_is_safe_and_deterministic(text: str, kind: str) -> None:
    url = _canonical(text)
    path = urls.local_path(url, kind=kind, home=HOME)  # type: ignore[arg-type]
    assert path == urls.local_path(url, kind=kind, home=HOME)  # type: ignore[arg-type]
    parts = path.split("/")
    assert "" not in parts, "no empty segment, no leading or trailing slash"
    assert "." not in parts and ".." not in parts
    assert "\x00" not in path
    assert posixpath.normpath(path) == path, "never escapes the root"
    if kind == "page":
        assert parts[0].lower() != urls.RESERVED_DIR, "pages never land in the reserved folder"
        assert parts[-1].lower().endswith((".html", ".htm"))
    else:
        assert parts[0] == urls.RESERVED_DIR
        assert parts[1] not in urls.RESERVED_NAMES


@given(
    st.lists(segments, max_size=4),
    st.sampled_from(["page", "asset"]),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_different_queries_never_share_a_path(segs: list[str], kind: str, q1: str, q2: str) -> None:
    base = "https://ex.com/" + "/".join(quote(s) for s in segs)
    u1 = _canonical(base + "?" + quote(q1, safe="=&"))
    u2 = _canonical(base + "?" + quote(q2, safe="=&"))
    assume(urls.dedup_key(u1) != urls.dedup_key(u2))
    assume(u1.split("?")[0] == u2.split("?")[0])
    p1 = urls.local_path(u1, kind=kind, home=HOME)  # type: ignore[arg-type]
    p2 = urls.local_path(u2, kind=kind, home=HOME)  # type: ignore[arg-type]
    assert p1 != p2


tree_paths = st.one_of(
    st.builds(
        lambda u, k: urls.local_path(u, kind=k, home=HOME),
        url_strings()
        .filter(lambda t: urls.ref_action(t) == "fetch")
        .map(lambda t: urls.canonicalize(t) if _ok(t) else HOME),
        st.sampled_from(["page", "asset"]),
    ),
    st.lists(
        st.text(_name_chars, min_size=1, max_size=8).filter(lambda s: s not in (".", "..")),
        min_size=1,
        max_size=5,
    ).map("/".join),
)


def _ok(text: str) -> bool:
    try:
        urls.canonicalize(text)
        return True
    except URLError:
        return False


@given(tree_paths, tree_paths)
def test_rel_round_trips(src: str, dst: str) -> None:
    href = urls.rel(src, dst)
    assert urls.ref_action(href) == "fetch", "an href never reads as a scheme or a fragment"
    assert "?" not in href and "#" not in href and " " not in href
    assert href.isascii()
    assert posixpath.normpath(posixpath.join(posixpath.dirname(src), unquote(href))) == dst


@given(st.text(max_size=300), st.one_of(st.none(), st.just(HOME), st.text(max_size=50)))
def test_bad_input_raises_only_url_error(text: str, base: str | None) -> None:
    for call in (
        lambda: urls.canonicalize(text, base),
        lambda: urls.parse_seed(text),
        lambda: urls.dedup_key(text),
        lambda: urls.local_path(text, kind="page", home=HOME),
        lambda: urls.same_site(HOME, text, subdomains=True),
        lambda: urls.ext(text),
    ):
        try:
            result = call()
        except URLError as e:
            assert str(e) and "\n" not in str(e)
        else:
            assert isinstance(result, str | bool)


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=40))
def test_bad_input_with_url_shapes(tail: str) -> None:
    for text in (f"http://{tail}", f"https://ex.com:{tail}/", f"http://[{tail}]/", f"https://ex.com/{tail}"):
        try:
            result = urls.canonicalize(text)
        except URLError as e:
            assert "\n" not in str(e)
        else:
            assert result.startswith(("http://", "https://")) and urls.canonicalize(result) == result


def _whole_parse_host(text: str) -> str | tuple[str, str]:
    """host_of as it was before its origin cache: the whole URL parsed (or the error it gives)."""
    from archiver.urls.canonical import _canonical

    try:
        return _canonical(text, None).netloc
    except URLError as e:
        return ("error", str(e))


def _host_of(text: str) -> str | tuple[str, str]:
    try:
        return urls.host_of(text)
    except URLError as e:
        return ("error", str(e))


_url_noise = st.text(alphabet=st.sampled_from(list("aB/\\?#@:%.\t\n \x00\x7f\u00e9[]1")), max_size=20)


@given(
    st.one_of(
        url_strings(),
        st.builds(
            lambda s, h, p, t: f"{s}://{h}{p}{t}",
            st.sampled_from(["http", "HTTPS", "ftp", "h"]),
            hosts | _url_noise,
            ports,
            _url_noise,
        ),
        st.text(max_size=40),
    )
)
def test_host_of_reads_the_origin_as_the_whole_parse_does(text: str) -> None:
    """host_of reads a plain URL's ``scheme://authority`` alone (cached by it): the same host, or the
    same error, as parsing the whole URL, for any text (paths with controls, backslashes, spaces,
    userinfo, ports, odd schemes)."""
    assert _host_of(text) == _whole_parse_host(text)


_labels = st.sampled_from(
    ["index", "html", "site", "css", "png", "com", "co", "uk", "zip", "app", "ck", "www", "city",
     "kawasaki", "jp", "github", "io", "xn--p1ai", "рф", "Com", "ZIP", "例え", "テスト", ""]
)  # fmt: skip


@given(st.lists(_labels, min_size=1, max_size=4).map(".".join))
def test_a_public_suffix_is_found_as_the_whole_list_finds_it(name: str) -> None:
    """has_public_suffix reads only the rules' last labels before it builds the list (a tenth of a
    second or more at every capture's start, for names like ``site.css``): the same answer."""
    from archiver.urls.domains import _psl, has_public_suffix

    assert has_public_suffix(name) == (_psl().publicsuffix(name.lower(), accept_unknown=False) is not None)


_relative_refs = st.one_of(
    url_strings(),
    st.sampled_from(["a.html", "../b/c.png", "/root.css", "//cdn.io/x.js", "?q=1&utm_source=x", "#top", ""]),
    st.text(_seg_chars, max_size=12),
)


@given(_relative_refs, url_strings(), st.sampled_from([urls.DEFAULT_HYGIENE, urls.NO_HYGIENE]))
def test_canonical_and_key_is_canonicalize_then_dedup_key(ref: str, base: str, hygiene: urls.Hygiene) -> None:
    """The pair the capture's scope resolves every new reference to, with the URL parsed once, is the
    two calls' (the dedup key of the canonical URL, which canonicalizes it again)."""
    try:
        canonical = urls.canonicalize(ref, base)
    except URLError:
        with pytest.raises(URLError):
            urls.canonical_and_key(ref, base, hygiene)
        return
    assert urls.canonical_and_key(ref, base, hygiene) == (canonical, urls.dedup_key(canonical, hygiene))


# ---- the shortcuts of the URL core (each gives what the step-by-step way gives)

_ascii_texts = st.text(alphabet=st.characters(codec="ascii"), max_size=30)


@given(st.one_of(_ascii_texts, st.text(_seg_chars, max_size=20)), st.sampled_from(["path", "query"]))
def test_escape_of_safe_text_is_the_byte_by_byte_escape(text: str, which: str) -> None:
    from archiver.urls.percent import _PATH_SAFE, _QUERY_SAFE, _escape, _escape_each

    safe = _PATH_SAFE if which == "path" else _QUERY_SAFE
    assert _escape(text, safe) == _escape_each(text, safe)
    plain = "".join(c for c in text if c.isascii() and ord(c) in safe)  # all safe: the shortcut
    assert _escape(plain, safe) == _escape_each(plain, safe) == plain


@given(url_strings())
def test_a_segment_without_escapes_decodes_as_the_character_by_character_way(text: str) -> None:
    from archiver.urls.percent import _decode_each, _decode_segment

    for seg in _canonical(text).split("/")[3:]:
        assert _decode_segment(seg) == _decode_each(seg)


@given(url_strings(), st.one_of(st.none(), st.just(HOME), url_strings()))
def test_a_canonical_url_read_again_is_parsed_into_the_same_parts(text: str, base: str | None) -> None:
    """The memo of canonical URLs (canonical._PARSED) answers a canonical URL's text with the parts
    the parse gave it; reading that text afresh gives the same parts."""
    from archiver.urls.canonical import _PARSED, _canonical, _resolve

    try:
        url = _resolve.__wrapped__(text, base)
    except URLError:
        return
    assert _resolve.__wrapped__(str(url), None) == url
    _canonical(text, base)
    assert _canonical(str(url), None) == url
    assert _PARSED.get(str(url)) in (None, url)


def test_a_last_label_found_in_the_bytes_is_the_one_found_in_the_text() -> None:
    """Every ASCII word of the bundled list (and a few tree-path extensions): whether a rule ends in
    it, searched in the file's bytes, is what the lower-cased text says."""
    from archiver.urls.domains import _is_last_label, _is_last_label_in_text, _rules_bytes, _rules_text

    assert _rules_bytes() is not None  # the bundled file is searched as bytes
    text = _rules_text()
    words = {w for w in text.replace("\n", " ").replace(".", " ").replace("!", " ").split() if w.isascii()}
    words |= {"html", "htm", "css", "png", "js", "json", "com", "io", "k", "uk", "xn--p1ai", "zz"}
    for word in sorted(words):
        assert _is_last_label.__wrapped__(word) == _is_last_label_in_text(word), word
