"""Putting a representation on the wire for ``archiver serve``: the sending side of
:class:`archiver.serve.app.App`, on ASGI and past it when ``send`` is uvicorn's.

A response of at most :data:`SMALL` (64 KiB) leaves in one write, head and body together (uvicorn
writes them separately: two syscalls and two TCP segments; :func:`_one_write` holds the head back
when ``send`` is uvicorn's, and falls back to plain ASGI otherwise). A larger body of a file leaves by
``sendfile(2)``, waiting for the socket when it is full (:func:`_send_file`); other large bodies go in
1 MiB chunks under uvicorn's flow control, stopping when the client goes away (:func:`_stream`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

from archiver.serve.protocol import cut
from archiver.serve.representation import FileSlice, Representation

__all__ = ["CHUNK", "SMALL", "Receive", "Scope", "Send"]


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Bodies are read and sent in pieces of at most this many bytes.
CHUNK: Final = 1 << 20
#: Responses with at most this many body bytes leave in one write, head and body together.
SMALL: Final = 64 << 10


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
    try:
        out = os.dup(sock_fd)
    except OSError:  # no descriptor to spare (EMFILE: many mounts, a low ulimit -n): the response's
        return 0, False  # head is out already; the body goes the ordinary way (_send_file streams it)
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
