"""The one reference decision, scope rules, priorities and redaction."""

from __future__ import annotations

import pytest

from archiver.capture.policy import Scope, redact

HOME = "https://ex.com/"
BASE = "https://ex.com/docs/intro"
SCOPE = Scope(home=HOME, seeds=(HOME,), max_depth=3)

# (reference, hint, depth, expected action, expected url, expected kind, fragment, reason)
TABLE = [
    ("../guide", "link", 0, "local", "https://ex.com/guide", "page", "", ""),
    ("/a/b/../c#sec", "link", 0, "local", "https://ex.com/a/c", "page", "#sec", ""),
    ("page?utm_source=x", "link", 0, "local", "https://ex.com/docs/page", "page", "", ""),
    ("/logo.png", "link", 0, "local", "https://ex.com/logo.png", "asset", "", ""),  # <a href> to an image
    ("/img/a.png", "embed", 9, "local", "https://ex.com/img/a.png", "asset", "", ""),  # depth: pages only
    (
        "//cdn.ex.com/x.css",
        "stylesheet",
        0,
        "local",
        "https://cdn.ex.com/x.css",
        "asset",
        "",
        "",
    ),  # same eTLD+1
    ("/deep", "link", 3, "absolute", "https://ex.com/deep", None, "", "beyond the depth limit"),
    ("https://other.org/x", "link", 0, "absolute", None, None, "", "out of scope"),  # already absolute: as is
    ("//other.org/x#f", "link", 0, "absolute", "https://other.org/x#f", None, "#f", "out of scope"),
    ("https://cdn.other.net/a.png", "embed", 0, "absolute", None, None, "", "asset on another site"),
    ("/v.mp4", "embed", 0, "absolute", "https://ex.com/v.mp4", None, "", "skip list"),
    ("/r.pdf", "link", 0, "absolute", "https://ex.com/r.pdf", None, "", "skip list"),
    ("/search", "absolute", 0, "absolute", "https://ex.com/search", None, "", "not fetched"),
    ("#top", "link", 0, "keep", None, None, "", ""),
    ("mailto:a@b.c", "link", 0, "keep", None, None, "", ""),
    ("data:image/png;base64,xx", "embed", 0, "keep", None, None, "", ""),
    ("", "link", 0, "keep", None, None, "", ""),
    ("http://[bad/x", "link", 0, "keep", None, None, "", None),  # not a URL: left as written
    (
        "https://ex.com/#!/inbox",
        "link",
        0,
        "local",
        "https://ex.com/#!/inbox",
        "page",
        "",
        "",
    ),  # route fragment
]


@pytest.mark.parametrize(
    ("ref", "hint", "depth", "action", "url", "kind", "fragment", "reason"),
    TABLE,
    ids=[f"{r[0] or 'empty'}-{r[1]}" for r in TABLE],
)
def test_decide(ref, hint, depth, action, url, kind, fragment, reason) -> None:  # type: ignore[no-untyped-def]
    d = SCOPE.decide(ref, BASE, hint, depth)
    assert (d.action, d.url, d.kind, d.fragment) == (action, url, kind, fragment)
    if reason is not None:
        assert d.reason == reason


def test_robots_known_disallow_leaves_links_absolute() -> None:
    d = SCOPE.decide("/private/", BASE, "link", 0, lambda key: False)
    assert (d.action, d.url, d.reason) == ("absolute", "https://ex.com/private/", "disallowed by robots.txt")
    assert SCOPE.decide("/private/", BASE, "link", 0, lambda key: None).action == "local"  # unknown yet


def test_scope_prefixes_subdomains_allowed_domains_and_asset_widening() -> None:
    s = Scope(home=HOME, seeds=(HOME,), include=("/docs",), exclude=("/docs/private",))
    assert s.page_in_scope("https://ex.com/docs/a") and not s.page_in_scope("https://ex.com/blog/a")
    assert not s.page_in_scope("https://ex.com/docs/private/x") and not s.page_in_scope(
        "https://ex.com/docsx"
    )
    assert not SCOPE.page_in_scope("https://www.ex.com/a")
    assert Scope(home=HOME, seeds=(HOME,), subdomains=True).page_in_scope("https://www.ex.com/a")
    wide = Scope(home=HOME, seeds=(HOME,), allow_domains=("partner.org",))
    assert wide.page_in_scope("https://docs.partner.org/x") and wide.page_in_scope("https://partner.org/")
    assert not wide.page_in_scope("https://notpartner.org/")
    assert Scope(home=HOME, seeds=(HOME,), assets_any_host=True).want_asset("https://cdn.other.net/a.png")
    assert not Scope(home=HOME, seeds=(HOME,), assets_any_host=True).want_asset("https://cdn.other.net/a.mp4")
    ip = Scope(home="http://127.0.0.1:8000/", seeds=("http://127.0.0.1:8000/",))
    assert not ip.want_asset("http://10.0.0.1/x.png")  # IP literals are not one "site" (tree.md §6.1)


