"""``--max-pages N`` with a shared crawl state (formats/crawl-state.md §6.8), against a real
redis-server: the claim script claims a page only while pages stored + pages leased < N, a lease
that expires or is handed back returns its slot, a failure gives it back, a spent budget skips what
is left ("beyond the page budget", as the single process says); three workers store exactly N pages
in all, the ones a single process stores on the fixture site, and say what the budget left out."""

from __future__ import annotations

import io
import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archiver import cli
from archiver.capture import capture, status_main
from archiver.capture.options import CaptureOptions
from archiver.capture.redis.state import RedisState, crawl_config, redis_state
from archiver.capture.state import NewURL
from archiver.errors import UsageError
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import Record
from tests.capture.redis_server import RedisServer, redis_server
from tests.capture.test_redis_crawl import _finish, _header, _records, _status, _worker

A = "https://ex.com/"
BUDGET = "beyond the page budget"
_names = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as s:
        yield s


def _workers(server: RedisServer, tmp_path: Path, max_pages: int) -> Iterator[RedisState]:
    crawl = f"b{next(_names)}"
    config = crawl_config([A], CaptureOptions(max_pages=max_pages))
    for n in itertools.count():
        yield RedisState(
            tmp_path / f"w{n}" / "_archiver" / "crawl.sqlite",
            client=server.client(),
            url=server.url,
            crawl=crawl,
            config=config,
            worker=f"w{n}",
        )


def _pages(*names: str) -> list[NewURL]:
    return [NewURL(A + n, "page", 1, A, path=f"{n}.html") for n in names]


def _page(key: str, status: int = 200) -> Record:
    return Record(
        path=key.rsplit("/", 1)[1] + ".html",
        kind="page",
        media_type="text/html",
        size=1,
        sha256="0" * 64,
        urls=[key],
        status=status,
    )


def _slots(state: RedisState) -> tuple[int, int]:
    p = state.prefix
    return state.r.scard(p + "budget:stored"), state.r.scard(p + "budget:leased")


def test_a_page_is_claimed_only_while_stored_plus_leased_is_below_the_budget(
    server: RedisServer, tmp_path: Path
) -> None:
    workers = _workers(server, tmp_path, 2)
    one, two = next(workers), next(workers)
    assert one.counts_pages  # the crawler leaves the budget to the state
    one.add([*_pages("a", "b", "c", "d"), NewURL(A + "x.css", "asset", 1, A)])
    first = one.claim("page", 12)
    assert [r.key for r in first] == [A + "a", A + "b"] and _slots(one) == (0, 2)
    assert two.claim("page", 12) == [] and len(two.claim("asset", 12)) == 1  # assets are not counted
    assert two.waiting() == 0.25  # queued pages wait for a leased page to end, they do not spin
    one.finish(A + "a", state="done", outcome="ok", status=200, record=_page(A + "a"))
    assert _slots(one) == (1, 1) and two.claim("page", 12) == []
    one.finish(A + "b", state="failed", outcome="failed", reason="[500]")  # stored no page: slot back
    (next_one,) = two.claim("page", 12)
    assert next_one.key == A + "c" and _slots(one) == (1, 1)  # frontier order
    two.finish(A + "c", state="done", outcome="ok", status=200, record=_page(A + "c"))
    # every slot holds a stored page: what is still queued is skipped for the budget, revivable
    assert one.claim("page", 12) == [] and _slots(one) == (2, 0)
    d = one.row(A + "d")
    assert d is not None and (d.state, d.outcome, d.reason) == ("skipped", "skipped", BUDGET)
    one.add(_pages("e"))  # found after the budget was spent: skipped at once
    assert one.row(A + "e").state == "skipped"  # type: ignore[union-attr]
    assert one.count("pending", "page") == 0
    two.finish(A + "x.css", state="done", outcome="ok")
    assert one.waiting() is None  # the crawl is complete


def test_an_expired_or_handed_back_lease_and_a_redirect_stub_return_their_slot(
    server: RedisServer, tmp_path: Path
) -> None:
    workers = _workers(server, tmp_path, 1)
    one, two = next(workers), next(workers)
    one.add(_pages("a", "b", "c"))
    (a,) = one.claim("page", 12)
    assert two.claim("page", 12) == []
    one.r.zadd(one.prefix + "leases", {a.key: 0})  # its deadline passed: the worker died
    (b,) = two.claim("page", 12)  # the reaper freed the slot (a waits in the retry schedule)
    assert b.key == A + "b" and _slots(one) == (0, 1)
    two.release()  # a stopping worker gives its claims back, and their slots
    assert _slots(one) == (0, 0) and one.r.zscore(one.prefix + "q:page", A + "b") is not None
    (b,) = one.claim("page", 12)
    one.finish(b.key, state="done", outcome="redirected", status=301, record=_page(b.key, 301))
    assert _slots(one) == (0, 0)  # a redirect stub is not a page: its target is one of its own
    (c,) = one.claim("page", 12)
    one.finish(c.key, state="done", outcome="ok", status=200, record=_page(c.key))
    assert _slots(one) == (1, 0)
    one.r.zadd(one.prefix + "retry", {a.key: 0})  # a's retry is due: the budget is spent
    assert one.waiting() is None and one.row(a.key).reason == BUDGET  # type: ignore[union-attr]
    assert one.refresh() > 0 and _slots(one) == (0, 0)  # --refresh: every page to store again


