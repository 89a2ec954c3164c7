"""One term's postings in one index, decoded once for the server's engine (formats/search.md §6.5):
:func:`term_data` reads a postings value (§4.3) into a :class:`TermData` (documents, impacts, impact
order, bitmasks, each posting's offset). Pure: no network, no filesystem, no clock."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate

from archiver.search.build import MAX_POSITIONS, unpack_numbers
from archiver.search.query import HEADING, K1, TITLE, B, Posting, impact

__all__ = [
    "ENTRY",
    "TERM_BYTES",
    "TermData",
    "bits_of",
    "mask_of",
    "merge",
    "number_count",
    "term_data",
    "valid_postings",
]

_NUMBER = r"[W-Za-z_\-]*[0-9A-V]"  # one number of a postings string (§4.3): continuation digits, a last one
_HEAD = re.compile(f"({_NUMBER})({_NUMBER})({_NUMBER})({_NUMBER})")
_SKIP = [re.compile(f"(?:{_NUMBER}){{{n}}}") for n in range(MAX_POSITIONS + 1)]
_CONTINUATION = str.maketrans("", "", "WXYZabcdefghijklmnopqrstuvwxyz-_")
ENTRY = 96  # bytes a cache entry costs besides its arrays (estimate)
TERM_BYTES = 400  # bytes a term costs besides its postings: its str, a dict entry, four arrays, two ints


_ONE = {c: unpack_numbers(c)[0] for c in "0123456789ABCDEFGHIJKLMNOPQRSTUV"}
#: Every number of one or two digits (a light term's document steps: two digits up to 1,023), for
#: :func:`_walk`'s four counts of a posting; longer ones go through :func:`unpack_numbers`.
_FEW = _ONE | {c + t: unpack_numbers(c + t)[0] for c in "WXYZabcdefghijklmnopqrstuvwxyz-_" for t in _ONE}


def _number(text: str) -> int:
    got = _ONE.get(text)
    return got if got is not None else unpack_numbers(text)[0]


_TERMINAL = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUV")
# _walk's tables, built once (not for every term it decodes): the step over n positions, and a
# heading count's part of the impact (the same operations as query.impact's)
_SKIP_MATCH = [s.match for s in _SKIP]
_HEADING = [HEADING * h / (h + 0.5) for h in range(64)]


def valid_postings(value: str) -> bool:
    """Whether ``value`` is a postings string (§4.3): postings digits only, ending with a number's
    last digit (C-speed string tests, not a regex over megabytes of shards)."""
    if not value:
        return True
    return value.isascii() and value.replace("-", "0").replace("_", "0").isalnum() and value[-1] in _TERMINAL


def bits_of(mask: int) -> list[int]:
    """The numbers of the bits set in ``mask``, in order."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def number_count(raw: str | list[int]) -> int:
    """How many numbers a postings value holds (the core ranks prefix completions by it)."""
    return len(raw.translate(_CONTINUATION)) if isinstance(raw, str) else len(raw)


