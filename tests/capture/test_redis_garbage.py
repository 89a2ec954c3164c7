"""The Redis state never ends in a traceback (issue 22, point 3; formats/crawl-state.md §6.9).

Against a real redis-server: every fixed key of a crawl (§6.1) of the wrong type, garbage values
(not numbers, not UTF-8, JSON of the wrong shape, huge), damaged rows, a frontier entry that is not
a URL, bad ``redis://`` URLs, a port where something else listens (an HTTP server, a closed port, a
server that accepts and never answers), for ``capture --state`` and ``capture --crawl NAME --status``,
and damage that appears while a worker works. Each ends in one line and a documented exit code: 2
for a bad URL, 1 for a crawl whose data is damaged, 4 for a Redis that cannot be reached. A worker
refused for any reason leaves its ``-o`` folder exactly as it found it. Every run is a subprocess
with a timeout, so a hang fails its test rather than the suite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from archiver.fixture import FixtureConfig, FixtureServer
from tests.capture.redis_server import RedisServer, redis_server

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HANG = 60  # seconds: a guard against a hang, not a timing check
CRAWL = "g"
P = f"archiver:{{{CRAWL}}}:"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as s:
        yield s


def _run(*args: object, timeout: float = HANG) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=ENV,
        cwd=ROOT,
        check=False,
    )


def _worker(
    site: FixtureServer, out: Path, url: str, crawl: str = CRAWL, *extra: object
) -> subprocess.CompletedProcess[str]:
    return _run("capture", site.url, "-o", out, "--state", url, "--crawl", crawl, "--no-render",
                "--depth", "2", "--delay", "0", *extra)  # fmt: skip


def _status(url: str, crawl: str = CRAWL) -> subprocess.CompletedProcess[str]:
    return _run("capture", "--state", url, "--crawl", crawl, "--status")


def _one_line(done: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr[-3000:])
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("archiver: ") and done.stderr.count("\n") == 1, done.stderr[-3000:]
    for word in words:
        assert word in done.stderr, done.stderr


@pytest.fixture(scope="module")
def crawled(
    server: RedisServer, site_server: FixtureServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[bytes, bytes]:
    """One finished crawl's keys (``DUMP``), restored before each case."""
    done = _worker(site_server, tmp_path_factory.mktemp("clean") / "shard", server.url)
    assert done.returncode == 0, done.stderr
    raw = redis.Redis.from_url(server.url)
    return {k: raw.dump(k) for k in raw.keys(P + "*")}


@pytest.fixture
def raw(server: RedisServer, crawled: dict[bytes, bytes]) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(server.url)
    r.flushdb()
    for key, dump in crawled.items():
        r.restore(key, 0, dump)
    yield r
    r.flushdb()


def _retype(r: redis.Redis, key: str, kind: str) -> None:
    r.delete(key)
    {
        "string": lambda: r.set(key, "x"),
        "hash": lambda: r.hset(key, "x", "y"),
        "zset": lambda: r.zadd(key, {"x": 1}),
        "list": lambda: r.rpush(key, "x"),
        "set": lambda: r.sadd(key, "x"),
    }[kind]()


