"""The ASGI application behind ``archiver serve``, and the uvicorn server that runs it.

The application answers GET and HEAD (anything else: 405). A request path goes to
:class:`archiver.serve.site.Site` (a cached lookup after the first request for a path), the
headers to :func:`archiver.serve.ranges.decide`, and the bytes come straight from the open file with
``os.pread``: no per-request ``open`` or ``stat``, no thread pool, the response headers of a
representation built once. A response of at most 64 KiB leaves in one write, head and body together
(uvicorn writes them separately: two syscalls and two TCP segments; :func:`_one_write` holds the head
back when ``send`` is uvicorn's, and falls back to plain ASGI otherwise). A larger body of a file
leaves by ``sendfile(2)``, waiting for the socket when it is full (:func:`_send_file`); other large
bodies go in 1 MiB chunks under uvicorn's flow control, stopping when the client goes away. The
commonest small GETs do not even reach ASGI: :meth:`App.fast` answers them from uvicorn's parser
callback (:mod:`archiver.serve.protocol`), with the same bytes the ASGI path would send. Nothing is ever
compressed, so ``Accept-Encoding`` cannot turn a Range request into a full response. Errors are
a status and one fixed line of text; an unexpected exception is logged (one line, to stderr) and
answered with a plain 500, never a traceback.

:func:`serve` runs the application on uvicorn with uvloop and httptools, bound to 127.0.0.1 unless
told otherwise; :func:`running` does the same in a background thread for tests and tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any, Final

from archiver.errors import UsageError
from archiver.serve.policy import ERROR_HEADERS, Limits, host_table, is_ip_literal
from archiver.serve.protocol import cut, fast_protocol
from archiver.serve.ranges import (
    MAX_RANGES,
    decide,
    multipart_layout,
    simple_range,
    unsatisfied_range,
)
from archiver.serve.representation import FileSlice, Problem, Redirect, Representation
from archiver.serve.site import Site
from archiver.serve.sources import mounts_for

__all__ = ["CHUNK", "App", "make_app", "running", "serve"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Bodies are read and sent in pieces of at most this many bytes.
CHUNK: Final = 1 << 20
#: Responses with at most this many body bytes leave in one write, head and body together.
SMALL: Final = 64 << 10

_CONDITIONAL: Final = frozenset(
    {b"range", b"if-range", b"if-match", b"if-none-match", b"if-modified-since", b"if-unmodified-since"}
)
#: Request headers that send a GET past the fast path (the ordinary path decides on them).
_FAST_STOP: Final = _CONDITIONAL | {b"service-worker"}
_TEXT: Final = b"text/plain; charset=utf-8"
_ALLOW: Final = (b"allow", b"GET, HEAD")
_UNKNOWN: Final = object()  # a Host header that is not answered


class App:
    """The ASGI application over a :class:`Site`. ``max_ranges`` caps the ranges of one request.

    Until :meth:`listening` is called every Host is served as the bare host (an ASGI server of one's
    own); :func:`serve` and :func:`running` call it once the socket is bound."""

    def __init__(self, site: Site, *, max_ranges: int = MAX_RANGES) -> None:
        self.site = site
        self.max_ranges = max_ranges
        self.boundary = secrets.token_hex(12)
        self.hosts: dict[bytes, Any] | None = None  # Host header → its mount (None: the bare host)
        self.any_ip = False  # bound to every address: any IP literal is a name of the bare host
        self.port = 0
        self.send_timeout = Limits().send_timeout  # seconds a sendfile(2) may wait for the client

    def listening(self, bound: str, port: int, domain: str = "localhost") -> None:
        """Answer only the Host headers of this socket (formats/serve.md §5.2): the bare host
        (``bound``, ``127.0.0.1``, ``localhost``, ``[::1]``, ``domain``) and each mount's
        ``<label>.<domain>``, all with ``:port``."""
        mounts = [(m.label, m) for m in self.site.mounts.values()]
        self.hosts = host_table(bound, port, domain, mounts)
        self.any_ip = bound in ("0.0.0.0", "::")
        self.port = port
        self.site.listening(domain, port)

    def where(self, host: bytes | None) -> Any:
        """The mount whose origin a Host header names, None for the bare host, or ``_UNKNOWN``."""
        hosts = self.hosts
        if hosts is None or host is None:
            return None
        found = hosts.get(host, _UNKNOWN)
        if found is _UNKNOWN:
            lower = host.lower()
            found = hosts.get(lower, _UNKNOWN)
            if found is _UNKNOWN and self.any_ip:
                name, _, port = lower.decode("latin-1").rpartition(":")
                if port == str(self.port) and is_ip_literal(name):
                    return None
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            try:
                await self._http(scope, receive, send)
            except Exception as e:  # never a traceback on the wire; one line in the log
                print(f"archiver serve: {scope.get('method')} {scope.get('path')!r}: {e!r}", file=sys.stderr)
                with contextlib.suppress(Exception):
                    await _plain(send, 500, "internal error", False)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return

    def fast(self, url: bytes, headers: Sequence[tuple[bytes, bytes]]) -> tuple[int, bytes, bytes] | None:
        """The commonest GET answered without ASGI (see :mod:`~archiver.serve.protocol`): a request target in
        origin form, no validators, no Range or one plain ``bytes=a-b``, a body of at most
        :data:`SMALL` bytes. (status, header lines, body), exactly what :meth:`_http` would send
        (uvicorn adds its own lines); None for anything else, which then takes the ASGI path."""
        if url[:1] != b"/" or b"#" in url:
            return None
        range_value: bytes | None = None
        host: bytes | None = None
        browser = False
        for name, value in headers:
            if name == b"host":
                host = value
            elif name in _FAST_STOP:
                if name != b"range" or range_value is not None:
                    return None
                range_value = value
            elif name == b"sec-fetch-mode":
                browser = True
        hosts = self.hosts
        where = None if hosts is None or host is None else hosts.get(host, _UNKNOWN)
        if where is _UNKNOWN or (browser and where is None):
            return None  # the ordinary path answers (421, or the redirect to the mount's origin)
        raw, _, query = url.partition(b"?")
        rep = self.site.resolve(raw, query)
        if not isinstance(rep, Representation):
            return None
        if where is None:
            block, partial = rep.bare_block, rep.bare_block_partial
        elif rep.mount is where:
            block, partial = rep.block, rep.block_partial
        else:
            return None  # not this origin's: the ordinary path answers
        size = rep.size
        if range_value is None:
            if size > SMALL:
                return None
            return 200, block + b"content-length: %d\r\n" % size, rep.read(0, size)
        simple = simple_range(range_value, size)
        if simple is None:
            return None
        start, stop = simple
        if stop - start > SMALL:
            return None
        lines = b"content-length: %d\r\ncontent-range: bytes %d-%d/%d\r\n" % (
            stop - start,
            start,
            stop - 1,
            size,
        )
        return 206, partial + lines, rep.read(start, stop)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method == "GET":
            head = False
        elif method == "HEAD":
            head = True
        else:
            await _plain(send, 405, "method not allowed", False, (_ALLOW,))
            return
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        query = scope.get("query_string", b"")
        if b"?" in raw:  # some servers leave the query in raw_path
            raw, _, query = raw.partition(b"?")

        range_value: bytes | None = None
        conditional: dict[bytes, str] | None = None
        host: bytes | None = None
        browser = worker = False
        for name, value in scope["headers"]:
            if name == b"range" and range_value is None:
                range_value = value
            elif name in _CONDITIONAL:
                if conditional is None:
                    conditional = {}
                text = value.decode("latin-1")
                conditional[name] = f"{conditional[name]}, {text}" if name in conditional else text
            elif name == b"host":
                host = value
            elif name == b"sec-fetch-mode":
                browser = True
            elif name == b"service-worker":
                worker = True
        where = self.where(host)
        if where is _UNKNOWN:  # DNS rebinding, or a name this server does not know
            await _plain(send, 421, "misdirected request", head)
            return
        if worker:  # archived content never installs a service worker (it could rewrite the archive)
            await _plain(send, 403, "service workers are not served", head)
            return
        mount, rep = self.site.lookup(raw, query)
        if where is None:
            bare = True
            if browser and mount is not None and not isinstance(rep, Problem):
                # a browser on the bare host: the mount's bytes only on the mount's own origin
                target = self.site.origin(mount) + _quote_target(raw, query)
                await _plain(send, 307, "moved", head, ((b"location", target.encode("ascii")),))
                return
        else:
            bare = False
            if mount is not where and not isinstance(rep, Problem):
                if mount is None and rep is self.site.index:  # "/" on a mount's origin: the mount
                    location = (b"location", where.href.encode("ascii"))
                    await _plain(send, 302, "moved", head, (location,))
                else:  # another mount, the index or a server page: not on this origin
                    await _plain(send, 404, "not found", head)
                return
        if not isinstance(rep, Representation):
            if isinstance(rep, Redirect):
                await _plain(send, rep.status, "moved", head, ((b"location", rep.location.encode("ascii")),))
            else:
                assert isinstance(rep, Problem)
                await _plain(send, rep.status, rep.message, head)
            return
        size = rep.size
        if conditional is None:
            if range_value is None or head:  # the common case: no Range, no validators
                await self._single(send, rep, 200, 0, size, head, receive, bare)
                return
            simple = simple_range(range_value, size)
            if simple is not None:  # the other common case: one plain range
                await self._single(send, rep, 206, simple[0], simple[1], head, receive, bare)
                return
            conditional = {}
        if range_value is not None:
            text = range_value.decode("latin-1")
            conditional[b"range"] = f"{conditional[b'range']}, {text}" if b"range" in conditional else text
        decision = decide(
            method,
            size,
            etag=rep.etag,
            last_modified=rep.last_modified,
            now=time.time() if b"if-range" in conditional else None,
            range_=conditional.get(b"range"),
            if_range=conditional.get(b"if-range"),
            if_match=conditional.get(b"if-match"),
            if_none_match=conditional.get(b"if-none-match"),
            if_modified_since=conditional.get(b"if-modified-since"),
            if_unmodified_since=conditional.get(b"if-unmodified-since"),
            max_ranges=self.max_ranges,
        )
        status = decision.status
        if status == 200 or (status == 206 and len(decision.ranges) == 1):
            start, stop = decision.ranges[0]
            await self._single(send, rep, status, start, stop, head, receive, bare)
        elif status == 206:
            await self._multipart(send, rep, decision.ranges, head, receive, bare)
        elif status == 304:
            headers = [*rep.head[1:3], *ERROR_HEADERS]
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
        elif status == 416:
            extra = ((b"content-range", unsatisfied_range(size).encode("ascii")),)
            await _plain(send, 416, "range not satisfiable", head, extra)
        else:
            await _plain(send, status, "precondition failed", head)

    async def _single(
        self,
        send: Send,
        rep: Representation,
        status: int,
        start: int,
        stop: int,
        head: bool,
        receive: Receive,
        bare: bool = False,
    ) -> None:
        length = stop - start
        if status == 206:
            headers = [
                *(rep.bare_head_partial if bare else rep.head_partial),
                (b"content-length", b"%d" % length),
                (b"content-range", b"bytes %d-%d/%d" % (start, stop - 1, rep.size)),
            ]
        else:
            headers = [*(rep.bare_head if bare else rep.head), (b"content-length", b"%d" % length)]
        if length <= SMALL and not head:
            await _one_write(send, status, headers, rep.read(start, stop))
            return
        if not head and isinstance(rep, FileSlice) and _uvicorn_cycle(send) is not None:
            await _send_file(send, receive, rep, status, headers, start, stop, self.send_timeout)
            return
        await send({"type": "http.response.start", "status": status, "headers": headers})
        if head or length == 0:
            await send({"type": "http.response.body", "body": b""})
        else:
            await _stream(send, receive, rep, [(b"", start, stop)], b"")

    async def _multipart(
        self,
        send: Send,
        rep: Representation,
        ranges: Sequence[tuple[int, int]],
        head: bool,
        receive: Receive,
        bare: bool,
    ) -> None:
        heads, tail, total = multipart_layout(ranges, rep.size, rep.content_type, self.boundary)
        headers = [
            (b"content-type", b"multipart/byteranges; boundary=" + self.boundary.encode("ascii")),
            *(rep.bare_head_partial if bare else rep.head_partial)[1:],
            (b"content-length", b"%d" % total),
        ]
        await send({"type": "http.response.start", "status": 206, "headers": headers})
        if head:
            await send({"type": "http.response.body", "body": b""})
            return
        pieces = [(h, start, stop) for h, (start, stop) in zip(heads, ranges, strict=True)]
        if total <= CHUNK:
            body = b"".join(h + rep.read(start, stop) for h, start, stop in pieces) + tail
            await send({"type": "http.response.body", "body": body})
        else:
            await _stream(send, receive, rep, pieces, tail)


# Two shortcuts past uvicorn's own writing, used only when ``send`` is a uvicorn response cycle (they
# swap its ``transport`` attribute for the length of one call, and fall back to plain ASGI otherwise):
# small responses leave in one write, and large file bodies leave by sendfile(2), straight from the
# page cache, for as long as the socket takes them without waiting.


_CYCLE_TYPES: set[type] = set()  # uvicorn's response cycle class, once seen


def _uvicorn_cycle(send: Send) -> Any:
    cycle = getattr(send, "__self__", None)
    kind = type(cycle)
    if kind in _CYCLE_TYPES:
        return cycle
    if kind.__name__ != "RequestResponseCycle" or not kind.__module__.startswith("uvicorn."):
        return None
    if not hasattr(cycle, "transport"):
        return None
    _CYCLE_TYPES.add(kind)
    return cycle


class _Held:
    """Stands in for uvicorn's transport while uvicorn writes: keeps what it writes in ``data``
    (``discard``: forgets it, for bytes that already left by sendfile), passes the rest through."""

    __slots__ = ("data", "discard", "real")

    def __init__(self, real: Any, *, discard: bool = False) -> None:
        self.real = real
        self.data = b""
        self.discard = discard

    def write(self, data: bytes) -> None:
        if not self.discard:
            self.data += data

    def close(self) -> None:  # uvicorn closes after the last write when keep-alive is off
        if self.data:
            self.real.write(self.data)
            self.data = b""
        self.real.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


async def _through(cycle: Any, held: _Held, send: Send, message: MutableMapping[str, Any]) -> None:
    real = cycle.transport
    cycle.transport = held
    try:
        await send(message)
    finally:
        cycle.transport = real


async def _one_write(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Send a whole small response; with uvicorn, head and body in one write."""
    start = {"type": "http.response.start", "status": status, "headers": headers}
    end = {"type": "http.response.body", "body": body}
    cycle = _uvicorn_cycle(send)
    if cycle is None:
        await send(start)
        await send(end)
        return
    real = cycle.transport
    held = _Held(real)
    cycle.transport = held
    try:
        await send(start)
        await send(end)
    finally:
        cycle.transport = real
    if held.data:
        real.write(held.data)


