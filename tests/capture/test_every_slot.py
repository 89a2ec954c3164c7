"""Every slot busy (issue 24 point 4): a capture with free slots takes the next URL of a host that is
free rather than a URL that waits on a busy host's lock, and politeness still holds (one request at a
time per host).

The site is 8 hosts (8 servers on loopback, each a host:port of its own) of pages that link within
their host and to the next host, served with latency. The servers count the requests under way
across all of them halfway through each one's latency: the mean of that count is the crawl's mean
number of requests in flight, measured by counting (no assertion on how long anything took)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.capture import capture, hosts
from archiver.capture.redis.state import RedisState
from archiver.capture.state import NewURL, State
from tests.capture.redis_server import RedisServer, redis_server
from tests.capture.test_redis_state import Maker, _redis_maker

HOSTS = 8
PAGES_PER_HOST = 12
LATENCY = 0.3


class _Counter:
    """The requests under way at all the servers, and at each; sampled halfway through each one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.per_host: dict[int, int] = {}
        self.samples: list[int] = []
        self.most_per_host = 0

    def enter(self, host: int) -> None:
        with self.lock:
            self.now += 1
            self.per_host[host] = self.per_host.get(host, 0) + 1
            self.most_per_host = max(self.most_per_host, self.per_host[host])

    def sample(self) -> None:
        with self.lock:
            self.samples.append(self.now)

    def leave(self, host: int) -> None:
        with self.lock:
            self.now -= 1
            self.per_host[host] -= 1


def _pages(host: int, ports: list[int]) -> dict[str, bytes]:
    nxt = f"http://127.0.0.1:{ports[(host + 1) % len(ports)]}/"
    pages: dict[str, bytes] = {}
    for i in range(PAGES_PER_HOST):
        links = [f"/p/{(i * 5 + k) % PAGES_PER_HOST}.html" for k in (1, 2)] + [f"{nxt}p/{i}.html"]
        body = "".join(f'<a href="{u}">{u}</a> ' for u in links)
        pages[f"/p/{i}.html"] = f"<!doctype html><title>{host}/{i}</title><p>{body}".encode()
    home = "".join(f'<a href="/p/{i}.html">{i}</a> ' for i in range(PAGES_PER_HOST))
    pages["/"] = f"<!doctype html><title>host {host}</title><p>{home}".encode()
    return pages


def _server(host: int, ports: list[int], counter: _Counter, sock_port: int) -> ThreadingHTTPServer:
    pages = _pages(host, ports)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            counter.enter(host)
            try:
                time.sleep(LATENCY / 2)
                counter.sample()  # halfway: requests that start together all count one another
                time.sleep(LATENCY / 2)
                body = pages.get(self.path.split("?")[0])
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
            finally:
                # counted out before a byte of the answer leaves: the client cannot have sent its
                # next request to this host while this one still counts
                counter.leave(host)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", sock_port), Handler)
    server.daemon_threads = True
    return server


@pytest.fixture()
def site() -> Iterator[tuple[list[str], _Counter]]:
    counter = _Counter()
    sockets = [ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler) for _ in range(HOSTS)]
    ports = [s.server_address[1] for s in sockets]
    for s in sockets:
        s.server_close()
    servers = [_server(h, ports, counter, ports[h]) for h in range(HOSTS)]
    threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
               for s in servers]  # fmt: skip
    for t in threads:
        t.start()
    try:
        yield [f"http://127.0.0.1:{p}/" for p in ports], counter
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


@pytest.mark.parametrize("concurrency", [2, 4])
def test_every_slot_is_busy_over_eight_hosts(
    site: tuple[list[str], _Counter], tmp_path: Path, concurrency: int
) -> None:
    seeds, counter = site
    report = capture(
        seeds, tmp_path / "t", render=False, delay=0, depth=3, concurrency=concurrency, progress=False
    )
    assert report.complete and report.pages == HOSTS * (PAGES_PER_HOST + 1)
    assert counter.most_per_host == 1  # politeness: one request at a time per host
    mean = sum(counter.samples) / len(counter.samples)
    assert mean >= 0.9 * concurrency, f"{mean:.2f} requests in flight on average of {concurrency} slots"


def test_a_claim_takes_free_hosts_first_and_keeps_frontier_order() -> None:
    keys = ["http://a/1", "http://a/2", "http://b:8080/1", "http://a/3", "http://c/1?x", "http://b:8080/2"]
    assert hosts.pick(keys, 3, set(), str) == ["http://a/1", "http://b:8080/1", "http://c/1?x"]
    assert hosts.pick(keys, 2, {"a"}, str) == ["http://b:8080/1", "http://c/1?x"]
    # every host busy, or one host only: frontier order, as before
    assert hosts.pick(keys, 3, {"a", "b:8080", "c"}, str) == keys[:3]
    one = [f"http://a/{i}" for i in range(10)]
    assert hosts.pick(one, 4, set(), str) == one[:4] and hosts.pick(one, 4, {"a"}, str) == one[:4]
    assert hosts.key_host("https://[::1]:8443/p?q#f") == "[::1]:8443"
    assert hosts.key_host("http://ex.test") == "ex.test"


_A, _B, _C = "http://a.localhost/", "http://b.localhost:8080/", "http://c.localhost/"


