"""The rules of the WARC import (formats/warc.md §8): which records answer which URL, how several
captures and revisits are resolved, and how a stored HTTP payload becomes the bytes a server would
have sent (chunking removed, content coding undone, media type and charset read from the recorded
headers).

Pure: no network, no filesystem, no clock. The store that keeps the index (SQLite, in
:mod:`archiver.warc.replay`) asks these functions what to keep and in which order to look.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from archiver import urls
from archiver.codings import CodingError, Decoder
from archiver.errors import URLError
from archiver.media import parse_content_type as media_of

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
    "of_media_type",
    "parse_http_head",
    "revisit_plan",
]

#: The record types that answer a URL; request, metadata, warcinfo and conversion records never do.
INDEXED = frozenset({"response", "revisit", "resource"})
MAX_HTTP_HEADER = 256 * 1024
_REDIRECT = frozenset({301, 302, 303, 307, 308})
_UNCONFIRMED = frozenset({401, 403, 408, 429})
_STEP = 64 * 1024  # decoded bytes given at once
_HOLD = 256 * 1024  # bytes kept while a coding has given nothing, to take them as stored (§8.4)
_SNIFF = 1024  # the bytes whose media type is judged


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
    ``identity``, several in a list) as bytes arrive, by :class:`archiver.codings.Decoder` in pieces
    of at most 64 KiB. :attr:`error` names what could not be decoded (a coding it does not know, or
    damaged data).

    With the declared ``media`` type, a body **stored already decoded** under its header's coding
    (what ArchiveWeb.page and wabac.js write; warcio and pywb replay it) is taken as stored: when the
    coding fails before it gave a byte, within the first :data:`_HOLD` bytes, and the first
    :data:`_SNIFF` bytes are of the declared media type (:func:`of_media_type`). :attr:`as_stored`
    then says so."""

    def __init__(self, encoding: str, media: str | None = None) -> None:
        self.decoder = Decoder(encoding, step=_STEP)
        unknown = self.decoder.unknown
        self.error = f"content coding {unknown[0][:40]!r} is not supported" if unknown else ""
        self.media = media or ""
        self.as_stored = False
        self._held: bytearray | None = bytearray() if media and not self.decoder.identity else None
        self._failure = ""  # the coding failed before it gave a byte: judged on _SNIFF bytes

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of ``data``, in pieces of bounded size."""
        if self._held is not None and len(data) > _STEP:  # held a step at a time, so the first
            for i in range(0, len(data), _STEP):  # bytes are judged however large the chunk
                yield from self._feed(data[i : i + _STEP])
            return
        yield from self._feed(data)

    def _feed(self, data: bytes) -> Iterator[bytes]:
        if self.error or not data:
            return
        if self.as_stored:
            yield from _steps(data)
            return
        if self._held is not None:
            self._held += data
            if self.decoder.started or len(self._held) > _HOLD:
                self._held = None
        if self._failure:
            yield from self._judge(final=False)
            return
        try:
            yield from self.decoder.feed(data)
        except CodingError as e:
            self._failure = str(e)
            yield from self._judge(final=False)

    def close(self) -> Iterator[bytes]:
        if self.error or self.as_stored:
            return
        if not self._failure:
            try:
                yield from self.decoder.flush()
                return
            except CodingError as e:
                self._failure = str(e)
        yield from self._judge(final=True)

    def _judge(self, *, final: bool) -> Iterator[bytes]:
        held = self._held
        if held is not None and not self.decoder.started:
            if len(held) < _SNIFF and not final:
                return  # too few bytes to tell their type yet
            if of_media_type(self.media, bytes(held[:_SNIFF])):
                self.as_stored = True
                self._held = None
                yield from _steps(bytes(held))
                return
        self._held = None
        self.error = self._failure


def _steps(data: bytes) -> Iterator[bytes]:
    for i in range(0, len(data), _STEP):
        yield data[i : i + _STEP] if len(data) > _STEP else data


#: Media types whose bytes open with a fixed signature (the WHATWG MIME Sniffing Standard's §6).
_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/apng": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/bmp": (b"BM",),
    "image/x-icon": (b"\x00\x00\x01\x00", b"\x00\x00\x02\x00"),
    "image/vnd.microsoft.icon": (b"\x00\x00\x01\x00", b"\x00\x00\x02\x00"),
    "font/woff": (b"wOFF",),
    "font/woff2": (b"wOF2",),
    "font/ttf": (b"\x00\x01\x00\x00", b"true"),
    "font/otf": (b"OTTO",),
    "application/pdf": (b"%PDF-",),
    "application/wasm": (b"\x00asm",),
    "application/zip": (b"PK\x03\x04",),
    "video/webm": (b"\x1a\x45\xdf\xa3",),
    "audio/ogg": (b"OggS",),
    "video/ogg": (b"OggS",),
    "audio/mpeg": (b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2"),
}
#: RIFF and ISO-BMFF containers: the type's mark at its offset.
_MARKS: dict[str, tuple[int, bytes]] = {
    "image/webp": (8, b"WEBP"),
    "audio/wav": (8, b"WAVE"),
    "image/avif": (4, b"ftypavi"),
    "video/mp4": (4, b"ftyp"),
}
_TEXT_TYPES = frozenset(
    {
        "application/javascript", "application/x-javascript", "application/ecmascript",
        "application/json", "application/xml", "application/manifest+json", "image/svg+xml",
    }
)  # fmt: skip
_BINARY_BYTES = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")


def of_media_type(media: str, head: bytes) -> bool:
    """Whether ``head``, the first bytes of a body, are of the ``media`` type: a signature for
    images, fonts, media and documents with one; for text types (``text/*``, JavaScript, JSON,
    XML, SVG) no binary data byte (WHATWG MIME Sniffing §3), and for HTML a ``<``
    first after any BOM and white space. An unknown type: False (nothing to tell coded bytes from)."""
    media = media.lower()
    if media in _SIGNATURES:
        return head.startswith(_SIGNATURES[media])
    if media in _MARKS:
        offset, mark = _MARKS[media]
        return head[offset : offset + len(mark)] == mark
    text = media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+xml", "+json"))
    if not text or not head or _BINARY_BYTES.search(head):
        return False
    if media in ("text/html", "application/xhtml+xml"):
        return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n\x0c").startswith(b"<")
    return True
