"""The crawl-state contract (formats/crawl-state.md §2, §4, §6) checked on both implementations: the
SQLite file and the Redis-shared state (against a real redis-server), then what only a shared state
has: leases, fencing tokens, the reaper, registration, crawl-wide politeness and robots.txt."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from archiver.capture.options import CaptureOptions
from archiver.capture.redis.state import RedisState, crawl_config, redis_state
from archiver.capture.robots import Robots
from archiver.capture.robots import parse as parse_robots
from archiver.capture.state import NewURL, State
from archiver.errors import UsageError
from archiver.tree import Record
from tests.capture.redis_server import RedisServer, redis_server

A = "https://ex.com/"
_names = itertools.count()

Maker = Callable[[], State | RedisState]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as s:
        yield s


def _redis_maker(server: RedisServer, tmp_path: Path, *, lease: float = 30.0) -> Maker:
    """Workers of one fresh crawl, each with its own shard folder."""
    crawl = f"t{next(_names)}"
    config = crawl_config([A], CaptureOptions())
    workers = itertools.count()

    def make() -> RedisState:
        n = next(workers)
        return RedisState(
            tmp_path / f"w{n}" / "_archiver" / "crawl.sqlite",
            client=server.client(),
            url=server.url,
            crawl=crawl,
            config=config,
            worker=f"w{n}",
            lease=lease,
        )

    return make


@pytest.fixture(params=["sqlite", "redis"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Maker:
    """``make()`` → a worker's state; with SQLite every worker is the one process owning the file."""
    if request.param == "sqlite":
        state = State(tmp_path / "crawl.sqlite")
        return lambda: state
    return _redis_maker(request.getfixturevalue("server"), tmp_path)


def _new(key: str, depth: int = 1, **kw: object) -> NewURL:
    return NewURL(A + key, kw.pop("kind", "page"), depth, kw.pop("referrer", A), **kw)  # type: ignore[arg-type]


def _record(path: str) -> Record:
    return Record(path=path, kind="page", media_type="text/html", size=1, sha256="0" * 64)


# ---- §2 on both


def test_add_is_one_seen_insert_and_enqueue(make: Maker) -> None:
    one, two = make(), make()
    assert one.add([_new("a"), _new("b")]) == [A + "a", A + "b"]
    assert two.add([_new("a"), _new("c")]) == [A + "c"]  # the other worker's "a" is known
    assert one.count("pending") == 3 and two.count() == 3
    assert [r.key for r in one.rows()] == [A + "a", A + "b", A + "c"]  # discovery order


def test_a_known_key_keeps_the_smallest_depth_and_stylesheet_only_turns_on(make: Maker) -> None:
    one, two = make(), make()
    one.add([_new("x.css", 3, kind="asset", referrer=A + "z", stylesheet=True)])
    two.add([_new("x.css", 2, kind="asset", referrer=A + "y")])
    two.add([_new("x.css", 2, kind="asset", referrer=A + "b")])
    two.add([_new("x.css", 5, kind="asset", referrer=A + "a")])
    row = one.row(A + "x.css")
    assert row is not None and (row.depth, row.referrer, row.stylesheet) == (2, A + "b", True)


def test_a_key_skipped_for_a_limit_is_revived_by_a_pending_reference(make: Maker) -> None:
    one, two = make(), make()
    one.add([_new("deep", 4, state="skipped", reason="beyond the depth limit")])
    one.add([_new("robots", 1, state="skipped", reason="disallowed by robots.txt")])
    assert two.add([_new("deep", 2), _new("robots", 1)]) == [A + "deep"]
    deep, robots = one.row(A + "deep"), one.row(A + "robots")
    assert deep is not None and (deep.state, deep.depth, deep.reason) == ("pending", 2, None)
    assert robots is not None and robots.state == "skipped"


