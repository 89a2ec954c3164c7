"""The fetcher's HTTP/1.1 client: requests written and responses read by archiver itself.

httpx through httpcore and h11 spent about 1.6 ms of CPU on each request of a capture (the
bench's generated site, loopback nginx), more than wget spends on a whole URL; this client spends a
few tens of microseconds. It speaks only what a capture sends: ``GET`` over HTTP/1.1 with keep-alive,
one request at a time per connection, on the streams of a network backend (the address guard's
:class:`~archiver.capture.guard.GuardedBackend`, which may wrap a test's), TLS by the stream's
``start_tls``; nothing of httpx, httpcore, h11 or anyio is imported. No proxies, no cookies, no
HTTP/2, no redirects (the fetcher follows them itself).

The parsing is pure (:func:`parse_head`, :func:`framing`, :func:`chunk_size`, :func:`request_head`)
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
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_FIELDS",
    "MAX_HEAD",
    "ConnectError",
    "ConnectTimeout",
    "Deadline",
    "Head",
    "Headers",
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

MAX_HEAD = 64 << 10  # bytes of a response head (status line and fields), and of a trailer section
MAX_FIELDS = 256  # field lines of a response head
MAX_LINE = 1024  # bytes of a chunk-size line
MAX_INTERIM = 8  # 1xx responses before the final one
READ_SIZE = 64 << 10
KEEP_IDLE = 5.0  # seconds an idle connection is kept (httpx's default keep-alive expiry)
MAX_IDLE = 32  # idle connections kept in all


class RemoteProtocolError(ConnectionError):
    """The server broke HTTP/1.1 (a head that does not parse, a body cut short)."""


class LocalProtocolError(ValueError):
    """A request that cannot be written (a header value with a line break, a non-ASCII target)."""


class ConnectTimeout(TimeoutError):
    pass


class ReadTimeout(TimeoutError):
    pass


class WriteTimeout(TimeoutError):
    pass


class NetworkError(ConnectionError):
    """A stream that failed to read or write (the system's error as text)."""


class ConnectError(NetworkError):
    """A connection that could not be opened (refused, unreachable, a name that does not resolve,
    a TLS handshake that failed)."""


# ---- pure: the request


_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: the names the fetcher sends, known to be tokens (any other is checked by :data:`_TOKEN`)
_SENT_NAMES = frozenset(
    b"User-Agent Accept Accept-Encoding Accept-Language Referer If-None-Match If-Modified-Since".split()
)
_TARGET_SAFE_BYTES = b"!$&'()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~%"
_TARGET_SAFE = frozenset(_TARGET_SAFE_BYTES)
_NOT_IN_HOST = frozenset(" \t\r\n\0")


def _target_bytes(target: str) -> bytes:
    """The request target as sent: ASCII, every other byte percent-encoded (UTF-8), as browsers do."""
    raw = target.encode("utf-8")
    if not raw.translate(None, _TARGET_SAFE_BYTES):  # nothing left once the safe bytes are gone
        return raw
    return b"".join(bytes((b,)) if b in _TARGET_SAFE else b"%%%02X" % b for b in raw)


def split_url(url: str) -> tuple[str, str, int, str, bytes]:
    """(scheme, host, port, Host header, request target) of an absolute http(s) URL; the host
    without IPv6 brackets, the target path and query (``/`` when empty), never the fragment."""
    scheme, sep, rest = url.partition("://")
    end = len(rest)
    for mark in "/?#":  # the authority ends at the first of them
        found = rest.find(mark, 0, end)
        if found >= 0:
            end = found
    origin = url[: len(url) - len(rest) + end]
    known = _ORIGINS.get(origin)  # a run asks few origins, each many times
    if known is None:
        known = _origin(url, scheme, sep, rest[:end])
        if len(_ORIGINS) >= _MAX_ORIGINS:
            _ORIGINS.clear()
        _ORIGINS[origin] = known
    path = rest[end:].partition("#")[0]
    if not path.startswith("/"):
        path = "/" + path
    return (*known, _target_bytes(path))


#: (scheme, host, port, Host header) by the text of a URL up to its path (:func:`split_url`)
_ORIGINS: dict[str, tuple[str, str, int, str]] = {}
_MAX_ORIGINS = 1024


def _origin(url: str, scheme: str, sep: str, authority: str) -> tuple[str, str, int, str]:
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise LocalProtocolError(f"not an http(s) URL: {url[:200]!r}")
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise LocalProtocolError(f"bad IPv6 host in {url[:200]!r}")
        host, port_text = authority[1:close], authority[close + 1 :].removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    default = 443 if scheme == "https" else 80
    if port_text and not (port_text.isdigit() and port_text.isascii() and 0 < int(port_text) < 65536):
        raise LocalProtocolError(f"bad port in {url[:200]!r}")
    port = int(port_text) if port_text else default
    if not host or not _NOT_IN_HOST.isdisjoint(host):
        raise LocalProtocolError(f"bad host in {url[:200]!r}")
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == default else f"{shown}:{port}"
    if not host_header.isascii():
        raise LocalProtocolError(f"non-ASCII host in {url[:200]!r}")
    return scheme, host, port, host_header


def request_head(target: bytes, host: str, headers: list[tuple[str, str]]) -> bytes:
    """``GET target HTTP/1.1`` with ``Host`` first and ``headers`` in order; raises
    :class:`LocalProtocolError` for a name that is no token or a value with CR, LF or NUL."""
    lines = [b"GET ", target, b" HTTP/1.1\r\nHost: ", host.encode("ascii"), b"\r\n"]
    cache = _LINES
    for pair in headers:
        line = cache.get(pair)
        if line is None:
            line = _header_line(*pair)
            if len(cache) >= _MAX_LINES:
                cache.clear()
            cache[pair] = line
        lines.append(line)
    lines.append(b"\r\n")
    return b"".join(lines)


#: header lines as sent, by (name, value): most of a request's fields are the same in every request
#: of a run (User-Agent, Accept, Accept-Encoding), so each is checked and encoded once
_LINES: dict[tuple[str, str], bytes] = {}
_MAX_LINES = 4096


def _header_line(name: str, value: str) -> bytes:
    """``name: value`` CRLF, checked (a name that is no token, a value with CR, LF or NUL raise
    :class:`LocalProtocolError`)."""
    raw_name = name.encode("latin-1", "replace")
    raw_value = value.encode("latin-1", "replace")
    if (
        (raw_name not in _SENT_NAMES and not _TOKEN.fullmatch(raw_name))
        or b"\r" in raw_value
        or b"\n" in raw_value
        or b"\0" in raw_value
    ):
        raise LocalProtocolError(f"header {name[:60]!r} cannot be sent")
    return b"".join((raw_name, b": ", raw_value, b"\r\n"))


# ---- pure: the response


@dataclass(frozen=True)
class Head:
    """A parsed response head: ``version`` (``b"HTTP/1.1"``), status, reason, raw fields in order."""

    version: bytes
    status: int
    reason: bytes
    fields: list[tuple[bytes, bytes]]


_STATUS = re.compile(rb"(HTTP/1\.[01]) ([0-9]{3})(?: ([^\r\n\0]*))?")


#: a head's field lines (each ended by LF) when every one is ``name: value`` with a token name and
#: no CR or NUL anywhere (:func:`parse_head`'s fast path; anything else takes the line by line one)
_FIELD_BLOCK = re.compile(rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n\0]*\n|\n)*")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*((?:[^\n]*[^ \t\n])?)[ \t]*\n")


