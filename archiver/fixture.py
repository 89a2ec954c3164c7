"""The fixture web site and the small HTTP server that serves it to tests.

The site is the hand-written "Acme Field Guide" under ``testdata/site/`` (``archiver/_bundled/site`` in an
installed wheel; see :func:`site_root` and ``testdata/site/README.md`` for what each page tests). Every
capture, packing, loader and server test runs against it through :class:`FixtureServer`: stdlib only
(``http.server.ThreadingHTTPServer``), bound to 127.0.0.1 on a free port, in daemon threads, silent.

Files
    ``/`` and ``/dir/`` serve ``dir/index.html``; ``/dir`` (an existing directory) answers 301 to ``/dir/``
    (query kept). The request path is percent-decoded (UTF-8) before it is mapped to disk, so
    ``/caf%C3%A9%20menu/`` is the directory ``café menu/`` and ``/demo/what%3F.html`` the file ``what?.html``.
    The query string never takes part in the lookup (``/css/theme.css?v=3`` is ``css/theme.css``).
    Nothing outside the root is served: a path with a ``.``/``..`` segment (also percent-encoded), a
    backslash, a NUL or another control character, or invalid UTF-8 gets 400; a symlink that leads out of
    the root gets 404; there are no directory listings. Media types come from the file extension (text
    types carry ``charset=utf-8``); responses carry ``Content-Length``, ``Last-Modified`` and a strong
    ``ETag`` and answer ``If-None-Match`` / ``If-Modified-Since`` with 304. Bodies are streamed in 64 KiB
    chunks. Only GET and HEAD are allowed (others get 405).

Generated files
    ``_generated.json`` in the root lists files that are synthesised rather than read from disk (the
    10 MiB video is one): path, size, media type and a deterministic byte pattern, ``sha256-counter``
    (the concatenation of ``SHA-256(seed ‖ i as 8-byte big-endian)`` for i = 0, 1, 2, …, cut to size) or
    ``repeat`` (the seed repeated). They are served like files, Range included, chunk by chunk;
    :class:`GeneratedFile` computes any slice.

Range
    With ``FixtureConfig.range`` (the default) responses say ``Accept-Ranges: bytes`` and a single range,
    ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n``, gets 206 with ``Content-Range``; an unsatisfiable one gets
    416 with ``Content-Range: bytes */LEN``. ``If-Range`` that does not match the ETag/date gives the full
    body. A multi-range or malformed header is ignored: 200 with the full body (a test fixture, not an
    RFC-complete server). With ``range=False`` there is no ``Accept-Ranges`` and every answer is a 200.

Fault injection (reserved prefix ``/_fixture/``)
    ``/_fixture/status/<code>``
        that status (400–599) with a small HTML body. 429 always sends ``Retry-After`` (``?retry-after=N``,
        default 1); 503 sends it only when ``?retry-after=N`` is given.
    ``/_fixture/redirect/chain/<n>``
        302 to ``chain/<n-1>`` … ``chain/0``, which redirects to ``?to=`` (default ``/``): n+1 hops in all
        (n ≤ 100). ``?code=301|302|303|307|308`` chooses the status of every hop; the query is carried
        along the chain.
    ``/_fixture/redirect/loop``
        302 to ``/_fixture/redirect/loop-b``, which redirects back to ``loop``, forever.
    ``/_fixture/slow?ms=N``
        sleeps N milliseconds (at most 10 000) on top of any latency, then 200.

    Any other path under ``/_fixture/`` is a 404; malformed parameters are a 400.

Switches (:class:`FixtureConfig`)
    ``latency`` seconds are slept before every response. ``robots`` is the body of ``/robots.txt``
    (default: the root's ``robots.txt``; ``None`` makes it a 404). ``status`` forces a status on paths
    (matched against the path as sent and as decoded, without the query); it wins over everything else,
    ``/robots.txt`` and ``/_fixture/`` included; a forced 429 carries ``Retry-After: 1`` and a forced 3xx
    ``Location: /``.

Every response is recorded in :attr:`FixtureServer.requests` (method, path, query, the headers that
matter to a crawler, status), so tests can assert what a client fetched. Nothing is printed: an unexpected
exception in a handler is kept in :attr:`FixtureServer.errors` instead. :meth:`FixtureServer.stop` closes
the listening socket and any kept-alive connection.
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import json
import re
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Final
from urllib.parse import parse_qs, quote, unquote, unquote_to_bytes, urlsplit

from archiver.media import is_text, media_type_for

__all__ = [
    "CHUNK_SIZE",
    "JS_MARKER",
    "JS_PAGE",
    "MAX_REDIRECT_CHAIN",
    "MAX_SLOW_MS",
    "FixtureConfig",
    "FixtureServer",
    "GeneratedFile",
    "RequestRecord",
    "load_generated",
    "media_type",
    "site_root",
]

CHUNK_SIZE: Final = 64 * 1024
#: The page whose content only exists once its scripts ran, and the text a script adds 300 ms after load.
JS_PAGE: Final = "demo/js-generated.html"
JS_MARKER: Final = "JS-GENERATED-MARKER"
MAX_SLOW_MS: Final = 10_000
MAX_REDIRECT_CHAIN: Final = 100

_GENERATED_INDEX: Final = "_generated.json"
_PATTERNS: Final = frozenset({"sha256-counter", "repeat"})
# A value no one passes on purpose: "read robots.txt from the root".
_ROBOTS_FROM_ROOT: Final = "\0robots.txt from the root\0"

# The request headers worth keeping in the request log.
_LOGGED_HEADERS: Final = (
    "accept",
    "accept-encoding",
    "accept-language",
    "cookie",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "range",
    "referer",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-purpose",
    "user-agent",
)


def site_root() -> Path:
    """The fixture site's directory: the copy bundled in a wheel if there is one, else the checkout's."""
    here = Path(__file__).resolve().parent
    bundled = here / "_bundled" / "site"
    if bundled.is_dir():
        return bundled
    return here.parent / "testdata" / "site"


def media_type(name: str) -> str:
    """The Content-Type for a file name: archiver's media type table, with charset on text types."""
    return _with_charset(media_type_for(name))


