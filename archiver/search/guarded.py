"""A page's search text read under the markup guard (formats/tree.md §9.5): a page of many tags is
read in :mod:`archiver.markup_guard`'s child, under its limits, and parsed there only."""

from __future__ import annotations

import json
from operator import itemgetter

from archiver import markup_guard
from archiver.errors import FormatError
from archiver.search.text import Page, decode, page_of

__all__ = ["extract"]

_GARBAGE = "the markup check's process answered garbage"


def extract(html: bytes) -> Page:
    """:func:`archiver.search.text.extract` of ``html``, a page of many tags read in the guard's
    child; FormatError when it goes over the child's limits."""
    text = decode(html)
    if not markup_guard.needs_check(text):
        return page_of(text)
    try:
        result = markup_guard.run(text, markup_guard.SEARCH_TEXT)
    except markup_guard.CostlyMarkup as e:
        raise FormatError(str(e)) from None
    return page_from(result)


def page_from(result: bytes) -> Page:
    """The page the child answered, JSON ``[title, [[heading, text], ...], cut]`` (strings and
    booleans, nothing else); FormatError otherwise (only a broken child says something else). The
    standard library's JSON and C-speed checks: msgspec's typed decoder cost every ``archiver
    index`` ~10 ms of imports."""
    try:
        value = json.loads(result)
        title, blocks, cut = value if type(value) is list else ()
        pairs = list(map(tuple, blocks)) if type(blocks) is list else None
    except (ValueError, TypeError, RecursionError):
        raise FormatError(_GARBAGE) from None
    if (
        type(title) is not str
        or type(cut) is not bool
        or pairs is None
        or not set(map(len, pairs)) <= {2}
        or not set(map(type, map(itemgetter(0), pairs))) <= {bool}
        or not set(map(type, map(itemgetter(1), pairs))) <= {str}
    ):
        raise FormatError(_GARBAGE)
    return Page(title, pairs, cut)  # type: ignore[arg-type]