def test_a_worker_with_another_budget_is_refused(server: RedisServer, tmp_path: Path) -> None:
    options = CaptureOptions(render=False, max_pages=20)
    redis_state(server.url, "budgets", [A], options)(tmp_path / "one" / "crawl.sqlite").close()
    with pytest.raises(UsageError, match="max_pages 20 \\(given 30\\)"):  # before its folder is touched
        redis_state(server.url, "budgets", [A], CaptureOptions(render=False, max_pages=30))(
            tmp_path / "two" / "crawl.sqlite"
        )
    with pytest.raises(UsageError, match="max_pages 20 \\(given null\\)"):
        redis_state(server.url, "budgets", [A], CaptureOptions(render=False))(
            tmp_path / "three" / "crawl.sqlite"
        )


# ---- three worker processes on the fixture site


def _page_paths(tree: Path) -> list[str]:
    return sorted(r["path"] for r in _records(tree) if r["kind"] == "page" and (r["status"] or 200) < 300)


def _report(tree: Path) -> dict[str, Any]:
    return dict(json.loads((tree / "_archiver" / "report.json").read_text(encoding="utf-8")))


def _rows(db_path: Path, where: str) -> set[str]:
    db = sqlite3.connect(db_path)
    try:
        return {str(k) for (k,) in db.execute(f"SELECT key FROM urls WHERE {where}")}
    finally:
        db.close()


def test_three_workers_store_exactly_the_budget_the_pages_one_process_stores(tmp_path: Path) -> None:
    n = 20
    with FixtureServer(FixtureConfig(latency=0.01)) as site:
        # the single process: the same pages whatever its concurrency (one host, no rendering)
        singles = []
        for concurrency in (1, 12):
            out = tmp_path / f"single{concurrency}"
            capture(
                [site.url],
                out,
                render=False,
                depth=10,
                delay=0,
                max_pages=n,
                concurrency=concurrency,
                progress=False,
            )
            singles.append(out)
        single = singles[0]
        assert _page_paths(singles[1]) == _page_paths(single) and len(_page_paths(single)) == n
        with redis_server(tmp_path / "redis") as redis:
            shards = [tmp_path / f"shard{i}" for i in range(3)]
            procs = [_worker(site, s, redis, "budget", "--delay", "0", "--max-pages", str(n)) for s in shards]
            results = _finish(procs)
            assert [code for code, _ in results] == [0, 0, 0], results
            status = _status(redis, "budget")
            shown = io.StringIO()
            assert status_main(redis.url, "budget", stdout=shown) == 0
            text = shown.getvalue()
            client = redis.client()
            crawl_skipped = {
                k
                for k in client.zrange("archiver:{budget}:seen", 0, -1)
                if client.hget("archiver:{budget}:u:" + k, "reason") == BUDGET
            }
    # exactly n pages crawl-wide, each in one shard, and the ones the single process stored
    per_shard = [_page_paths(s) for s in shards]
    union = sorted(p for pages in per_shard for p in pages)
    assert len(union) == n == len(set(union)) and union == _page_paths(single)
    assert sum(_report(s)["pages"] for s in shards) == n
    assert status["complete"] is True and status["budget"] == {
        "max_pages": n,
        "stored": n,
        "leased": 0,
        "free": 0,
        "skipped": len(crawl_skipped),
    }
    line = f"page budget {n} (--max-pages): {n} stored, 0 leased, 0 free; {len(crawl_skipped)} skipped"
    assert line in text
    # what the budget left out: the shards' reports name every such page, with the single process's
    # reason; a key the single process skipped that the crawl did not is an alias (merged: tree.md
    # §3.3), which the single process charges to the budget like a page of its own
    reported = {i["url"] for s in shards for i in _report(s)["items"] if i.get("reason") == BUDGET}
    assert reported == crawl_skipped and crawl_skipped
    single_skipped = {i["url"] for i in _report(single)["items"] if i.get("reason") == BUDGET}
    merged_aliases = set().union(*(_rows(s / "_archiver/crawl.sqlite", "state = 'merged'") for s in shards))
    assert crawl_skipped <= single_skipped and single_skipped - crawl_skipped <= merged_aliases
    for shard in shards:
        assert "incomplete" not in _header(shard)["options"] and _header(shard)["options"]["max_pages"] == n
    # archiver merge: one tree of n pages; its state says what was skipped for the budget
    merged = tmp_path / "merged"
    assert cli.main(["merge", *map(str, shards), "-o", str(merged)]) == 0
    assert _page_paths(merged) == _page_paths(single)
    assert _header(merged)["options"] == _header(single)["options"]
    merged_skipped = _rows(merged / "_archiver/crawl.sqlite", f"state = 'skipped' AND reason = '{BUDGET}'")
    assert merged_skipped == crawl_skipped
