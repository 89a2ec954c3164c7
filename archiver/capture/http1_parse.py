"""The pure half of the fetcher's HTTP/1.1 client (:mod:`.http1`, which re-exports every name here):
the request written (:func:`split_url`, :func:`request_head`) and the response head read
(:func:`parse_head`, :func:`framing`, :func:`reusable`, :func:`chunk_size`), bounded, since every
byte of a response may lie (the rules are in :mod:`.http1`'s docstring), and the errors both halves
raise. No IO."""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "MAX_FIELDS",
    "MAX_HEAD",
    "MAX_INTERIM",
    "MAX_LINE",
    "ConnectError",
    "ConnectTimeout",
    "Head",
    "LocalProtocolError",
    "NetworkError",
    "ReadTimeout",
    "RemoteProtocolError",
    "WriteTimeout",
    "chunk_size",
    "framing",
    "parse_head",
    "request_head",
    "reusable",
    "split_url",
]

MAX_HEAD = 64 << 10  # bytes of a response head (status line and fields), and of a trailer section
MAX_FIELDS = 256  # field lines of a response head
MAX_LINE = 1024  # bytes of a chunk-size line
MAX_INTERIM = 8  # 1xx responses before the final one


class RemoteProtocolError(ConnectionError):
    """The server broke HTTP/1.1 (a head that does not parse, a body cut short)."""


class LocalProtocolError(ValueError):
    """A request that cannot be written (a header value with a line break, a non-ASCII target)."""


class ConnectTimeout(TimeoutError):
    pass


class ReadTimeout(TimeoutError):
    pass


class WriteTimeout(TimeoutError):
    pass


class NetworkError(ConnectionError):
    """A stream that failed to read or write (the system's error as text)."""


class ConnectError(NetworkError):
    """A connection that could not be opened (refused, unreachable, a name that does not resolve,
    a TLS handshake that failed)."""


# ---- pure: the request


_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
#: the names the fetcher sends, known to be tokens (any other is checked by :data:`_TOKEN`)
_SENT_NAMES = frozenset(
    b"User-Agent Accept Accept-Encoding Accept-Language Referer If-None-Match If-Modified-Since".split()
)
_TARGET_SAFE_BYTES = b"!$&'()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~%"
_TARGET_SAFE = frozenset(_TARGET_SAFE_BYTES)
_NOT_IN_HOST = frozenset(" \t\r\n\0")


def _target_bytes(target: str) -> bytes:
    """The request target as sent: ASCII, every other byte percent-encoded (UTF-8), as browsers do."""
    raw = target.encode("utf-8")
    if not raw.translate(None, _TARGET_SAFE_BYTES):  # nothing left once the safe bytes are gone
        return raw
    return b"".join(bytes((b,)) if b in _TARGET_SAFE else b"%%%02X" % b for b in raw)


def split_url(url: str) -> tuple[str, str, int, str, bytes]:
    """(scheme, host, port, Host header, request target) of an absolute http(s) URL; the host
    without IPv6 brackets, the target path and query (``/`` when empty), never the fragment."""
    scheme, sep, rest = url.partition("://")
    end = len(rest)
    for mark in "/?#":  # the authority ends at the first of them
        found = rest.find(mark, 0, end)
        if found >= 0:
            end = found
    origin = url[: len(url) - len(rest) + end]
    known = _ORIGINS.get(origin)  # a run asks few origins, each many times
    if known is None:
        known = _origin(url, scheme, sep, rest[:end])
        if len(_ORIGINS) >= _MAX_ORIGINS:
            _ORIGINS.clear()
        _ORIGINS[origin] = known
    path = rest[end:].partition("#")[0]
    if not path.startswith("/"):
        path = "/" + path
    return (*known, _target_bytes(path))


#: (scheme, host, port, Host header) by the text of a URL up to its path (:func:`split_url`)
_ORIGINS: dict[str, tuple[str, str, int, str]] = {}
_MAX_ORIGINS = 1024


