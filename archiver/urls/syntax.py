"""URL text as written (tree.md §2): the RFC 3986 split, the WHATWG strip, and how a rejected input is
named in its :class:`~archiver.errors.URLError`.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import re

from archiver.errors import URLError

__all__: list[str] = []  # archiver.urls' own helpers: callers use the names archiver.urls exports

_SPLIT = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: what WHATWG strips from both ends of a URL: the C0 controls and space
_C0_AND_SPACE = "".join(map(chr, range(0x21)))


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(text: str, why: str) -> URLError:
    return URLError(why, subject=repr(_short(text)))


def _strip(text: str) -> str:
    # WHATWG URL parsing: strip leading/trailing C0 controls and space, drop tab and newlines anywhere.
    return text.strip(_C0_AND_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
