"""The fetcher's own HTTP/1.1 client (archiver/capture/http1.py): the pure parsing as table-driven
vectors and properties, then hostile servers on 127.0.0.1 written as the attack, each met by the
fetcher with one outcome and a one-line reason (never a traceback), memory bounded, the connection
dropped."""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import pstats
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.capture import http1, http1_parse
from archiver.capture.fetch import AddressGuard, Fetcher, FetchPolicy, FetchResult

# ---- pure: vectors


@pytest.mark.parametrize(
    ("head", "status", "fields"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3", 200, [(b"Content-Length", b"3")]),
        (b"HTTP/1.0 404 Not Found\nX: y", 404, [(b"X", b"y")]),  # bare LF, as browsers read it
        (b"HTTP/1.1 204", 204, []),  # no reason phrase
        (b"HTTP/1.1 200 OK\r\nA:   spaced  \r\n", 200, [(b"A", b"spaced")]),
        (b"HTTP/1.1 200 OK\r\nA: one\r\n two\r\n\tthree", 200, [(b"A", b"one two three")]),  # folded
        (b"HTTP/1.1 200 OK\r\nA: 1\r\nA: 2", 200, [(b"A", b"1"), (b"A", b"2")]),
    ],
)
def test_heads_that_parse(head: bytes, status: int, fields: list[tuple[bytes, bytes]]) -> None:
    parsed = http1.parse_head(head)
    assert (parsed.status, parsed.fields) == (status, fields)


@pytest.mark.parametrize(
    "head",
    [
        b"",
        b"HTTP/2 200 OK",
        b"HTTP/1.1 20 OK",
        b"ICY 200 OK",
        b"HTTP/1.1 200 OK\r\nno colon here",
        b"HTTP/1.1 200 OK\r\nbad name: x",
        b"HTTP/1.1 200 OK\r\n folded first",
        b"HTTP/1.1 200 OK\r\nX: a\0b",
        b"HTTP/1.1 200 OK\r\nX: a\rb",
        b"HTTP/1.1 200 OK" + b"\r\nX: y" * (http1.MAX_FIELDS + 1),
    ],
)
def test_heads_that_do_not(head: bytes) -> None:
    with pytest.raises(http1.RemoteProtocolError):
        http1.parse_head(head)


@pytest.mark.parametrize(
    ("head", "framing", "reusable"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10", ("length", 10), True),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10, 10", ("length", 10), True),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 10", ("length", 10), True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked", ("chunked", 0), True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5", ("chunked", 0), True),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip", ("close", 0), False),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip", ("close", 0), False),
        (b"HTTP/1.1 200 OK", ("close", 0), False),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99", ("none", 0), True),
        (b"HTTP/1.1 204 No Content", ("none", 0), True),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 1", ("length", 1), False),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: keep-alive, Close", ("length", 1), False),
    ],
)
def test_framing_and_reuse(head: bytes, framing: tuple[str, int], reusable: bool) -> None:
    parsed = http1.parse_head(head)
    assert http1.framing(parsed) == framing
    assert http1.reusable(parsed, framing[0]) is reusable


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Length: 11",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10, 12",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0x10",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999",
    ],
)
def test_lengths_that_lie(head: bytes) -> None:
    with pytest.raises(http1.RemoteProtocolError):
        http1.framing(http1.parse_head(head))


@pytest.mark.parametrize(
    ("line", "size"), [(b"0\r\n", 0), (b"1a\r\n", 26), (b"FF;name=value\r\n", 255), (b"10 \r\n", 16)]
)
def test_chunk_sizes(line: bytes, size: int) -> None:
    assert http1.chunk_size(line) == size


@pytest.mark.parametrize("line", [b"\r\n", b"-1\r\n", b"g\r\n", b"1" * 17 + b"\r\n", b"0x10\r\n"])
def test_chunk_sizes_that_lie(line: bytes) -> None:
    with pytest.raises(http1.RemoteProtocolError):
        http1.chunk_size(line)


