"""The rules of the WARC import (formats/warc.md §8): which records answer which URL, how several
captures and revisits are resolved, and how a stored HTTP payload becomes the bytes a server would
have sent (chunking removed, content coding undone, media type and charset read from the recorded
headers).

Pure: no network, no filesystem, no clock. The store that keeps the index (SQLite, in
:mod:`archiver.warc.replay`) asks these functions what to keep and in which order to look.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from archiver import urls
from archiver.errors import URLError
from archiver.media import parse_content_type as media_of

try:  # optional at import time: without it a br body is an outcome, not a crash
    import brotli
except ImportError:  # pragma: no cover (a dependency; tests/warc checks br)
    brotli = None

__all__ = [
    "INDEXED",
    "MAX_HTTP_HEADER",
    "BodyDecoder",
    "Dechunker",
    "Entry",
    "Lookup",
    "date_key",
    "entry_of",
    "failure_of",
    "media_of",
    "parse_http_head",
    "revisit_plan",
]

#: The record types that answer a URL; request, metadata, warcinfo and conversion records never do.
INDEXED = frozenset({"response", "revisit", "resource"})
MAX_HTTP_HEADER = 256 * 1024
_REDIRECT = frozenset({301, 302, 303, 307, 308})
_UNCONFIRMED = frozenset({401, 403, 408, 429})
_STEP = 64 * 1024  # compressed bytes handed to a decoder at once


def date_key(date: str) -> str:
    """A WARC-Date as a key that sorts in time order (``…05Z`` before ``…05.5Z``); an invalid date
    sorts before every valid one."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z", date):
        return ""
    return date[:-1]


@dataclass(frozen=True)
class Entry:
    """One record that can answer a URL: where it is (``source``, ``offset``) and what the index
    needs to choose between records and to resolve revisits."""

    key: str  # the dedup key of the record's URL (archiver.urls)
    uri: str
    date: str  # date_key() of its WARC-Date
    type: str
    source: int
    offset: int
    status: int | None
    digest: str  # the declared WARC-Payload-Digest, lower-cased; "" if none
    record_id: str
    refers_to: str = ""  # WARC-Refers-To (a record id)
    refers_uri: str = ""  # WARC-Refers-To-Target-URI
    refers_date: str = ""  # date_key() of WARC-Refers-To-Date
    html: bool = False  # a text/html (or XHTML) payload
    not_modified: bool = False  # a revisit of the server-not-modified profile


def entry_of(
    headers: dict[str, str], uri: str, status: int | None, mime: str, source: int, offset: int
) -> Entry | None:
    """The index entry of a record (its WARC ``headers``, lower-case names), or None when the record
    answers no URL: not a response, revisit or resource; not http(s); a URL the mapping core refuses."""
    kind = headers.get("warc-type", "")
    if kind not in INDEXED or not uri.lower().startswith(("http://", "https://")):
        return None
    try:
        key = urls.dedup_key(urls.canonicalize(uri))
    except URLError:
        return None
    if kind == "resource":
        status = 200
    refers_uri = headers.get("warc-refers-to-target-uri", "")
    if refers_uri.startswith("<") and refers_uri.endswith(">"):
        refers_uri = refers_uri[1:-1]
    return Entry(
        key=key,
        uri=uri,
        date=date_key(headers.get("warc-date", "")),
        type=kind,
        source=source,
        offset=offset,
        status=status,
        digest=headers.get("warc-payload-digest", "").strip().lower(),
        record_id=headers.get("warc-record-id", ""),
        refers_to=headers.get("warc-refers-to", ""),
        refers_uri=refers_uri,
        refers_date=date_key(headers.get("warc-refers-to-date", "")),
        html=mime in ("text/html", "application/xhtml+xml"),
        not_modified="server-not-modified" in headers.get("warc-profile", ""),
    )


#: One way to find the original of a revisit: ``("uri-date", uri, date)`` the response of that URL
#: at that date; ``("id", record_id)``; ``("digest", digest, uri)`` a response with that payload
#: digest (of that URL first); ``("earlier", key, date)`` the newest response of the same URL
#: at or before the revisit's date (only for a server-not-modified revisit or one without a digest).
Lookup = tuple[str, ...]


