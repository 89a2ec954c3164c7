"""A page's search text read under the markup guard (formats/tree.md §9.5): a page of many tags is
read in :mod:`archiver.markup_guard`'s child, under its limits, and parsed there only."""

from __future__ import annotations

import msgspec

from archiver import markup_guard
from archiver.errors import FormatError
from archiver.search.text import Page, decode, page_of

__all__ = ["extract"]

_RESULT = msgspec.json.Decoder(tuple[str, list[tuple[bool, str]], bool])


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
    try:
        title, blocks, cut = _RESULT.decode(result)
    except msgspec.ValidationError:  # only a broken child says something else
        raise FormatError("the markup check's process answered garbage") from None
    return Page(title, blocks, cut)