def _origin(url: str, scheme: str, sep: str, authority: str) -> tuple[str, str, int, str]:
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        raise LocalProtocolError(f"not an http(s) URL: {url[:200]!r}")
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise LocalProtocolError(f"bad IPv6 host in {url[:200]!r}")
        host, port_text = authority[1:close], authority[close + 1 :].removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    default = 443 if scheme == "https" else 80
    if port_text and not (port_text.isdigit() and port_text.isascii() and 0 < int(port_text) < 65536):
        raise LocalProtocolError(f"bad port in {url[:200]!r}")
    port = int(port_text) if port_text else default
    if not host or not _NOT_IN_HOST.isdisjoint(host):
        raise LocalProtocolError(f"bad host in {url[:200]!r}")
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == default else f"{shown}:{port}"
    if not host_header.isascii():
        raise LocalProtocolError(f"non-ASCII host in {url[:200]!r}")
    return scheme, host, port, host_header


def request_head(target: bytes, host: str, headers: list[tuple[str, str]]) -> bytes:
    """``GET target HTTP/1.1`` with ``Host`` first and ``headers`` in order; raises
    :class:`LocalProtocolError` for a name that is no token or a value with CR, LF or NUL."""
    lines = [b"GET ", target, b" HTTP/1.1\r\nHost: ", host.encode("ascii"), b"\r\n"]
    cache = _LINES
    for pair in headers:
        line = cache.get(pair)
        if line is None:
            line = _header_line(*pair)
            if len(cache) >= _MAX_LINES:
                cache.clear()
            cache[pair] = line
        lines.append(line)
    lines.append(b"\r\n")
    return b"".join(lines)


#: header lines as sent, by (name, value): most of a request's fields are the same in every request
#: of a run (User-Agent, Accept, Accept-Encoding), so each is checked and encoded once
_LINES: dict[tuple[str, str], bytes] = {}
_MAX_LINES = 4096


def _header_line(name: str, value: str) -> bytes:
    """``name: value`` CRLF, checked (a name that is no token, a value with CR, LF or NUL raise
    :class:`LocalProtocolError`)."""
    raw_name = name.encode("latin-1", "replace")
    raw_value = value.encode("latin-1", "replace")
    # CR, LF or NUL in the value: one C call (``b"\r" in value`` is a TypeError raised, formatted and
    # cleared inside CPython 3.11 before the substring search, ~5 K instructions each)
    if (raw_name not in _SENT_NAMES and not _TOKEN.fullmatch(raw_name)) or len(
        raw_value.translate(None, b"\r\n\0")
    ) != len(raw_value):
        raise LocalProtocolError(f"header {name[:60]!r} cannot be sent")
    return b"".join((raw_name, b": ", raw_value, b"\r\n"))


# ---- pure: the response


class Head(NamedTuple):
    """A parsed response head: ``version`` (``b"HTTP/1.1"``), status, reason, raw fields in order."""

    version: bytes
    status: int
    reason: bytes
    fields: list[tuple[bytes, bytes]]


_STATUS = re.compile(rb"(HTTP/1\.[01]) ([0-9]{3})(?: ([^\r\n\0]*))?")


#: a field line (ended by LF) ``name: value`` with a token name, from the start of a line only: the
#: fields of a head (:func:`parse_head`'s fast path) when it matches every line of it
_FIELD = re.compile(rb"^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*((?:[^\n]*[^ \t\n])?)[ \t]*\n", re.MULTILINE)


