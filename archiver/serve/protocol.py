"""The HTTP/1.1 protocol ``archiver serve`` runs on uvicorn: uvicorn's httptools protocol with the fast
path (:meth:`archiver.serve.app.App.fast` answers the commonest GETs from the parser's callback) and
the server's limits (formats/serve.md §5.4), which uvicorn does not have: header size, header and
keep-alive time, and a cap on open connections.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
from collections.abc import Callable
from typing import Any, Final

from archiver.serve.policy import ERROR_HEADERS, Limits

__all__ = ["cut", "fast_protocol"]


def cut(transport: Any) -> None:
    """End a connection now, also for a body leaving by sendfile(2) on a duplicate of the socket's
    descriptor: a shutdown reaches every descriptor of the socket (a close would not), and uvloop's
    stand-in socket refuses one, so it is done on a socket object of our own; with SO_LINGER 0 the
    last close is a reset."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError, ValueError):
            own = socket.socket(fileno=os.dup(sock.fileno()))
            try:
                # a reset, not a FIN after the bytes already queued (they would still trickle out)
                own.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                own.shutdown(socket.SHUT_RDWR)
            finally:
                own.close()
    transport.abort()


class _NoEvent:
    __slots__ = ()

    def set(self) -> None:
        pass


class _Answered:
    """Stands for the response cycle of a request answered by :meth:`App.fast`: complete."""

    __slots__ = ()
    response_complete = True
    disconnected = False
    message_event = _NoEvent()


_ANSWERED: Final = _Answered()


_LINGER: Final = 2.0  # seconds a refused connection is drained before it closes (nginx: lingering_timeout)


