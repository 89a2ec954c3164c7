"""Percent-encoding both ways: the canonical escaping of paths and queries (tree.md §2.1), the decoding of
query keys for hygiene (§3), and the decoding of a path segment into an on-disk name (§4.1).

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import re

__all__: list[str] = []  # archiver.urls' own helpers: callers use the names archiver.urls exports

_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_HEX = "0123456789ABCDEF"
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Bytes that stay literal in a canonical path / query (tree.md §2.1); every other byte is %XX-escaped.
_PATH_SAFE = _UNRESERVED | frozenset(b"!$&'()*+,;=:@/")
_QUERY_SAFE = _PATH_SAFE | frozenset(b"?")
# Bytes that keep their %XX escape in a decoded tree path (tree.md §4.1): '/', '%', and control bytes.
_KEEP_ESCAPED_IN_NAMES = frozenset([0x2F, 0x25, *range(0x20), 0x7F])
#: ``str.translate`` tables deleting the characters of a safe set: a text that is all safe characters
#: translates to ``""`` (one C pass instead of a Python step a byte)
_DELETE = {safe: dict.fromkeys(safe) for safe in (_PATH_SAFE, _QUERY_SAFE)}


def _escape(text: str, safe: frozenset[int]) -> str:
    """Escape every byte outside ``safe`` as uppercase %XX; keep valid escapes (uppercased hex), and
    decode escapes of unreserved characters (RFC 3986 §6.2.2.2); a '%' not followed by two hex
    digits becomes %25."""
    delete = _DELETE.get(safe)
    if delete is not None and text.isascii() and not text.translate(delete):
        return text  # every character safe (no '%' either: no safe set holds it): each kept as it is
    return _escape_each(text, safe)


def _escape_each(text: str, safe: frozenset[int]) -> str:
    """:func:`_escape`, byte by byte."""
    raw = text.encode("utf-8", "surrogatepass")
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == 0x25:
            h = raw[i + 1 : i + 3]
            if len(h) == 2 and all(c in b"0123456789abcdefABCDEF" for c in h):
                value = int(h, 16)
                out.append(chr(value) if value in _UNRESERVED else "%" + h.decode().upper())
                i += 3
                continue
            out.append("%25")
        elif b in safe:
            out.append(chr(b))
        else:
            out.append("%" + _HEX[b >> 4] + _HEX[b & 15])
        i += 1
    return "".join(out)


def _pct_decode_text(text: str) -> str:
    return _PCT.sub(lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) < 0x80 else m.group(0), text)


def _decode_segment(seg: str) -> str:
    """Percent-decode one canonical path segment into an on-disk name (tree.md §4.1). Escapes of '/',
    '%', control bytes and bytes that do not form UTF-8 stay as the three characters ``%XX``, so the
    mapping stays injective and no name contains a separator or NUL."""
    if "%" not in seg and seg.isascii():
        return seg  # nothing to decode: its bytes are its characters, which decode to themselves
    return _decode_each(seg)


def _decode_each(seg: str) -> str:
    """:func:`_decode_segment`, character by character."""
    raw = bytearray()
    parts: list[str] = []

    def flush() -> None:
        if raw:
            parts.append(_bytes_to_name(bytes(raw)))
            raw.clear()

    i = 0
    while i < len(seg):
        if seg[i] == "%":
            value = int(seg[i + 1 : i + 3], 16)
            if value in _KEEP_ESCAPED_IN_NAMES:
                flush()
                parts.append("%" + seg[i + 1 : i + 3])
            else:
                raw.append(value)
            i += 3
        else:
            raw.append(ord(seg[i]))
            i += 1
    flush()
    return "".join(parts)


def _bytes_to_name(data: bytes) -> str:
    out: list[str] = []
    while data:
        try:
            out.append(data.decode("utf-8"))
            break
        except UnicodeDecodeError as e:
            out.append(data[: e.start].decode("utf-8"))
            out.extend(f"%{b:02X}" for b in data[e.start : e.end])
            data = data[e.end :]
    return "".join(out)
