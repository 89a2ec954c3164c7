"""Recording a capture's HTTP exchanges as WARC/1.1 (formats/warc.md §7): ``archiver capture --warc``.

The capture's one network path (:class:`archiver.capture.fetch.Fetcher`) hands each response it
receives to :meth:`Recorder.begin` and feeds the body through the :class:`Exchange` as it arrives,
content-coded as it came over the wire; the exchange decodes it for the crawler
(:mod:`archiver.codings`), hashes it and keeps it (memory, then a spool file past
:data:`SPOOL_LIMIT`). When the response ends, :meth:`Exchange.end` writes its ``response`` record (or
a ``revisit`` when the payload was already recorded in this capture) and the ``request`` record,
each one gzip member (:mod:`archiver.warc.members`: stored or deflated), both in one ``write``; it
returns where the response record is (:class:`archiver.tree.WarcRef`) for the manifest.

Files are ``_archiver/warc/rec-<created>-<seq>.warc.gz``, rotated past ``max_size``; every run
starts a new file. :meth:`Recorder.open` first reads the files of earlier runs
(:mod:`archiver.warc.recover`): a torn last gzip member (a ``kill -9`` mid-write) is cut off, back to
the last complete record, and the payload digests found there make later identical payloads revisits.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, NamedTuple

from archiver import __version__
from archiver.codings import Decoder
from archiver.errors import CaptureError
from archiver.tree import WarcRef
from archiver.warc import revisits
from archiver.warc.members import DEFLATE, Packing, compressor, packing_for
from archiver.warc.recover import recover
from archiver.warc.revisits import PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED, Memory, Seen

__all__ = [
    "DEFAULT_MAX_SIZE",
    "PROFILE_IDENTICAL",
    "PROFILE_NOT_MODIFIED",
    "WARC_DIR",
    "Exchange",
    "Heads",
    "RecordError",
    "Recorder",
    "discard",
    "for_capture",
    "http_heads",
    "warc_date",
    "warcinfo_fields",
]

WARC_DIR = "warc"  # inside the tree's reserved folder
DEFAULT_MAX_SIZE = 1_000_000_000
SPOOL_LIMIT = 1 << 20
DEDUP_LIMIT = 200_000  # payload digests remembered for revisits (the oldest are forgotten first)
CONFORMS_TO = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
_NAME = re.compile(r"rec-(\d{14})-(\d{5,})\.warc\.gz")
_STEP = 1 << 20
_WRITE_STEP = 4 << 20
_ONE_CALL = 256 << 10


class RecordError(CaptureError):
    """A WARC record could not be written (disk full, I/O error): the fetch it belongs to fails."""


@functools.lru_cache(maxsize=4)
def _second(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def warc_date(when: float) -> str:
    """A WARC 1.1 date: UTC, microseconds (``2026-12-01T09:50:00.123456Z``)."""
    micros = round(when * 1_000_000)
    second, fraction = divmod(micros, 1_000_000)
    return f"{_second(second)}.{fraction:06d}Z"


class _RandomIds:
    """Random (version 4) UUIDs as WARC record ids, ``<urn:uuid:…>``: 16 bytes each from a pool of
    ``os.urandom`` bytes drawn 4 KiB at a time (one system call for 256 ids instead of one each),
    under a lock (records are also written from worker threads), emptied in a forked child."""

    POOL = 4096

    def __init__(self) -> None:
        self._pool = b""
        self._at = 0
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._pool, self._at = b"", 0

    def __call__(self) -> str:
        with self._lock:
            if self._at + 16 > len(self._pool):
                self._pool, self._at = os.urandom(self.POOL), 0
            raw = bytearray(self._pool[self._at : self._at + 16])
            self._at += 16
        raw[6] = raw[6] & 0x0F | 0x40
        raw[8] = raw[8] & 0x3F | 0x80
        h = raw.hex()
        return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


_record_id = _RandomIds()


def _lines(fields: Iterable[tuple[str, str]]) -> str:
    return "".join([f"{name}: {value}\r\n" for name, value in fields])


def _fields(fields: Iterable[tuple[str, str]]) -> bytes:
    return _lines(fields).encode("utf-8")


def _head(fields: list[tuple[str, str]], length: int) -> bytes:
    return f"WARC/1.1\r\n{_lines(fields)}Content-Length: {length}\r\n\r\n".encode()


class Heads(NamedTuple):
    """What :func:`http_heads` reads off a response once its head has arrived."""

    request: bytes  # the request line and headers as sent
    response: bytes  # the status line and headers as received
    ip: str | None  # the server's address, when known
    content_type: str | None  # Content-Type and Content-Encoding, as httpx's ``Headers.get`` gives
    content_encoding: str | None  # them (repeated headers joined by ", ")


def http_heads(response: Any) -> Heads:
    """The request as sent and the response head as received, from a response (the fetcher's
    :class:`archiver.capture.http1.Response`, or an httpx one: the same attributes): request line
    and headers; status line and headers in their received case and order, ``Transfer-Encoding:
    chunked`` written as ``X-Archiver-Transfer-Encoding`` (the stored body has no chunk framing);
    the server's IP address when known; Content-Type and Content-Encoding, read in the same pass."""
    request = response.request
    req = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url.raw_path)]
    req += [b"%s: %s\r\n" % pair for pair in request.headers.raw]
    req.append(b"\r\n")
    ext = response.extensions
    version = ext.get("http_version") or b"HTTP/1.1"
    head = [b"%s %d %s\r\n" % (version, response.status_code, ext.get("reason_phrase", b""))]
    types: list[bytes] = []
    codings: list[bytes] = []
    for name, value in response.headers.raw:
        low = name.lower()
        if low == b"content-type":
            types.append(value)
        elif low == b"content-encoding":
            codings.append(value)
        elif low == b"transfer-encoding":
            name = b"X-Archiver-Transfer-Encoding"
        head.append(b"%s: %s\r\n" % (name, value))
    head.append(b"\r\n")
    ip: str | None = None
    stream = ext.get("network_stream")
    if stream is not None:
        with contextlib.suppress(Exception):  # a test backend may not know its peer
            peer = stream.get_extra_info("server_addr")
            if isinstance(peer, tuple) and peer:
                ip = str(peer[0])
    return Heads(b"".join(req), b"".join(head), ip, _joined(types), _joined(codings))