def fast_protocol(limits: Limits | None = None) -> type:
    """uvicorn's httptools protocol with one shortcut: when no earlier request on the connection is
    still being answered, a GET over HTTP/1.1 that :meth:`App.fast` can answer is written out at once,
    from the parser's callback, in one write: no ASGI scope, no response cycle, no task, no event.
    Everything else (and any application that is not an :class:`App`) goes the ordinary way.
    uvicorn's own bookkeeping is kept: its Date line, request count, pipelining, flow control and
    ``Connection: close``; its keep-alive timer is kept armed instead of re-armed per request.

    It also holds the server's limits (formats/serve.md §5.4), which uvicorn does not have: request
    line and headers of at most ``max_head`` bytes (more: 431 and the connection closes), a header
    that must be complete ``header_timeout`` seconds after its first byte (else 408), an idle
    connection closed after ``keep_alive`` seconds, and at most ``max_connections`` connections (a new
    one beyond closes the connection idle the longest; when none is idle, it is answered 503). A
    refused connection gets its answer, then is drained for :data:`_LINGER` seconds and closed, so the
    client reads the answer instead of a reset."""
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

    chosen = limits or Limits()
    period = min(chosen.header_timeout, chosen.keep_alive, chosen.send_timeout)

    class FastProtocol(HttpToolsProtocol):
        _fast: Callable[..., tuple[int, bytes, bytes] | None] | None = None
        _defaults: Any = None  # uvicorn's default headers (Date) as last seen, and as lines
        _default_lines = b""
        _scoped = False
        limits: Limits = chosen
        # 0: waiting for a request, 1: reading its header, 2: answering; since when; bytes of the header
        _phase = 0
        _since = 0.0
        _head_bytes = 0
        _served = False  # a response was sent: waiting is keep-alive from now on
        _open_head = False  # a request's header has begun and not ended
        _stall_queued = -1  # bytes waiting in the transport when writing was last seen paused
        _stall_since = 0.0
        _refused = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._fast = getattr(self.app, "fast", None)
            self._since = self.loop.time()
            if len(self.connections) > chosen.max_connections and not self._evict():
                self._refuse(503, "too many connections")
                return
            self.timeout_keep_alive_task = self.loop.call_later(period, self._idle)

        def _evict(self) -> bool:
            """Close the connection idle the longest (not this one); False when none is idle."""
            oldest: Any = None
            for other in self.connections:
                if other is self or getattr(other, "_phase", 1) != 0 or getattr(other, "_refused", True):
                    continue
                if other.transport.is_closing():
                    continue
                if oldest is None or other._since < oldest._since:
                    oldest = other
            if oldest is None:
                return False
            oldest.transport.close()
            return True

        def _refuse(self, status: int, text: str) -> None:
            """Answer ``status`` with ``Connection: close``, stop reading requests, close soon."""
            if self._refused or self.transport.is_closing():
                return
            self._refused = True
            body = f"{status} {text}\n".encode()
            pairs = (*self.server_state.default_headers, *ERROR_HEADERS)
            lines = b"".join(b"%s: %s\r\n" % pair for pair in pairs)
            self.transport.write(
                STATUS_LINE[status]
                + lines
                + b"content-type: text/plain; charset=utf-8\r\ncontent-length: %d\r\n" % len(body)
                + b"connection: close\r\n\r\n"
                + body
            )
            if self.timeout_keep_alive_task is not None:
                self.timeout_keep_alive_task.cancel()
            with contextlib.suppress(Exception):
                self.transport.write_eof()
            self.timeout_keep_alive_task = self.loop.call_later(_LINGER, self.transport.close)

        def _cut(self) -> None:
            self._refused = True
            cut(self.transport)

        def send_400_response(self, msg: str) -> None:
            self._refuse(400, "invalid HTTP request")

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return  # drained, never parsed
            # Every byte since the last header ended counts (GET and HEAD have no body), also while
            # a response is going out: a header sent then is held by the parser all the same.
            before = self._head_bytes
            self._head_bytes = before + len(data)
            if self._head_bytes > chosen.max_head:
                # pipelined requests may share a read: only a header still open at the cap is refused
                end = data.find(b"\r\n\r\n", 0, max(0, chosen.max_head - before) + 4)
                if end < 0:
                    if self._phase == 2:  # a response is going out: no clean answer now, just the end
                        self._cut()
                    else:
                        self._refuse(431, "request header fields too large")
                    return
            super().data_received(data)

        def on_message_begin(self) -> None:
            # The ASGI scope is built only for a request that takes the ordinary path.
            self.url = b""
            self.expect_100_continue = False
            self.headers = []
            self._scoped = False
            self._open_head = True
            if self._phase == 0:
                self._phase = 1
                self._since = self.loop.time()

        def _ordinary(self) -> None:
            url, headers, expect = self.url, self.headers, self.expect_100_continue
            super().on_message_begin()
            self.url, self.headers, self.expect_100_continue = url, headers, expect
            self.scope["headers"] = headers
            self._scoped = True
            super().on_headers_complete()

        def on_headers_complete(self) -> None:
            self._phase = 2
            self._head_bytes = 0
            self._open_head = False
            cycle = self.cycle
            fast = self._fast
            parser = self.parser
            if (
                fast is not None
                and (cycle is None or cycle.response_complete)
                and not self.pipeline
                and not self.flow.write_paused  # a client that does not read: the ordinary path waits
                and not self.expect_100_continue
                and parser.get_method() == b"GET"
                and parser.get_http_version() == "1.1"
                and not parser.should_upgrade()
            ):
                try:
                    answer = fast(self.url, self.headers)
                except Exception:  # the ordinary path answers it, and logs what went wrong
                    answer = None
                if answer is not None:
                    status, lines, body = answer
                    defaults = self.server_state.default_headers
                    if defaults is not self._defaults:
                        self._defaults = defaults
                        self._default_lines = b"".join(b"%s: %s\r\n" % pair for pair in defaults)
                    if parser.should_keep_alive():
                        data = b"".join((STATUS_LINE[status], self._default_lines, lines, b"\r\n", body))
                        self.cycle = _ANSWERED  # type: ignore[assignment]
                        self.transport.write(data)
                    else:
                        close = b"connection: close\r\n\r\n"
                        data = b"".join((STATUS_LINE[status], self._default_lines, lines, close, body))
                        self.cycle = _ANSWERED  # type: ignore[assignment]
                        self.transport.write(data)
                        self.transport.close()
                    self.on_response_complete()
                    return
            self._ordinary()

        # uvicorn cancels its keep-alive timer on every read and arms a new one after every response:
        # two timer operations per request. Here one timer stays armed and looks at the clock when it
        # fires (at least every ``period`` seconds): a connection waiting for a request closes
        # ``keep_alive`` seconds after its last response (``header_timeout`` after it was accepted),
        # one whose header is not complete ``header_timeout`` seconds after its first byte gets 408,
        # and a connection that is busy answering is never closed by it.

        def _unset_keepalive_if_required(self) -> None:
            pass

        def on_response_complete(self) -> None:
            self.server_state.total_requests += 1
            if self.transport.is_closing():
                return
            self._since = self.loop.time()
            self._served = True
            self.flow.resume_reading()
            if self.pipeline:
                self._phase = 2
                cycle, app = self.pipeline.pop()
                self._start_asgi_task(cycle, app)
            else:
                # a header that began while the response went out is timed from now
                self._phase = 1 if self._open_head else 0
                if self.timeout_keep_alive_task is None:
                    self.timeout_keep_alive_task = self.loop.call_later(period, self._idle)

        def _idle(self) -> None:
            self.timeout_keep_alive_task = None
            if self.transport.is_closing() or self._refused:
                return
            phase = self._phase
            if phase == 2:  # answering: cut only a response that makes no progress (send_timeout)
                paused = self.flow.write_paused
                queued = self.transport.get_write_buffer_size() if paused else -1
                now = self.loop.time()
                if not paused or queued != self._stall_queued:
                    self._stall_queued, self._stall_since = queued, now
                elif now - self._stall_since >= chosen.send_timeout:
                    self._cut()  # uvicorn waits for the client to read, while the client waits
                    return
                self.timeout_keep_alive_task = self.loop.call_later(period, self._idle)
                return
            waiting = chosen.keep_alive if phase == 0 and self._served else chosen.header_timeout
            left = self._since + waiting - self.loop.time()
            if left > 0:
                self.timeout_keep_alive_task = self.loop.call_later(min(left, period), self._idle)
            elif phase == 1:
                self._refuse(408, "request timeout")
            else:
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.timeout_keep_alive_task is not None:
                self.timeout_keep_alive_task.cancel()
                self.timeout_keep_alive_task = None
            super().connection_lost(exc)

        def on_body(self, body: bytes) -> None:
            if self._scoped:
                super().on_body(body)

        def on_message_complete(self) -> None:
            if self._scoped:
                super().on_message_complete()

    return FastProtocol
