"""Stream the records of a WARC file (formats/warc.md §2, §3): plain or gzip (any number of
members), one record at a time in bounded memory, every block and payload digest computed on the
way, every structural fault reported with the byte offset of its record.

The reader is our own, not warcio's iterator: it must report truncation (warcio and FastWARC return a
short body without an error), a Content-Length that lies, oversized headers and gzip damage as
findings with an offset, never print to stderr, and know each record's gzip member (offset and
length for the CDXJ index). Nothing of a block is kept but the first 64 KiB of an HTML payload.
"""

from __future__ import annotations

import collections
import hashlib
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from archiver.detect import ARC_NOT_SUPPORTED, ARC_START
from archiver.warc import digest
from archiver.warc.cdxj import valid_date

__all__ = ["Finding", "Record", "iter_records"]

CHUNK = 1 << 20
MAX_HEADER = 256 * 1024  # a WARC record header (all fields) longer than this is hostile
MAX_FIELDS = 1024
MAX_HTTP_HEADER = 256 * 1024
HEAD_KEEP = 64 * 1024  # payload bytes kept for the page title
_HTTP_TYPES = frozenset({"response", "request", "revisit"})
_NEEDS_URI = frozenset({"response", "resource", "request", "revisit", "conversion", "continuation"})


@dataclass(frozen=True)
class Finding:
    """A problem (or, with ``warning``, a point of style) at byte ``offset`` of the file."""

    offset: int
    message: str
    warning: bool = False

    def __str__(self) -> str:
        return f"offset {self.offset}: {self.message}"


@dataclass
class Record:
    """What the reader learnt of one record. ``length`` is the size of its gzip member (or of the
    record in a plain WARC); None when the record does not have a member of its own."""

    offset: int
    length: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    block_size: int = 0
    status: int | None = None
    http_type: str = ""  # the HTTP Content-Type of the payload
    http_headers: dict[str, str] = field(default_factory=dict)
    payload_size: int = 0
    payload_sha256: str = ""
    head: bytes = b""  # the first bytes of the payload (kept for text/html only)
    not_utf8: bytes | None = None  # the first header line that is not UTF-8 (such a record is not yielded)

    @property
    def type(self) -> str:
        return self.headers.get("warc-type", "")

    @property
    def uri(self) -> str:
        uri = self.headers.get("warc-target-uri", "")
        return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri

    @property
    def date(self) -> str:
        return self.headers.get("warc-date", "")

    @property
    def mime(self) -> str:
        raw = self.http_type if self.type in _HTTP_TYPES else self.headers.get("content-type", "")
        return raw.split(";", 1)[0].strip().lower()

    @property
    def payload_digest(self) -> str:
        """The declared WARC-Payload-Digest, else the computed ``sha256:`` of the payload."""
        return self.headers.get("warc-payload-digest") or f"sha256:{self.payload_sha256}"


class _Fatal(Exception):
    def __init__(self, offset: int, message: str) -> None:
        self.offset, self.message = offset, message