def test_several_seeds_are_each_in_scope() -> None:
    s = Scope(home=HOME, seeds=(HOME, "https://other.org/"))
    assert s.page_in_scope("https://other.org/x") and s.want_asset("https://img.other.org/a.png")


def test_priority_avoid_wins_over_prefer() -> None:
    s = Scope(home=HOME, seeds=(HOME,), prefer=("contact", "about"), avoid=("blog", "login"))
    assert s.priority("https://ex.com/about") == 0
    assert s.priority("https://ex.com/team") == 1
    assert s.priority("https://ex.com/blog/about-us") == 2


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://ex.com/a?token=abc&page=2", "https://ex.com/a?token=REDACTED&page=2"),
        (
            "https://ex.com/a?Access_Token=x&api_key=y&sign=z",
            "https://ex.com/a?Access_Token=REDACTED&api_key=REDACTED&sign=REDACTED",
        ),
        ("https://ex.com/a?email=a%40b.c&phone=1#f", "https://ex.com/a?email=REDACTED&phone=REDACTED#f"),
        ("https://ex.com/a?q=token&keys=1", "https://ex.com/a?q=token&keys=1"),
        ("https://ex.com/a?password=&x", "https://ex.com/a?password=&x"),
        ("https://ex.com/a", "https://ex.com/a"),
    ],
)
def test_redact(url: str, expected: str) -> None:
    assert redact(url) == expected


def test_remembered_resolution_equals_resolving_afresh() -> None:
    """Scope.resolve remembers a reference's key by the part of the base it depends on (origin,
    folder …); across bases that share that part and bases that do not, it must give exactly what
    resolving afresh gives (or fail the same way)."""
    from archiver import urls
    from archiver.errors import URLError

    bases = [
        "http://h/a/b/c.html",
        "http://h/a/b/",
        "http://h/a/b/d.html?q=1",
        "http://h:8080/a/b?x=1#!/r",
        "https://h/a/b/c",
        "http://g/a/b/c.html",
        "http://h/",
        "http://h/x/y/z",
    ]
    refs = ["/p/1.html", "p/1.html", "../x.css", "./", "?q=1", "//g/a", "http://h/a/b", "x.png#f"]
    refs += ["../../../../a", "/", "..", "a:b", "1a:b", "http:x", "img/a b.png"]
    refs += ["\\\\g/x", "/\\\\g", "%2e%2e/x"]
    scope = Scope(home="http://h/", seeds=("http://h/",))

    def afresh(ref: str, base: str) -> tuple[str, str] | None:
        try:
            canonical = urls.canonicalize(ref, base)
        except URLError:
            return None
        return canonical, urls.dedup_key(canonical)

    def remembered(ref: str, base: str) -> tuple[str, str] | None:
        try:
            return scope.resolve(ref, base)
        except URLError:
            return None

    for _ in range(2):  # the second pass answers from the memo
        for base in bases:
            for ref in refs:
                assert remembered(ref, base) == afresh(ref, base), (ref, base)


def test_remembered_decisions_equal_deciding_afresh() -> None:
    """Scope.decide remembers all but the depth limit and robots.txt: across bases, hints, depths
    and robots verdicts (unknown, allowed, disallowed), a scope that has seen everything before
    decides exactly as a fresh one does."""
    bases = [
        "https://ex.com/docs/intro",
        "https://ex.com/docs/other",
        "https://ex.com/",
        "https://ex.com/a/b?q",
    ]
    refs = [r[0] for r in TABLE] + [" /docs/x ", "x.html", "../img/a.png", "//other.org/y", "/r.pdf#p"]
    robots = [lambda key: None, lambda key: True, lambda key: "private" not in key and "x" not in key]
    seen = Scope(home=HOME, seeds=(HOME,), max_depth=3)
    for _ in range(2):
        for base in bases:
            for ref in refs:
                for hint in ("link", "embed", "stylesheet", "absolute"):
                    for depth in (0, 2, 3):
                        for verdict in robots:
                            fresh = Scope(home=HOME, seeds=(HOME,), max_depth=3)
                            expected = fresh.decide(ref, base, hint, depth, verdict)  # type: ignore[arg-type]
                            got = seen.decide(ref, base, hint, depth, verdict)  # type: ignore[arg-type]
                            assert got == expected, (ref, base, hint, depth)


