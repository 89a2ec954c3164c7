"""Request paths of ``archiver serve``, pure (no IO): the checks a path passes before any file is
touched (:func:`split_request_path`), and the percent-encoded paths built from decoded segments.

``/`` is the index page and ``/~/`` (:data:`RESERVED`) is reserved for the server
(``/~/search/<zim>?q=…``), so no mount is called ``~``. A request path has no ``.``/``..`` segment
(also percent-encoded), no backslash, NUL or control character, valid UTF-8 and escapes, at most
8 KiB. Errors carry a fixed message and never a host path.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import quote, unquote_to_bytes

from archiver.serve.representation import Problem

__all__ = ["MAX_PATH_BYTES", "RESERVED", "is_gwtar_name", "split_request_path"]


#: Request paths longer than this (as sent, percent-encoded) get 414, like nginx's 8 KiB line buffer.
MAX_PATH_BYTES: Final = 8192
#: The reserved first segment: server pages, never a mount.
RESERVED: Final = "~"

_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")

_BAD_PATH: Final = Problem(400, "bad request path")


def split_request_path(raw: bytes) -> tuple[list[str], bool] | Problem:
    """The decoded segments of a request path as sent (``raw_path``, no query) and whether it ends
    with ``/``; or a 400/414 :class:`Problem` for anything that could leave a root: a ``.`` or ``..``
    segment (``%2e``, ``%2f`` included: the path is decoded once, then split), a backslash, NUL or
    other control character, invalid UTF-8 or ``%`` escapes, or more than :data:`MAX_PATH_BYTES`.
    Empty segments (``a//b``) are dropped, as nginx's merge_slashes does."""
    if len(raw) > MAX_PATH_BYTES:
        return Problem(414, "request path too long")
    if not raw.startswith(b"/"):
        return _BAD_PATH
    if b"%" in raw and _BAD_ESCAPE.search(raw):
        return _BAD_PATH
    try:
        text = unquote_to_bytes(raw).decode("utf-8") if b"%" in raw else raw.decode("utf-8")
    except UnicodeDecodeError:
        return _BAD_PATH
    if _CONTROL.search(text):
        return _BAD_PATH
    segments = [s for s in text.split("/") if s]
    for s in segments:
        if s in (".", ".."):
            return _BAD_PATH
    return segments, text.endswith("/")


def _href(*segments: str) -> str:
    """An absolute, percent-encoded URL path from decoded segments."""
    return "/" + "/".join(quote(s, safe="!$&'()*+,;=:@~") for s in segments if s)


def _query_suffix(raw_query: bytes) -> str:
    return "?" + raw_query.decode("latin-1") if raw_query else ""


def is_gwtar_name(name: str) -> bool:
    """Whether a file name is a gwtar file's (``*.gwtar.html``, any case)."""
    return name.lower().endswith(".gwtar.html")