def parse_head(data: bytes) -> Head:
    """The head ``data`` (status line and field lines, CRLF or LF ended, without the empty line
    that ends it); raises :class:`RemoteProtocolError` for anything that is not one.

    The fast path: no CR (once CRLF is LF) or NUL after the status line, and :data:`_FIELD` found
    at the start of every line (a match never spans lines nor starts inside one, so as many
    matches as lines means every line is a field line): one pass of the regex over the fields,
    where a check of the whole block by a second regex (its ``[^\\r\\n\\0]`` tested character by
    character) cost as much again. Anything else (an empty, folded or broken line) goes line by line.
    Bytes are looked for with ``find``: ``b"\\r" in data`` raises, formats and clears a TypeError
    inside CPython 3.11 before it searches (~3 K instructions each)."""
    text = data.replace(b"\r\n", b"\n") if data.find(b"\r") >= 0 else data
    status, _, rest = text.partition(b"\n")
    if rest:
        rest += b"\n"
    m = _STATUS.fullmatch(status)
    if m is not None and rest.find(b"\r") < 0 and rest.find(b"\0") < 0:
        lines = rest.count(b"\n")
        if lines <= MAX_FIELDS:
            fields = _FIELD.findall(rest)
            if len(fields) == lines:
                return Head(m.group(1), int(m.group(2)), m.group(3) or b"", fields)
    return _parse_lines(data)  # its errors (or an obsolete line folding) line by line


def _parse_lines(data: bytes) -> Head:
    """:func:`parse_head`, line by line."""
    lines = data.split(b"\n")
    first = lines[0].rstrip(b"\r")
    m = _STATUS.fullmatch(first)
    if m is None:
        raise RemoteProtocolError(f"not an HTTP/1.x status line: {first[:80]!r}")
    if len(lines) - 1 > MAX_FIELDS:
        raise RemoteProtocolError(f"more than {MAX_FIELDS} header fields")
    fields: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        line = line.removesuffix(b"\r")
        if not line:
            continue
        if line[0] in b" \t":  # obsolete line folding: part of the previous field's value
            if not fields:
                raise RemoteProtocolError("a folded line before any header field")
            name, value = fields[-1]
            fields[-1] = (name, (value + b" " + line.strip(b" \t")).strip(b" \t"))
            continue
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name):
            raise RemoteProtocolError(f"not a header field: {line[:80]!r}")
        value = value.strip(b" \t")
        if value.find(b"\0") >= 0 or value.find(b"\r") >= 0:
            raise RemoteProtocolError(f"header {name[:60]!r} holds a NUL or CR")
        fields.append((name, value))
    return Head(m.group(1), int(m.group(2)), m.group(3) or b"", fields)


def _values(fields: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [v for n, v in fields if n.lower() == name]


def framing(head: Head) -> tuple[str, int]:
    """How the body of a response to a GET ends (RFC 9112 §6.3): ``("none", 0)``, ``("length", N)``,
    ``("chunked", 0)`` or ``("close", 0)``; raises :class:`RemoteProtocolError` for a Content-Length
    that lies about itself."""
    if head.status < 200 or head.status in (204, 304):
        return "none", 0
    codings = b",".join(_values(head.fields, b"transfer-encoding"))
    if codings:
        last = codings.rsplit(b",", 1)[-1].strip(b" \t").lower()
        return ("chunked", 0) if last == b"chunked" else ("close", 0)
    lengths = {
        v.strip(b" \t") for value in _values(head.fields, b"content-length") for v in value.split(b",")
    }
    if not lengths:
        return "close", 0
    if len(lengths) > 1:
        raise RemoteProtocolError("Content-Length given with different values")
    (length,) = lengths
    if not length.isdigit() or len(length) > 18:
        raise RemoteProtocolError(f"Content-Length is not a length: {length[:40]!r}")
    return "length", int(length)


def reusable(head: Head, kind: str) -> bool:
    """May the connection carry another request once this response is read to its end?"""
    if kind == "close" or head.version != b"HTTP/1.1":
        return False
    tokens = b",".join(_values(head.fields, b"connection")).lower()
    if tokens.find(b"close") < 0:  # no such token (``keep-alive``, or no field at all)
        return True
    return b"close" not in {t.strip(b" \t") for t in tokens.split(b",")}


def chunk_size(line: bytes) -> int:
    """The size of a chunk from its size line (hex, then optional ``;extensions``); raises
    :class:`RemoteProtocolError` for anything else."""
    size = line.split(b";", 1)[0].strip(b" \t\r\n")
    if not size or len(size) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size):
        raise RemoteProtocolError(f"not a chunk size: {line[:40]!r}")
    return int(size, 16)
