"""The ASGI application behind ``archiver serve``.

The application answers GET and HEAD (anything else: 405). A request path goes to
:class:`archiver.serve.site.Site` (a cached lookup after the first request for a path), the
headers to :func:`archiver.serve.ranges.decide`, and the bytes come straight from the open file with
``os.pread``: no per-request ``open`` or ``stat``, no thread pool, the response headers of a
representation built once. :mod:`archiver.serve.send` puts them on the wire: a response of at most
64 KiB in one write, head and body together, a larger body of a file by ``sendfile(2)``, other large
bodies in 1 MiB chunks. The commonest small GETs do not even reach ASGI: :meth:`App.fast` answers
them from uvicorn's parser callback (:mod:`archiver.serve.protocol`), with the same bytes the ASGI
path would send. Nothing is ever compressed, so ``Accept-Encoding`` cannot turn a Range request into
a full response. Errors are a status and one fixed line of text; an unexpected exception is logged
(one line, to stderr) and answered with a plain 500, never a traceback.

:mod:`archiver.serve.server` builds the application over the PATHs given and runs it on uvicorn.
"""

from __future__ import annotations

import contextlib
import secrets
import sys
import time
from collections.abc import Sequence
from typing import Any, Final

from archiver.serve.policy import ERROR_HEADERS, Limits, host_table, is_ip_literal
from archiver.serve.ranges import (
    MAX_RANGES,
    decide,
    multipart_layout,
    simple_range,
    unsatisfied_range,
)
from archiver.serve.representation import FileSlice, Problem, Redirect, Representation
from archiver.serve.send import (
    CHUNK,
    SMALL,
    Receive,
    Scope,
    Send,
    _one_write,
    _send_file,
    _stream,
    _uvicorn_cycle,
)
from archiver.serve.site import Site

__all__ = ["App"]


_CONDITIONAL: Final = frozenset(
    {b"range", b"if-range", b"if-match", b"if-none-match", b"if-modified-since", b"if-unmodified-since"}
)
#: Request headers that send a GET past the fast path (the ordinary path decides on them).
_FAST_STOP: Final = _CONDITIONAL | {b"service-worker"}
_TEXT: Final = b"text/plain; charset=utf-8"
#: The TimeGate negotiates on Accept-Datetime (formats/history.md §7): never the fast path or a cache.
_TIMEGATE: Final = b"/~/timegate/"
_ALLOW: Final = (b"allow", b"GET, HEAD")
_UNKNOWN: Final = object()  # a Host header that is not answered


class App:
    """The ASGI application over a :class:`Site`. ``max_ranges`` caps the ranges of one request.

    Until :meth:`listening` is called every Host is served as the bare host (an ASGI server of one's
    own); :func:`~archiver.serve.server.serve` and :func:`~archiver.serve.server.running` call it once
    the socket is bound."""

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
        :data:`~archiver.serve.send.SMALL` bytes. (status, header lines, body), exactly what
        :meth:`_http` would send (uvicorn adds its own lines); None for anything else, which then takes
        the ASGI path."""
        if url[:1] != b"/" or b"#" in url or url.startswith(_TIMEGATE):
            return None
        range_value: bytes | None = None
        host: bytes | None = None
        browser = False
        for name, value in headers:
            if name == b"host":
                if host is not None:
                    return None  # two Host fields: the ordinary path answers 400
                host = value
            elif name in _FAST_STOP:
                if name != b"range" or range_value is not None:
                    return None
                range_value = value
            elif name == b"sec-fetch-mode":
                browser = True
        if host is None:
            return None  # the ordinary path answers 400 (HTTP/1.1) or serves the bare host (1.0)
        hosts = self.hosts
        where = None if hosts is None else hosts.get(host, _UNKNOWN)
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
                if host is not None:  # RFC 9112 §3.2: more than one Host field line is a 400
                    await _plain(send, 400, "more than one Host header field", head)
                    return
                host = value
            elif name == b"sec-fetch-mode":
                browser = True
            elif name == b"service-worker":
                worker = True
        if host is None and scope.get("http_version") == "1.1":
            await _plain(send, 400, "no Host header field", head)  # RFC 9112 §3.2: HTTP/1.1 needs one
            return
        where = self.where(host)
        if where is _UNKNOWN:  # DNS rebinding, or a name this server does not know
            await _plain(send, 421, "misdirected request", head)
            return
        if worker:  # archived content never installs a service worker (it could rewrite the archive)
            await _plain(send, 403, "service workers are not served", head)
            return
        if raw.startswith(_TIMEGATE):
            if where is not None:  # the bare host's, like every server page
                await _plain(send, 404, "not found", head)
                return
            accept = next((v.decode("latin-1") for n, v in scope["headers"] if n == b"accept-datetime"), None)
            status, message, extra = self.site.timegate(raw, accept)
            await _plain(send, status, message, head, extra)
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
                if rep.page:
                    await _html_problem(send, rep, head)
                else:
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
            # the 200's own security headers (a cache keeps them from the 304); an answer not
            # secured by its mount gets an error's, as it always did
            headers = rep.bare_head_304 if bare else rep.head_304
            if not rep.secured:
                headers = [*headers, *ERROR_HEADERS]
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


async def _plain(
    send: Send, status: int, message: str, head: bool, extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    body = f"{status} {message}\n".encode()
    headers = [(b"content-type", _TEXT), (b"content-length", b"%d" % len(body)), *ERROR_HEADERS, *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})


async def _html_problem(send: Send, rep: Problem, head: bool) -> None:
    """An error answer with a page of its own (links only: the error's policy blocks everything else)."""
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", b"%d" % len(rep.page)),
               *ERROR_HEADERS, *rep.extra]  # fmt: skip
    await send({"type": "http.response.start", "status": rep.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else rep.page})


def _quote_target(raw: bytes, query: bytes) -> str:
    """A request target as sent, made safe for a Location header (non-ASCII bytes escaped)."""
    from urllib.parse import quote

    safe = "/%!$&'()*+,;=:@~-._"
    return quote(raw, safe=safe) + ("?" + quote(query, safe=safe + "?") if query else "")