_ZEROS = memoryview(bytes(CHUNK))  # stands for bytes that left by sendfile: only its length is used


async def _send_file(
    send: Send,
    receive: Receive,
    rep: FileSlice,
    status: int,
    headers: list[tuple[bytes, bytes]],
    start: int,
    stop: int,
    send_timeout: float,
) -> None:
    """A large body of a file: the head through uvicorn (held, then written), as much of the body
    as the socket takes now by sendfile(2), uvicorn told of those bytes without writing them, and
    the rest the ordinary way (under uvicorn's flow control). A client that takes nothing for
    ``send_timeout`` seconds is cut off."""
    cycle = _uvicorn_cycle(send)
    real = cycle.transport
    held = _Held(real)
    await _through(cycle, held, send, {"type": "http.response.start", "status": status, "headers": headers})
    real.write(held.data)
    sent = 0
    sock = real.get_extra_info("socket") if not real.is_closing() else None
    if sock is not None and real.get_write_buffer_size() == 0:
        sent, stalled = await _sendfile(
            sock.fileno(), rep.fd, rep.offset + start, stop - start, real.is_closing, send_timeout
        )
        if stalled:
            cut(real)
            return
    done = 0
    sink = _Held(real, discard=True)
    while done < sent:
        n = min(CHUNK, sent - done)
        done += n
        more = start + done < stop
        await _through(
            cycle, sink, send, {"type": "http.response.body", "body": _ZEROS[:n], "more_body": more}
        )
    if start + sent < stop:
        await _stream(send, receive, rep, [(b"", start + sent, stop)], b"")


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def _sendfile(
    sock_fd: int,
    file_fd: int,
    offset: int,
    count: int,
    closing: Callable[[], bool] = lambda: False,
    timeout: float | None = None,
) -> tuple[int, bool]:
    """sendfile(2) ``count`` bytes from ``offset`` of ``file_fd`` to the socket, waiting for the socket
    whenever it is full (as nginx does); the number of bytes sent (fewer when the client leaves), and
    whether the socket took nothing for ``timeout`` seconds (then it stops: nginx's send_timeout).

    It works on a duplicate of the socket's descriptor: uvloop does not let anyone else watch the
    descriptor of one of its transports, and should the transport close it meanwhile, the number can
    never come to name another connection's socket. It stops when ``closing()`` says the connection
    is being closed (the server cut it: formats/serve.md §5.4)."""
    loop = asyncio.get_running_loop()
    out = os.dup(sock_fd)
    sent = 0
    try:
        while sent < count and not closing():
            try:
                n = os.sendfile(out, file_fd, offset + sent, count - sent)
            except InterruptedError:
                continue
            except BlockingIOError:  # the socket is full: wait until it takes more
                ready = loop.create_future()
                loop.add_writer(out, _wake, ready)
                try:
                    await asyncio.wait_for(ready, timeout)
                except TimeoutError:
                    return sent, True
                finally:
                    loop.remove_writer(out)
                continue
            except OSError:  # the client went away
                break
            if n == 0:
                break
            sent += n
    finally:
        os.close(out)
    return sent, False


