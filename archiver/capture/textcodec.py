"""Bytes of an HTML page or a stylesheet → text, the way browsers pick the encoding.

Pure: no network, no filesystem, no clock.

HTML: a byte-order mark, then the ``Content-Type`` charset, then a ``<meta charset>`` /
``<meta http-equiv=content-type>`` in the first 4 KiB, then UTF-8 if the bytes are valid UTF-8, else
windows-1252 (the WHATWG fallback for unlabelled Western pages). CSS: a byte-order mark, then the
``Content-Type`` charset, then an ``@charset`` rule, then UTF-8. A label that says UTF-16 without a
byte-order mark means UTF-8 (WHATWG). Undecodable bytes become U+FFFD; nothing raises.
"""

from __future__ import annotations

import codecs
import re

__all__ = ["decode_css", "decode_html"]

# compiled at their use (re keeps them; the first with re.I): only a document whose answer names no
# charset needs one
_META = rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)"""
_CSS_CHARSET = rb'^@charset "([A-Za-z0-9_\-:.]+)";'
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    try:
        name = codecs.lookup(label.strip().lower()).name
    except LookupError:
        return None
    if name.startswith("utf-16") or name == "utf-32":
        return "utf-8"
    if name in ("latin-1", "iso8859-1", "ascii"):
        return "cp1252"  # WHATWG: these labels mean windows-1252
    return name


def _bom(data: bytes) -> tuple[str, bytes] | None:
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name, data[len(bom) :]
    return None


def decode_html(data: bytes, charset: str | None = None) -> str:
    """The text of an HTML document's bytes (see the module docstring)."""
    found = _bom(data)
    if found:
        return found[1].decode(found[0], "replace")
    name = _codec(charset)
    if name is None:
        m = re.search(_META, data[:4096], re.I)
        name = _codec(m.group(1).decode("ascii", "replace")) if m else None
    if name is not None:
        return data.decode(name, "replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")


def decode_css(data: bytes, charset: str | None = None) -> str:
    """The text of a stylesheet's bytes (see the module docstring). A leading ``@charset`` rule is
    removed: the text is written back as UTF-8, which is what a stylesheet without one is read as
    when the page that links it is UTF-8."""
    found = _bom(data)
    if found:
        text = found[1].decode(found[0], "replace")
    else:
        name = _codec(charset)
        m = re.match(_CSS_CHARSET, data)
        if name is None and m:
            name = _codec(m.group(1).decode("ascii"))
        text = data.decode(name or "utf-8", "replace")
    if text.startswith("@charset "):
        end = text.find(";")
        if 0 < end < 80:
            text = text[end + 1 :].lstrip("\r\n")
    return text