def revisit_plan(e: Entry) -> list[Lookup]:
    """Where to look for a revisit's original, in order (formats/warc.md §8.3)."""
    plan: list[Lookup] = []
    if e.refers_uri and e.refers_date:
        plan.append(("uri-date", e.refers_uri, e.refers_date))
    if e.refers_to:
        plan.append(("id", e.refers_to))
    if e.digest:
        plan.append(("digest", e.digest, e.refers_uri or e.uri))
    if e.not_modified or not e.digest:
        plan.append(("earlier", e.key, e.date))
    return plan


def parse_http_head(head: bytes) -> tuple[int | None, dict[str, str]]:
    """The status and the header fields (names lower-cased, the first of repeated names kept, bytes
    read as Latin-1) of a stored HTTP response header (status line included)."""
    lines = head.decode("latin-1").splitlines()
    status: int | None = None
    parts = lines[0].split(" ", 2) if lines else []
    if len(parts) >= 2 and parts[0].upper().startswith("HTTP/") and parts[1].isdigit():
        status = int(parts[1])
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip():
            fields.setdefault(name.strip().lower(), value.strip())
    return status, fields


Failure = Literal["failed", "unconfirmed"]


def failure_of(status: int | None) -> tuple[Failure, str] | None:
    """What a recorded status means, as the live fetcher's outcomes (formats/tree.md §9): None for
    a usable answer (2xx, and 3xx, which is followed); 401, 403, 408 and 429 are ``unconfirmed``;
    other 4xx and 5xx and a missing status line are ``failed`` (a record is never retried)."""
    if status is None:
        return "failed", "the record holds no HTTP status line"
    if 200 <= status < 300 or status in _REDIRECT:
        return None
    if status in _UNCONFIRMED:
        return "unconfirmed", f"HTTP {status} (as recorded)"
    return "failed", f"HTTP {status} (as recorded)"


class Dechunker:
    """Undoes ``Transfer-Encoding: chunked`` as bytes arrive. A payload whose first bytes are not a
    chunk header is passed through unchanged (pywb stores de-chunked bodies and keeps the header)."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.left = 0  # bytes of the current chunk still to come
        self.state = "start"  # start, size, data, crlf, done, raw
        self.bad = ""

    def feed(self, data: bytes) -> bytes:
        if self.state == "raw":
            return data
        self.pending += data
        out = bytearray()
        while self.pending and self.state not in ("done", "raw"):
            if self.state in ("start", "size"):
                end = self.pending.find(b"\n")
                if end < 0:
                    if len(self.pending) > 1024:
                        return self._give_up(out, "a chunk size line longer than 1024 bytes")
                    break
                text = bytes(self.pending[:end]).split(b";", 1)[0].strip()
                if not text or not re.fullmatch(rb"[0-9A-Fa-f]{1,16}", text):
                    return self._give_up(out, "not a chunk size")
                del self.pending[: end + 1]
                self.left = int(text, 16)
                self.state = "data" if self.left else "done"
            elif self.state == "data":
                piece = self.pending[: self.left]
                out += piece
                del self.pending[: len(piece)]
                self.left -= len(piece)
                if not self.left:
                    self.state = "crlf"
            else:  # crlf after a chunk
                if len(self.pending) < 2 and self.pending in (b"\r", b""):
                    break
                if self.pending.startswith(b"\r\n"):
                    del self.pending[:2]
                elif self.pending.startswith(b"\n"):
                    del self.pending[:1]
                else:
                    self.bad = "no CRLF after a chunk"
                    self.state = "done"
                    break
                self.state = "size"
        return bytes(out)

    def _give_up(self, out: bytearray, why: str) -> bytes:
        if self.state == "start":  # nothing was chunked: the payload is the body itself
            self.state = "raw"
            data = bytes(self.pending)
            self.pending = bytearray()
            return data
        self.bad = why
        self.state = "done"
        return bytes(out)

    def close(self) -> bytes:
        """What is left; sets :attr:`bad` when the chunking ended early."""
        if self.state == "start" and self.pending:
            self.state = "raw"
            data = bytes(self.pending)
            self.pending = bytearray()
            return data
        if self.state in ("size", "data", "crlf") and not self.bad:
            self.bad = "the chunked body ends before its last chunk"
        return b""


class BodyDecoder:
    """Undoes a ``Content-Encoding`` (``gzip``, ``x-gzip``, ``deflate`` — zlib or raw —, ``br``,
    ``identity``, several in a list) as bytes arrive, never producing more than ``limit`` bytes at
    once per call step. :attr:`error` names what could not be decoded."""

    def __init__(self, encoding: str) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        self.error = ""
        self.stages: list[Any] = []
        for coding in reversed(codings):  # the last coding applied is undone first
            if coding in ("gzip", "x-gzip"):
                self.stages.append(_Zlib(47))
            elif coding == "deflate":
                self.stages.append(_Zlib(15, raw_fallback=True))
            elif coding == "br" and brotli is not None:
                self.stages.append(_Brotli())
            else:
                self.error = f"content coding {coding[:40]!r} is not supported"
                return

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``data``, in pieces of bounded size."""
        pieces: Iterator[bytes] = iter([data])
        for stage in self.stages:
            pieces = _through(stage, pieces)
        for piece in pieces:
            if piece:
                yield piece

    def close(self) -> Iterator[bytes]:
        pieces: Iterator[bytes] = iter([])
        for stage in self.stages:
            pieces = _finish(stage, pieces)
        for piece in pieces:
            if piece:
                yield piece
        for stage in self.stages:
            if stage.error and not self.error:
                self.error = stage.error