# every fixed key of §6.1, each with a type it must not have
WRONG_TYPES = {
    "config": "hash", "meta": "string", "seen": "list", "seq": "hash", "token": "set",
    "q:page": "hash", "q:asset": "string", "leases": "list", "owner": "string", "retry": "set",
    "counts": "zset", "paths": "list", "workers": "string", "alive": "zset", "stats": "list",
    "reaped": "hash", "budget": "hash", "budget:stored": "string", "budget:leased": "zset",
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
def test_a_key_of_the_wrong_type(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, name: str
) -> None:
    _retype(raw, P + name, WRONG_TYPES[name])
    _one_line(_status(server.url), 1, "damaged", name)
    _one_line(_worker(site_server, tmp_path / "w", server.url), 1, "damaged", name)
    assert not (tmp_path / "w").exists()  # refused before it touched its folder


def _seed(r: redis.Redis) -> str:
    """``u:<the seed's key>``: the first row of the crawl."""
    first = r.zrange(P + "seen", 0, 0)[0].decode()
    return "u:" + first


GARBAGE: dict[str, Callable[[redis.Redis], object]] = {
    "config-not-json": lambda r: r.set(P + "config", "{not json"),
    "config-a-list": lambda r: r.set(P + "config", "[1, 2]"),
    "config-wrong-shape": lambda r: r.set(P + "config", '{"version": "1", "seeds": 5, "options": []}'),
    "config-not-utf8": lambda r: r.set(P + "config", b"\xff\xfe{}"),
    "config-huge": lambda r: r.set(P + "config", '{"version": 1, "seeds": ["' + "x" * (8 << 20) + '"]}'),
    "counts-not-a-number": lambda r: r.hset(P + "counts", "done:page", "many"),
    "counts-huge-number": lambda r: r.hset(P + "counts", "done:page", "9" * 400),
    "seq-not-a-number": lambda r: r.set(P + "seq", "abc"),
    "token-not-utf8": lambda r: r.set(P + "token", b"\xff\xff"),
    "budget-not-a-number": lambda r: r.set(P + "budget", "lots"),
    "alive-not-a-number": lambda r: r.hset(P + "alive", "w-1", "yesterday"),
    "stats-not-a-number": lambda r: r.hset(P + "stats", "expired", "x"),
    "workers-entry-not-json": lambda r: r.hset(P + "workers", "w-1", "{"),
    "workers-entry-a-list": lambda r: r.hset(P + "workers", "w-1", "[]"),
    # 5,000 nested arrays: json's RecursionError (the old code, dab4b1c: a traceback, exit 70)
    "config-nested-deep": lambda r: r.set(P + "config", "[" * 5000 + "]" * 5000),
    "workers-entry-nested-deep": lambda r: r.hset(P + "workers", "w-1", "[" * 5000 + "]" * 5000),
    "meta-not-utf8": lambda r: r.hset(P + "meta", "home", b"\xff"),
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_garbage_values(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, case: str
) -> None:
    GARBAGE[case](raw)
    status = _status(server.url)
    worker = _worker(site_server, tmp_path / "w", server.url)
    if case == "meta-not-utf8":  # --status does not read meta
        assert status.returncode == 0, status.stderr
    else:
        _one_line(status, 1, "damaged")
    _one_line(worker, 1, "damaged")


ROWS: dict[str, Callable[[redis.Redis, str], object]] = {
    "row-a-string": lambda r, k: _retype(r, P + k, "string"),
    "row-a-list": lambda r, k: _retype(r, P + k, "list"),
    "row-depth-not-a-number": lambda r, k: r.hset(P + k, "depth", "deep"),
    "row-without-kind": lambda r, k: r.hdel(P + k, "kind"),
    "row-of-an-unknown-state": lambda r, k: r.hset(P + k, "state", "exploded"),
    "row-not-utf8": lambda r, k: r.hset(P + k, "referrer", b"\xff\xfe"),
    "aliases-a-string": lambda r, k: r.set(P + "al:" + k[2:], "x"),
    "redirects-a-hash": lambda r, k: r.hset(P + "rd:" + k[2:], "x", "y"),
}


@pytest.mark.parametrize("case", sorted(ROWS))
def test_damaged_rows(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, case: str
) -> None:
    ROWS[case](raw, _seed(raw))
    done = _worker(site_server, tmp_path / "w", server.url, CRAWL, "--refresh")
    if case == "redirects-a-hash":  # read only for a page some URL redirected to: may go unseen
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr[-3000:]
    else:
        _one_line(done, 1, "damaged")
    assert _status(server.url).returncode == 0  # --status reads no row


@pytest.mark.parametrize(("suffix", "kind"), [(":next", "hash"), (":lock", "list")])
def test_a_host_clock_of_the_wrong_type(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, suffix: str, kind: str
) -> None:
    """Met inside a URL's work (the host's clock, §6.4): that URL fails, the next claim stops the
    worker with the one line."""
    _retype(raw, f"{P}host:127.0.0.1:{site_server.port}{suffix}", kind)
    _one_line(_worker(site_server, tmp_path / "w", server.url, CRAWL, "--refresh"), 1, "damaged")


def test_a_worker_count_of_the_wrong_type(raw: redis.Redis, server: RedisServer) -> None:
    worker = raw.hkeys(P + "workers")[0].decode()
    _retype(raw, P + "wc:" + worker, "list")
    _one_line(_status(server.url), 1, "damaged")


def test_a_frontier_entry_that_is_not_a_url(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path
) -> None:
    """A queued key that is no URL: the worker records it failed (or refuses the crawl), never a
    traceback."""
    key = "not a url\n\x01"
    row = {
        "kind": "page",
        "state": "pending",
        "depth": "1",
        "priority": "1",
        "seq": "999999",
        "attempts": "0",
    }
    raw.hset(P + "u:" + key, mapping=row)
    raw.zadd(P + "seen", {key: 999999})
    raw.zadd(P + "q:page", {key: 1})
    raw.hincrby(P + "counts", "pending:page", 1)
    raw.hincrby(P + "counts", "done:page", -1)  # a finished crawl's counts plus one pending
    done = _worker(site_server, tmp_path / "w", server.url)
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr[-3000:]
    if done.returncode == 1:
        _one_line(done, 1)


def _robots_key(r: redis.Redis) -> str:
    return next(k.decode() for k in r.keys(P + "robots:*") if not k.endswith(b":lock"))


ROBOTS: dict[str, Callable[[redis.Redis, str], object]] = {
    "not-json": lambda r, k: r.set(k, "{oops"),
    "wrong-shape": lambda r, k: r.set(k, '{"rules": [1], "crawl_delay": "soon"}'),
    "not-utf8": lambda r, k: r.set(k, b"\xff"),
    "nested-deep": lambda r, k: r.set(k, "[" * 5000 + "]" * 5000),  # RecursionError (old: URLs failed)
    "a-hash": lambda r, k: _retype(r, k, "hash"),
    "a-lock-that-never-expires": lambda r, k: (r.delete(k), _retype(r, k + ":lock", "set")),
}


@pytest.mark.parametrize("case", sorted(ROBOTS))
def test_a_damaged_robots_cache_is_read_again(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, case: str
) -> None:
    """The cached robots.txt of a host damaged: read from the host again and the entry replaced;
    no URL fails for it, no worker waits for a lock that never expires."""
    ROBOTS[case](raw, _robots_key(raw))
    done = _worker(site_server, tmp_path / "w", server.url, CRAWL, "--refresh", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert [i for i in report["items"] if i["outcome"] == "failed"] == []
    assert raw.type(_robots_key(raw)) == b"string"


# ---- bad redis:// URLs and what listens at the port


@contextlib.contextmanager
def _silent_server() -> Iterator[int]:
    """A loopback server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        listener.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


URLS: dict[str, tuple[Callable[[RedisServer, FixtureServer], str], int, str]] = {
    "no-host": (lambda s, f: "redis:///0", 2, "no host"),
    "empty": (lambda s, f: "redis://", 2, "no host"),
    "port-not-a-number": (lambda s, f: "redis://127.0.0.1:x/0", 2, "not a Redis URL"),
    "port-out-of-range": (lambda s, f: "redis://127.0.0.1:70000/0", 2, "not a Redis URL"),
    "db-out-of-range": (lambda s, f: f"redis://127.0.0.1:{s.port}/99", 2, "no such DB"),
    "db-not-a-number": (lambda s, f: f"redis://127.0.0.1:{s.port}/x", 2, "is a number"),
    "db-negative": (lambda s, f: f"redis://127.0.0.1:{s.port}/-1", 2, "is a number"),
    "a-query": (lambda s, f: f"redis://127.0.0.1:{s.port}/0?db=3", 2, "nothing may follow"),
    "a-wrong-password": (lambda s, f: f"redis://someone:secret@127.0.0.1:{s.port}/0", 2, "credentials"),
    "unix-socket": (lambda s, f: "unix:///tmp/redis.sock", 2, "takes redis://"),
    "rediss-to-plain-redis": (lambda s, f: f"rediss://127.0.0.1:{s.port}/0", 4, "cannot reach"),
    "closed-port": (lambda s, f: f"redis://127.0.0.1:{_closed_port()}/0", 4, "cannot reach"),
    "an-http-server": (lambda s, f: f"redis://127.0.0.1:{f.port}/0", 4, "not a Redis server"),
}


@pytest.mark.parametrize("case", sorted(URLS))
def test_bad_redis_urls(server: RedisServer, site_server: FixtureServer, tmp_path: Path, case: str) -> None:
    make, code, words = URLS[case]
    url = make(server, site_server)
    _one_line(_status(url), code, words)
    _one_line(_worker(site_server, tmp_path / "w", url), code, words)
    assert not (tmp_path / "w").exists()
    if "secret" in url:
        assert "secret" not in _status(url).stderr  # a password is never echoed


def test_a_server_that_never_answers(site_server: FixtureServer, tmp_path: Path) -> None:
    with _silent_server() as port:
        url = f"redis://127.0.0.1:{port}/0"
        _one_line(_status(url), 4, "cannot reach")
        _one_line(_worker(site_server, tmp_path / "w", url), 4, "cannot reach")
    assert not (tmp_path / "w").exists()


# ---- a refused worker leaves its folder as it found it


def _walk(root: Path) -> dict[str, tuple[int, str]]:
    """Every path below ``root`` with its mode and its bytes' SHA-256 (folders: their mode only)."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else ""
        out[p.relative_to(root).as_posix()] = (st.st_mode, digest)
    return out


REFUSALS: dict[str, Callable[[RedisServer], tuple[str, list[str], int]]] = {
    "other-scope-options": lambda s: (s.url, ["--depth", "5"], 2),
    "no-redis": lambda s: (f"redis://127.0.0.1:{_closed_port()}/0", [], 4),
    "bad-db": lambda s: (f"redis://127.0.0.1:{s.port}/99", [], 2),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
@pytest.mark.parametrize("folder", ["missing", "empty", "a-shard"])
def test_a_refused_worker_leaves_its_folder_as_it_found_it(
    raw: redis.Redis, server: RedisServer, site_server: FixtureServer, tmp_path: Path, case: str, folder: str
) -> None:
    out = tmp_path / "w"
    if folder == "empty":
        out.mkdir()
    elif folder == "a-shard":  # a worker's shard, to be resumed
        assert _worker(site_server, out, server.url).returncode == 0
    before = _walk(out) if out.exists() else None
    url, extra, code = REFUSALS[case](server)
    done = _run("capture", site_server.url, "-o", out, "--state", url, "--crawl", CRAWL, "--no-render",
                "--depth", "2", "--delay", "0", *extra)  # fmt: skip
    _one_line(done, code)
    assert (_walk(out) if out.exists() else None) == before


def test_a_crawl_name_with_a_newline_is_one_line(
    server: RedisServer, site_server: FixtureServer, tmp_path: Path
) -> None:
    name = "a\nb"
    _one_line(_status(server.url, name), 2, "--crawl 'a\\nb'")
    _one_line(_worker(site_server, tmp_path / "w", server.url, name), 2, "--crawl 'a\\nb'")
    assert not (tmp_path / "w").exists()


# ---- damage while a worker works


@pytest.fixture(scope="module")
def slow_site() -> Iterator[FixtureServer]:
    with FixtureServer(FixtureConfig(latency=0.05)) as s:
        yield s


@pytest.mark.parametrize("damage", ["counts", "q:page", "leases"])
def test_damage_in_the_middle_of_a_crawl(
    server: RedisServer, slow_site: FixtureServer, tmp_path: Path, damage: str
) -> None:
    crawl = f"mid-{damage.replace(':', '-')}"
    p = f"archiver:{{{crawl}}}:"
    r = server.client()
    args = [sys.executable, "-m", "archiver", "capture", slow_site.url, "-o", str(tmp_path / "w"),
            "--state", server.url, "--crawl", crawl, "--no-render", "--depth", "10", "--delay", "0",
            "--concurrency", "1"]  # fmt: skip
    proc = subprocess.Popen(
        args, env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + HANG
        while int(r.hget(p + "counts", "done:page") or 0) < 2:  # under way
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.02)
        _retype(r, p + damage, "string")
        _out, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and "Traceback" not in err, err[-3000:]
    assert err.startswith("archiver: ") and err.count("\n") == 1 and "damaged" in err, err[-3000:]
