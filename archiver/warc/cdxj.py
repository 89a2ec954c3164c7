"""CDXJ index lines, SURT keys, WARC dates and page titles (formats/warc.md §4, §5).

Pure: no network, no filesystem, no clock.
"""

from __future__ import annotations

import html
import json
import re
import zlib
from dataclasses import dataclass
from urllib.parse import quote_from_bytes, unquote_to_bytes, urlsplit

__all__ = ["IndexEntry", "compressed_index", "parse_line", "surt", "timestamp", "title_of", "valid_date"]

_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z")
_WWW = re.compile(r"www\d*\.")
_DEFAULT_PORTS = {"http": 80, "https": 443}
BLOCK_LINES = 256  # lines per gzip member of index.cdx.gz
PLAIN_LIMIT = 50_000  # bytes: a bigger index is written compressed (index.cdx.gz + index.idx)
MAX_LINE = 64 * 1024  # an index line longer than this is damage


def valid_date(text: str) -> bool:
    """Whether ``text`` is a WARC-Date: UTC W3C date-time, optional 1-9 digit fraction (WARC 1.1 §5.4)."""
    return _DATE.fullmatch(text) is not None


def timestamp(date: str) -> str:
    """The 14-digit CDXJ timestamp of a WARC-Date (``2026-12-01T07:00:00Z`` → ``20261201070000``)."""
    return re.sub(r"\D", "", date[:19])


def surt(url: str) -> str | None:
    """The SURT sort key of an http(s) URL (``https://www.Example.com:8080/a/?b=2&a=1`` →
    ``com,example:8080)/a?a=1&b=2``), or None for other schemes, as the Python ``surt`` package
    (cdxj-indexer, pywb) computes it, session-id stripping aside: host labels reversed,
    ``www``/``www2``… dropped, default port dropped; path and query percent-decoded repeatedly then
    escaped once, ``.`` and ``..`` segments resolved, repeated and trailing slashes dropped; query
    parameters sorted; fragment dropped; all lower case."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").strip(".")
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    host = _WWW.sub("", host, count=1) if _WWW.match(host) else host
    key = ",".join(reversed(host.split(".")))
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        key += f":{port}"
    path = _escape_once(_normal_path(_unescape(parts.path))).lower()
    if path.endswith("/") and len(path) > 1:
        path = path[:-1]
    key += ")" + path
    query = _escape_once(_unescape(parts.query)).lower()
    if query:
        pairs = sorted(tuple(arg.split("=", 1)) for arg in query.split("&"))
        key += "?" + "&".join("=".join(pair) for pair in pairs)
    return key.lower()


_SAFE = b"""!"$&'()*+,-./:;<=>?@[\\]^_`{|}~"""


def _unescape(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    for _ in range(32):
        decoded = unquote_to_bytes(data)
        if decoded == data:
            break
        data = decoded
    return data


def _normal_path(path: bytes) -> bytes:
    if not path:
        return b"/"
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b".":
            continue
        if segment == b"..":
            if kept:
                kept.pop()
            else:
                kept.append(segment)
            continue
        kept.append(segment)
    out = b"/" + b"".join(s + b"/" for s in kept[:-1] if s)
    return out + (kept[-1] if kept else b"")


def _escape_once(data: bytes) -> str:
    return quote_from_bytes(data, safe=_SAFE)


@dataclass(frozen=True)
class IndexEntry:
    """One CDXJ line: the sort key, the timestamp and the JSON fields."""

    key: str
    ts: str
    fields: dict[str, object]

    def line(self) -> str:
        return f"{self.key} {self.ts} {json.dumps(self.fields, sort_keys=True, ensure_ascii=False)}\n"


def parse_line(line: str) -> IndexEntry | str:
    """A CDXJ line parsed, or the reason it cannot be."""
    if len(line) > MAX_LINE:
        return f"index line longer than {MAX_LINE} characters"
    key, sep, rest = line.rstrip("\n").partition(" ")
    ts, sep2, body = rest.partition(" ")
    if not sep or not sep2 or not key or not re.fullmatch(r"\d{14}(?:\d{3})?", ts):
        return "index line is not '<key> <timestamp> <json>'"
    try:
        fields = json.loads(body)
    except ValueError:
        return "index line's JSON does not parse"
    except RecursionError:  # arrays or objects nested past the decoder's stack
        return "index line's JSON is nested too deep"
    if not isinstance(fields, dict):
        return "index line's JSON is not an object"
    return IndexEntry(key, ts, fields)


def compressed_index(lines: list[str]) -> tuple[bytes, bytes]:
    """(``index.cdx.gz``, ``index.idx``) for sorted CDXJ ``lines``: gzip members of
    :data:`BLOCK_LINES` lines each, and one idx line per member (its first key and timestamp, its
    offset and length). Deterministic: no file name or time in the gzip headers."""
    data = bytearray()
    idx = ['!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}\n']
    for start in range(0, len(lines), BLOCK_LINES):
        block = lines[start : start + BLOCK_LINES]
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)
        member = comp.compress("".join(block).encode("utf-8")) + comp.flush()
        prefix = " ".join(block[0].split(" ", 2)[:2])
        idx.append(f"{prefix} {json.dumps({'offset': len(data), 'length': len(member)})}\n")
        data += member
    return bytes(data), "".join(idx).encode("utf-8")


# What rb"<title\b[^>]*>(.*?)</title" (re.I, re.S) found, in linear time: that search was tried from
# every "<title", each try reading to the end (256 KiB of "<title>" in a page's first bytes: 19 s of
# CPU a record). A try from a later "<title" reads from a later ">": it cannot find an end the first
# try did not.
_TITLE_START = re.compile(rb"<title\b", re.I)
_TITLE_END = re.compile(rb"</title", re.I)
_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.I)


def title_of(head: bytes, content_type: str) -> str | None:
    """The ``<title>`` in the first bytes of an HTML page (already de-chunked and decoded), on one
    line, at most 300 characters; None when there is none."""
    start = _TITLE_START.search(head)
    gt = -1 if start is None else head.find(b">", start.end())
    end = None if gt < 0 else _TITLE_END.search(head, gt + 1)
    if end is None:
        return None
    found = head[gt + 1 : end.start()]
    cs = _CHARSET.search(content_type)
    try:
        text = found.decode(cs.group(1) if cs else "utf-8", "replace")
    except LookupError:
        text = found.decode("utf-8", "replace")
    text = " ".join(html.unescape(text).split())
    return text[:300] or None
