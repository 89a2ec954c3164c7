"""A redirect target is fetched once: a chain that leads to a page this run holds, or is fetching at
that moment, stops there and takes that answer (before: the target was fetched again, once as its
own page and once at the end of the chain)."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path
from types import SimpleNamespace

import pytest

from archiver import urls
from archiver.capture import capture
from archiver.capture.responses import Responses
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records


@pytest.mark.parametrize("render", [False, True])
@pytest.mark.parametrize("order", ["redirect first", "page first"])
def test_the_target_of_a_redirect_is_fetched_once(tmp_path: Path, render: bool, order: str) -> None:
    with FixtureServer(FixtureConfig(latency=0.05)) as server:
        chain = server.url + "_fixture/redirect/chain/1?to=/about.html"
        seeds = [chain, server.url] if order == "redirect first" else [server.url + "about.html", chain]
        report = capture(seeds, tmp_path / "t", render=render, delay=0, depth=1, progress=False)
        counts = collections.Counter(q.path for q in server.requests)
    assert counts["/about.html"] == 1, counts
    assert report.outcome(chain).outcome == "redirected"  # type: ignore[union-attr]
    about = next(r for r in read_records(tmp_path / "t") if r.path == "about.html")
    assert urls.dedup_key(chain) in about.redirects  # the target's record names the redirect
    stub = (
        tmp_path / "t" / next(r.path for r in read_records(tmp_path / "t") if chain in r.urls)
    ).read_text()
    assert "about.html" in stub


def test_two_chains_into_each_other_never_wait_on_each_other() -> None:
    """A's chain stops at B while B is being fetched; B's chain may then not stop at A (each
    would wait for the other forever): it follows to the end instead."""
    crawler = SimpleNamespace(scope=SimpleNamespace(hygiene=urls.DEFAULT_HYGIENE))
    responses = Responses(crawler)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    try:
        a, b = "http://ex.test/a", "http://ex.test/b"
        responses.fetching[a] = loop.create_future()
        responses.fetching[b] = loop.create_future()
        assert responses._held(a, b) is True  # a waits on b
        assert responses._held(b, a) is False  # b waiting on a would close the circle
        assert responses._held(b, "http://ex.test/c") is False  # neither held nor being fetched
    finally:
        loop.close()