def parse_head(data: bytes) -> Head:
    """The head ``data`` (status line and field lines, CRLF or LF ended, without the empty line
    that ends it); raises :class:`RemoteProtocolError` for anything that is not one."""
    text = data.replace(b"\r\n", b"\n") if b"\r" in data else data
    status, _, rest = text.partition(b"\n")
    if rest:
        rest += b"\n"
    m = _STATUS.fullmatch(status)
    if m is None or _FIELD_BLOCK.fullmatch(rest) is None or rest.count(b"\n") > MAX_FIELDS:
        return _parse_lines(data)  # its errors (or an obsolete line folding) line by line
    return Head(m.group(1), int(m.group(2)), m.group(3) or b"", _FIELD.findall(rest))


def _parse_lines(data: bytes) -> Head:
    """:func:`parse_head`, line by line."""
    lines = data.split(b"\n")
    first = lines[0].rstrip(b"\r")
    m = _STATUS.fullmatch(first)
    if m is None:
        raise RemoteProtocolError(f"not an HTTP/1.x status line: {first[:80]!r}")
    if len(lines) - 1 > MAX_FIELDS:
        raise RemoteProtocolError(f"more than {MAX_FIELDS} header fields")
    fields: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        line = line.removesuffix(b"\r")
        if not line:
            continue
        if line[0] in b" \t":  # obsolete line folding: part of the previous field's value
            if not fields:
                raise RemoteProtocolError("a folded line before any header field")
            name, value = fields[-1]
            fields[-1] = (name, (value + b" " + line.strip(b" \t")).strip(b" \t"))
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise RemoteProtocolError(f"not a header field: {line[:80]!r}")
        value = value.strip(b" \t")
        if b"\0" in value or b"\r" in value:
            raise RemoteProtocolError(f"header {name[:60]!r} holds a NUL or CR")
        fields.append((name, value))
    return Head(m.group(1), int(m.group(2)), m.group(3) or b"", fields)


