"""HTTP content codings undone incrementally, in bounded steps (RFC 9110 §8.4).

Pure: no network, no filesystem, no clock.

A recording capture reads each body as it came over the wire (content-coded: ``gzip``, ``deflate``,
``br``; chunking already removed by the HTTP client) so the WARC keeps those bytes, and decodes it for
the crawler here. :class:`Decoder` takes the ``Content-Encoding`` value, undoes the codings in reverse
order of application, and yields the decoded bytes in pieces of at most :data:`STEP` bytes, so a
small compressed chunk that expands a thousandfold (a gzip bomb) never takes more than a step of
memory at once; the caller's size cap stops the stream. As httpx does: ``identity`` and unknown codings
pass the bytes through, ``deflate`` is the zlib format or, failing that, raw DEFLATE, and
``x-gzip`` is ``gzip``. Damaged data raises :class:`CodingError`.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterator
from typing import Any

__all__ = ["STEP", "CodingError", "Decoder", "supported"]

STEP = 1 << 20


class CodingError(ValueError):
    """The body is not what its Content-Encoding says (damaged or lying)."""


@functools.cache
def supported() -> frozenset[str]:
    """The codings this module can undo (``br`` only when the ``brotli`` package is installed)."""
    try:
        import brotli  # noqa: F401
    except ImportError:
        return frozenset({"gzip", "x-gzip", "deflate"})
    return frozenset({"gzip", "x-gzip", "deflate", "br"})


class _Zlib:
    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.wbits = 31 if coding in ("gzip", "x-gzip") else 15
        self.d: Any = zlib.decompressobj(self.wbits)
        self.started = False
        self.done = False
        self.head = bytearray()  # "deflate" input before any output: replayed as raw DEFLATE
        self.fed = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        self.fed = self.fed or bool(data)
        if self.wbits == 15 and not self.started:
            self.head += data
        while data and not self.done:
            try:
                out = self.d.decompress(data, STEP)
            except zlib.error as e:
                if self.wbits == 15 and not self.started:
                    self.wbits = -15  # servers that send raw DEFLATE under "deflate"
                    self.d = zlib.decompressobj(-15)
                    data = bytes(self.head)
                    continue
                raise CodingError(f"bad {self.coding} data: {e}") from None
            data = self.d.unconsumed_tail
            if self.d.eof:
                self.done = True  # bytes after the end of the stream are ignored, as browsers do
            if out:
                self.started = True
                self.head = bytearray()
                yield out

    def flush(self) -> Iterator[bytes]:
        if not self.done:
            out = self.d.flush()
            if self.fed and not self.d.eof:
                raise CodingError(f"the {self.coding} data ends early")
            if out:
                yield out


class _Brotli:
    def __init__(self) -> None:
        import brotli

        self.error = brotli.error
        self.d = brotli.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        try:
            out = self.d.process(data, output_buffer_limit=STEP)
            while True:
                if out:
                    yield out
                if self.d.can_accept_more_data() or self.d.is_finished():
                    return
                out = self.d.process(b"", output_buffer_limit=STEP)
        except self.error as e:
            raise CodingError(f"bad br data: {e}") from None

    def flush(self) -> Iterator[bytes]:
        if not self.d.is_finished():
            raise CodingError("the br data ends early")
        return iter(())


class Decoder:
    """Undoes ``content_encoding`` (the header's value, codings in the order they were applied)."""

    def __init__(self, content_encoding: str | None) -> None:
        have = supported()
        codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
        self.stages: list[Any] = []
        for coding in reversed(codings):
            if coding not in have:
                continue  # identity, or a coding nobody asked for: passed through (as httpx does)
            self.stages.append(_Brotli() if coding == "br" else _Zlib(coding))

    @property
    def identity(self) -> bool:
        return not self.stages

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``data``, in pieces of at most :data:`STEP` bytes."""
        yield from self._through(0, data, final=False)

    def flush(self) -> Iterator[bytes]:
        """The rest, at the end of the body; raises :class:`CodingError` for a stream cut short."""
        yield from self._through(0, b"", final=True)

    def _through(self, i: int, data: bytes, *, final: bool) -> Iterator[bytes]:
        if i == len(self.stages):
            if data:
                yield data
            return
        stage = self.stages[i]
        for piece in stage.feed(data) if data else ():
            yield from self._through(i + 1, piece, final=False)
        if final:
            for piece in stage.flush():
                yield from self._through(i + 1, piece, final=False)
            yield from self._through(i + 1, b"", final=True)