def test_claims_follow_priority_then_depth_then_discovery(make: Maker) -> None:
    one = make()
    one.add([_new("d2", 2), _new("d1", 1), _new("p0", 3, priority=0), _new("asset", 0, kind="asset")])
    one.add([_new("d1b", 1)])
    got = [r.key for r in one.claim("page", 3)]
    assert got == [A + "p0", A + "d1", A + "d1b"]
    rest = make().claim("page", 10, exclude=got)  # SQLite: what is in flight; Redis: leased
    assert [r.key for r in rest] == [A + "d2"]
    assert [r.key for r in one.claim("asset", 10)] == [A + "asset"]


def test_finish_ends_the_row_adds_what_it_found_and_counts_an_attempt(make: Maker) -> None:
    one = make()
    one.add([_new("a")])
    (row,) = one.claim("page", 1)
    with one.transaction():
        one.finish(
            row.key,
            state="done",
            outcome="ok",
            status=200,
            final_url=row.key,
            record=_record("a.html"),
            new=[_new("b", 2)],
            links=("a.html", {A + "b": True}),
        )
    done = one.row(A + "a")
    assert done is not None and (done.state, done.outcome, done.status, done.attempts) == (
        "done",
        "ok",
        200,
        1,
    )
    assert one.count("pending") == 1 and one.count("done", "page") == 1
    assert one.record("a.html") is not None and list(one.links()) == [("a.html", A + "b", True)]
    assert [r.key for r in make().claim("page", 5)] == [A + "b"]


def test_requeue_refresh_and_mark(make: Maker) -> None:
    one = make()
    one.add([_new("f"), _new("u"), _new("ok"), _new("s", state="skipped", reason="disallowed by robots.txt")])
    for row in one.claim("page", 3):
        state = {"f": "failed", "u": "unconfirmed", "ok": "done"}[row.key.rsplit("/", 1)[1]]
        one.finish(row.key, state=state, outcome=state)
    assert one.count("pending") == 0
    assert one.requeue(("failed", "unconfirmed"), 1) == 0  # tried once already
    assert one.requeue(("failed", "unconfirmed"), 5) == 2
    assert {r.key for r in one.claim("page", 5)} == {A + "f", A + "u"}
    for key in (A + "f", A + "u"):
        one.finish(key, state="failed", outcome="failed")
    assert one.refresh() == 3 and one.count("pending") == 3
    one.mark(A + "s", state="pending", outcome="", reason="")
    assert one.count("pending") == 4 and one.count("skipped") == 0


def test_redirected_to_lists_the_rows_redirecting_to_a_key(make: Maker) -> None:
    one = make()
    one.add([_new("old", path="old.html"), _new("new", path="new.html")])
    row = next(r for r in one.claim("page", 5) if r.key == A + "old")
    one.finish(row.key, state="done", outcome="redirected", final_url=A + "new")
    assert make().redirected_to(A + "new") == [(A + "old", "old.html")]


def test_the_end_of_the_crawl_settles_depths_over_the_discoveries(make: Maker) -> None:
    """A page taken before the shorter path to it was known names its discovery one step too deep
    in the frontier's rows; the end of the crawl settles every row over the recorded discoveries
    (§2 ``settle_depths``; a shared state's shard when the crawl is complete, §6.6)."""
    one = make()
    s2, b, c, d = A + "s2", A + "b", A + "c", A + "d"
    for seed in (A, s2):
        one.add_seed(seed)
    one.add([NewURL(A, "page", 0, None), NewURL(s2, "page", 0, None)])
    held = [r.key for r in one.claim("page", 2)]
    assert held == [A, s2]

    def done(key: str, *found: NewURL) -> None:
        one.finish(key, state="done", outcome="ok", new=list(found))

    done(A, NewURL(b, "page", 1, A, source=A))
    for key, found in ((b, NewURL(c, "page", 2, b, source=b)), (c, NewURL(d, "page", 3, c, source=c))):
        (row,) = one.claim("page", 1, exclude=[s2])
        assert row.key == key
        done(key, found)
    done(s2, NewURL(c, "page", 1, s2, source=s2))  # the shorter path to c, met after c was done
    (row,) = one.claim("page", 1)
    assert (row.key, row.depth) == (d, 3)
    done(d)
    assert one.settle_depths(max_depth=5) == []
    one.set("complete", "1")
    shard = one.local if isinstance(one, RedisState) else one
    rows = {r.key: (r.depth, r.referrer) for r in shard.rows()}
    assert rows == {A: (0, None), s2: (0, None), b: (1, A), c: (1, s2), d: (2, c)}