def _with_charset(media: str) -> str:
    return f"{media}; charset=utf-8" if ";" not in media and is_text(media) else media


@dataclass(frozen=True)
class FixtureConfig:
    """What the server serves and which faults it injects. See the module docstring."""

    root: Path = field(default_factory=site_root)
    latency: float = 0.0
    range: bool = True
    robots: str | None = _ROBOTS_FROM_ROOT
    status: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))
        if self.latency < 0:
            raise ValueError(f"latency must be >= 0, not {self.latency!r}")
        if self.robots == _ROBOTS_FROM_ROOT:
            robots_file = self.root / "robots.txt"
            text = robots_file.read_text(encoding="utf-8") if robots_file.is_file() else None
            object.__setattr__(self, "robots", text)
        for path, code in self.status.items():
            if not path.startswith("/"):
                raise ValueError(f"status path must start with '/': {path!r}")
            if not 200 <= code <= 599:
                raise ValueError(f"forced status for {path!r} must be 200-599, not {code!r}")
        object.__setattr__(self, "status", dict(self.status))


# ---------------------------------------------------------------------------------- generated files


@dataclass(frozen=True)
class GeneratedFile:
    """A file the server synthesises from a deterministic pattern (an entry of ``_generated.json``)."""

    path: str
    size: int
    media_type: str
    pattern: str
    seed: str
    last_modified: float = 0.0

    def __post_init__(self) -> None:
        if not self.path.startswith("/") or self.path.endswith("/"):
            raise ValueError(f"generated path must be an absolute file path: {self.path!r}")
        if self.size < 0:
            raise ValueError(f"generated size must be >= 0: {self.path!r}")
        if self.pattern not in _PATTERNS:
            raise ValueError(
                f"unknown pattern {self.pattern!r} for {self.path!r}; use one of {sorted(_PATTERNS)}"
            )
        if self.pattern == "repeat" and not self.seed:
            raise ValueError(f"pattern 'repeat' needs a non-empty seed: {self.path!r}")

    @property
    def etag(self) -> str:
        key = f"{self.path}\n{self.size}\n{self.pattern}\n{self.seed}\n{self.last_modified}".encode()
        return '"gen-' + hashlib.sha256(key).hexdigest()[:20] + '"'

    def chunks(self, start: int = 0, end: int | None = None, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes]:
        """Bytes ``[start, end)`` of the file, in pieces of at most about ``chunk_size`` bytes."""
        end = self.size if end is None else min(end, self.size)
        if start < 0 or start > end:
            raise ValueError(f"bad slice [{start}, {end}) of {self.path!r}")
        seed = self.seed.encode("utf-8")
        if self.pattern == "repeat":
            period = len(seed)
            buffer = seed * (chunk_size // period + 2)
            pos = start
            while pos < end:
                n = min(chunk_size, end - pos)
                offset = pos % period
                yield buffer[offset : offset + n]
                pos += n
            return
        # sha256-counter: block i is SHA-256(seed || i as 8-byte big-endian), 32 bytes each.
        base = hashlib.sha256(seed)
        blocks_per_chunk = max(1, chunk_size // 32)
        pos = start
        while pos < end:
            first = pos // 32
            last = min((end - 1) // 32, first + blocks_per_chunk - 1)
            parts = []
            for i in range(first, last + 1):
                h = base.copy()
                h.update(i.to_bytes(8, "big"))
                parts.append(h.digest())
            data = b"".join(parts)
            lo = pos - first * 32
            hi = min(end - first * 32, len(data))
            yield data[lo:hi]
            pos = first * 32 + hi

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the file in one piece (for tests; the server streams)."""
        return b"".join(self.chunks(start, end))


def load_generated(root: Path) -> dict[str, GeneratedFile]:
    """The generated files declared in ``root/_generated.json``, by URL path (empty if there is none)."""
    index = Path(root) / _GENERATED_INDEX
    if not index.is_file():
        return {}
    data = json.loads(index.read_text(encoding="utf-8"))
    files: dict[str, GeneratedFile] = {}
    for entry in data.get("files", []):
        stamp = entry.get("last_modified")
        entry_time = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0
        generated = GeneratedFile(
            path=entry["path"],
            size=int(entry["size"]),
            media_type=entry["media_type"],
            pattern=entry["pattern"],
            seed=entry["seed"],
            last_modified=entry_time,
        )
        if generated.path in files:
            raise ValueError(f"{index}: {generated.path!r} is listed twice")
        files[generated.path] = generated
    return files


# ------------------------------------------------------------------------------------- request log


@dataclass(frozen=True)
class RequestRecord:
    """One answered request: ``path`` is as sent (percent-encoding kept), without the query."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    status: int

    @property
    def target(self) -> str:
        """The request target as sent: path plus ``?query`` if there was one."""
        return f"{self.path}?{self.query}" if self.query else self.path

    @property
    def decoded_path(self) -> str:
        """The path percent-decoded (what it names on disk)."""
        return unquote(self.path, errors="replace")


# ------------------------------------------------------------------------------------------ server


class _BadPath(ValueError):
    pass


class _Unsatisfiable(Exception):
    pass


def _decode_path(raw: str) -> str:
    """Percent-decode a request path; refuse anything that could step outside the root."""
    if "\\" in raw:
        raise _BadPath("backslash")
    try:
        decoded = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadPath("not UTF-8") from exc
    if "\\" in decoded or any(ord(c) < 0x20 or c == "\x7f" for c in decoded):
        raise _BadPath("control character or backslash")
    if any(segment in (".", "..") for segment in decoded.split("/")):
        raise _BadPath("dot segment")
    return decoded


def _parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``[start, end)`` for a single byte range; None to ignore the header; raises _Unsatisfiable."""
    match = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", header)
    if match is None:
        return None  # malformed or multi-range: answered with the full body
    first, last = match.groups()
    if not first:
        if not last:
            return None
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise _Unsatisfiable
        return max(0, size - suffix), size
    start = int(first)
    if last and int(last) < start:
        return None  # invalid: ignored, as RFC 9110 says
    if start >= size:
        raise _Unsatisfiable
    end = size if not last else min(int(last) + 1, size)
    return start, end


def _file_chunks(path: Path, start: int, end: int) -> Iterator[bytes]:
    with path.open("rb") as fh:
        fh.seek(start)
        remaining = end - start
        while remaining > 0:
            data = fh.read(min(CHUNK_SIZE, remaining))
            if not data:
                return
            remaining -= len(data)
            yield data


def _html(title: str, text: str) -> bytes:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>'
        f"{title}</title></head>\n<body><h1>{title}</h1><p>{text}</p></body>\n</html>\n"
    ).encode()


def _phrase(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Status"


def _http_date(timestamp: float) -> str:
    return email.utils.formatdate(timestamp, usegmt=True)


_REDIRECT_CODES: Final = frozenset({301, 302, 303, 307, 308})
_NO_BODY_CODES: Final = frozenset({204, 304})


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    server_version = "archiver-fixture/1"
    sys_version = ""
    timeout = 30
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stall

    # ---- plumbing

    def setup(self) -> None:
        super().setup()
        self.server.fixture._track(self.connection, open_=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fixture._track(self.connection, open_=False)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the request log lives in memory (FixtureServer.requests)."""

    def send_response(self, code: int, message: str | None = None) -> None:
        self.server.fixture._record(self, code)
        super().send_response(code, message)

    def do_GET(self) -> None:
        self._handle(head=False)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def _method_not_allowed(self) -> None:
        self._delay()
        self.close_connection = True  # the request body, if any, is never read
        self._simple(
            405, "Method Not Allowed", "Only GET and HEAD.", head=False, headers={"Allow": "GET, HEAD"}
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _method_not_allowed

    @property
    def _config(self) -> FixtureConfig:
        return self.server.fixture.config

    def _delay(self) -> None:
        if self._config.latency > 0:
            time.sleep(self._config.latency)

    def _write(self, chunks: Iterator[bytes] | list[bytes]) -> None:
        try:
            for chunk in chunks:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _simple(
        self, code: int, title: str, text: str, *, head: bool, headers: Mapping[str, str] | None = None
    ) -> None:
        body = b"" if code in _NO_BODY_CODES else _html(f"{code} {title}", text)
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if code not in _NO_BODY_CODES:
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head and body:
            self._write([body])

    def _redirect(self, code: int, location: str, *, head: bool) -> None:
        text = f'Moved to <a href="{location}">{location}</a>.'
        self._simple(code, "Redirect", text, head=head, headers={"Location": location})

    def _not_found(self, *, head: bool) -> None:
        self._simple(404, "Not Found", "Nothing here.", head=head)

    # ---- dispatch

    def _handle(self, *, head: bool) -> None:
        self._delay()
        target = self.path
        if not target.startswith("/"):  # absolute-form, as sent to proxies
            parts = urlsplit(target)
            if parts.scheme not in ("http", "https"):
                self._simple(400, "Bad Request", "Unsupported request target.", head=head)
                return
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        raw_path, _, query = target.partition("?")
        try:
            path = _decode_path(raw_path)
        except _BadPath as exc:
            self._simple(400, "Bad Request", f"Bad path ({exc}).", head=head)
            return
        status = self._config.status
        forced = status.get(raw_path, status.get(path))
        if forced is not None:
            self._forced(forced, head=head)
        elif path == "/robots.txt":
            self._robots(head=head)
        elif path.startswith("/_fixture/"):
            self._special(path, parse_qs(query, keep_blank_values=True), query, head=head)
        else:
            self._serve_path(raw_path, path, query, head=head)

    def _forced(self, code: int, *, head: bool) -> None:
        headers: dict[str, str] = {}
        if code == 429:
            headers["Retry-After"] = "1"
        if 300 <= code < 400:
            headers["Location"] = "/"
        self._simple(
            code, _phrase(code), "Status forced by FixtureConfig.status.", head=head, headers=headers
        )

    def _robots(self, *, head: bool) -> None:
        robots = self._config.robots
        if robots is None:
            self._not_found(head=head)
            return
        body = robots.encode("utf-8")
        self._send_entity(
            size=len(body),
            content_type="text/plain; charset=utf-8",
            mtime=self.server.fixture._created_at,
            etag='"robots-' + hashlib.sha256(body).hexdigest()[:20] + '"',
            chunks=lambda start, end: iter([body[start:end]]),
            head=head,
        )

    # ---- /_fixture/ routes

    def _special(self, path: str, params: dict[str, list[str]], query: str, *, head: bool) -> None:
        parts = path.split("/")[2:]  # after "", "_fixture"

        def param(name: str, default: str) -> str:
            return params.get(name, [default])[-1]

        if len(parts) == 2 and parts[0] == "status" and parts[1].isdigit():
            self._status_route(int(parts[1]), params, head=head)
        elif len(parts) == 3 and parts[:2] == ["redirect", "chain"] and parts[2].isdigit():
            hops = int(parts[2])
            code_text = param("code", "302")
            to = param("to", "/")
            if (
                hops > MAX_REDIRECT_CHAIN
                or not code_text.isdigit()
                or int(code_text) not in _REDIRECT_CODES
                or not to
                or any(ord(c) < 0x21 or c == "\x7f" for c in to)
            ):
                self._simple(400, "Bad Request", "Bad redirect chain parameters.", head=head)
                return
            suffix = f"?{query}" if query else ""
            location = f"/_fixture/redirect/chain/{hops - 1}{suffix}" if hops > 0 else to
            self._redirect(int(code_text), location, head=head)
        elif parts == ["redirect", "loop"]:
            self._redirect(302, "/_fixture/redirect/loop-b", head=head)
        elif parts == ["redirect", "loop-b"]:
            self._redirect(302, "/_fixture/redirect/loop", head=head)
        elif parts == ["slow"]:
            ms_text = param("ms", "0")
            if not ms_text.isdigit():
                self._simple(400, "Bad Request", "ms must be a whole number.", head=head)
                return
            ms = min(int(ms_text), MAX_SLOW_MS)
            time.sleep(ms / 1000)
            self._simple(200, "OK", f"Answered after {ms} ms.", head=head)
        else:
            self._not_found(head=head)

    def _status_route(self, code: int, params: dict[str, list[str]], *, head: bool) -> None:
        if not 400 <= code <= 599:
            self._simple(400, "Bad Request", "Status routes take 400-599.", head=head)
            return
        headers: dict[str, str] = {}
        retry_after = params.get("retry-after", ["1" if code == 429 else ""])[-1]
        if retry_after and code in (429, 503):
            if not retry_after.isdigit():
                self._simple(400, "Bad Request", "retry-after must be a whole number.", head=head)
                return
            headers["Retry-After"] = retry_after
        self._simple(code, _phrase(code), "Status asked for by the URL.", head=head, headers=headers)

    # ---- files

    def _serve_path(self, raw_path: str, path: str, query: str, *, head: bool) -> None:
        fixture = self.server.fixture
        root = fixture.root
        segments = [segment for segment in path.split("/") if segment]
        resolved: Path | None
        try:
            resolved = root.joinpath(*segments).resolve(strict=True)
        except (OSError, RuntimeError):
            resolved = None
        if resolved is not None and not resolved.is_relative_to(root):
            self._not_found(head=head)
            return
        if resolved is not None and resolved.is_dir():
            if not path.endswith("/"):
                location = raw_path + "/" + (f"?{query}" if query else "")
                self._redirect(301, location, head=head)
                return
            index = resolved / "index.html"
            try:
                index = index.resolve(strict=True)
            except (OSError, RuntimeError):
                self._not_found(head=head)
                return
            if index.is_relative_to(root) and index.is_file():
                self._serve_file(index, head=head)
            else:
                self._not_found(head=head)
            return
        if resolved is not None and resolved.is_file() and not path.endswith("/"):
            self._serve_file(resolved, head=head)
            return
        generated = fixture.generated.get("/" + "/".join(segments)) if not path.endswith("/") else None
        if generated is None:
            self._not_found(head=head)
            return
        self._send_entity(
            size=generated.size,
            content_type=_with_charset(generated.media_type),
            mtime=generated.last_modified,
            etag=generated.etag,
            chunks=generated.chunks,
            head=head,
        )

    def _serve_file(self, path: Path, *, head: bool) -> None:
        stat = path.stat()
        self._send_entity(
            size=stat.st_size,
            content_type=media_type(path.name),
            mtime=stat.st_mtime,
            etag=f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"',
            chunks=lambda start, end: _file_chunks(path, start, end),
            head=head,
        )

    def _not_modified(self, etag: str, mtime: float) -> bool:
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
            return "*" in tags or etag in tags
        if_modified_since = self.headers.get("If-Modified-Since")
        if if_modified_since:
            try:
                since = email.utils.parsedate_to_datetime(if_modified_since).timestamp()
            except (TypeError, ValueError, IndexError, OverflowError):
                return False
            return int(mtime) <= since
        return False

    def _send_entity(
        self,
        *,
        size: int,
        content_type: str,
        mtime: float,
        etag: str,
        chunks: Callable[[int, int], Iterator[bytes]],
        head: bool,
    ) -> None:
        allow_range = self._config.range
        validators = {"ETag": etag, "Last-Modified": _http_date(mtime)}
        if self._not_modified(etag, mtime):
            self._simple(304, "Not Modified", "", head=True, headers=validators)
            return
        status, start, end = 200, 0, size
        range_header = self.headers.get("Range") if allow_range else None
        if_range = self.headers.get("If-Range")
        if (
            range_header is not None
            and if_range
            and if_range.strip() not in (etag, validators["Last-Modified"])
        ):
            range_header = None
        if range_header is not None:
            try:
                byte_range = _parse_range(range_header, size)
            except _Unsatisfiable:
                self._simple(
                    416,
                    "Range Not Satisfiable",
                    f"The file has {size} bytes.",
                    head=head,
                    headers={"Content-Range": f"bytes */{size}", "Accept-Ranges": "bytes"},
                )
                return
            if byte_range is not None:
                status, (start, end) = 206, byte_range
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(end - start))
        for name, value in validators.items():
            self.send_header(name, value)
        if allow_range:
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        if not head:
            self._write(chunks(start, end))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], fixture: FixtureServer) -> None:
        self.fixture = fixture
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind would call socket.getfqdn(), a DNS lookup that can stall; skip it.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: object, client_address: object) -> None:
        # Quiet: keep the exception for tests (FixtureServer.errors) instead of printing a traceback.
        error = sys.exception()
        if error is not None and not isinstance(error, ConnectionError | TimeoutError):
            self.fixture._error(error)


