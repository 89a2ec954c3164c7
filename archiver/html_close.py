"""``html.parser`` in time linear in the document's size: :class:`Parser`, an ``HTMLParser`` for every
reader of HTML that uses the standard library's (gwtar's references, SingleFile's split, a bookmarks
file). Pure: no network, no filesystem, no clock.

Python 3.11's ``HTMLParser`` takes time with the square of the size of some documents (CPython fixed
most of it in 3.13.4, gh-135462). ``feed`` stops at the first construct it cannot end and keeps the
rest; ``close`` then hands that ``<`` out as text and parses again from the next ``>`` (or, when no
``>`` follows, from the next ``<``), where the next construct searches the rest of the document for
its end again. Measured on dab4b1c (CPU seconds; 20,000 repeats):

- ``<a b='`` (120 KB): 18.8 s; ``<a/`` and ``<a =``: 16.5 s and 12.7 s; ``<!--``: 1.7 s (a SingleFile
  page ending in 50,000 of them, 200 KB: 10.5 s to pack; 2 MB would take 17 minutes);
- ``<!--x>`` (a comment never ended, a ``>`` after each): 1.7 s; ``<![CDATA[x>``: 0.5 s.

Two rules make it linear without changing what comes out:

- no ``>`` after a point: nothing but text can come out past it (every tag, comment, declaration
  and processing instruction ends with a ``>``). :meth:`Parser.close` lets the parser close the
  document up to its last ``>`` and hands the rest to ``handle_data`` in one piece (as the parser
  would, in pieces; inside ``<style>`` or ``<script>`` it drops the rest, and so does this);
- a comment's end (``--`` ``>``) or a marked section's (``]]>``, ``]>``) not found after a point is
  not found after any later point: :meth:`Parser.parse_comment` and
  :meth:`Parser.parse_marked_section` remember where the search failed and fail at once past it.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

__all__ = ["Parser"]

#: A marked section's keyword, as ``_markupbase`` scans it (``<![CDATA[``, ``<![if ...]>``).
_SECTION_NAME = re.compile(r"[a-zA-Z][-_.a-zA-Z0-9]*")
#: Each keyword ``_markupbase`` knows and the end it searches for (``]]>`` holds a ``]>``, so where no
#: ``]>`` follows, neither does a ``]]>``); another keyword raises AssertionError, as it did.
_SECTION_ENDS = {
    **dict.fromkeys(("temp", "cdata", "ignore", "include", "rcdata"), "]]>"),
    **dict.fromkeys(("if", "else", "endif"), "]>"),
}


class Parser(HTMLParser):
    """``HTMLParser`` whose ``close`` and end searches take time linear in the document's size, with
    the same calls to the handlers (text may come in fewer, longer pieces)."""

    def reset(self) -> None:
        super().reset()
        #: the text the failures below were found in (they hold while it is the parser's rawdata)
        self._searched: str | None = None
        #: where a search for each end failed: "comment" (``--`` ``>``), "]]>", "]>"
        self._no_end: dict[str, int] = {}

    def _failed_before(self, end: str, i: int) -> bool:
        rawdata: str = self.rawdata
        if rawdata is not self._searched:
            self._searched, self._no_end = rawdata, {}
            return False
        at = self._no_end.get(end)
        return at is not None and i >= at

    def _failed(self, end: str, i: int) -> None:
        self._searched = self.rawdata
        self._no_end[end] = min(i, self._no_end.get(end, i))

    def parse_comment(self, i: int, report: int = 1) -> int:
        if self._failed_before("comment", i):
            return -1
        k: int = super().parse_comment(i, report)
        if k < 0:
            self._failed("comment", i)
        return k

    def parse_marked_section(self, i: int, report: int = 1) -> int:
        m = _SECTION_NAME.match(self.rawdata, i + 3)
        end = None if m is None else _SECTION_ENDS.get(m.group().lower())
        if end is not None and (self._failed_before(end, i) or self._failed_before("]>", i)):
            return -1
        k: int = super().parse_marked_section(i, report)
        if k < 0 and end is not None:
            self._failed(end, i)
        return k

    def close(self) -> None:
        rest: str = self.rawdata
        last = rest.rfind(">")
        if "<" not in rest[last + 1 :]:
            super().close()
            return
        self.rawdata = rest[: last + 1]
        super().close()
        if not self.cdata_elem:
            tail = rest[last + 1 :]
            self.handle_data(html.unescape(tail) if self.convert_charrefs else tail)