def mask_of(docs: Sequence[int]) -> int:
    if not docs:
        return 0
    bits = bytearray(docs[-1] // 8 + 1)
    for d in docs:
        bits[d >> 3] |= 1 << (d & 7)
    return int.from_bytes(bits, "little")


def merge(tds: Sequence[TermData]) -> tuple[array, array, array, int]:
    """A prefix's completions as one list (formats/search.md §6.5): each document once, with the
    largest impact any of ``tds`` has in it; (documents, their impacts, the indexes in impact order,
    the documents' bitmask). The engine merges them when a query meets the prefix; a postings table
    stores the merged lists of the prefixes that cost most (:mod:`archiver.search.table`)."""
    best: dict[int, float] = {}
    get = best.get
    for td in tds:
        for d, v in zip(td.docs, td.impact, strict=True):
            if get(d, -1.0) < v:
                best[d] = v
    docs = array("i", sorted(best))
    impacts = array("d", map(best.__getitem__, docs))
    order = array("i", sorted(range(len(docs)), key=impacts.__getitem__, reverse=True))
    mask = 0
    for td in tds:
        mask |= td.mask
    return docs, impacts, order, mask


class TermData:
    """One term's postings in one index, decoded once (see the module's docstring)."""

    __slots__ = ("__weakref__", "docs", "impact", "lengths", "mask", "offs", "order", "raw", "size", "titles")

    def __init__(self, raw: str | list[int] | memoryview, lengths: list[int] | None) -> None:
        self.raw = raw
        self.lengths = lengths  # the manifest's (format 3); None: each posting carries them
        self.docs = array("i")
        self.impact = array("d")
        self.offs = array("i")
        self.order = array("i")
        self.mask = self.titles = 0
        self.size = 0

    def find(self, doc: int) -> int:
        """The index of ``doc`` in :attr:`docs` (-1: the term is not in it)."""
        if not (self.mask >> doc) & 1:
            return -1
        return bisect_left(self.docs, doc)

    def positions(self, i: int) -> tuple[int, ...]:
        """:meth:`posting`'s positions alone (no :class:`Posting` built)."""
        return tuple(accumulate(self._own(self._flat(i))))

    def _own(self, flat: list[int]) -> list[int]:
        """The position steps of the posting ``flat`` starts with, as many as its counts say: a
        document named twice keeps its last posting, so the one before it may span the dropped one
        too (its slice of :attr:`offs` ends where the kept one starts)."""
        if self.lengths is not None:  # format 3: doc delta, t, h, b, positions
            return flat[4 : 4 + min(MAX_POSITIONS, flat[1] + flat[2] + flat[3])]
        return flat[7 : 7 + flat[6]]  # formats 1-2: doc delta, t, h, b, length, title length, n

    def _flat(self, i: int) -> list[int]:
        raw = self.raw
        if isinstance(raw, (str, memoryview)):
            # a table's is read in place (archiver.search.table)
            text = raw[self.offs[i] : self.offs[i + 1]]
            text = text if isinstance(text, str) else str(text, "ascii")
            try:
                return [_ONE[c] for c in text]  # every number one digit: most postings
            except KeyError:
                return unpack_numbers(text)
        return raw[self.offs[i] : self.offs[i + 1]]

    def posting(self, i: int) -> Posting:
        doc, flat = self.docs[i], self._flat(i)
        if self.lengths is not None:  # format 3: the lengths are the index's
            length, title_length = self.lengths[2 * doc], self.lengths[2 * doc + 1]
        else:  # formats 1-2: the posting's own
            length, title_length = flat[4], flat[5]
        return Posting(flat[1], flat[2], flat[3], length, title_length, tuple(accumulate(self._own(flat))))


def term_data(
    raw: str | list[int], version: int, lengths: list[int], avgdl: float, documents: int
) -> TermData:
    """Decode one term's postings value (ValueError when it is malformed: the messages of the core's
    decoders, which keep the last posting of a document named twice). A format 1-2 posting naming a
    document past ``documents`` is malformed here (the core ranks it, then fails to show it): the
    bitmasks must stay within the index's documents."""
    td = TermData(raw, lengths if version >= 3 else None)
    docs, imps, offs = td.docs, td.impact, td.offs
    titles: list[int] = []
    doc = 0
    if version >= 3:
        if not isinstance(raw, str):
            raw = td.raw = [int(x) for x in raw]
            text = None
        else:
            text = raw
        if text is not None:
            _walk(text, td, titles, lengths, avgdl)
        else:
            flat = td.raw
            assert isinstance(flat, list)
            i = 0
            while i < len(flat):
                if i + 4 > len(flat):
                    raise ValueError("a posting is cut")
                doc += flat[i]
                t, h, b = flat[i + 1 : i + 4]
                n = min(MAX_POSITIONS, t + h + b)
                if i + 4 + n > len(flat) or not 0 <= 2 * doc + 1 < len(lengths):
                    raise ValueError("a posting is cut or names no document")
                _add(docs, imps, offs, titles, doc, i, impact(t, h, b, lengths[2 * doc], avgdl), t)
                i += 4 + n
            offs.append(i)
    else:
        flat = unpack_numbers(raw) if isinstance(raw, str) else [int(x) for x in raw]
        td.raw = flat
        i = 0
        while i + 7 <= len(flat):  # as the core's format 1-2 decoder reads them
            doc += flat[i]
            if not 0 <= doc < documents:
                raise ValueError("a posting names no document")
            t, h, b, length = flat[i + 1 : i + 5]
            n = flat[i + 6]
            _add(docs, imps, offs, titles, doc, i, impact(t, h, b, length, avgdl), t)
            i += 7 + n
        offs.append(min(i, len(flat)))
    td.order = array("i", sorted(range(len(docs)), key=imps.__getitem__, reverse=True))
    td.mask, td.titles = mask_of(docs), mask_of(titles)
    text_bytes = len(td.raw) if isinstance(td.raw, str) else 8 * len(td.raw)
    td.size = TERM_BYTES + text_bytes + 20 * len(docs) + (len(docs) and docs[-1] // 4)
    return td


def _walk(text: str, td: TermData, titles: list[int], lengths: list[int], avgdl: float) -> None:
    """Format 3's postings string (§4.3), one regex match for a posting's four counts and one to
    step over its positions: the hot loop of a cold query (what :func:`impact` computes, inline:
    the same operations in the same order)."""
    docs, imps, offs = td.docs, td.impact, td.offs
    pos, end, doc, ndocs = 0, len(text), 0, len(lengths) // 2
    head, skip, one, number, heading = _HEAD.match, _SKIP_MATCH, _FEW.get, _number, _HEADING
    k1_1, k1, b_, title = K1 + 1, K1, B, TITLE
    while pos < end:
        m = head(text, pos)
        if m is None:
            raise ValueError("a posting is cut")
        g0, g1, g2, g3 = m.groups()
        d, t, h, b = one(g0), one(g1), one(g2), one(g3)
        if d is None or t is None or h is None or b is None:
            d, t, h, b = number(g0), number(g1), number(g2), number(g3)
        doc += d
        n = t + h + b
        tail = skip[n if n < MAX_POSITIONS else MAX_POSITIONS](text, m.end())
        if tail is None or doc >= ndocs:
            raise ValueError("a posting is cut or names no document")
        tf = b + 2 * h
        text_part = tf * k1_1 / (tf + k1 * (1 - b_ + b_ * lengths[2 * doc] / avgdl)) if tf else 0.0
        imp = (title if t else 0.0) + (heading[h] if h < 64 else HEADING * h / (h + 0.5)) + text_part
        if d == 0 and docs and docs[-1] == doc:
            _add(docs, imps, offs, titles, doc, pos, imp, t)
        else:
            docs.append(doc)
            imps.append(imp)
            offs.append(pos)
            if t:
                titles.append(doc)
        pos = tail.end()
    offs.append(end)


def _add(
    docs: array, imps: array, offs: array, titles: list[int], doc: int, at: int, imp: float, t: int
) -> None:
    if docs and docs[-1] == doc:  # named twice: the last posting counts, as in the core's dict
        docs.pop(), imps.pop(), offs.pop()
        if titles and titles[-1] == doc:
            titles.pop()
    docs.append(doc)
    imps.append(imp)
    offs.append(at)
    if t:
        titles.append(doc)