class _Stream:
    """The decoded bytes of a file, gzip members decompressed one after another; remembers at which
    decoded position each member starts (and at which file offset)."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f = f
        first = f.read(2)
        self.gz = first == b"\x1f\x8b"
        self.tail = first
        self.buf = bytearray()
        self.pos = 0  # decoded offset of buf[0]
        self.raw = 0  # file bytes consumed
        self.d: Any = None
        self.member_at = 0
        self.starts: collections.deque[tuple[int, int]] = collections.deque()

    def _fill(self) -> bool:
        if not self.gz:
            chunk = self.tail or self.f.read(CHUNK)
            self.tail = b""
            self.raw += len(chunk)
            self.buf += chunk
            return bool(chunk)
        while True:
            if not self.tail:
                self.tail = self.f.read(CHUNK)
                if not self.tail:
                    if self.d is not None:
                        raise _Fatal(self.member_at, "the file ends inside a gzip member (truncated)")
                    return False
            if self.d is None:
                self.d = zlib.decompressobj(31)
                self.member_at = self.raw
                self.starts.append((self.pos + len(self.buf), self.raw))
            before = len(self.tail)
            try:
                out = self.d.decompress(self.tail, CHUNK)
            except zlib.error as e:
                raise _Fatal(self.member_at, f"damaged gzip data ({e})") from None
            if self.d.eof:
                rest = self.d.unused_data
                self.d = None
            else:
                rest = self.d.unconsumed_tail
            self.raw += before - len(rest)
            self.tail = rest
            if out:
                self.buf += out
                return True

    def member_start(self, at: int) -> int | None:
        """The file offset of the gzip member starting at decoded position ``at``, or None."""
        while self.starts and self.starts[0][0] < at:
            self.starts.popleft()
        if self.starts and self.starts[0][0] == at:
            return self.starts[0][1]
        return None

    def take(self, n: int) -> bytes:
        """Up to ``n`` bytes (fewer only at the end of the file)."""
        while len(self.buf) < n and self._fill():
            pass
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.pos += len(out)
        return out

    def take_some(self, n: int) -> bytes:
        """Between 1 and ``n`` bytes, or b"" at the end of the file."""
        if not self.buf and not self._fill():
            return b""
        return self.take(min(n, len(self.buf)))

    def line(self, limit: int) -> bytes:
        """One line with its ending; raises when none ends within ``limit`` bytes."""
        start = 0
        while True:
            i = self.buf.find(b"\n", start)
            if i >= 0:
                return self.take(i + 1)
            if len(self.buf) > limit:
                raise ValueError("line too long")
            start = len(self.buf)
            if not self._fill():
                return self.take(len(self.buf))

    def at_end(self) -> bool:
        return not self.buf and not self._fill()


def iter_records(f: IO[bytes], findings: list[Finding]) -> Iterator[Record]:
    """Every record of the WARC open as ``f``, each yielded once its block has been read and checked;
    faults go to ``findings``. A fault that loses the record boundary ends the walk. A record whose
    header has bytes that are not UTF-8 is a problem and is not yielded (no index can hold it)."""
    s = _Stream(f)
    unaligned = 0
    bracketed: list[int] = []
    offset = 0  # of the record being read
    try:
        while True:
            while s.buf[:2] == b"\r\n" or s.buf[:1] == b"\n" or (not s.buf and s._fill()):
                if s.buf[:2] == b"\r\n" or s.buf[:1] == b"\n":  # stray blank lines between records
                    s.take(2 if s.buf[:1] == b"\r" else 1)
            if s.at_end():
                break
            start = s.pos
            member = s.member_start(start) if s.gz else start
            offset = member if member is not None else s.member_at
            rec = _read_record(s, offset, findings)
            if rec.not_utf8 is not None:
                continue  # a problem (below); its fields could not be indexed nor printed as text
            if rec.uri != rec.headers.get("warc-target-uri", rec.uri):
                bracketed = bracketed or [offset]
            end_pos = s.pos
            try:
                s.at_end()  # a following member starts (or the file ends) before the next question
            except _Fatal as e:
                # damage in the record's own member after its last byte (its gzip trailer cut or
                # wrong: a writer killed in its last bytes) leaves the record unchecked, not counted;
                # damage in a later member does not make this record any less whole
                if not (s.gz and member is not None and e.offset == member):
                    yield rec
                raise
            if s.gz:
                nxt = s.member_start(end_pos)
                if nxt is None and s.d is None and not s.buf and not s.tail:
                    nxt = s.raw
                if member is not None and nxt is not None:
                    rec.length = nxt - member
                else:
                    unaligned += 1
            else:
                rec.length = end_pos - start
            yield rec
    except _Fatal as e:
        findings.append(Finding(e.offset, e.message))
    except OSError as e:
        findings.append(Finding(s.raw, f"read error: {e.strerror or e}"))
    except (zipfile.BadZipFile, zlib.error, EOFError) as e:  # a WACZ entry read through the zip
        findings.append(Finding(offset, f"damaged zip data: {e}"))
    if bracketed:
        findings.append(Finding(bracketed[0], "WARC-Target-URI in <> (WARC 1.0 style, as wget writes): "
                                "read without them", warning=True))  # fmt: skip
    if unaligned:
        findings.append(
            Finding(
                0,
                f"{unaligned} record(s) do not have a gzip member of their own: "
                "no random access (warcio recompress fixes it)",
                warning=True,
            )
        )


def _read_record(s: _Stream, offset: int, findings: list[Finding]) -> Record:
    rec = Record(offset=offset)
    try:
        version = s.line(1024)
    except ValueError:
        raise _Fatal(offset, "not a WARC record: no 'WARC/1.x' line") from None
    if not version.startswith(b"WARC/"):
        if offset == 0 and version.startswith(ARC_START):
            raise _Fatal(offset, ARC_NOT_SUPPORTED)
        raise _Fatal(offset, f"not a WARC record: starts with {version[:20]!r}")
    if version.strip() not in (b"WARC/1.0", b"WARC/1.1"):
        findings.append(Finding(offset, f"unknown version {version.strip()[:20]!r}", warning=True))
    _read_fields(s, offset, rec)
    h = rec.headers
    if rec.not_utf8 is not None:
        findings.append(
            Finding(offset, f"a header line with bytes that are not UTF-8 (WARC 1.1 §4): {rec.not_utf8!r}")
        )
    for name in ("warc-record-id", "warc-type", "warc-date"):
        if name not in h:
            findings.append(Finding(offset, f"no {name.title()} field"))
    rid = h.get("warc-record-id", "?")
    where = f"{rec.type or 'record'} {rid[:100]}"
    if "warc-date" in h and not valid_date(h["warc-date"]):
        findings.append(Finding(offset, f"{where}: WARC-Date {h['warc-date'][:40]!r} is not a UTC date"))
    if rec.type in _NEEDS_URI and not rec.uri:
        findings.append(Finding(offset, f"{where}: no WARC-Target-URI"))
    length_text = h.get("content-length", "")
    if not length_text.isascii() or not length_text.isdigit() or len(length_text) > 18:
        raise _Fatal(offset, f"{where}: Content-Length {length_text[:30]!r} is not a number of bytes")
    length = int(length_text)
    rec.block_size = length
    checks = []
    for name, part in (("warc-block-digest", "block"), ("warc-payload-digest", "payload")):
        if name in h:
            got = digest.parse(h[name])
            if isinstance(got, str):
                unknown = got.startswith("unknown")
                findings.append(Finding(offset, f"{where}: {part} digest: {got}", warning=unknown))
            else:
                checks.append((part, got, got.hasher()))
    http = rec.type in _HTTP_TYPES and h.get("content-type", "").lower().startswith("application/http")
    splitter = _Payload(http)
    left = length
    while left:
        chunk = s.take_some(min(left, CHUNK))
        if not chunk:
            raise _Fatal(
                offset,
                f"{where}: truncated: Content-Length is {length}, the file ends "
                f"after {length - left} bytes of the block",
            )
        left -= len(chunk)
        for part, _, hasher in checks:
            if part == "block":
                hasher.update(chunk)
        for piece in splitter.feed(chunk):
            for part, _, hasher in checks:
                if part == "payload":
                    hasher.update(piece)
    splitter.close(rec)
    trailer = s.take(4)
    if trailer != b"\r\n\r\n":
        if len(trailer) < 4 and b"\r\n\r\n".startswith(trailer):
            raise _Fatal(offset, f"{where}: truncated: the file ends before the record's closing CRLF CRLF")
        raise _Fatal(
            offset,
            f"{where}: Content-Length {length} does not end the record "
            "(no CRLF CRLF after the block): it lies",
        )
    if splitter.too_long:
        findings.append(Finding(offset, f"{where}: HTTP header longer than {MAX_HTTP_HEADER} bytes"))
    for part, declared, hasher in checks:
        if part == "payload" and (rec.type == "revisit" or "warc-truncated" in h or splitter.too_long):
            continue  # the payload is elsewhere, or not all here
        computed = hasher.digest()
        if not declared.matches(computed):
            findings.append(
                Finding(
                    offset,
                    f"{where}: {part} digest {declared.text[:80]} does not match "
                    f"the {part} ({digest.encode_like(declared, computed)})",
                )
            )
    return rec


def _read_fields(s: _Stream, offset: int, rec: Record) -> None:
    total = 0
    last = ""
    while True:
        try:
            raw = s.line(MAX_HEADER)
        except ValueError:
            raise _Fatal(offset, f"a header line longer than {MAX_HEADER} bytes (hostile)") from None
        total += len(raw)
        if total > MAX_HEADER or len(rec.headers) > MAX_FIELDS:
            raise _Fatal(offset, f"a record header longer than {MAX_HEADER} bytes or {MAX_FIELDS} fields")
        if not raw.endswith(b"\n"):
            raise _Fatal(offset, "truncated: the file ends inside the record header")
        try:
            text = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:  # WARC 1.1 §4: the header is UTF-8
            text = raw.decode("utf-8", "surrogateescape").rstrip("\r\n")
            if rec.not_utf8 is None:
                rec.not_utf8 = raw.rstrip(b"\r\n")[:80]
        if not text:
            return
        if text[0] in " \t" and last:  # an obsolete folded line
            rec.headers[last] += " " + text.strip()
            continue
        name, sep, value = text.partition(":")
        if not sep or not name.strip():
            raise _Fatal(offset, f"a header line that is not 'Name: value': {text[:60]!r}")
        last = name.strip().lower()
        rec.headers.setdefault(last, value.strip())


class _Payload:
    """Splits an HTTP block into its header and payload as the bytes arrive; keeps the payload's
    first bytes and its SHA-256."""

    def __init__(self, http: bool) -> None:
        self.http = http
        self.pending = bytearray()
        self.in_payload = not http
        self.too_long = False
        self.size = 0
        self.sha = hashlib.sha256()
        self.head = bytearray()
        self.header = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        if self.in_payload:
            return [self._payload(chunk)]
        if self.too_long:
            return []
        self.pending += chunk
        end = self.pending.find(b"\r\n\r\n")
        cut = end + 4
        if end < 0:
            end = self.pending.find(b"\n\n")
            cut = end + 2
        if end < 0:
            if len(self.pending) > MAX_HTTP_HEADER:
                self.too_long = True
                self.pending = bytearray()
            return []
        self.header = bytes(self.pending[:cut])
        rest = bytes(self.pending[cut:])
        self.pending = bytearray()
        self.in_payload = True
        return [self._payload(rest)] if rest else []

    def _payload(self, piece: bytes) -> bytes:
        self.size += len(piece)
        self.sha.update(piece)
        if len(self.head) < HEAD_KEEP:
            self.head += piece[: HEAD_KEEP - len(self.head)]
        return piece

    def close(self, rec: Record) -> None:
        rec.payload_size = self.size
        rec.payload_sha256 = self.sha.hexdigest()
        if self.http and self.header:
            lines = self.header.decode("latin-1").splitlines()
            parts = lines[0].split(" ", 2) if lines else []
            if len(parts) >= 2 and parts[0].startswith("HTTP/") and parts[1].isdigit():
                rec.status = int(parts[1])
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    rec.http_headers.setdefault(name.strip().lower(), value.strip())
            rec.http_type = rec.http_headers.get("content-type", "")
        if rec.mime in ("text/html", "application/xhtml+xml"):
            rec.head = bytes(self.head)


def record_at(f: IO[bytes], offset: int) -> tuple[dict[str, str], Iterator[bytes]]:
    """The record that starts at the current position of ``f`` (plain, or a gzip member there):
    its header fields (names lower-cased) and an iterator over its block, at most :data:`CHUNK`
    bytes a piece. ``offset`` is only named in errors. Raises :class:`ValueError` with a finding's
    text when the record is damaged (the import index read it whole once; the file may have
    changed since)."""
    s = _Stream(f)
    rec = Record(offset=offset)
    try:
        version = s.line(1024)
        if not version.startswith(b"WARC/"):
            raise _Fatal(offset, "not a WARC record here")
        _read_fields(s, offset, rec)
    except _Fatal as e:
        raise ValueError(str(Finding(e.offset, e.message))) from None
    text = rec.headers.get("content-length", "")
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise ValueError(str(Finding(offset, "Content-Length is not a number of bytes")))

    def block(left: int) -> Iterator[bytes]:
        while left:
            try:
                chunk = s.take_some(min(left, CHUNK))
            except _Fatal as e:
                raise ValueError(str(Finding(e.offset, e.message))) from None
            if not chunk:
                raise ValueError(str(Finding(offset, "truncated: the file ends inside the block")))
            left -= len(chunk)
            yield chunk

    return rec.headers, block(int(text))