def _through(stage: Any, pieces: Iterator[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from stage.feed(piece)


def _finish(stage: Any, pieces: Iterator[bytes]) -> Iterator[bytes]:
    yield from _through(stage, pieces)
    yield from stage.close()


class _Zlib:
    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self.d: Any = zlib.decompressobj(wbits)
        self.raw_fallback = raw_fallback
        self.started = False
        self.error = ""

    def feed(self, data: bytes) -> Iterator[bytes]:
        for i in range(0, len(data), _STEP):
            yield from self._feed(data[i : i + _STEP])

    def _feed(self, data: bytes) -> Iterator[bytes]:
        if self.error or self.d.eof:
            return
        try:
            out = self.d.decompress(data, _STEP)
        except zlib.error as e:
            if self.raw_fallback and not self.started:  # "deflate" sent as raw DEFLATE (old IIS)
                self.raw_fallback = False
                self.d = zlib.decompressobj(-15)
                yield from self._feed(data)
                return
            self.error = f"damaged compressed body ({e})"
            return
        self.started = True
        yield out
        while self.d.unconsumed_tail and not self.d.eof:
            try:
                out = self.d.decompress(self.d.unconsumed_tail, _STEP)
            except zlib.error as e:
                self.error = f"damaged compressed body ({e})"
                return
            yield out

    def close(self) -> Iterator[bytes]:
        if self.error:
            return
        if not self.d.eof:
            self.error = "the compressed body ends early"
        try:
            yield self.d.flush()
        except zlib.error as e:  # pragma: no cover
            self.error = f"damaged compressed body ({e})"


class _Brotli:
    def __init__(self) -> None:
        self.d = brotli.Decompressor()
        self.error = ""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.error or self.d.is_finished():
            return
        try:
            yield self.d.process(data, output_buffer_limit=_STEP)
            while not self.d.is_finished() and not self.d.can_accept_more_data():
                yield self.d.process(b"", output_buffer_limit=_STEP)  # the rest, a step at a time
        except brotli.error as e:
            self.error = f"damaged br body ({e})"

    def close(self) -> Iterator[bytes]:
        if not self.error and not self.d.is_finished():
            self.error = "the br body ends early"
        return iter(())
