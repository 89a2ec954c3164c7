"""HTTP content codings undone incrementally, in bounded steps (RFC 9110 §8.4): the one decoder of
the live fetcher, the WARC recorder and the WARC import (formats/warc.md §7.3, §8.4).

Pure: no network, no filesystem, no clock.

A body is read as it came over the wire (content-coded: ``gzip``, ``deflate``, ``br``; chunking
already removed) and decoded here. :class:`Decoder` takes the ``Content-Encoding`` value, undoes the
codings in reverse order of application, and yields the decoded bytes in pieces of at most ``step``
bytes (:data:`STEP`, 1 MiB, unless the caller asks for less), however much one input chunk expands:
a few hundred bytes of ``br`` that inflate to 512 MiB come out a step at a time, and the caller's
size cap, counted on the decoded bytes as they come, stops the stream. As httpx does: ``identity``
passes through, ``deflate`` is the zlib format or, failing that, raw DEFLATE, and ``x-gzip`` is
``gzip``; ``gzip`` also accepts a zlib header (as the import always did). A coding this module cannot
undo is passed through and named in :attr:`Decoder.unknown` (the live fetcher never asks for one;
the import refuses it). Damaged data raises :class:`CodingError`; an empty body is no error.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any

__all__ = ["STEP", "CodingError", "Decoder", "accept_encoding", "supported"]

STEP = 1 << 20
_HEAD_LIMIT = 64 << 10  # "deflate" input kept for the raw DEFLATE retry until output starts


class CodingError(ValueError):
    """The body is not what its Content-Encoding says (damaged or lying)."""


@functools.cache
def supported() -> frozenset[str]:
    """The codings this module can undo (``br`` only when the ``brotli`` package is installed)."""
    try:
        import brotli  # noqa: F401
    except ImportError:  # pragma: no cover (a dependency)
        return frozenset({"gzip", "x-gzip", "deflate"})
    return frozenset({"gzip", "x-gzip", "deflate", "br"})


@functools.cache
def accept_encoding() -> str:
    """The ``Accept-Encoding`` of every request: exactly what :class:`Decoder` undoes."""
    return ", ".join(sorted(supported() - {"x-gzip"}))


class _Zlib:
    def __init__(self, coding: str, step: int) -> None:
        self.coding = coding
        self.step = step
        self.wbits = 47 if coding in ("gzip", "x-gzip") else 15  # 47: a gzip or a zlib header
        self.d: Any = zlib.decompressobj(self.wbits)
        self.started = False
        self.done = False
        self.head: bytearray | None = bytearray() if self.wbits == 15 else None
        self.fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.fed = self.fed or bool(data)
        if self.head is not None:
            self.head += data
            if len(self.head) > _HEAD_LIMIT:
                self.head = None  # that much zlib data without an error: not raw DEFLATE
        while data and not self.done:
            try:
                out = self.d.decompress(data, self.step)
            except zlib.error as e:
                if self.head is not None and not self.started:
                    self.wbits = -15  # servers that send raw DEFLATE under "deflate"
                    self.d = zlib.decompressobj(-15)
                    data, self.head = bytes(self.head), None
                    continue
                raise CodingError(f"damaged {self.coding} data ({e})") from None
            data = self.d.unconsumed_tail
            if self.d.eof:
                self.done = True  # bytes after the end of the stream are ignored, as browsers do
            if out:
                self.started = True
                self.head = None
                yield out

    def flush(self) -> Iterator[bytes]:
        if not self.done:
            out = self.d.flush()
            if self.fed and not self.d.eof:
                raise CodingError(f"the {self.coding} data ends early")
            if out:
                yield out


class _Brotli:
    def __init__(self, step: int) -> None:
        import brotli

        self.step = step
        # brotli's output_buffer_limit is passed by up to its size again (the last block it grew):
        # asking for half a step keeps a piece within the step
        self.limit = max(step // 2, 1)
        self.error = brotli.error
        self.d = brotli.Decompressor()
        self.fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.fed = True
        if self.d.is_finished():
            return  # bytes after the end of the stream are ignored
        try:
            out = self.d.process(data, output_buffer_limit=self.limit)
            while True:
                for i in range(0, len(out), self.step):  # one piece, unless brotli passed the step
                    yield out[i : i + self.step] if len(out) > self.step else out
                if self.d.can_accept_more_data() or self.d.is_finished():
                    return
                out = self.d.process(b"", output_buffer_limit=self.limit)
        except self.error as e:
            raise CodingError(f"damaged br data ({e})") from None

    def flush(self) -> Iterator[bytes]:
        if self.fed and not self.d.is_finished():
            raise CodingError("the br data ends early")
        return iter(())


class Decoder:
    """Undoes ``content_encoding`` (the header's value, codings in the order they were applied), in
    pieces of at most ``step`` bytes."""

    def __init__(self, content_encoding: str | None, *, step: int = STEP) -> None:
        have = supported()
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        self.stages: list[Any] = []
        #: The codings named but not undone (``identity`` aside): passed through.
        self.unknown = tuple(c for c in codings if c not in have and c != "identity")
        #: True once the first coding undone has given output: a failure after that is damage
        #: within the data, not data that was never coded (formats/warc.md §8.4).
        self.started = False
        for coding in reversed(codings):
            if coding in have:
                self.stages.append(_Brotli(step) if coding == "br" else _Zlib(coding, step))

    @property
    def identity(self) -> bool:
        return not self.stages

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``data``, in pieces of at most ``step`` bytes."""
        yield from self._through(0, data, final=False)

    def flush(self) -> Iterator[bytes]:
        """The rest, at the end of the body; raises :class:`CodingError` for a stream cut short."""
        yield from self._through(0, b"", final=True)

    async def stream(self, raw: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
        """The decoded body of the raw stream ``raw`` (an HTTP client's, as received)."""
        async for chunk in raw:
            for piece in self.feed(chunk):
                yield piece
        for piece in self.flush():
            yield piece

    def _through(self, i: int, data: bytes, *, final: bool) -> Iterator[bytes]:
        if i == len(self.stages):
            if data:
                yield data
            return
        stage = self.stages[i]
        for piece in stage.feed(data) if data else ():
            self.started = self.started or i == 0
            yield from self._through(i + 1, piece, final=False)
        if final:
            for piece in stage.flush():
                self.started = self.started or i == 0
                yield from self._through(i + 1, piece, final=False)
            yield from self._through(i + 1, b"", final=True)