# ---- §6: only a shared state


@pytest.fixture
def workers(server: RedisServer, tmp_path: Path) -> Maker:
    return _redis_maker(server, tmp_path)


def _expire(state: RedisState, key: str) -> None:
    state.r.zadd(state.prefix + "leases", {key: 0})  # as if its deadline had passed


def test_a_stale_worker_cannot_finish_after_its_lease_went_to_another(workers: Maker) -> None:
    one, two = workers(), workers()
    assert isinstance(one, RedisState) and isinstance(two, RedisState)
    one.add([_new("a")])
    (mine,) = one.claim("page", 1)
    assert two.claim("page", 1) == []  # leased to one
    _expire(one, mine.key)
    assert two.claim("page", 1) == []  # reaped into the retry schedule, not due yet
    one.r.zadd(one.prefix + "retry", {mine.key: 0})
    (theirs,) = two.claim("page", 1)
    assert theirs.key == mine.key and theirs.attempts == 1  # the expired lease counted an attempt
    assert one.renew([mine.key]) == [mine.key]  # one learns it lost the claim
    one.finish(mine.key, state="done", outcome="ok")  # refused: its token is stale
    assert one.refused == 1 and two.row(mine.key).state == "pending"  # type: ignore[union-attr]
    assert one.notes == [  # the worker's report says so (crawl.py passes the state's notes on)
        "1 URL finished here was refused by Redis: this worker's lease had run out and another worker"
        " took it over"
    ]
    two.finish(theirs.key, state="done", outcome="ok")
    assert two.refused == 0 and one.row(mine.key).state == "done"  # type: ignore[union-attr]
    assert two.notes == []
    assert one.local.row(mine.key).state == "done"  # type: ignore[union-attr]  # its shard kept its file's row


def test_renewing_keeps_a_lease_and_the_reaper_needs_no_empty_queue(workers: Maker) -> None:
    one, two = workers(), workers()
    assert isinstance(one, RedisState) and isinstance(two, RedisState)
    one.add([_new("a"), _new("b"), _new("c")])
    (a,) = one.claim("page", 1)
    before = one.r.zscore(one.prefix + "leases", a.key)
    assert one.renew([a.key]) == [] and one.r.zscore(one.prefix + "leases", a.key) >= before  # type: ignore[operator]
    _expire(one, a.key)
    # the queue still holds b and c: the reaper runs on every claim anyway
    assert [r.key for r in two.claim("page", 1)] == [A + "b"]
    assert one.r.zscore(one.prefix + "retry", a.key) is not None and one.renew([a.key]) == [a.key]


def test_a_url_whose_leases_keep_expiring_fails_for_good(workers: Maker) -> None:
    one = workers()
    assert isinstance(one, RedisState)
    one.add([_new("poison")])
    for attempt in range(1, one.max_attempts + 1):
        (row,) = one.claim("page", 1)
        assert row.attempts == attempt - 1
        _expire(one, row.key)
        one.claim("page", 1)  # reaps
        if attempt < one.max_attempts:
            assert one.r.zscore(one.prefix + "retry", row.key) is not None
            one.r.zadd(one.prefix + "retry", {row.key: 0})  # due now
    final = one.row(A + "poison")
    assert final is not None and final.state == "failed" and "lease expired 5 times" in (final.reason or "")
    assert one.count("pending") == 0 and one.waiting() is None


