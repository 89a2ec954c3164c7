"""A host whose robots.txt cannot be read (5xx, 429, network error) is not fetched this run, as
RFC 9309 §2.3.1.4 asks, but that is no verdict on its pages: they end ``unconfirmed`` (tried again on
the next run), links to them are localised like any other, and a later run captures them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from archiver import urls
from archiver.capture import capture
from archiver.capture.fetch import AddressGuard, Fetcher, FetchPolicy
from archiver.capture.policy import Scope
from archiver.fixture import FixtureConfig, FixtureServer

FAST = dict(render=False, delay=0, retries=1, backoff=0.05, timeout=5.0, progress=False)
REASON = "robots.txt answered 503: not fetched, tried again next run"


def _key(url: str) -> str:
    return urls.dedup_key(urls.canonicalize(url))


def test_seed_behind_an_unreachable_robots_is_unconfirmed_then_captured(tmp_path: Path) -> None:
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(status={"/robots.txt": 503})) as server:
        first = capture([server.url], out, depth=0, **FAST)  # type: ignore[arg-type]
        item = first.outcome(server.url)
        assert item is not None and (item.outcome, item.reason) == ("unconfirmed", REASON)
        assert first.complete  # as for every other unconfirmed outcome: nothing is left pending
        assert [q.path for q in server.requests] == ["/robots.txt", "/robots.txt"]  # tried, retried
        assert not (out / "index.html").exists()

        server.config = FixtureConfig()  # the server answers again, on the same port
        second = capture([server.url], out, depth=0, **FAST)  # type: ignore[arg-type]
        item = second.outcome(server.url)
        assert item is not None and item.outcome == "ok", item
    assert "Acme" in (out / "index.html").read_text(encoding="utf-8")


def test_links_to_a_host_with_unreachable_robots_are_localised_and_captured_later(
    tmp_path: Path,
) -> None:
    other_root = tmp_path / "other"
    other_root.mkdir()
    (other_root / "b.html").write_text("<!doctype html><title>B</title><p>Page B</p>")
    down = FixtureConfig(root=other_root, status={"/robots.txt": 503})
    with FixtureServer(down, host="127.0.0.2") as other:
        site = tmp_path / "site"
        site.mkdir()
        link = other.url + "b.html"
        (site / "index.html").write_text(f'<!doctype html><title>A</title><a href="{link}">to B</a>')
        out = tmp_path / "tree"
        options = dict(FAST, depth=2, allow_domains=["127.0.0.2"], allow_hosts=["127.0.0.2"])
        with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
            first = capture([server.url], out, **options)  # type: ignore[arg-type]
            item = first.outcome(link)
            assert item is not None and (item.outcome, item.reason) == ("unconfirmed", REASON), item
            assert "/b.html" not in [q.path for q in other.requests]

            other.config = FixtureConfig(root=other_root, robots=None)
            second = capture([server.url], out, **options)  # type: ignore[arg-type]
            item = second.outcome(link)
            assert item is not None and item.outcome == "ok", item
    page = (out / "index.html").read_text(encoding="utf-8")
    assert link not in page  # now a relative link to the stored copy
    assert "Page B" in (out / item.path).read_text(encoding="utf-8")  # type: ignore[arg-type]


def test_the_link_decision_waits_for_robots_that_could_not_be_read() -> None:
    """Scope.decide with the fetcher's robots verdict: an unreachable robots.txt is no verdict, so the
    reference stays local (queued, localised) instead of absolute "disallowed by robots.txt"."""

    async def decide(server: FixtureServer) -> tuple[str, str]:
        guard = AddressGuard(frozenset({"127.0.0.1"}))
        async with Fetcher(FetchPolicy(delay=0, retries=1, backoff=0.05), guard=guard) as f:
            await f.fetch(server.url + "about.html")  # robots.txt of the host read (or tried)
            scope = Scope(home=server.url, seeds=(_key(server.url),))
            d = scope.decide("private/", server.url, "link", 0, f.robots_allows)
            return d.action, d.reason

    with FixtureServer(FixtureConfig(status={"/robots.txt": 503})) as server:
        assert asyncio.run(decide(server)) == ("local", "")
    with FixtureServer() as server:  # read, and it disallows /private/: absolute, as before
        assert asyncio.run(decide(server)) == ("absolute", "disallowed by robots.txt")
