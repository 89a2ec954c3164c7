"""robots.txt by RFC 9309."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.capture.robots import MAX_BYTES, Robots, parse

TEXT = """
# comment
User-agent: otherbot
Disallow: /

User-agent: *
Disallow: /private/
Disallow: /*.pdf$
Allow: /private/open
Crawl-delay: 2

User-agent: ArchiVer
User-agent: friend
Disallow: /tmp
Crawl-delay: 0.5
Sitemap: https://ex.com/sitemap.xml
"""


def test_our_group_is_chosen_by_product_token() -> None:
    ours = parse(TEXT, "archiver")
    assert not ours.allowed("/tmp/x") and ours.allowed("/private/") and ours.crawl_delay == 0.5
    assert ours.sitemaps == ("https://ex.com/sitemap.xml",)


def test_star_group_longest_match_and_wildcards() -> None:
    star = parse(TEXT, "somebot")
    assert not star.allowed("/private/x")
    assert star.allowed("/private/open/x")  # longer Allow wins
    assert not star.allowed("/docs/a.pdf") and star.allowed("/docs/a.pdf?x=1")  # $ anchors
    assert star.allowed("/") and star.crawl_delay == 2
    assert star.allowed("/robots.txt")


def test_allow_wins_a_tie_and_empty_disallow_allows() -> None:
    tie = parse("User-agent: *\nDisallow: /a\nAllow: /a\n", "x")
    assert tie.allowed("/a")
    assert parse("User-agent: *\nDisallow:\n", "x").allowed("/anything")


def test_percent_encoding_is_compared_normalised() -> None:
    r = parse("User-agent: *\nDisallow: /caf%C3%A9/\n", "x")
    assert not r.allowed("/caf%c3%a9/menu") and not r.allowed("/café/menu")


def test_fixture_robots() -> None:
    from archiver.fixture import site_root

    r = parse((site_root() / "robots.txt").read_text(encoding="utf-8"), "archiver")
    assert not r.allowed("/private/") and r.allowed("/docs/") and r.crawl_delay == 0


def test_extremes() -> None:
    assert not Robots.disallow_everything("down").allowed("/x")
    assert Robots.disallow_everything("down").allowed("/robots.txt")
    assert Robots.allow_everything().allowed("/x")
    assert parse("garbage\n\x00\nUser-agent *\n", "x").allowed("/")


def test_unreachable_robots_disallows_everything_and_says_why() -> None:
    down = Robots.disallow_everything("robots.txt answered 503")
    assert down.unreachable == "robots.txt answered 503"
    assert not down.allowed("/x") and not down.allowed("/") and down.allowed("/robots.txt")
    assert Robots.disallow_everything("robots.txt unreachable (a\n b)").unreachable == (
        "robots.txt unreachable (a b)"  # one line
    )
    assert Robots.allow_everything().unreachable is None
    assert parse("User-agent: *\nDisallow: /\n", "x").unreachable is None  # read, and it disallows
    assert not parse("User-agent: *\nDisallow: /\n", "x").allowed("/x")


def test_only_the_first_500_kib_are_parsed_and_a_cut_line_is_no_rule() -> None:
    head = "User-agent: *\nDisallow: /early/\n"
    filler = "# " + "x" * 97 + "\n"
    body = head + filler * ((MAX_BYTES - len(head)) // len(filler))
    cut = body + "#" * (MAX_BYTES - len(body) - 12) + "\nDisallow: /abcdefghij/rest\n"
    assert len(cut) > MAX_BYTES > cut.index("Disallow: /abcdefghij")  # the limit falls inside that line
    rules = parse(cut + "Disallow: /late/\n", "archiver")
    assert not rules.allowed("/early/x")
    assert rules.allowed("/abcdefghij/x")  # "Disallow: /abcde" (cut) would have disallowed it
    assert rules.allowed("/late/x")  # past 500 KiB: ignored


def test_a_crawl_delay_is_bounded() -> None:
    from archiver.capture.robots import MAX_CRAWL_DELAY

    for value, expected in (("inf", MAX_CRAWL_DELAY), ("1e308", MAX_CRAWL_DELAY), ("nan", None), ("-5", 0.0),
                            ("86400", MAX_CRAWL_DELAY), ("2.5", 2.5), ("soon", None)):  # fmt: skip
        assert parse(f"User-agent: *\nCrawl-delay: {value}\n", "archiver").crawl_delay == expected, value


def test_a_hostile_crawl_delay_never_stalls_the_capture(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """robots.txt asking for 'Crawl-delay: 1e308' (or inf): before, the second request to the host
    waited 1e308 s (asyncio refused the timer or slept forever). The wait is now the longest one
    the capture accepts from a server (``max_retry_after``, 60 s at most)."""
    import subprocess
    import sys
    from pathlib import Path

    code = f"""
import sys
from pathlib import Path
from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
robots = "User-agent: *\\nCrawl-delay: 1e308\\n"
with FixtureServer(FixtureConfig(robots=robots)) as server:
    report = capture([server.url + "about.html", server.url + "docs/"], Path({str(tmp_path / "t")!r}),
                     render=False, depth=0, delay=0, max_retry_after=0.5, progress=False)
print(report.pages)
"""
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"


def _reference(pattern: str, target: str) -> bool:
    """RFC 9309's matching as a regular expression (fine for the short inputs below)."""
    import re

    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(part) for part in body.split("*")) + ("$" if anchored else "")
    return re.match(regex, target) is not None


@given(
    st.text(alphabet="ab*$/", max_size=10),
    st.text(alphabet="ab$/*", max_size=14),
)
@settings(max_examples=1000, deadline=None)
def test_wildcard_matching_agrees_with_the_regular_expression(pattern: str, target: str) -> None:
    from archiver.capture.robots import _matches

    assert _matches(pattern, target) == _reference(pattern, target)


def test_a_rule_built_to_backtrack_never_holds_the_capture() -> None:
    """The attack: ``Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*c`` and a link whose path is 40 ``a``s.
    Before, the rule's regular expression backtracked for good (the event loop held, Ctrl-C not
    even seen inside the C matcher); the check runs in a child so that the old code fails, not hangs."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from archiver.capture.robots import parse\n"
        "r = parse('User-agent: *\\nDisallow: /' + '*a' * 12 + '*c\\n', 'archiver')\n"
        "print(r.allowed('/' + 'a' * 40), r.allowed('/' + 'a' * 100_000), r.allowed('/' + 'a' * 12 + 'c'))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=root
    )  # a bound on a hang, not a timing assertion
    assert done.stdout.split() == ["True", "True", "False"], done.stderr