def _values(fields: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [v for n, v in fields if n.lower() == name]


def framing(head: Head) -> tuple[str, int]:
    """How the body of a response to a GET ends (RFC 9112 §6.3): ``("none", 0)``, ``("length", N)``,
    ``("chunked", 0)`` or ``("close", 0)``; raises :class:`RemoteProtocolError` for a Content-Length
    that lies about itself."""
    if head.status < 200 or head.status in (204, 304):
        return "none", 0
    codings = b",".join(_values(head.fields, b"transfer-encoding"))
    if codings:
        last = codings.rsplit(b",", 1)[-1].strip(b" \t").lower()
        return ("chunked", 0) if last == b"chunked" else ("close", 0)
    lengths = {
        v.strip(b" \t") for value in _values(head.fields, b"content-length") for v in value.split(b",")
    }
    if not lengths:
        return "close", 0
    if len(lengths) > 1:
        raise RemoteProtocolError("Content-Length given with different values")
    (length,) = lengths
    if not length.isdigit() or len(length) > 18:
        raise RemoteProtocolError(f"Content-Length is not a length: {length[:40]!r}")
    return "length", int(length)


def reusable(head: Head, kind: str) -> bool:
    """May the connection carry another request once this response is read to its end?"""
    if kind == "close" or head.version != b"HTTP/1.1":
        return False
    tokens = b",".join(_values(head.fields, b"connection")).lower()
    if b"close" not in tokens:  # no such token (``keep-alive``, or no field at all)
        return True
    return b"close" not in {t.strip(b" \t") for t in tokens.split(b",")}


def chunk_size(line: bytes) -> int:
    """The size of a chunk from its size line (hex, then optional ``;extensions``); raises
    :class:`RemoteProtocolError` for anything else."""
    size = line.split(b";", 1)[0].strip(b" \t\r\n")
    if not size or len(size) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size):
        raise RemoteProtocolError(f"not a chunk size: {line[:40]!r}")
    return int(size, 16)


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


@dataclass
class _URL:
    text: str
    raw_path: bytes

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


@dataclass
class Request:
    """The request as sent (``method``, ``url`` with ``raw_path``, ``headers.raw``): what the WARC
    recorder writes as the request record."""

    method: str
    url: _URL
    headers: _RequestHeaders


# ---- IO: the deadline of a request, connections and the pool