def test_waiting_says_how_the_crawl_stands(workers: Maker) -> None:
    one, two = workers(), workers()
    assert isinstance(one, RedisState)
    assert one.waiting() is None  # nothing anywhere
    one.add([_new("a")])
    assert two.waiting() == 0.0  # claimable now
    (row,) = one.claim("page", 1)
    assert 0 < (two.waiting() or 0) <= 0.25  # leased to another worker: wait, do not stop
    one.finish(row.key, state="done", outcome="ok")
    assert two.waiting() is None


def test_a_worker_with_other_seeds_or_scope_is_refused(server: RedisServer, tmp_path: Path) -> None:
    options = CaptureOptions(render=False, depth=3)
    first = redis_state(server.url, "refusal", [A], options)
    first(tmp_path / "one" / "crawl.sqlite").close()
    first(tmp_path / "one" / "crawl.sqlite").close()  # the same worker again: fine
    with pytest.raises(UsageError) as e:  # refused before its folder is touched (redis_state)
        redis_state(server.url, "refusal", [A], CaptureOptions(render=False, depth=5))(
            tmp_path / "two" / "crawl.sqlite"
        )
    assert e.value.exit_code == 2 and "depth 3 (given 5)" in str(e.value)
    assert str(e.value).startswith("--crawl refusal: ")
    with pytest.raises(UsageError, match="other seeds"):
        redis_state(server.url, "refusal", [A + "other/"], options)(tmp_path / "three" / "crawl.sqlite")
    assert not (tmp_path / "two").exists() and not (tmp_path / "three").exists()


def test_host_politeness_is_one_request_at_a_time_across_workers(workers: Maker) -> None:
    one, two = workers(), workers()
    assert isinstance(one, RedisState) and isinstance(two, RedisState)
    p1, p2 = one.politeness(), two.politeness()
    order: list[str] = []

    async def run() -> None:
        holder = await p1.acquire("ex.com")
        assert holder is not None
        waiting = asyncio.ensure_future(p2.acquire("ex.com"))
        other = await p2.acquire("other.org")  # another host is free
        p2.release("other.org", other, 0)
        await asyncio.sleep(0.2)
        order.append("first still holds" if not waiting.done() else "second got in")
        p1.release("ex.com", holder, 0.3)
        second = await waiting
        order.append("second after release")
        # the gap counts from the release, in Redis time
        next_at = int(one.r.get(one.prefix + "host:ex.com:next") or 0)
        seconds, micros = one.r.time()
        assert next_at <= int(seconds) * 1000 + int(micros) // 1000
        p2.release("ex.com", second, 0)

    asyncio.run(run())
    assert order == ["first still holds", "second after release"]


def test_robots_txt_is_read_once_for_the_whole_crawl(workers: Maker) -> None:
    providers = [w.politeness() for w in (workers(), workers(), workers())]  # type: ignore[union-attr]
    reads: list[int] = []

    async def read() -> Robots:
        reads.append(1)
        await asyncio.sleep(0.1)
        return parse_robots("User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n", "archiver")

    async def run() -> list[Robots]:
        return list(await asyncio.gather(*(p.robots("ex.com", read) for p in providers)))

    got = asyncio.run(run())
    assert reads == [1]
    assert all(r == got[0] for r in got) and got[0].crawl_delay == 2 and not got[0].allowed("/private/x")


def test_a_host_lock_lives_a_lease_renewed_with_the_claims(workers: Maker) -> None:
    one = workers()
    assert isinstance(one, RedisState)
    lock = one.prefix + "host:ex.com:lock"

    async def run() -> None:
        holder = await one.politeness().acquire("ex.com")
        assert one.held == {"ex.com": holder}
        assert 0 < one.r.pttl(lock) <= one.lease * 1000  # a dead holder frees the host within a lease
        one.r.pexpire(lock, 50)
        one.renew([])  # the crawler's renewal loop extends it while the request runs
        assert one.r.pttl(lock) > 50
        one.politeness().release("ex.com", holder, 0)
        assert one.held == {} and one.r.get(lock) is None

    asyncio.run(run())