def _three_hosts(state: State | RedisState) -> None:
    state.add([NewURL(u, "page", 1, None) for u in (_A + "1", _A + "2", _B + "1", _C + "1", _A + "3")])


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as s:
        yield s


@pytest.fixture(params=["sqlite", "redis"])
def maker(request: pytest.FixtureRequest, tmp_path: Path) -> Maker:
    if request.param == "sqlite":
        state = State(tmp_path / "crawl.sqlite")
        return lambda: state
    return _redis_maker(request.getfixturevalue("redis"), tmp_path)


def test_a_claim_of_either_state_takes_a_free_host_first(maker: Maker) -> None:
    """A worker with rows of host a in flight claims b's and c's before a's next. Then only a's are
    left: the SQLite state gives them (one process: they wait on a's lock while the others are
    worked on); the shared state does not while the worker has rows in flight (another worker may
    free a host meanwhile: the crawler claims again shortly), and does once it has none (its free
    slots filled in frontier order, as with one host)."""
    one = maker()
    _three_hosts(one)
    first = [r.key for r in one.claim("page", 2, busy={"a.localhost"})]
    assert first == [_B + "1", _C + "1"]
    then = [r.key for r in one.claim("page", 2, exclude=first, busy={"a.localhost"})]
    if isinstance(one, RedisState):
        assert then == []
        then = [r.key for r in one.claim("page", 2, busy={"a.localhost"})]  # nothing in flight
    assert then == [_A + "1", _A + "2"]


def test_a_claim_of_either_state_sees_every_host_of_a_frontier_filled_host_by_host(maker: Maker) -> None:
    """A site's pages enter the frontier host by host (each host's index links its 40 pages): a
    claim of 6 slots over 8 such hosts takes 6 hosts, not the 3 or 4 whose rows the first 134
    candidates hold (with them, three workers of two slots kept 85 % of their slots busy)."""
    one = maker()
    keys = [f"http://h{h}.localhost/p{i}" for h in range(8) for i in range(40)]
    one.add([NewURL(k, "page", 1, None) for k in keys])
    got = [r.key for r in one.claim("page", 6)]
    assert len({hosts.key_host(k) for k in got}) == 6


def test_a_claim_of_either_state_serves_the_free_host_served_longest_ago(maker: Maker) -> None:
    """Hosts late in frontier order are not left waiting while an early one, free again after each
    request, is served again and again (two hosts of bench_scale's eight ended 5 s after the others,
    a tail of idle slots): one slot claiming, its row done, claiming again goes round the hosts."""
    one = maker()
    keys = [f"http://{h}.localhost/p{i}" for h in "abc" for i in range(10)]
    one.add([NewURL(k, "page", 1, None) for k in keys])
    order = []
    for _ in range(6):
        (row,) = one.claim("page", 1)
        order.append(hosts.key_host(row.key))
        one.finish(row.key, state="done", outcome="ok")
    assert order == ["a.localhost", "b.localhost", "c.localhost"] * 2


def test_a_claim_takes_the_hosts_served_longest_ago_among_the_free_ones() -> None:
    keys = ["http://a/1", "http://a/2", "http://b/1", "http://c/1"]
    assert hosts.pick(keys, 1, set(), str, served={"a": 3, "b": 5}) == ["http://c/1"]  # never served
    assert hosts.pick(keys, 2, set(), str, served={"a": 3, "b": 5, "c": 4}) == ["http://a/1", "http://c/1"]
    assert hosts.pick(keys, 2, {"a"}, str, served={"a": 1, "b": 5, "c": 4}) == ["http://b/1", "http://c/1"]


def test_a_redis_claim_leaves_a_host_another_worker_holds(redis: RedisServer, tmp_path: Path) -> None:
    """Crawl-wide: a host whose lock another worker holds (a request under way) is busy too."""
    one = _redis_maker(redis, tmp_path)()
    _three_hosts(one)
    redis.client().set(f"{one.prefix}host:b.localhost:8080:lock", "w9#1", px=30_000)
    got = [r.key for r in one.claim("page", 2, busy={"a.localhost"})]
    assert got == [_A + "1", _C + "1"]  # c is free; then the earliest of the rest, in queue order
    # with rows in flight, only a free host's: none here (a's and b's would wait on their locks)
    assert one.claim("page", 2, exclude=got, busy={"a.localhost", "c.localhost"}) == []


@given(
    st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 9)), max_size=300),
    st.integers(0, 8),
    st.sets(st.sampled_from("abcdef")),
)
def test_a_claim_that_knows_every_host_stops_early_with_the_same_choice(
    rows: list[tuple[str, int]], n: int, busy: set[str]
) -> None:
    """Given every host the frontier names, the scan ends once no free host is left (a one-host
    crawl read up to n + 128 rows per claim for nothing): the choice is the one the whole scan makes."""
    keys = [f"http://{h}/{i}" for h, i in rows]
    known = {hosts.key_host(k) for k in keys}
    read: list[str] = []

    def counted() -> Iterator[str]:
        for k in keys:
            read.append(k)
            yield k

    assert hosts.pick(counted(), n, busy, str, known=known) == hosts.pick(keys, n, busy, str)
    if n and known and known <= busy and len(keys) > n:
        assert len(read) <= n  # every host busy: the first n rows, no further
