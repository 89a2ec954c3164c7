"""The fetcher's short cuts on a request's common path (archiver/capture/http1.py, fetch.py) give
what the general path gives for the same bytes: a ``Content-Length`` body that arrived with its head
taken whole (:meth:`http1.Response.arrived`) against the body read through ``aiter_raw``, a kept
connection taken without a coroutine (:meth:`http1.Pool._usable`) against :meth:`~http1.Pool._take`,
hostile answers included (a length that lies, chunked, gzip, a 304 with a body, a 64 KB header, a
connection closed mid-body); and the head read in one loop meets every answer as before."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.capture import http1
from archiver.capture.fetch import AddressGuard, Fetcher, FetchPolicy, FetchResult


def _run(
    parts: list[bytes], *, general: bool, fetches: int = 2, close: bool = False, **policy: Any
) -> list[tuple[Any, ...]]:
    """``fetches`` requests over one server that answers each with ``parts`` (written one by one, a
    moment apart; then closes the connection when ``close``), by the short cuts or (``general``)
    with them turned off; what each gave, and how many connections were kept after it."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                for i, part in enumerate(parts):
                    if i:
                        await asyncio.sleep(0.02)
                    writer.write(part)
                    await writer.drain()
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def go() -> list[tuple[Any, ...]]:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        rules = dict(delay=0.0, retries=0, obey_robots=False, read_timeout=0.2, total_timeout=3.0)
        out = []
        async with Fetcher(FetchPolicy(**{**rules, **policy}), guard=guard) as f:  # type: ignore[arg-type]
            for i in range(fetches):
                r = await f.fetch(base + f"p{i}")
                out.append((*_seen(r), sum(map(len, f.pool.idle.values())), f.bytes))
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)
        return out

    with pytest.MonkeyPatch.context() as mp:
        if general:
            mp.setattr(http1.Response, "arrived", lambda self, most: None)
            mp.setattr(http1.Pool, "_usable", lambda self, origin: None)
        return asyncio.run(go())


def _seen(r: FetchResult) -> tuple[Any, ...]:
    body = r.read() if r.outcome == "ok" else r.body
    r.discard()
    return (r.outcome, r.status, r.reason, r.media_type, r.charset, r.headers, body, r.size)


_GZ = gzip.compress(b"<p>hello</p>" * 50)
_ANSWERS = {
    "200 with a length": [b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"],
    "an empty body": [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"],
    "the body after the head": [b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe", b"llo"],
    "a length that says less": [b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nhello"],
    "a length that says more": [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nhello"],
    "closed mid-body": [b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nConnection: close\r\n\r\nhello"],
    "chunked": [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"],
    "gzip": [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(_GZ) + _GZ],
    "gzip that lies": [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 5\r\n\r\nhello"],
    "a 304": [b'HTTP/1.1 304 Not Modified\r\nETag: "x"\r\n\r\n'],
    "a 304 with a body": [b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nhello"],
    "a 404 with a body": [b"HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nhello"],
    "a 64 KB header": [
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (64 << 10) + b"\r\nContent-Length: 2\r\n\r\nok"
    ],
    "a header just within": [
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 65000 + b"\r\nContent-Length: 2\r\n\r\nok"
    ],
    "LF only": [b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok"],
    "interim first": [b"HTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    "closed mid-head": [b"HTTP/1.1 200 OK\r\nContent-Le"],
    "HTTP/1.0": [b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"],
    "Connection: close": [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"],
    "over the cap": [b"HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n" + b"x" * 20],
}


@pytest.mark.parametrize("name", sorted(_ANSWERS))
def test_hostile_answers_give_what_the_general_path_gives(name: str) -> None:
    parts = _ANSWERS[name]
    cap = dict(size_cap=10) if name == "over the cap" else {}
    close = name.startswith("closed")
    fast = _run(parts, general=False, close=close, **cap)
    assert fast == _run(parts, general=True, close=close, **cap)


def test_the_short_cuts_are_taken_on_the_common_path() -> None:
    """A body that arrived with its head, over a kept connection: neither generator nor _take."""
    calls: list[str] = []
    take, aiter_raw = http1.Pool._take, http1.Response.aiter_raw

    async def counted_take(self: http1.Pool, origin: tuple[str, str, int]) -> http1.Connection | None:
        calls.append("take")
        return await take(self, origin)

    def counted_aiter_raw(self: http1.Response) -> Any:
        calls.append("aiter_raw")
        return aiter_raw(self)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(http1.Pool, "_take", counted_take)
        mp.setattr(http1.Response, "aiter_raw", counted_aiter_raw)
        got = _run(_ANSWERS["200 with a length"], general=False, fetches=3)
    assert [g[6] for g in got] == [b"hello"] * 3
    assert calls == ["take"]  # the first request only: no connection to keep yet


@pytest.mark.parametrize(
    ("parts", "reason"),
    [
        ([b"HTTP/1.1 200 OK\r\nContent-Le"], "in the middle of a response head"),
        ([b"HTTP/1.1 101 Switching Protocols\r\n\r\n"], "switched protocols"),
        ([b"HTTP/1.1 100 Continue\r\n\r\n" * 9 + b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"], "interim"),
        ([b"HTTP/1.1 200 OK\r\nX: " + b"a" * (70 << 10)], "response head over"),
        ([b"HTTP/1.1 200 OK\r\n", b"X: y\r\n", b"\r\n"], ""),
    ],
)
def test_the_head_read_in_one_loop_meets_each_answer(parts: list[bytes], reason: str) -> None:
    (got,) = _run(parts, general=False, fetches=1, close=True)
    assert reason in got[2], got
    assert (got[0] == "ok") == (not reason)


def test_eight_interim_responses_are_still_read_through() -> None:
    parts = [b"HTTP/1.1 100 Continue\r\n\r\n" * 8 + b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]
    (got,) = _run(parts, general=False, fetches=1)
    assert (got[0], got[6]) == ("ok", b"ok")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.binary(max_size=300),
    said=st.integers(0, 320),
    split=st.integers(0, 400),
    status=st.sampled_from([200, 203, 304, 404, 500]),
    cap=st.sampled_from([None, 0, 100, 1 << 20]),
)
def test_any_length_body_and_split_gives_what_the_general_path_gives(
    body: bytes, said: int, split: int, status: int, cap: int | None
) -> None:
    raw = b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n" % (status, said) + body
    parts = [raw[:split], raw[split:]] if 0 < split < len(raw) else [raw]
    assert _run(parts, general=False, size_cap=cap) == _run(parts, general=True, size_cap=cap)
