"""A query word in one index for the server's engine (formats/search.md §6.5): the terms it found
(:class:`Word`) and, for a prefix, its completions' documents as one list (:class:`Merged`).
Pure: no network, no filesystem, no clock."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from archiver.search.postings import ENTRY, TERM_BYTES, TermData, merge
from archiver.search.query import MAX_EXPANSIONS

__all__ = ["Merged", "Word"]


class Word:
    """One query word (a term, or a prefix) in one index: the terms it found, in the core's order.
    A prefix standing for several terms besides itself also has their :class:`Merged` documents.

    A prefix whose merged list a table stores (:meth:`stored`) decodes its completions only when a
    document it holds is ranked exactly or shown (:attr:`found`, once): the top-k streams read the
    merged list, its document count is the bitmask's and its completions' own counts matter only
    when one of them is a query word too (then :meth:`Engine.search` asks for :attr:`found` first)."""

    __slots__ = ("_found", "_load", "df", "exact", "lists", "merged", "size", "term", "union")

    def __init__(
        self, term: str, prefix: bool, found: list[tuple[str, TermData]], stored: Merged | None = None
    ) -> None:
        self.term = term
        self._found: list[tuple[str, TermData]] | None = found
        self._load: Any = None
        self.df = {t: len(td.docs) for t, td in found}
        self.union = 0
        for _, td in found:
            self.union |= td.mask
        self.size = ENTRY * (1 + len(found)) + sum(td.size for _, td in found)
        self.exact = next((td for t, td in found if t == term), None)
        rest = [td for t, td in found if t != term and td.docs]
        self.merged = None
        if prefix and len(rest) > 1:  # a table's stored list when it has one (the same arrays)
            self.merged = stored if stored is not None else Merged(*merge(rest))
        #: The word's lists for the top-k streams: (a term's data or the merged completions, whether
        #: it is the word's own term).
        self.lists: list[tuple[Any, bool]] = [(td, t == term) for t, td in found]
        if self.merged is not None:
            self.size += self.merged.size
            self.lists = [(self.exact, True)] if self.exact is not None else []
            self.lists.append((self.merged, False))

    @classmethod
    def one(cls, term: str, t: str, td: TermData) -> Word:
        """The word ``term`` that found one term, ``t`` (itself, or a prefix's one completion): what
        ``Word(term, prefix, [(t, td)])`` makes, without its loops (most words in most indexes)."""
        w = cls.__new__(cls)
        w.term, w._found, w._load, w.merged = term, [(t, td)], None, None
        w.df = {t: len(td.docs)}
        w.union = td.mask
        w.size = 2 * ENTRY + td.size
        w.exact = td if t == term else None
        w.lists = [(td, t == term)]
        return w

    @classmethod
    def stored(cls, term: str, exact: TermData | None, merged: Merged, terms: int, load: Any) -> Word:
        """A prefix whose completions a table stores merged: ``load()`` gives :attr:`found` (the same
        list, ``exact`` first when the prefix is a term), ``terms`` how many it holds."""
        w = cls.__new__(cls)
        w.term, w._found, w._load, w.exact, w.merged = term, None, load, exact, merged
        w.df = {term: len(exact.docs)} if exact is not None else {}
        w.union = merged.mask | (exact.mask if exact is not None else 0)
        w.size = ENTRY + TERM_BYTES * terms + merged.size + (exact.size if exact is not None else 0)
        w.lists = [(exact, True)] if exact is not None else []
        w.lists.append((merged, False))
        return w

    @property
    def found(self) -> list[tuple[str, TermData]]:
        """The terms found and their data, in the core's order (decoded now when :meth:`stored`)."""
        if self._found is None:
            self._found = self._load()
            self._load = None
            self.df = {t: len(td.docs) for t, td in self._found}
        return self._found

    def starts(self, doc: int) -> list[int]:
        """Where the terms found are in ``doc`` (the positions of :meth:`alts`' postings, each once,
        in order; the first :data:`MAX_EXPANSIONS`, all that the proximity factor reads): a clause of
        one term's starts, as :func:`~archiver.search.query.rank_doc` takes them."""
        got: set[int] = set()
        if self._found is None and not (self.merged.mask >> doc) & 1:
            i = self.exact.find(doc) if self.exact is not None else -1
            if i >= 0:
                got.update(self.exact.positions(i))
        else:
            for _, td in self.found:
                i = td.find(doc)
                if i >= 0:
                    got.update(td.positions(i))
        return sorted(got)[:MAX_EXPANSIONS]

    def alts(self, doc: int) -> dict[str, Any]:
        """The postings of ``doc`` for each term found that holds it (the core's ``here``)."""
        if self._found is None and not (self.merged.mask >> doc) & 1:
            i = self.exact.find(doc) if self.exact is not None else -1
            return {self.term: self.exact.posting(i)} if i >= 0 else {}
        out = {}
        for t, td in self.found:
            i = td.find(doc)
            if i >= 0:
                out[t] = td.posting(i)
        return out


class Merged:
    """The documents of a prefix's completions (every term it stands for but itself) as one list:
    each document once, with the largest impact any of them has in it, in impact order. A word's
    value for a document (§6.3: its best term's) is the larger of its own term's and this one's
    times the completions' weight: one stream and one lookup instead of one per completion
    (multiplying by the same positive weight keeps which impact is largest, so the values are
    the same floats)."""

    __slots__ = ("docs", "impact", "mask", "order", "size")

    def __init__(self, docs: Any, impact: Any, order: Any, mask: int) -> None:
        self.docs, self.impact, self.order, self.mask = docs, impact, order, mask
        self.size = ENTRY + 16 * len(self.docs)

    def find(self, doc: int) -> int:
        if not (self.mask >> doc) & 1:
            return -1
        return bisect_left(self.docs, doc)