def test_a_plain_fragment_is_decided_as_the_reference_without_it() -> None:
    """A reference with a plain fragment is classified from the same reference ending in a bare
    ``#`` (remembered), the fragment put back; it must equal classifying the whole reference afresh,
    for every kind of fragment: plain, route-like, with a space or a control character, empty, and
    on references that are kept, made absolute, or local."""
    bases = ["https://ex.com/docs/intro", "https://ex.com/", "https://ex.com/a/b?q"]
    heads = ["x.html", "/", "../img/a.png", "//other.org/y", "/r.pdf", "https://ex.com/", " /docs/x"]
    heads += ["mailto:a@b", "http://[bad/", "javascript:x", "", "  ", "?q=1", "/style.css"]
    fragments = ["", "#", "#top", "#!/r", "#/r", "#a b", "#a\tb", "#%20", "#x#y", "#é", "#top ", "#\x01"]
    for routes in (False, True):
        seen = Scope(home=HOME, seeds=(HOME,), max_depth=3, routes=routes)
        for _ in range(2):
            for base in bases:
                for head in heads:
                    for fragment in fragments:
                        ref = head + fragment
                        for hint in ("link", "embed", "stylesheet", "absolute"):
                            fresh = Scope(home=HOME, seeds=(HOME,), max_depth=3, routes=routes)
                            expected = fresh._classify(ref, base, hint)  # type: ignore[arg-type]
                            got = seen.decide(ref, base, hint, 0)  # type: ignore[arg-type]
                            assert got == expected.decision, (ref, base, hint, routes)
                            absolute = seen.written_absolute(ref, base, hint)  # type: ignore[arg-type]
                            assert absolute == expected.absolute, (ref, base, hint, routes)


def test_verdicts_remembered_by_host_equal_the_url_functions() -> None:
    """Scope reads a key's extension from its text and works out what depends on its host once per
    host (archiver.capture.policy.Scope._by_host); for scopes of every option that changes a verdict
    and keys of several hosts, extensions, queries and routes, each verdict equals what
    urls.guess_kind, page_in_scope and want_asset say (twice: the second from the memo)."""
    from archiver import urls

    refs = ["https://ex.com/a/b.PNG?x=1", "http://ex.com:8080/docs/", "https://sub.ex.com/p.html#!/r",
            "https://cdn.io/f.woff2", "https://ex.com/r.pdf", "https://ex.com/x.tar.gz", "http://127.0.0.1/a.css",
            "http://[::1]:81/docs/a", "https://other.org/docs/a.%50NG", "https://ex.com/docs", "https://ex.com/",
            "https://b\u00fccher.example/a.", "https://ex.com/.htaccess", "https://ex.com/api/v1.json?q#f",
            "https://ex.co.uk/docs/x.JS", "https://a.ex.com/private/x"]  # fmt: skip
    keys = [urls.dedup_key(urls.canonicalize(r)) for r in refs]
    scopes = [
        Scope(home=HOME, seeds=(HOME,)),
        Scope(home=HOME, seeds=(HOME, "http://127.0.0.1/"), subdomains=True),
        Scope(home=HOME, seeds=(HOME,), include=("/docs",), exclude=("/docs/private",)),
        Scope(home=HOME, seeds=(HOME,), exclude=("/api",), allow_domains=("cdn.io",)),
        Scope(home=HOME, seeds=(HOME,), assets_any_host=True, skip_extensions=frozenset({".png"})),
    ]
    for scope in scopes:
        for _ in range(2):
            for key in keys:
                assert scope._verdict("kind", key) == urls.guess_kind(key), key
                assert scope._verdict("page", key) == scope.page_in_scope(key), (key, scope)
                assert scope._verdict("asset", key) == scope.want_asset(key), (key, scope)
