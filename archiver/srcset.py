"""``srcset`` attribute values, parsed by the WHATWG candidate rules and written back.

Pure: no network, no filesystem, no clock.

The HTML standard ("parse a srcset attribute") reads a candidate's URL as a run of non-whitespace,
so a comma *inside* a URL is part of it (``/img/w_300,c_fill/a.jpg 300w``); only a comma that ends
the URL (``a.png, b.png 2x``) or follows a descriptor separates candidates. Splitting on every comma,
as kage and older HTTrack do, turns one Cloudinary-style URL into three bogus ones.

:func:`parse` keeps each candidate's descriptors as written (``"300w"``, ``"2x"``, or empty), so
:func:`serialize` gives back an equivalent attribute with only the URLs changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Candidate", "parse", "rewrite", "serialize", "urls"]

_WS = " \t\n\r\f"


@dataclass(frozen=True)
class Candidate:
    """One image candidate: its URL as written and its descriptors (``"2x"``, ``"300w"``, or ``""``)."""

    url: str
    descriptors: str = ""


def parse(value: str) -> list[Candidate]:
    """The candidates of a ``srcset`` value, in order (WHATWG "parse a srcset attribute", steps that
    split candidates; descriptors are kept as text, not validated). Never raises."""
    out: list[Candidate] = []
    i, n = 0, len(value)
    while True:
        # skip whitespace and commas before a candidate
        while i < n and (value[i] in _WS or value[i] == ","):
            i += 1
        if i >= n:
            return out
        start = i
        while i < n and value[i] not in _WS:
            i += 1
        url = value[start:i]
        if url.endswith(","):
            # a URL that ends with commas has no descriptors: the commas end the candidate
            out.append(Candidate(url.rstrip(",")))
            continue
        # descriptors run to the next comma that is not inside parentheses
        depth = 0
        dstart = i
        while i < n:
            c = value[i]
            if c == "(":
                depth += 1
            elif c == ")" and depth:
                depth -= 1
            elif c == "," and depth == 0:
                break
            i += 1
        out.append(Candidate(url, " ".join(value[dstart:i].split())))
        if i < n:
            i += 1  # the comma


def urls(value: str) -> list[str]:
    """The candidate URLs of a ``srcset`` value, in order (:func:`parse`): a URL runs to the next
    white space and commas at its end separate candidates, so ``a,b.png 1x, c.png 2x`` is ``a,b.png``
    and ``c.png``."""
    return [c.url for c in parse(value)]


def _safe_url(url: str) -> str:
    # A URL that starts or ends with a comma would lose it when parsed again: escape those commas.
    if url.startswith(","):
        url = "%2C" + url[1:]
    if url.endswith(","):
        url = url[:-1] + "%2C"
    return url


def serialize(candidates: list[Candidate]) -> str:
    """A ``srcset`` value for ``candidates`` that :func:`parse` reads back as the same list. URLs must
    not contain whitespace (percent-encode it first); a leading or trailing comma is escaped."""
    parts = []
    for c in candidates:
        url = _safe_url(c.url)
        parts.append(f"{url} {c.descriptors}" if c.descriptors else url)
    return ", ".join(parts)


def rewrite(value: str, change: Callable[[str], str]) -> str:
    """``value`` with every candidate URL replaced by ``change(url)``; descriptors kept."""
    return serialize([Candidate(change(c.url), c.descriptors) for c in parse(value)])