def _joined(values: list[bytes]) -> str | None:
    """A header's values as httpx's ``Headers.get`` gives them: None, or joined by ``", "``."""
    if not values:
        return None
    return b", ".join(values).decode("latin-1")


def _truncation(error: BaseException | None) -> str:
    names = {c.__name__ for c in type(error).__mro__} if error is not None else set()
    if names & {"TimeoutException", "TimeoutError"}:
        return "time"
    if names & {"TransportError", "OSError"}:
        return "disconnect"
    return "length"


class Exchange:
    """One response being received (see the module docstring). Made by :meth:`Recorder.begin`."""

    def __init__(
        self, recorder: Recorder, uri: str, request: bytes, head: bytes, ip: str | None, coding: str | None
    ) -> None:
        self.recorder = recorder
        self.uri = uri
        self.date = warc_date(time.time())
        self.request = request
        self.head = head
        self.ip = ip
        self.decoder = Decoder(coding)
        self.packing: Packing = DEFLATE
        self.payload = hashlib.sha256()
        self.block = hashlib.sha256(head)
        self.size = 0
        self.buffer = bytearray()
        self.spool: IO[bytes] | None = None
        self.complete = False
        self.error: BaseException | None = None  # what stopped drain()
        self._body: Any = None

    def feed(self, raw: bytes) -> None:
        """Keep ``raw`` body bytes, as received."""
        self.payload.update(raw)
        self.block.update(raw)
        self.size += len(raw)
        if self.spool is not None:
            self.spool.write(raw)
            return
        self.buffer += raw
        if len(self.buffer) > SPOOL_LIMIT:
            self.spool = self.recorder.spool_file()
            self.spool.write(self.buffer)
            self.buffer = bytearray()

    def body(self, raw: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """The decoded body of the raw stream ``raw``, every raw byte kept on the way; raises
        :class:`archiver.codings.CodingError` for data its Content-Encoding cannot undo."""
        self._body = self._decoded(raw)
        return self._body

    async def _decoded(self, raw: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        if self.decoder.identity:  # most bodies: nothing to undo
            async for chunk in raw:
                self.feed(chunk)
                yield chunk
            self.complete = True
            return
        async for chunk in raw:
            self.feed(chunk)
            for piece in self.decoder.feed(chunk):
                yield piece
        self.complete = True
        for piece in self.decoder.flush():
            yield piece

    async def drain(self, raw: AsyncIterator[bytes], limit: int) -> None:
        """Keep up to ``limit`` bytes of a body nobody decodes (a redirect's). A failure to read it
        only marks the record: the fetch goes on as if the body had not been asked for."""
        try:
            async for chunk in raw:
                self.feed(chunk[: max(0, limit - self.size)])
                if self.size >= limit:
                    return
        except Exception as e:  # the connection broke or timed out: recorded as such
            self.error = e
            return
        self.complete = True

    async def end(self, error: BaseException | None = None) -> WarcRef | None:
        """Write the records of this exchange; where the response (or revisit) record is. A body
        not read to its end is recorded as received, with ``WARC-Truncated``: ``time`` after a read
        timeout, ``disconnect`` when the connection failed, else ``length`` (cut by a size cap, not
        read, or not decodable). Nothing is written when the fetch was cancelled (the run is
        ending, or its total timeout struck)."""
        if self._body is not None:
            with contextlib.suppress(Exception):
                await self._body.aclose()
        try:
            if isinstance(error, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                return None
            truncated = None if self.complete else _truncation(error or self.error)
            return await self.recorder.write(self, truncated)
        finally:
            self.discard()

    def discard(self) -> None:
        if self.spool is not None:
            self.spool.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.spool.name)
            self.spool = None
        self.buffer = bytearray()

    def payload_chunks(self) -> Iterable[bytes]:
        if self.spool is None:
            yield bytes(self.buffer)
            return
        self.spool.flush()
        with open(self.spool.name, "rb") as f:
            while chunk := f.read(_STEP):
                yield chunk


class Recorder:
    """Writes the WARC files of one capture run into ``folder`` (see the module docstring).

    ``info`` are the warcinfo fields after ``software`` and ``format`` (robots policy, options …);
    ``created`` (14 digits) names the files; ``tmp_dir`` holds spooled bodies."""

    def __init__(
        self,
        folder: Path,
        *,
        tmp_dir: Path,
        created: str,
        info: list[tuple[str, str]],
        max_size: int = DEFAULT_MAX_SIZE,
        dedup_limit: int = DEDUP_LIMIT,
    ) -> None:
        self.folder = folder
        self.tmp_dir = tmp_dir
        self.created = created
        self.info = info
        self.max_size = max_size
        self.dedup_limit = dedup_limit
        self.memory = Memory(dedup_limit)  # for revisits (archiver.warc.revisits)
        self.seen = self.memory.seen
        self.seq = 0
        self.fd: int | None = None
        self.name = ""
        self.size = 0
        self.warcinfo_id = ""
        self.lock = asyncio.Lock()  # one exchange written at a time, in arrival order
        # held while bytes go to the file, also by a worker thread: a cancelled writer releases
        # ``lock``, never this, so two records never interleave and close() waits for the file
        self.io = threading.Lock()
        self.records = 0

    # ---- start and end

    def open(self) -> None:
        """Repair and read the files of earlier runs (torn tails cut, payload digests learnt)."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            names = sorted(p.name for p in self.folder.iterdir() if _NAME.fullmatch(p.name))
        except OSError as e:
            raise RecordError(f"cannot use the WARC folder: {e.strerror}", subject=str(self.folder)) from None
        for name in names:
            self.seq = max(self.seq, int(_NAME.fullmatch(name).group(2)))  # type: ignore[union-attr]
            try:
                self._learn(name)
            except OSError as e:
                raise RecordError(f"cannot read an earlier WARC: {e.strerror}", subject=name) from None

    def _learn(self, name: str) -> None:
        """Repair ``name`` if its tail is torn, and learn its payload digests (for revisits)."""
        for rec in recover(self.folder / name):
            self.memory.learn(rec.type, rec.uri, rec.date, rec.headers, rec.payload_sha256, rec.payload_size)

    def close(self) -> None:
        """Close the current file (fsynced)."""
        with self.io:
            self._close()

    def _close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def spool_file(self) -> IO[bytes]:
        self.tmp_dir.mkdir(parents=True, exist_ok=True)
        return tempfile.NamedTemporaryFile(dir=self.tmp_dir, prefix="warc-", suffix=".part", delete=False)

    def begin(self, response: Any) -> Exchange:
        """An exchange for the ``response`` whose head just arrived."""
        heads = http_heads(response)
        coding = heads.content_encoding
        ex = Exchange(self, str(response.request.url), heads.request, heads.response, heads.ip, coding)
        ex.packing = packing_for(heads.content_type, coding)
        return ex

    # ---- writing

    def _new_file(self) -> None:
        self._close()
        self.seq += 1
        self.name = f"rec-{self.created}-{self.seq:05d}.warc.gz"
        path = self.folder / self.name
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self.size = 0
        dir_fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)  # the new name survives a power cut once records are in it
        finally:
            os.close(dir_fd)
        self.warcinfo_id = _record_id()
        block = _fields(
            [
                ("software", f"archiver/{__version__}"),
                ("format", "WARC File Format 1.1"),
                ("conformsTo", CONFORMS_TO),
                *self.info,
            ]
        )
        head = _head(
            [
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", self.warcinfo_id),
                ("WARC-Date", warc_date(time.time())),
                ("WARC-Filename", self.name),
                ("Content-Type", "application/warc-fields"),
                ("WARC-Block-Digest", "sha256:" + hashlib.sha256(block).hexdigest()),
            ],
            len(block),
        )
        self._append([(DEFLATE, len(head) + len(block) + 4, [head, block, b"\r\n\r\n"])])

    def _append(self, records: list[tuple[Packing, int, Iterable[bytes]]]) -> None:
        """Write ``records`` (each its packing, its size and its parts) as one gzip member each: in one
        ``write`` when they are small, else in steps (a kill mid-way leaves a torn tail that the
        next run cuts; an error cuts the file back at once)."""
        assert self.fd is not None
        start = self.size
        try:
            out: list[bytes] = []
            pending = 0
            for packing, size, parts in records:
                c = compressor(packing, size)
                if size <= _ONE_CALL:  # a small record (most are): its parts deflated in one call
                    out += (c.compress(b"".join(parts)), c.flush())
                    pending += len(out[-2]) + len(out[-1])
                    continue
                for part in parts:
                    piece = c.compress(part)
                    if piece:
                        out.append(piece)
                        pending += len(piece)
                    if pending >= _WRITE_STEP:
                        self._write_all(b"".join(out))
                        out, pending = [], 0
                out.append(c.flush())
            self._write_all(b"".join(out))
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, start)  # never leave half a record behind
            self.size = start
            raise RecordError(f"cannot write the WARC: {e.strerror}", subject=self.name) from None

    def _write_all(self, data: bytes) -> None:
        assert self.fd is not None
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.size += len(data)

    async def write(self, ex: Exchange, truncated: str | None) -> WarcRef:
        async with self.lock:
            if ex.size > SPOOL_LIMIT:
                return await asyncio.to_thread(self._write_exchange, ex, truncated)
            return self._write_exchange(ex, truncated)

    def _write_exchange(self, ex: Exchange, truncated: str | None) -> WarcRef:
        with self.io:
            if self.fd is None or self.size >= self.max_size:
                try:
                    self._new_file()
                except OSError as e:
                    raise RecordError(
                        f"cannot create a WARC file: {e.strerror}", subject=str(self.folder)
                    ) from None
            return self._records(ex, truncated)

    def _records(self, ex: Exchange, truncated: str | None) -> WarcRef:
        response_id, request_id = _record_id(), _record_id()
        digest = ex.payload.digest()
        not_modified = truncated is None and revisits.not_modified(ex.head, ex.request)
        original = self.memory.by_uri.get(ex.uri) if not_modified else None
        if original is not None:
            digest = original[0]  # the payload this 304 says still stands
        payload_digest = "sha256:" + digest.hex()
        seen = self.seen.get(digest) if truncated is None and ex.size and not not_modified else None
        fields = [
            ("WARC-Type", "revisit" if seen or not_modified else "response"),
            ("WARC-Record-ID", response_id),
            ("WARC-Date", ex.date),
            ("WARC-Target-URI", ex.uri),
        ]
        if ex.ip:
            fields.append(("WARC-IP-Address", ex.ip))
        fields += [
            ("WARC-Concurrent-To", request_id),
            ("WARC-Warcinfo-ID", self.warcinfo_id),
            ("Content-Type", "application/http;msgtype=response"),
        ]
        if not not_modified or original is not None:  # an unknown original: no digest to name
            fields.append(("WARC-Payload-Digest", payload_digest))
        if not_modified:
            refers = original[1] if original is not None else None
            fields += [("WARC-Profile", PROFILE_NOT_MODIFIED)]
            if refers is not None:
                fields.append(("WARC-Refers-To", refers.record_id))
            fields.append(("WARC-Refers-To-Target-URI", refers.uri if refers else ex.uri))
            if refers is not None:
                fields.append(("WARC-Refers-To-Date", refers.date))
        if seen is not None:
            fields += [
                ("WARC-Profile", PROFILE_IDENTICAL),
                ("WARC-Refers-To", seen.record_id),
                ("WARC-Refers-To-Target-URI", seen.uri),
                ("WARC-Refers-To-Date", seen.date),
                ("WARC-Truncated", "length"),
            ]
            self.memory.newest(ex.uri, digest, seen)
        if seen is not None or not_modified:
            block_digest = "sha256:" + hashlib.sha256(ex.head).hexdigest()
            fields.append(("WARC-Block-Digest", block_digest))
            response_head = _head(fields, len(ex.head))
            response: Iterable[bytes] = [response_head, ex.head, b"\r\n\r\n"]
            response_size = len(response_head) + len(ex.head) + 4
        else:
            if truncated:
                fields.append(("WARC-Truncated", truncated))
            fields.append(("WARC-Block-Digest", "sha256:" + ex.block.hexdigest()))
            head = _head(fields, len(ex.head) + ex.size)
            response = itertools.chain([head, ex.head], ex.payload_chunks(), [b"\r\n\r\n"])
            response_size = len(head) + len(ex.head) + ex.size + 4
        request_head = _head(
            [
                ("WARC-Type", "request"),
                ("WARC-Record-ID", request_id),
                ("WARC-Date", ex.date),
                ("WARC-Target-URI", ex.uri),
                ("WARC-Concurrent-To", response_id),
                ("WARC-Warcinfo-ID", self.warcinfo_id),
                ("Content-Type", "application/http;msgtype=request"),
                ("WARC-Block-Digest", "sha256:" + hashlib.sha256(ex.request).hexdigest()),
            ],
            len(ex.request),
        )
        request: tuple[Packing, int, Iterable[bytes]] = (
            DEFLATE,
            len(request_head) + len(ex.request) + 4,
            [request_head, ex.request, b"\r\n\r\n"],
        )
        offset = self.size
        self._append([(DEFLATE if seen or not_modified else ex.packing, response_size, response), request])
        self.records += 2
        if seen is None and not not_modified and truncated is None and ex.size:
            self.memory.remember(digest, Seen(ex.uri, ex.date, response_id))
        return WarcRef(file=self.name, offset=offset, id=response_id)


def discard(folder: Path) -> None:
    """Remove the WARC files a capture wrote in ``folder`` (``capture --no-resume``)."""
    if not folder.is_dir():
        return
    for p in folder.iterdir():
        if _NAME.fullmatch(p.name):
            p.unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


def warcinfo_fields(
    options: dict[str, Any], *, robots: bool, user_agent: str, home: str
) -> list[tuple[str, str]]:
    """The warcinfo fields of a capture after ``software``/``format``/``conformsTo``."""
    return [
        ("isPartOf", home),
        ("robots", "obey" if robots else "ignore"),
        ("http-header-user-agent", user_agent),
        ("archiver-options", json.dumps(options, sort_keys=True, ensure_ascii=False, separators=(",", ":"))),
    ]


def for_capture(crawler: Any) -> Recorder:
    """The recorder of a capture run (an :class:`archiver.capture.crawl.Crawler`: its reserved and
    temporary folders, creation time, options, fetch policy and home), opened."""
    from archiver.capture.policy import redact

    policy = crawler.policy
    options = crawler.options
    info = warcinfo_fields(
        options.manifest_options(),
        robots=policy.obey_robots,
        user_agent=policy.user_agent,
        home=redact(crawler.home),
    )
    created = crawler.state.get("created") or warc_date(time.time())
    recorder = Recorder(
        crawler.reserved / WARC_DIR,
        tmp_dir=crawler.tmp,
        created=re.sub(r"\D", "", created)[:14].ljust(14, "0"),
        info=info,
        max_size=options.warc_max_size,
    )
    recorder.open()
    return recorder
