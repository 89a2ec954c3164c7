"""The fetcher's TCP streams (:class:`Stream`): one asyncio protocol a connection (:class:`Wire`)
holding what arrived, and the stream reading and writing through it, with the errors of
:mod:`.http1`. The address guard opens them to the addresses it checked (:mod:`.guard`).

asyncio's own streams (``open_connection``) did the same through a ``StreamReader``, a
``StreamReaderProtocol`` and a ``StreamWriter``: about fifteen Python calls a request (the reader's
wait and wake-up, its protocol's hand-over, the writer's ``drain`` and its helper coroutine) where
this takes five; a conditional GET answered 304 on loopback is a few hundred thousand instructions
in all. What they promised holds here: a read returns what arrived (at most ``max_bytes``), ``b""``
at the end of the stream, and raises the connection's error once it was lost with one; reading
stops while more than :data:`LIMIT` bytes wait unread; a write waits (bounded) only while the
transport asks for a pause, and one on a lost connection raises."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from archiver.capture.http1_parse import ConnectError, ConnectTimeout, NetworkError, ReadTimeout, WriteTimeout

__all__ = ["LIMIT", "Counter", "Stream", "Wire"]

#: bytes kept unread before reading from the socket pauses (resumed once a read takes them below)
LIMIT = 1 << 20


class Counter:
    """Writes to any connection so far (a request goes out as one or more)."""

    __slots__ = ("writes",)

    def __init__(self) -> None:
        self.writes = 0


class Wire(asyncio.Protocol):
    """A connection's protocol: the bytes received and not yet read, its end, its error, and the
    read or write waiting on it."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.transport: Any = None
        self.buffer = bytearray()
        self.eof = False  # no more bytes will come
        self.lost = False  # the connection is gone
        self.error: BaseException | None = None  # what it was lost with
        self.waiter: asyncio.Future[None] | None = None  # a read waiting for bytes
        self.paused = False  # reading paused: more than LIMIT bytes wait
        self.over_ssl = False
        self.write_paused = False
        self.drained: asyncio.Future[None] | None = None  # a write waiting for the pause to end

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > 2 * LIMIT and not self.paused:
            try:
                self.transport.pause_reading()
                self.paused = True
            except NotImplementedError:
                pass
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return not self.over_ssl  # keep a plain socket half open, as asyncio's streams do

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.eof = True
        if exc is not None:
            self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drained, self.drained = self.drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _network(e: BaseException) -> BaseException:
    return NetworkError(str(e) or type(e).__name__) if isinstance(e, OSError) else e


class Stream:
    """A network stream on a :class:`Wire`. httpcore's default (anyio) added a cancel scope to
    every read and write and rebuilt a dict of socket attributes each time it asked whether an idle
    connection was still usable: a third of the fetcher's time on a fast site."""

    def __init__(self, transport: Any, wire: Wire, counter: Counter | None = None) -> None:
        self._transport = transport
        self._wire = wire
        self._counter = counter

    @classmethod
    async def over(cls, sock: Any, counter: Counter | None = None) -> Stream:
        """A stream on the connected socket ``sock``."""
        loop = asyncio.get_running_loop()
        transport, wire = await loop.create_connection(lambda: Wire(loop), sock=sock)
        return cls(transport, wire, counter)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        wire = self._wire
        if wire.error is not None:
            raise _network(wire.error)
        if not wire.buffer and not wire.eof:
            waiter = wire.waiter = wire.loop.create_future()
            try:
                if timeout is None:  # bounded by the request's deadline (:class:`.http1.Deadline`)
                    await waiter
                else:
                    try:
                        async with asyncio.timeout(timeout):
                            await waiter
                    except TimeoutError as e:
                        raise ReadTimeout("timed out reading") from e
            finally:
                if wire.waiter is waiter:
                    wire.waiter = None
            if wire.error is not None and not wire.buffer:
                raise _network(wire.error)
        buffer = wire.buffer
        if len(buffer) <= max_bytes:
            data = bytes(buffer)
            buffer.clear()
        else:
            data = bytes(buffer[:max_bytes])
            del buffer[:max_bytes]
        if wire.paused and len(buffer) <= LIMIT:
            wire.paused = False
            self._transport.resume_reading()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._counter is not None:
            self._counter.writes += 1
        wire = self._wire
        try:
            if wire.error is not None:
                raise wire.error
            self._transport.write(buffer)
            if wire.write_paused:  # left waiting above the transport's high-water mark: bounded
                drained = wire.drained = wire.loop.create_future()
                async with asyncio.timeout(timeout):
                    await drained
            elif self._transport.is_closing():  # let a lost connection say so (its callback)
                await asyncio.sleep(0)
            if wire.error is not None:
                raise wire.error
            if wire.lost:
                raise ConnectionResetError("Connection lost")
        except TimeoutError as e:
            raise WriteTimeout("timed out writing") from e
        except OSError as e:
            raise NetworkError(str(e) or type(e).__name__) from e

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> Stream:
        wire = self._wire
        try:
            async with asyncio.timeout(timeout):
                transport = await wire.loop.start_tls(
                    self._transport, wire, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError as e:
            self._transport.close()
            raise ConnectTimeout("timed out in the TLS handshake") from e
        except (ssl.SSLError, OSError) as e:
            self._transport.close()
            raise ConnectError(str(e) or type(e).__name__) from e
        self._transport = wire.transport = transport
        wire.over_ssl = True
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # asked of an idle connection before reusing it: the server closed it, or sent
            # something nobody asked for (either way the pool drops it and opens another)
            wire = self._wire
            return self._transport.is_closing() or wire.eof or wire.error is not None or bool(wire.buffer)
        name = {"client_addr": "sockname", "server_addr": "peername"}.get(info, info)
        if name in ("ssl_object", "sockname", "peername", "socket"):
            return self._transport.get_extra_info(name)
        return None