@pytest.mark.parametrize(
    ("url", "host_header", "target"),
    [
        ("http://a.localhost/", "a.localhost", b"/"),
        ("http://a.localhost", "a.localhost", b"/"),
        ("http://a.localhost:80/x?y=1#frag", "a.localhost", b"/x?y=1"),
        ("https://a.localhost:8443/", "a.localhost:8443", b"/"),
        ("http://[::1]:8080/p", "[::1]:8080", b"/p"),
        ("http://user:pw@h.localhost/p", "h.localhost", b"/p"),
        ("http://h.localhost/caf\u00e9 x", "h.localhost", b"/caf%C3%A9%20x"),
        ("http://h.localhost?q", "h.localhost", b"/?q"),
    ],
)
def test_split_url(url: str, host_header: str, target: bytes) -> None:
    assert http1.split_url(url)[3:] == (host_header, target)


@pytest.mark.parametrize(
    "url", ["ftp://h/", "http://", "http://h:0/", "http://h:99999/", "http://h:8x/", "http://h\r\nX: y/"]
)
def test_urls_that_cannot_be_requested(url: str) -> None:
    with pytest.raises(http1.LocalProtocolError):
        http1.split_url(url)


def test_a_header_value_cannot_inject_a_line() -> None:
    for name, value in (("X", "a\r\nInjected: 1"), ("X", "a\nb"), ("X", "a\0"), ("Bad Name", "v")):
        with pytest.raises(http1.LocalProtocolError):
            http1.request_head(b"/", "h", [(name, value)])
    assert http1.request_head(b"/p", "h:1", [("A", "b")]) == b"GET /p HTTP/1.1\r\nHost: h:1\r\nA: b\r\n\r\n"


@given(st.binary(max_size=300))
def test_any_bytes_parse_or_raise_the_protocol_error(data: bytes) -> None:
    try:
        head = http1.parse_head(b"HTTP/1.1 200 OK\r\n" + data)
        http1.framing(head)
    except http1.RemoteProtocolError:
        pass


_FIELD_NAMES = st.sampled_from([b"ETag", b"etag", b"Content-Type", b"X-A", b"x-a", b"Set-Cookie"])
_FIELD_VALUES = st.binary(max_size=20).map(lambda v: v.replace(b"\r", b"").replace(b"\n", b""))


@given(st.lists(st.tuples(_FIELD_NAMES, _FIELD_VALUES), max_size=8))
def test_headers_answer_as_a_merge_of_the_fields_in_order(raw: list[tuple[bytes, bytes]]) -> None:
    """The fields merged once (lowercase names, repeated ones joined with ", " in their order) give
    what reading them one by one gave."""
    headers = http1.Headers(raw)
    names = {n.decode().lower() for n, _ in raw}
    for name in names | {"absent"}:
        values = [v for n, v in raw if n.decode().lower() == name]
        expected = b", ".join(values).decode("latin-1") if values else None
        assert headers.get(name.upper()) == headers.get(name) == expected
        assert (name in headers) is bool(values)
    assert sorted(headers.items()) == sorted((n, headers.get(n)) for n in names)
    assert headers.raw == raw


@given(st.text(max_size=200))
def test_any_target_is_sent_as_visible_ascii(path: str) -> None:
    try:
        target = http1.split_url("http://h.localhost/" + path)[4]
    except http1.LocalProtocolError:
        return
    assert all(0x21 <= b <= 0x7E for b in target) and b"#" not in target