class FixtureServer:
    """Serves a :class:`FixtureConfig` on ``host:port`` (a free port by default) in a daemon thread.

    Use as a context manager (``with FixtureServer() as server: httpx.get(server.url)``) or call
    :meth:`start` / :meth:`stop`. :attr:`requests` is the log of answered requests.
    """

    def __init__(
        self, config: FixtureConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.config = config if config is not None else FixtureConfig()
        self.host = host
        self.root = self.config.root.resolve()
        self.generated = load_generated(self.root)
        self._requested_port = port
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self._errors: list[BaseException] = []
        self._connections: set[socket.socket] = set()
        self._created_at = time.time()  # Last-Modified of a configured robots.txt

    # ---- life cycle

    def start(self) -> FixtureServer:
        """Bind and start serving; returns self. Starting a started server does nothing."""
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self._requested_port), self)
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fixture-server", daemon=True
        )
        thread.start()
        self._httpd, self._thread = httpd, thread
        return self

    def stop(self) -> None:
        """Stop serving: close the listening socket and every connection still open (keep-alive ones too)."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                connection.shutdown(socket.SHUT_RDWR)
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> FixtureServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ---- addresses

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fixture server is not running; call start() first")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The base URL, ``http://127.0.0.1:PORT/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def url_for(self, path: str) -> str:
        """The absolute URL for a URL path (query allowed), e.g. ``url_for("/docs/?a=1")``.

        Spaces, non-ASCII and control characters are percent-encoded (``/café menu/`` works); ``%``, ``?``
        and ``#`` are kept as they are, so a file named ``hash#1.png`` must be written ``hash%231.png``.
        """
        return self.url + quote(path.lstrip("/"), safe="!#$%&'()*+,/:;=?@[]~")

    # ---- request log

    @property
    def requests(self) -> list[RequestRecord]:
        """A snapshot of every request answered so far, oldest first."""
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    @property
    def errors(self) -> list[BaseException]:
        """Unexpected exceptions raised while handling requests (a healthy run has none)."""
        with self._lock:
            return list(self._errors)

    def _track(self, connection: socket.socket, *, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _error(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)

    def _record(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        target = getattr(handler, "path", "") or ""
        if not target.startswith("/") and "://" in target:
            parts = urlsplit(target)
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        path, _, query = target.partition("?")
        message = getattr(handler, "headers", None)
        headers = {}
        if message is not None:
            headers = {name: message[name] for name in _LOGGED_HEADERS if message.get(name) is not None}
        record = RequestRecord(
            method=getattr(handler, "command", "") or "",
            path=path,
            query=query,
            headers=headers,
            status=status,
        )
        with self._lock:
            self._log.append(record)