class Deadline:
    """The one timer of a request (``with Deadline(total, read):`` around it, inside a task): the
    request ends within ``total`` seconds, and a read that waits for bytes within ``read`` seconds
    of its start (:meth:`Connection.read_some`). An asyncio timeout for the request and another for
    each read cost a fifth of the CPU of a conditional GET answered 304 on loopback; this one arms
    a single timer per request, and moving a read's deadline touches no timer: when the timer
    fires, it checks whether a deadline has passed and else arms itself again, never later than a
    read could still end (``read`` seconds from then).

    A total deadline that passes cancels the task, and leaving the ``with`` turns that into
    :class:`TimeoutError`; a read's raises :class:`ReadTimeout` in the read itself, as a stream's
    own timeout did (the WARC recorder writes what was read, ``WARC-Truncated: time``). A
    cancellation from elsewhere stays one, as with ``asyncio.timeout``."""

    __slots__ = ("_cancelling", "_handle", "_loop", "_task", "fired", "read", "read_at", "total_at")

    def __init__(self, total: float, read: float) -> None:
        self.read = read
        self.total_at = total
        self.read_at: float | None = None  # while a read waits: when it times out
        self.fired: str | None = None  # "total" or "read" once the timer cancelled the task for it
        self._handle: asyncio.TimerHandle | None = None

    def __enter__(self) -> Deadline:
        loop = self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a Deadline is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        now = loop.time()
        self.total_at += now
        self._handle = loop.call_at(min(self.total_at, now + self.read), self._check)
        return self

    def _arm(self) -> None:
        now = self._loop.time()
        due = min(self.total_at, now + self.read if self.read_at is None else self.read_at)
        self._handle = self._loop.call_at(due, self._check)

    def _check(self) -> None:
        self._handle = None
        now = self._loop.time()
        if now >= self.total_at:
            self.fired = "total"
        elif self.read_at is not None and now >= self.read_at:
            self.fired = "read"
        else:
            self._arm()
            return
        self._task.cancel()

    def read_timed_out(self) -> bool:
        """After a read raised :class:`asyncio.CancelledError`: was it this read's deadline (the
        cancellation taken back, the timer armed again for the rest of the request)?"""
        if self.fired != "read":
            return False
        self.fired = None
        if self._task.uncancel() > self._cancelling:  # cancelled from elsewhere too: stays cancelled
            return False
        self._arm()
        return True

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.fired is None:
            return
        fired, self.fired = self.fired, None
        if self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            if fired == "read":
                raise ReadTimeout("timed out reading") from error
            raise TimeoutError from error


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
        """The next final response head (1xx ones dropped)."""
        for _ in range(MAX_INTERIM + 1):
            block = await self._read_block()
            head = parse_head(block)
            if head.status >= 200:
                return head
            if head.status == 101:
                raise RemoteProtocolError("the server switched protocols (101) unasked")
        raise RemoteProtocolError(f"more than {MAX_INTERIM} interim (1xx) responses")

    async def _read_block(self) -> bytes:
        """Bytes up to an empty line (CRLF CRLF or LF LF), at most :data:`MAX_HEAD`."""
        searched = 0
        while True:
            buf = self.buffer
            crlf = buf.find(b"\r\n\r\n", max(searched - 3, 0))
            lf = buf.find(b"\n\n", max(searched - 1, 0))
            if crlf >= 0 or lf >= 0:  # the first of the two that is there
                end, mark = (crlf, 4) if lf < 0 or 0 <= crlf < lf else (lf, 2)
                if end > MAX_HEAD:
                    raise RemoteProtocolError(f"a response head over {MAX_HEAD} bytes")
                self.buffer = buf[end + mark :]
                return buf[:end]
            if len(buf) > MAX_HEAD:
                raise RemoteProtocolError(f"a response head over {MAX_HEAD} bytes")
            searched = len(buf)
            data = await self.read_some()
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
    """A response whose head has arrived; :meth:`aiter_raw` reads its body once, as received."""

    def __init__(
        self, request: Request, head: Head, conn: Connection, on_done: Callable[[bool], Awaitable[None]]
    ) -> None:
        self.request = request
        self.status_code = head.status
        self.headers = Headers(head.fields)
        self.extensions: dict[str, Any] = {
            "http_version": head.version,
            "reason_phrase": head.reason,
            "network_stream": conn.stream,
        }
        self._head = head
        self._conn = conn
        self._kind, self._length = framing(head)
        #: the response has no body by its framing (1xx, 204, 304): nothing to read
        self.bodiless = self._kind == "none"
        self._on_done = on_done
        self._finished = False
        self._read = False

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        if self._read:
            raise RuntimeError("the body was read already")
        self._read = True
        async for piece in self._conn.body(self._kind, self._length):
            yield piece
        self._finished = True

    async def aclose(self) -> None:
        """Give the connection back (kept only if the body was read to its end) or close it."""
        if self._on_done is not None:
            done, self._on_done = self._on_done, None  # type: ignore[assignment]
            if self._kind == "none":
                self._finished = True
            await done(self._finished and reusable(self._head, self._kind))


Connect = Callable[[str, str, int, float], Awaitable[Stream]]


@dataclass
class Pool:
    """Connections by origin: ``connect(scheme, host, port, timeout)`` opens a stream (TLS done for
    https); idle ones are kept (:data:`MAX_IDLE`, :data:`KEEP_IDLE` seconds) for the next request."""

    connect: Connect
    connect_timeout: float
    read_timeout: float
    idle: dict[tuple[str, str, int], list[Connection]] = field(default_factory=dict)

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

    async def _give_back(self, conn: Connection, keep: bool) -> None:
        conn.deadline = None
        if not keep or conn.closed:
            await conn.aclose()
            return
        conn.idle_since = time.monotonic()
        if sum(map(len, self.idle.values())) >= MAX_IDLE:  # drop the oldest idle connection of all
            oldest = min((c for cs in self.idle.values() for c in cs), key=lambda c: c.idle_since)
            self.idle[oldest.origin].remove(oldest)
            await oldest.aclose()
        self.idle.setdefault(conn.origin, []).append(conn)

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
        request = Request("GET", _URL(url, target), _RequestHeaders(host_header, headers))
        origin = (scheme, host, port)
        conn = await self._take(origin)
        fresh = conn is None
        if conn is None:
            conn = await self._open(origin)
        conn.deadline = deadline
        try:
            try:
                await conn.write(head_bytes)
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
        return Response(request, head, conn, functools.partial(self._give_back, conn))

    async def aclose(self) -> None:
        for kept in self.idle.values():
            for conn in kept:
                await conn.aclose()
        self.idle.clear()