# ---- hostile servers, met through the fetcher


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(handler: Handler) -> tuple[asyncio.Server, str]:
    async def wrapped(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(wrapped, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"


def _fetch_from(handler: Handler, **policy: object) -> tuple[FetchResult, Fetcher]:
    async def go() -> tuple[FetchResult, Fetcher]:
        server, base = await _serve(handler)
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        rules = dict(delay=0.0, retries=0, obey_robots=False, read_timeout=1.0, total_timeout=5.0)
        async with Fetcher(FetchPolicy(**{**rules, **policy}), guard=guard) as f:  # type: ignore[arg-type]
            result = await f.fetch(base + "page")
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)
        return result, f

    return asyncio.run(go())


async def _request(reader: asyncio.StreamReader) -> bytes:
    return await reader.readuntil(b"\r\n\r\n")


def _answer(raw: bytes) -> Handler:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(raw)
        await writer.drain()

    return handler


def test_an_endless_head_stops_at_the_bound() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n")
        for _ in range(10_000):  # 10,000 × 100 bytes of one header line that never ends
            writer.write(b"X-Long: " + b"a" * 92)
            await writer.drain()

    r, _ = _fetch_from(handler)
    assert r.outcome == "failed" and f"over {http1.MAX_HEAD} bytes" in r.reason, r.reason


def test_ten_thousand_headers_are_refused() -> None:
    r, _ = _fetch_from(_answer(b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 10_000 + b"\r\n"))
    assert r.outcome == "failed" and "network error" in r.reason, r.reason


def test_a_huge_chunk_size_is_refused_before_any_reading() -> None:
    r, _ = _fetch_from(
        _answer(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFF\r\nab")
    )
    assert r.outcome == "failed" and "not a chunk size" in r.reason, r.reason


def test_a_body_shorter_than_its_length_is_a_failure_not_a_page() -> None:
    r, _ = _fetch_from(_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"))
    assert r.outcome == "failed" and "before its Content-Length" in r.reason, r.reason
    assert not r.body


def test_two_lengths_that_differ_are_refused() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 30\r\n\r\nabc"
    r, _ = _fetch_from(_answer(raw))
    assert r.outcome == "failed" and "different values" in r.reason, r.reason


def test_a_flood_of_interim_responses_is_refused() -> None:
    r, _ = _fetch_from(_answer(b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" * 50))
    assert r.outcome == "failed" and "interim" in r.reason, r.reason


def test_interim_responses_are_skipped() -> None:
    raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n"
    raw += b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    r, _ = _fetch_from(_answer(raw))
    assert (r.outcome, r.body) == ("ok", b"ok")


def test_chunked_with_extensions_and_trailers_reads_whole() -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    r, _ = _fetch_from(_answer(raw))
    assert (r.outcome, r.body) == ("ok", b"abcde")


def test_a_chunk_longer_than_its_size_is_refused() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n"
    r, _ = _fetch_from(_answer(raw))
    assert r.outcome == "failed" and "longer than its size" in r.reason, r.reason


def test_a_body_until_close_is_read_and_the_connection_not_kept() -> None:
    r, f = _fetch_from(_answer(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"))
    assert (r.outcome, r.body) == ("ok", b"until the end")
    assert not any(f.pool.idle.values())


def test_a_server_that_stops_mid_head_times_out() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-")
        await writer.drain()
        await asyncio.sleep(5)

    r, _ = _fetch_from(handler, read_timeout=0.3)
    assert r.outcome == "unconfirmed" and r.reason.startswith("timed out (ReadTimeout)"), r.reason


def test_a_closed_keep_alive_connection_is_replaced_once() -> None:
    """The server answers one request per connection but says nothing of closing: the second
    request finds the kept connection closed and is sent again, once, on a new one."""
    connections = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    async def go() -> list[FetchResult]:
        server, base = await _serve(handler)
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        policy = FetchPolicy(delay=0.0, retries=0, obey_robots=False)
        async with Fetcher(policy, guard=guard) as f:
            first = await f.fetch(base + "a")
            await asyncio.sleep(0.1)  # the server has closed its end by now
            second = await f.fetch(base + "b")
        server.close()
        return [first, second]

    results = asyncio.run(go())
    assert [r.outcome for r in results] == ["ok", "ok"], [r.reason for r in results]
    assert len(connections) == 2


def test_a_response_nobody_asked_for_is_not_read_as_the_next_answer() -> None:
    """A server that sends two responses to one request: the second is left in the connection,
    which is then not used again (the next request gets its own answer)."""
    bodies = iter([b"first", b"second"])

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _request(reader)
            body = next(bodies, b"later")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled")
            await writer.drain()

    async def go() -> list[bytes | None]:
        server, base = await _serve(handler)
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        policy = FetchPolicy(delay=0.0, retries=0, obey_robots=False)
        async with Fetcher(policy, guard=guard) as f:
            first = await f.fetch(base + "a")
            await asyncio.sleep(0.1)
            second = await f.fetch(base + "b")
        server.close()
        return [first.body, second.body]

    assert asyncio.run(go()) == [b"first", b"second"]


# ---- the cost of a 304 (an unchanged re-capture asks a thousand of them)


@pytest.fixture
def answers_304() -> Iterator[str]:
    """A server in a thread of its own (so that only the fetcher is profiled) answering every
    request on a kept-alive connection with a 304, as nginx does."""
    listener = socket.create_server(("127.0.0.1", 0))
    answer = (
        b"HTTP/1.1 304 Not Modified\r\nServer: t\r\nDate: Thu, 03 Dec 2026 04:00:00 GMT\r\n"
        b'Last-Modified: Tue, 01 Dec 2026 09:00:00 GMT\r\nConnection: keep-alive\r\nETag: "x"\r\n\r\n'
    )

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                    while b"\r\n\r\n" in data:
                        _, _, data = data.partition(b"\r\n\r\n")
                        conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    listener.close()
    thread.join(5)


def test_a_304_costs_the_fetcher_few_python_calls(answers_304: str) -> None:
    """Python calls a conditional fetch answered 304 costs (cProfile counts: deterministic, unlike
    times): no body reader or decoder for a response without a body, the fields merged once, plain
    comparisons for the request's checks, no timer for a write that went out at once: 535 before
    those, 365 after."""
    base = answers_304
    ask = {"If-None-Match": '"x"', "If-Modified-Since": "Tue, 01 Dec 2026 09:00:00 GMT"}

    async def go() -> float:
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        async with Fetcher(FetchPolicy(delay=0.0, retries=0, obey_robots=False), guard=guard) as f:
            assert (await f.fetch(base + "warm", conditional=ask)).status == 304  # the connection
            profile = cProfile.Profile()
            profile.enable()
            for i in range(200):
                result = await f.fetch(base + f"p/{i}.html", accept="text/html", conditional=ask)
                assert (result.status, result.outcome, result.body) == (304, "ok", b"")
            profile.disable()
        return pstats.Stats(profile).total_calls / 200  # type: ignore[attr-defined,no-any-return]

    calls = asyncio.run(go())
    assert calls < 450, calls


def test_a_request_arms_one_timer(answers_304: str) -> None:
    """One timer for the requests of a loop (http1.Deadline: the total timeout and each read's, on
    the loop's one timer, kept between requests), not an asyncio timeout for the request and another
    for its read: the loop's ``call_at`` counted over 100 conditional fetches answered 304 on a
    kept-alive connection (200 with those, 100 with a timer a request, none now: the timer armed by
    the first request still stands)."""
    base = answers_304
    ask = {"If-None-Match": '"x"'}

    async def go() -> int:
        guard = AddressGuard(frozenset({base.split("//")[1].rstrip("/")}))
        loop = asyncio.get_running_loop()
        armed = 0
        call_at = loop.call_at

        def counted(
            when: float, callback: Callable[..., object], *args: object, **kw: object
        ) -> asyncio.TimerHandle:
            nonlocal armed
            armed += 1
            return call_at(when, callback, *args, **kw)  # type: ignore[arg-type]

        async with Fetcher(FetchPolicy(delay=0.0, retries=0, obey_robots=False), guard=guard) as f:
            assert (await f.fetch(base + "warm", conditional=ask)).status == 304  # the connection
            loop.call_at = counted  # type: ignore[method-assign]
            try:
                for i in range(100):
                    assert (await f.fetch(base + f"p/{i}", conditional=ask)).status == 304
            finally:
                del loop.call_at  # type: ignore[method-assign]
        return armed

    assert asyncio.run(go()) <= 1


def test_a_slow_body_within_each_read_timeout_is_read_whole() -> None:
    """Each read has its own deadline (the request's one timer, moved by every read): a body sent
    in six pieces 0.1 s apart arrives whole with a 0.25 s read timeout, though it takes 0.6 s."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n")
        for piece in b"abcdef":
            await asyncio.sleep(0.1)
            writer.write(bytes((piece,)))
            await writer.drain()

    r, _ = _fetch_from(handler, read_timeout=0.25)
    assert (r.outcome, r.body) == ("ok", b"abcdef"), r.reason
    r, _ = _fetch_from(handler, read_timeout=0.25, total_timeout=0.35)
    assert (r.outcome, r.reason) == ("unconfirmed", "timed out (TimeoutError)")


def test_a_read_timeout_mid_body_is_a_read_timeout() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc")
        await writer.drain()
        await asyncio.sleep(3)

    r, _ = _fetch_from(handler, read_timeout=0.3)
    assert (r.outcome, r.reason) == ("unconfirmed", "timed out (ReadTimeout)")


_HEAD_PIECES = [
    b"HTTP/1.1 304 Not Modified", b"HTTP/1.0 200 OK", b"HTTP/1.1 200", b"HTTP/1.1 200 OK\r",
    b"Server: nginx", b'ETag:  "a b" ', b"X:", b"X: \t", b" folded", b"\tfold2", b"Bad Line",
    b"a b: c", b"Na\0me: v", b"N: v\0", b"N: v\rx", b"", b"\r", b"Content-Length: 5", b"k:v", b": v",
    b"N :v", b"a:b:c", b"X-Y_z~!#$%&'*+.^`|: w", b"N\xc3\xa9: v", b"N: \xff\t", b":", b"no colon",
    b"N:\t v \t", b"(n): v", b"N: a\tb",
]  # fmt: skip


@given(
    st.lists(st.sampled_from(_HEAD_PIECES), min_size=1, max_size=7),
    st.lists(st.sampled_from([b"\r\n", b"\n"]), min_size=7, max_size=7),
)
def test_the_fast_head_parse_is_the_line_by_line_one(pieces: list[bytes], ends: list[bytes]) -> None:
    """parse_head's one-pass path (every field line checked by one expression) gives what the line by
    line parse gives, the same head or the same error: also for names with bytes of no token, colons
    in values, spaces and tabs around them."""
    data = b"".join(p + e for p, e in zip(pieces, ends, strict=False)).removesuffix(ends[len(pieces) - 1])

    def outcome(parse: Callable[[bytes], http1.Head]) -> object:
        try:
            return parse(data)
        except http1.RemoteProtocolError as e:
            return str(e)

    assert outcome(http1.parse_head) == outcome(http1_parse._parse_lines)


@given(st.sampled_from(["http://h", "https://h:8443", "http://u:p@h:81", "http://[::1]:82", "HTTP://H"]),
       st.text(max_size=30))  # fmt: skip
def test_split_url_answers_alike_from_its_origin_cache(origin: str, tail: str) -> None:
    """The (scheme, host, port, Host) of an origin are worked out once and kept: a URL split with
    its origin known gives what it gives with the cache empty."""

    def split(url: str) -> object:
        try:
            return http1.split_url(url)
        except (http1.LocalProtocolError, UnicodeEncodeError) as e:
            return type(e)

    for url in (origin + "/" + tail, origin + "?" + tail, origin + "#" + tail, origin + tail):
        http1_parse._ORIGINS.clear()
        fresh = split(url)
        assert split(url) == fresh
        http1.split_url(origin + "/warm")
        assert split(url) == fresh
