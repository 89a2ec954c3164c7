"""The fetcher's HTTP/1.1 client: requests written and responses read by archiver itself.

httpx through httpcore and h11 spent about 1.6 ms of CPU on each request of a capture (the
bench's generated site, loopback nginx), more than wget spends on a whole URL; this client spends a
few tens of microseconds. It speaks only what a capture sends: ``GET`` over HTTP/1.1 with keep-alive,
one request at a time per connection, on the streams of a network backend (the address guard's
:class:`~archiver.capture.guard.GuardedBackend`, which may wrap a test's), TLS by the stream's
``start_tls``; nothing of httpx, httpcore, h11 or anyio is imported. No proxies, no cookies, no
HTTP/2, no redirects (the fetcher follows them itself).

The parsing is pure (:mod:`.http1_parse`, re-exported here: :func:`parse_head`, :func:`framing`,
:func:`chunk_size`, :func:`request_head`)
and bounded, since every byte of a response may lie:

- a response head is at most :data:`MAX_HEAD` bytes and :data:`MAX_FIELDS` fields; a status line
  must be ``HTTP/1.x NNN reason``; a field line ``name: value`` with a token name, no NUL or bare CR
  in the value (obsolete line folding is joined with a space, RFC 9112 §5.2);
- the body's framing is RFC 9112 §6.3's: none for 1xx, 204 and 304; ``Transfer-Encoding`` ending in
  ``chunked``: chunked; another ``Transfer-Encoding``: until the connection closes; else a
  ``Content-Length`` (several that differ, or one that is not digits, is an error); else until the
  connection closes. A chunk-size line is at most :data:`MAX_LINE` bytes of hex, trailers at most
  :data:`MAX_HEAD` bytes;
- interim 1xx responses (100, 103) are read and dropped, at most :data:`MAX_INTERIM` of them;
- a body that ends before its length or its last chunk is an error (:class:`RemoteProtocolError`).

Errors are :class:`OSError` subclasses (a network error to the fetcher, retried by its rules:
:class:`NetworkError`, :class:`ConnectError` when a connection cannot be opened) or, for timeouts,
:class:`TimeoutError` subclasses named as httpx named them (``ConnectTimeout``, ``ReadTimeout``,
``WriteTimeout``); the streams raise these themselves. A connection is kept for the next request
only when its response was read to the end, is HTTP/1.1 and did not say ``Connection: close``; a
kept one that the server has closed (or that holds unasked-for bytes) is dropped before use, and a
request whose kept connection fails before the first byte of an answer is sent again once on a new
connection (a GET is safe to repeat).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from archiver.capture.deadline import Deadline
from archiver.capture.http1_parse import (  # the pure half, re-exported
    MAX_FIELDS,
    MAX_HEAD,
    MAX_INTERIM,
    MAX_LINE,
    ConnectError,
    ConnectTimeout,
    Head,
    LocalProtocolError,
    NetworkError,
    ReadTimeout,
    RemoteProtocolError,
    WriteTimeout,
    chunk_size,
    framing,
    parse_head,
    request_head,
    reusable,
    split_url,
)

__all__ = [
    "MAX_FIELDS",
    "MAX_HEAD",
    "ConnectError",
    "ConnectTimeout",
    "Deadline",
    "Head",
    "Headers",
    "LocalProtocolError",
    "NetworkError",
    "Pool",
    "ReadTimeout",
    "RemoteProtocolError",
    "Response",
    "WriteTimeout",
    "chunk_size",
    "framing",
    "parse_head",
    "request_head",
]

READ_SIZE = 64 << 10
KEEP_IDLE = 5.0  # seconds an idle connection is kept (httpx's default keep-alive expiry)
MAX_IDLE = 32  # idle connections kept in all

# ---- the objects the fetcher and the WARC recorder read


class Headers:
    """A response's fields: ``raw`` pairs as received (never changed); :meth:`get` joins repeated
    fields with ``", "`` and :meth:`items` yields one (lowercase name, value) per field name, as
    httpx's did. The fields are merged once, on the first question (a fetch asks several)."""

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw
        self._merged: dict[str, str] | None = None

    def _by_name(self) -> dict[str, str]:
        merged = self._merged
        if merged is None:
            merged = self._merged = {}
            for name, value in self.raw:  # names are tokens (ASCII): str.lower is bytes.lower
                key, text = name.decode("latin-1").lower(), value.decode("latin-1")
                merged[key] = f"{merged[key]}, {text}" if key in merged else text
        return merged

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._by_name().get(name.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return list(self._by_name().items())

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._by_name()


class _URL:
    """A request's URL as the WARC recorder reads it: ``str()`` its text, ``raw_path`` its target.
    (This module's classes are plain ones: a dataclass's generated methods were compiled from source
    at every start of a capture.)"""

    __slots__ = ("raw_path", "text")

    def __init__(self, text: str, raw_path: bytes) -> None:
        self.text = text
        self.raw_path = raw_path

    def __str__(self) -> str:
        return self.text


class _RequestHeaders:
    """The request's fields as sent, ``raw`` (``Host`` first): built when asked (by the WARC
    recorder only)."""

    def __init__(self, host_header: str, headers: list[tuple[str, str]]) -> None:
        self._host = host_header
        self._headers = headers

    @functools.cached_property
    def raw(self) -> list[tuple[bytes, bytes]]:
        return [(b"Host", self._host.encode())] + [
            (n.encode("latin-1"), v.encode("latin-1", "replace")) for n, v in self._headers
        ]


class Request:
    """The request as sent (``method``, ``url`` with ``raw_path``, ``headers.raw``): what the WARC
    recorder writes as the request record."""

    __slots__ = ("headers", "method", "url")

    def __init__(self, method: str, url: _URL, headers: _RequestHeaders) -> None:
        self.method = method
        self.url = url
        self.headers = headers


# ---- IO: the deadline of a request, connections and the pool


#: read(n, timeout), write(b, timeout), aclose(), start_tls(...), get_extra_info(name); raising this
#: module's errors (the guard's streams, :mod:`.guard`)
Stream = Any


class Connection:
    """One connection: a stream, the bytes read past the last response, and whether it may be used
    again."""

    def __init__(self, stream: Stream, origin: tuple[str, str, int], timeout: float) -> None:
        self.stream = stream
        self.origin = origin
        self.timeout = timeout
        self.buffer = b""
        self.idle_since = time.monotonic()
        self.closed = False
        #: the deadline of the request under way (:class:`Deadline`), if it has one
        self.deadline: Deadline | None = None

    async def read_some(self) -> bytes:
        deadline = self.deadline
        if deadline is None:
            data: bytes = await self.stream.read(READ_SIZE, self.timeout)
            return data
        deadline.read_at = deadline._loop.time() + deadline.read
        try:
            data = await self.stream.read(READ_SIZE, None)
        except asyncio.CancelledError:
            if deadline.read_timed_out():
                raise ReadTimeout("timed out reading") from None
            raise
        finally:
            deadline.read_at = None
        return data

    async def write(self, data: bytes) -> None:
        await self.stream.write(data, self.timeout)

    async def read_head(self) -> Head:
        """The next final response head (1xx ones dropped): blocks of bytes up to an empty line
        (CRLF CRLF or LF LF), at most :data:`MAX_HEAD` each. :meth:`read_some` is spelled out in
        the loop: a coroutine less to create and resume on every request (~4 K instructions)."""
        interim = 0
        searched = 0
        while True:
            buf = self.buffer
            crlf = buf.find(b"\r\n\r\n", searched - 3 if searched > 3 else 0)  # max() spelled out (Deadline)
            lf = buf.find(b"\n\n", searched - 1 if searched > 1 else 0)
            if crlf >= 0 or lf >= 0:  # the first of the two that is there
                end, mark = (crlf, 4) if lf < 0 or 0 <= crlf < lf else (lf, 2)
                if end > MAX_HEAD:
                    raise RemoteProtocolError(f"a response head over {MAX_HEAD} bytes")
                self.buffer = buf[end + mark :]
                head = parse_head(buf[:end])
                if head.status >= 200:
                    return head
                if head.status == 101:
                    raise RemoteProtocolError("the server switched protocols (101) unasked")
                interim += 1
                if interim > MAX_INTERIM:
                    raise RemoteProtocolError(f"more than {MAX_INTERIM} interim (1xx) responses")
                searched = 0
                continue
            if len(buf) > MAX_HEAD:
                raise RemoteProtocolError(f"a response head over {MAX_HEAD} bytes")
            searched = len(buf)
            deadline = self.deadline  # read_some()
            if deadline is None:
                data: bytes = await self.stream.read(READ_SIZE, self.timeout)
            else:
                deadline.read_at = deadline._loop.time() + deadline.read
                try:
                    data = await self.stream.read(READ_SIZE, None)
                except asyncio.CancelledError:
                    if deadline.read_timed_out():
                        raise ReadTimeout("timed out reading") from None
                    raise
                finally:
                    deadline.read_at = None
            if not data:
                if buf:
                    raise RemoteProtocolError("the connection closed in the middle of a response head")
                raise _Unanswered("the server closed the connection without answering")
            self.buffer = buf + data

    async def _read_line(self) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0:
                if end > MAX_LINE:
                    raise RemoteProtocolError("an overlong chunk-size line")
                line, self.buffer = self.buffer[: end + 1], self.buffer[end + 1 :]
                return line
            if len(self.buffer) > MAX_LINE:
                raise RemoteProtocolError("an overlong chunk-size line")
            data = await self.read_some()
            if not data:
                raise RemoteProtocolError("the connection closed in the middle of a chunked body")
            self.buffer += data

    async def _exactly(self, size: int, short: str) -> AsyncIterator[bytes]:
        """The next ``size`` bytes in pieces; a connection that ends first raises ``short``
        (``{}`` there: the bytes still missing)."""
        left = size
        while left > 0:
            if not self.buffer:
                data = await self.read_some()
                if not data:
                    raise RemoteProtocolError(short.format(left))
                self.buffer = data
            piece, self.buffer = self.buffer[:left], self.buffer[left:]
            left -= len(piece)
            yield piece

    async def body(self, kind: str, length: int) -> AsyncIterator[bytes]:
        """The raw body (content coding still on) in pieces, by its framing."""
        if kind == "length":
            async for piece in self._exactly(length, "the body ended {} bytes before its Content-Length"):
                yield piece
        elif kind == "chunked":
            while True:
                size = chunk_size(await self._read_line())
                if size == 0:
                    trailers = 0
                    while (line := await self._read_line()) not in (b"\r\n", b"\n"):
                        trailers += len(line)
                        if trailers > MAX_HEAD:
                            raise RemoteProtocolError(f"trailers over {MAX_HEAD} bytes")
                    return
                async for piece in self._exactly(size, "the connection closed in the middle of a chunk"):
                    yield piece
                if (await self._read_line()) not in (b"\r\n", b"\n"):
                    raise RemoteProtocolError("a chunk longer than its size")
        elif kind == "close":
            if self.buffer:
                piece, self.buffer = self.buffer, b""
                yield piece
            while data := await self.read_some():
                yield data

    async def aclose(self) -> None:
        if not self.closed:
            self.closed = True
            with contextlib.suppress(Exception):
                await self.stream.aclose()


class _Unanswered(NetworkError):
    """A connection closed before any byte of a response: a kept one may just have expired."""


class Response:
    """A response whose head has arrived; :meth:`aiter_raw` reads its body once, as received.
    ``request`` (the request as sent) and ``extensions`` are built when asked: only the WARC
    recorder asks, and a conditional GET answered 304 costs ~60 K instructions in all."""

    def __init__(
        self,
        sent: tuple[str, bytes, str, list[tuple[str, str]]],
        head: Head,
        conn: Connection,
        on_done: Callable[[Connection, bool], Connection | None],
    ) -> None:
        self._sent = sent  # (url, target, Host header, headers): :attr:`request`
        self.status_code = head.status
        self.headers = Headers(head.fields)
        self._head = head
        self._conn = conn
        self._kind, self._length = framing(head)
        #: the response has no body by its framing (1xx, 204, 304): nothing to read
        self.bodiless = self._kind == "none"
        self._on_done = on_done
        self._finished = False
        self._read = False

    @functools.cached_property
    def request(self) -> Request:
        url, target, host_header, headers = self._sent
        return Request("GET", _URL(url, target), _RequestHeaders(host_header, headers))

    @functools.cached_property
    def extensions(self) -> dict[str, Any]:
        head = self._head
        stream = self._conn.stream
        return {"http_version": head.version, "reason_phrase": head.reason, "network_stream": stream}

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        if self._read:
            raise RuntimeError("the body was read already")
        self._read = True
        async for piece in self._conn.body(self._kind, self._length):
            yield piece
        self._finished = True

    def arrived(self, most: int) -> bytes | None:
        """The whole body, read, if it is a ``Content-Length`` body of at most ``most`` bytes that
        has arrived already (with the head, as a small one does): the one piece :meth:`aiter_raw`
        would yield, without its three generators. Else None, and nothing is read."""
        conn = self._conn
        length = self._length
        if self._read or self._kind != "length" or length > most or len(conn.buffer) < length:
            return None
        self._read = self._finished = True
        piece, conn.buffer = conn.buffer[:length], conn.buffer[length:]
        return piece

    async def aclose(self) -> None:
        """Give the connection back (kept only if the body was read to its end) or close it."""
        if self._on_done is not None:
            done, self._on_done = self._on_done, None  # type: ignore[assignment]
            if self._kind == "none":
                self._finished = True
            closing = done(self._conn, self._finished and reusable(self._head, self._kind))
            if closing is not None:
                await closing.aclose()


Connect = Callable[[str, str, int, float], Awaitable[Stream]]


class Pool:
    """Connections by origin: ``connect(scheme, host, port, timeout)`` opens a stream (TLS done for
    https); idle ones are kept (:data:`MAX_IDLE`, :data:`KEEP_IDLE` seconds) for the next request."""

    def __init__(self, connect: Connect, connect_timeout: float, read_timeout: float) -> None:
        self.connect = connect
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.idle: dict[tuple[str, str, int], list[Connection]] = {}

    def _usable(self, origin: tuple[str, str, int]) -> Connection | None:
        """The last idle connection to ``origin``, taken, if it may carry a request (not expired,
        not closed by the server, no unasked-for bytes); else None and nothing is taken. No await:
        the common case of :meth:`_take` without a coroutine."""
        kept = self.idle.get(origin)
        if not kept:
            return None
        conn = kept[-1]
        stale = time.monotonic() - conn.idle_since > KEEP_IDLE or bool(conn.buffer)
        if not stale:
            with contextlib.suppress(Exception):
                stale = bool(conn.stream.get_extra_info("is_readable"))
        if stale:
            return None
        kept.pop()
        return conn

    async def _take(self, origin: tuple[str, str, int]) -> Connection | None:
        kept = self.idle.get(origin)
        now = time.monotonic()
        while kept:
            conn = kept.pop()
            stream = conn.stream
            stale = now - conn.idle_since > KEEP_IDLE or bool(conn.buffer)
            if not stale:
                with contextlib.suppress(Exception):
                    stale = bool(stream.get_extra_info("is_readable"))
            if not stale:
                return conn
            await conn.aclose()
        return None

    async def _open(self, origin: tuple[str, str, int]) -> Connection:
        scheme, host, port = origin
        stream = await self.connect(scheme, host, port, self.connect_timeout)
        return Connection(stream, origin, self.read_timeout)

    def _give_back(self, conn: Connection, keep: bool) -> Connection | None:
        """Keep ``conn`` idle (``keep``) or not; the connection the caller then closes, if any
        (``conn`` itself, or the oldest idle one of all past :data:`MAX_IDLE`). No await: a kept
        connection's common case needs none."""
        conn.deadline = None
        if not keep or conn.closed:
            return conn
        conn.idle_since = time.monotonic()
        oldest = None
        if sum(map(len, self.idle.values())) >= MAX_IDLE:  # drop the oldest idle connection of all
            oldest = min((c for cs in self.idle.values() for c in cs), key=lambda c: c.idle_since)
            self.idle[oldest.origin].remove(oldest)
        self.idle.setdefault(conn.origin, []).append(conn)
        return oldest

    @contextlib.asynccontextmanager
    async def stream(
        self, url: str, headers: list[tuple[str, str]], deadline: Deadline | None = None
    ) -> AsyncIterator[Response]:
        """Send ``GET url`` with ``headers`` (after ``Host``) and yield the response once its head
        has arrived; the body is read through :meth:`Response.aiter_raw` inside the block. Reads
        wait at most ``read_timeout`` each, by the stream's own timeout, or by ``deadline`` (the
        request's, :class:`Deadline`) when given."""
        response = await self.send(url, headers, deadline)
        try:
            yield response
        except BaseException:
            response._finished = False
            await response.aclose()
            raise
        await response.aclose()

    async def send(
        self, url: str, headers: list[tuple[str, str]], deadline: Deadline | None = None
    ) -> Response:
        """:meth:`stream` without the block: the caller reads the response and closes it
        (:meth:`Response.aclose`, in a ``finally``: ``_finished`` false when it failed)."""
        scheme, host, port, host_header, target = split_url(url)
        head_bytes = request_head(target, host_header, headers)
        origin = (scheme, host, port)
        conn = self._usable(origin)
        if conn is None:
            conn = await self._take(origin)
        fresh = conn is None
        if conn is None:
            conn = await self._open(origin)
        conn.deadline = deadline
        try:
            try:
                await conn.stream.write(head_bytes, conn.timeout)  # conn.write(), a coroutine less
                head = await conn.read_head()
            except (_Unanswered, NetworkError):
                if fresh:
                    raise
                await conn.aclose()  # a kept connection the server had closed: once more, anew
                conn = await self._open(origin)
                conn.deadline = deadline
                await conn.write(head_bytes)
                head = await conn.read_head()
        except BaseException:
            conn.deadline = None
            await conn.aclose()
            raise
        return Response((url, target, host_header, headers), head, conn, self._give_back)

    async def aclose(self) -> None:
        for kept in self.idle.values():
            for conn in kept:
                await conn.aclose()
        self.idle.clear()