async def _stream(
    send: Send, receive: Receive, rep: Representation, pieces: list[tuple[bytes, int, int]], tail: bytes
) -> None:
    """Send ``prefix + bytes[start:stop]`` for each piece, then ``tail``, in chunks of at most
    :data:`CHUNK`; stop early when the client disconnects."""
    gone = asyncio.Event()

    async def watch() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
                return

    watcher = asyncio.ensure_future(watch())
    try:
        pending = b""
        for prefix, start, stop in pieces:
            pending += prefix
            pos = start
            while pos < stop:
                if gone.is_set():
                    return
                n = min(CHUNK - len(pending), stop - pos)
                data = rep.read(pos, pos + n)
                pos += n
                chunk = pending + data if pending else data
                pending = b""
                if len(chunk) >= CHUNK:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                else:
                    pending = chunk
        await send({"type": "http.response.body", "body": pending + tail})
    finally:
        watcher.cancel()


async def _plain(
    send: Send, status: int, message: str, head: bool, extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = f"{status} {message}\n".encode()
    headers = [(b"content-type", _TEXT), (b"content-length", b"%d" % len(body)), *ERROR_HEADERS, *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


def _quote_target(raw: bytes, query: bytes) -> str:
    """A request target as sent, made safe for a Location header (non-ASCII bytes escaped)."""
    from urllib.parse import quote

    safe = "/%!$&'()*+,;=:@~-._"
    return quote(raw, safe=safe) + ("?" + quote(query, safe=safe + "?") if query else "")


# ------------------------------------------------------------------------------------ entry points


def make_app(
    paths: Sequence[Path | str],
    *,
    gwtar_mime: str = "text/html",
    max_ranges: int = MAX_RANGES,
    allow_live: bool = False,
) -> App:
    """The ASGI application serving ``paths`` (gwtar files, ZIM files, trees, folders of them).
    Everything is opened now; a missing or unreadable PATH is a :class:`UsageError`. ``allow_live``:
    archived content may load from the live web (formats/serve.md §5.3)."""
    _check_mime(gwtar_mime)
    site = Site(mounts_for(paths, gwtar_mime=gwtar_mime), allow_live=allow_live)
    return App(site, max_ranges=max_ranges)


def _check_mime(value: str) -> None:
    if not value or any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise UsageError("not a usable media type", subject=repr(value))


def _server(config: Any) -> Any:
    """A uvicorn server that stops on SIGINT/SIGTERM and then returns, instead of re-raising the
    signal (uvicorn's default), so :func:`serve` can return its exit code."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def _config(app: App, *, quiet: bool, limits: Limits) -> Any:
    import uvicorn

    app.send_timeout = limits.send_timeout

    return uvicorn.Config(
        app,
        timeout_keep_alive=limits.keep_alive,  # seconds an idle connection stays open
        loop="uvloop",
        http=fast_protocol(limits),
        ws="none",  # a file server: no WebSocket upgrades
        lifespan="off",
        access_log=False,
        log_level="warning" if quiet else "info",
        server_header=False,
        date_header=True,
        timeout_graceful_shutdown=2,
        proxy_headers=False,  # a local server: no X-Forwarded-* rewriting, one middleware less per request
    )


def _bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except (OSError, OverflowError) as e:  # OverflowError: a port outside 0-65535 (the API's callers)
        sock.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise UsageError(f"cannot listen: {why}", subject=f"{host}:{port}") from None
    return sock


def _base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _check_limits(limits: Limits) -> Limits:
    for name in ("header_timeout", "keep_alive", "send_timeout"):
        value = getattr(limits, name)
        if not value > 0:
            raise UsageError("must be more than 0 seconds", subject=f"{name}={value}")
    if limits.max_connections < 1:
        raise UsageError("must be at least 1", subject=f"max_connections={limits.max_connections}")
    return limits


def _open_files(limits: Limits) -> Limits:
    """Raise the soft open-file limit to the hard one (as nginx's worker_rlimit_nofile), and keep the
    connection cap below what is left after the cache of open tree files."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                soft = hard
    except ImportError:
        return limits
    if soft == resource.RLIM_INFINITY:
        return limits
    room = max(16, soft - min(4096, soft // 4) - 64)
    if limits.max_connections <= room:
        return limits
    return dataclasses.replace(limits, max_connections=room)


def _check_domain(domain: str) -> str:
    labels = domain.lower().rstrip(".").split(".")
    if not all(lab and all(c.isascii() and (c.isalnum() or c == "-") for c in lab) for lab in labels):
        raise UsageError("not a host name", subject=repr(domain))
    return ".".join(labels)


def serve(
    paths: Sequence[Path | str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    gwtar_mime: str = "text/html",
    quiet: bool = False,
    workers: int = 1,
    limits: Limits | None = None,
    allow_live: bool = False,
    domain: str = "localhost",
) -> int:
    """Serve ``paths`` until interrupted (Ctrl-C or SIGTERM); returns the exit code (0). The base
    URL is the first line on stdout. ``port`` 0 picks a free port. ``workers`` > 1 forks that many
    processes in all, each with its own listening socket on the same port (``SO_REUSEPORT``, so the
    kernel spreads connections); archives are opened before the fork and shared. Each mount is
    served at its own origin, ``http://<label>.<domain>:<port>`` (formats/serve.md §5.2)."""
    if workers < 1:
        raise UsageError("must be at least 1", subject=f"workers={workers}")
    limits = _open_files(_check_limits(limits or Limits()))
    domain = _check_domain(domain)
    app = make_app(paths, gwtar_mime=gwtar_mime, allow_live=allow_live)
    sock = _bind(host, port, reuse_port=workers > 1)
    app.listening(host, sock.getsockname()[1], domain)
    socks = [sock]
    try:
        for _ in range(workers - 1):
            socks.append(_bind(host, sock.getsockname()[1], reuse_port=True))
    except UsageError:
        for s in socks:
            s.close()
        raise
    print(_base_url(sock), flush=True)
    if not quiet:
        for mount in app.site.mounts.values():
            print(f"  {mount.kind:5}  {app.site.origin(mount)}{mount.href}", flush=True)
    children: list[int] = []
    try:
        for own in socks[1:]:
            pid = os.fork()
            if pid == 0:  # a worker: serve its own socket, never return into the caller's code
                code = 0
                try:
                    _server(_config(app, quiet=quiet, limits=limits)).run(sockets=[own])
                except BaseException:
                    code = 1
                os._exit(code)
            children.append(pid)
        _server(_config(app, quiet=quiet, limits=limits)).run(sockets=[sock])
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        for s in socks:
            s.close()
        app.site.close()
    return 0


@contextlib.contextmanager
def running(
    paths: Sequence[Path | str] | App,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    gwtar_mime: str = "text/html",
    keep_alive: float = 5.0,
    header_timeout: float = 30.0,
    max_connections: int = 1024,
    send_timeout: float = 60.0,
    allow_live: bool = False,
) -> Iterator[str]:
    """Serve in a background thread for the duration of a ``with`` block, yielding the base URL
    (``http://127.0.0.1:PORT/``). Used by tests and tools; the server is stopped on exit.
    ``keep_alive``: seconds an idle connection stays open; the other limits as :func:`serve`'s."""
    app = paths if isinstance(paths, App) else make_app(paths, gwtar_mime=gwtar_mime, allow_live=allow_live)
    sock = _bind(host, port)
    app.listening(host, sock.getsockname()[1])
    limits = _check_limits(Limits(header_timeout, keep_alive, max_connections, send_timeout=send_timeout))
    server = _server(_config(app, quiet=True, limits=limits))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="archiver-serve", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield _base_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if not isinstance(paths, App):
            app.site.close()
