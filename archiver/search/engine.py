"""Search over many indexes kept open (formats/search.md §6.5): what ``archiver serve`` runs for
every query across its mounts. Pure: no network, no filesystem, no clock.

It ranks exactly as :func:`archiver.search.query.search` does over the same indexes (the same
documents in the same order, the same scores and snippets: the per-document ranking is the shared
:func:`~archiver.search.query.rank_doc`), but keeps what a query decoded for the next ones, in one
cache bounded by an estimate of its bytes (least recently used first out):

- per index, its term shards as ``term → postings string`` (decoded once, not unpacked);
- per index and term, a :class:`TermData`: its documents, each one's score without the idf (its
  *impact*: the term's score is the idf times it), the documents in impact order, bitmasks of the
  documents holding it and of those holding it in their title, and where each document's posting
  starts in the postings string, so the positions of one document are decoded only when that
  document is ranked exactly;
- per index and query word (a term, or a prefix and the terms it stands for), the terms it found.

An index with a postings table (:mod:`archiver.search.table`, in :attr:`Engine.tables`) reads no
shard: a word's terms are found in the table, a frequent term's data is read from it in place. Such a
word is made again in microseconds, so it is kept only at its second meeting, a word of one term
never, and the cache holds at most :data:`KEPT_ENTRIES` entries: what is kept is objects that
Python's collector walks at every collection (formats/search.md §6.5, The collector).

A query then ranks with a global bound (threshold algorithm): each word's documents come best
first from every index at once (its terms' impact orders merged, scaled by their idf); a document
met there is ranked exactly (positions, phrase, proximity) only when its bound can enter the page;
the loop stops when no document not yet met can (the sum of each word's next value, times the
largest proximity factor, is below the k-th score). Titles that are exactly the query are found
first from the title bitmasks. The total is the count of the bitmasks' intersection. A query with a
phrase (a quoted phrase, a CJK word's bigrams) ranks every candidate exactly, as the core does.
"""

from __future__ import annotations

import heapq
import weakref
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from itertools import pairwise
from typing import Any

from archiver.errors import FormatError
from archiver.search.build import order_key, unpack_numbers
from archiver.search.postings import (
    ENTRY,
    TERM_BYTES,
    TermData,
    bits_of,
    mask_of,
    number_count,
    term_data,
    valid_postings,
)
from archiver.search.query import (
    MAX_EXPANSIONS,
    NEAR,
    PHRASE,
    PREFIX,
    Clause,
    Here,
    Index,
    Results,
    _idf,
    _proximity,
    cut_at,
    page_results,
    parse,
    rank_doc,
    valid_counts,
)
from archiver.search.table import Table
from archiver.search.words import Merged as _Merged
from archiver.search.words import Word as _Word

__all__ = ["Engine", "TermData", "term_data"]  # the last two: archiver.search.postings

#: Documents' positions kept for the query words that stand for several terms (a prefix's
#: completions): (index, word, document) → :meth:`_Word.starts`, least recently used first out.
STARTS_KEPT = 1 << 16
#: Entries the cache keeps at most, whatever their bytes (formats/search.md §6.5, The collector).
KEPT_ENTRIES = 1 << 11
#: Words of indexes with a table met once and not kept, remembered (their keys) so that a second
#: meeting keeps them.
SEEN_KEYS = 1 << 15
#: Words of one term or none of indexes with a table: (index, word, prefix) → the term's number in
#: the table (-1: none), so that meeting one again skips the lookup (2.3 of its ~3.4 µs).
ONES_KEPT = 1 << 16


class Engine:
    """The cache and the ranking; ``key`` names an opened index (a new key when it is opened again)."""

    def __init__(self, budget: int, entries: int = KEPT_ENTRIES) -> None:
        self.budget = budget
        self.entries = entries
        self.bytes = 0
        self._lru: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._terms: weakref.WeakValueDictionary[tuple[Any, ...], TermData] = weakref.WeakValueDictionary()
        self._keys: dict[Hashable, tuple[list[bytes], list[bytes], bool]] = {}
        self._titled: dict[tuple[Hashable, int], int] = {}
        self._starts: OrderedDict[tuple[Any, ...], tuple[int, ...]] = OrderedDict()
        self._seen: OrderedDict[tuple[Any, ...], None] = OrderedDict()
        self._ones: OrderedDict[tuple[Any, ...], int] = OrderedDict()
        #: An index's postings table by its key, when it has one (set by the server).
        self.tables: dict[Hashable, Table] = {}

    # --- the cache -----------------------------------------------------------------------------

    def _get(self, key: tuple[Any, ...]) -> Any:
        hit = self._lru.get(key)
        if hit is None:
            return None
        self._lru.move_to_end(key)
        return hit[0]

    def _put(self, key: tuple[Any, ...], value: Any, size: int) -> None:
        old = self._lru.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._lru[key] = (value, size)
        self.bytes += size
        while (self.bytes > self.budget or len(self._lru) > self.entries) and len(self._lru) > 1:
            _, (_, gone) = self._lru.popitem(last=False)
            self.bytes -= gone

    def forget(self, key: Hashable) -> None:
        """Drop everything kept for the index ``key``."""
        for k in [k for k in self._lru if k[1] == key]:
            self.bytes -= self._lru.pop(k)[1]
        self._keys.pop(key, None)
        self.tables.pop(key, None)
        for k in [k for k in self._titled if k[0] == key]:
            del self._titled[k]
        for k in [k for k in self._starts if k[0] == key]:
            del self._starts[k]
        for k in [k for k in self._seen if k[1] == key]:
            del self._seen[k]
        for k in [k for k in self._ones if k[0] == key]:
            del self._ones[k]

    def clear(self) -> None:
        self._lru.clear()
        self._keys.clear()
        self._titled.clear()
        self._starts.clear()
        self._seen.clear()
        self._ones.clear()
        self.tables.clear()
        self.bytes = 0

    # --- reading an index ----------------------------------------------------------------------

    def _shard(self, index: Index, key: Hashable, i: int) -> dict[str, Any]:
        cached = self._get(("s", key, i))
        if cached is not None:
            return cached
        _first, _last, size, sha = index.shards[i]
        where = index._where(f"t/{i}")
        rows = index._read(f"t/{i}", (size, sha))
        try:
            terms: dict[str, Any] = {}
            for r in rows:
                value = r[1]
                if isinstance(value, str):
                    if not valid_postings(value):
                        unpack_numbers(value)  # raises with the core's message
                        raise ValueError("is no postings string")
                elif not valid_counts(value):  # a negative count looped the decoder (before 2026-12)
                    raise TypeError("postings are not a list of counts")
                terms[str(r[0])] = value
        except (ValueError, TypeError, IndexError, KeyError) as e:
            raise FormatError(f"its postings are malformed ({e})", subject=where) from None
        self._put(("s", key, i), terms, ENTRY + size + TERM_BYTES * len(terms))
        return terms

    def _shards_for(self, index: Index, key: Hashable, term: str, prefix: bool) -> list[int]:
        """:meth:`Index.shards_for`, by bisection when the shards' last terms are in order."""
        keys = self._keys.get(key)
        if keys is None:
            firsts = [order_key(s[0]) for s in index.shards]
            lasts = [order_key(s[1]) for s in index.shards]
            keys = self._keys[key] = (firsts, lasts, all(a <= b for a, b in pairwise(lasts)))
        firsts, lasts, ordered = keys
        if not ordered:
            return index.shards_for(term, prefix)
        want = order_key(term)
        out = []
        for i in range(bisect_left(lasts, want), len(lasts)):
            if not (firsts[i] <= want or (prefix and index.shards[i][0].startswith(term))):
                break
            out.append(i)
        return out

    def _word(self, index: Index, key: Hashable, term: str, prefix: bool) -> _Word:
        table = self.tables.get(key)
        if table is None or prefix:  # (a table's word of one term is never kept)
            cached = self._get(("w", key, term, prefix))
            if cached is not None:
                return cached
        found: dict[str, tuple[int, Any]] = {}
        if table is not None:  # the index's table (archiver.search.table): no shard read or decoded
            k = (key, term, prefix)
            one = self._ones.get(k)
            if one is not None:  # a word of one term or none met before: its term's number kept
                return self._one(index, key, table, term, prefix, one)
            ids, got = table.lookup(term, prefix)
            # (-1: the term's shard, named only when its postings are malformed)
            if len(ids) < 2:
                self._ones[k] = one = ids[0] if ids else -1
                if len(self._ones) > ONES_KEPT:
                    self._ones.popitem(last=False)
                return self._one(index, key, table, term, prefix, one)
            if prefix and len(ids) > 1:
                found = {table.term(j): (-1, j) for j in ids}
            if got is not None:  # the prefix's completions stored merged: decoded when needed
                exact = self._data(index, key, table, term, *found[term]) if term in found else None

                def load(index: Index = index, found: dict[str, tuple[int, Any]] = found) -> Any:
                    return [(t, self._data(index, key, table, t, i, j)) for t, (i, j) in found.items()]

                word = _Word.stored(term, exact, _Merged(*got), len(found), load)
                self._admit(("w", key, term, prefix), word)
                return word
        for i in self._shards_for(index, key, term, prefix) if table is None else ():
            for t, raw in self._shard(index, key, i).items():
                if t == term or (prefix and t.startswith(term)):
                    found[t] = (i, raw)
        if prefix and len(found) > MAX_EXPANSIONS:
            keep = sorted(found, key=lambda t: (t != term, -number_count(found[t][1]), order_key(t)))
            found = {t: found[t] for t in keep[:MAX_EXPANSIONS]}
        out = [(t, self._data(index, key, table, t, i, raw)) for t, (i, raw) in found.items()]
        word = _Word(term, prefix, out)
        if table is None:
            self._put(("w", key, term, prefix), word, word.size)
        else:
            self._admit(("w", key, term, prefix), word)
        return word

    def _one(self, index: Index, key: Hashable, table: Table, term: str, prefix: bool, j: int) -> _Word:
        """The word that found term ``j`` of ``table`` alone (-1: none): made again at each meeting
        (~1 µs: a few views), not kept, since a kept word is a dozen objects more for the collector to
        walk (formats/search.md §6.5, The collector); only ``j`` is kept (:data:`ONES_KEPT`)."""
        if j < 0:
            return _Word(term, prefix, [])
        # the word itself, or a prefix's one completion (its key longer than the word's)
        own = not prefix or table.kstart[j + 1] - table.kstart[j] == len(order_key(term))
        t = term if own else table.term(j)
        return _Word.one(term, t, self._data(index, key, table, t, -1, j))

    def _admit(self, k: tuple[Any, ...], word: _Word) -> None:
        """Keep a word read from a table only at its second meeting: most words are met once (a query's
        own), a table makes one again in microseconds, and each word kept is tens of objects that
        the collector walks again and again (formats/search.md §6.5, The collector)."""
        if k in self._seen:
            del self._seen[k]
            self._put(k, word, word.size)
        else:
            self._seen[k] = None
            if len(self._seen) > SEEN_KEYS:
                self._seen.popitem(last=False)

    def _data(self, index: Index, key: Hashable, table: Table | None, t: str, i: int, raw: Any) -> TermData:
        """Term ``t``'s data (shard ``i``; ``raw``: its postings, or its number in ``table``). A term a
        table stores decoded is read in place each time (a few views: cheaper than sharing it); one
        decoded here is shared by the words that hold it while any is kept."""
        if table is not None and table.heavy[raw] >= 0:
            return table.data(raw, index)
        td = self._terms.get((key, t, i))
        if td is None:
            try:
                if table is not None:
                    td = table.data(raw, index)
                else:
                    td = term_data(
                        raw, index.version, getattr(index, "lengths", []), index.avgdl, index.documents
                    )
            except ValueError as e:
                where = index._where(f"t/{table.shard(raw) if table is not None else i}")
                raise FormatError(f"the postings of {t!r} are malformed ({e})", subject=where) from None
            self._terms[(key, t, i)] = td
        return td

    def _titled_as(self, index: Index, key: Hashable, n: int) -> int:
        """The bitmask of the documents whose title is ``n`` terms long (format 3's lengths; formats
        1-2 carry them in the postings: every document, -1)."""
        got = self._titled.get((key, n))
        if got is None:
            lengths = getattr(index, "lengths", None) if index.version >= 3 else None
            if lengths is None:
                got = -1
            else:
                got = mask_of([d for d in range(len(lengths) // 2) if lengths[2 * d + 1] == n])
            if len(self._titled) > 4096:
                self._titled.clear()
            self._titled[(key, n)] = got
        return got

    def _starts_of(self, key: Hashable, slot: tuple[str, bool], word: _Word, doc: int) -> Sequence[int]:
        """``word.starts(doc)``, kept when the word stands for several terms (as a tuple of ints,
        which the collector stops walking)."""
        if len(word.lists) < 2 and word.merged is None:
            return word.starts(doc)
        k = (key, *slot, doc)
        got = self._starts.get(k)
        if got is None:
            got = self._starts[k] = tuple(word.starts(doc))
            if len(self._starts) > STARTS_KEPT:
                self._starts.popitem(last=False)
        else:
            self._starts.move_to_end(k)
        return got

    # --- ranking -------------------------------------------------------------------------------

    def search(
        self,
        indexes: Sequence[Index],
        keys: Sequence[Hashable],
        query: str,
        *,
        limit: int = 10,
        offset: int = 0,
    ) -> Results:
        """As :func:`archiver.search.query.search` over ``indexes`` (``keys``: one a index)."""
        clauses = parse(query)
        results = Results(0, offset, limit)
        if not clauses or not indexes:
            return results
        slots = [
            (c.terms[k], c.prefix and k == len(c.terms) - 1) for c in clauses for k in range(len(c.terms))
        ]
        words = [[self._word(ix, key, t, p) for t, p in slots] for ix, key in zip(indexes, keys, strict=True)]
        if any(q != t and q.startswith(t) for t, p in slots if p for q, _ in slots):
            for per_index in words:  # a query word that is a completion too: df counts it twice
                for w in per_index:
                    w.found  # noqa: B018
        df: dict[str, int] = {}
        any_df: dict[str, int] = {}
        for per_index in words:
            for (term, prefix), w in zip(slots, per_index, strict=True):
                for t, count in w.df.items():
                    df[t] = df.get(t, 0) + count
                if prefix:
                    any_df[term] = any_df.get(term, 0) + w.union.bit_count()
        n = sum(ix.documents for ix in indexes)
        query_terms = [t for t, _ in slots]
        cands = []
        for per_index in words:
            cand = -1
            for w in per_index:
                cand &= w.union
            cands.append(max(cand, 0))
        ctx = _Query(clauses, slots, words, n, df, any_df, query_terms, indexes)
        ctx.starts_of = lambda a, s, doc: self._starts_of(keys[a], slots[s], words[a][s], doc)
        k = offset + limit
        if any(len(c.terms) > 1 for c in clauses):
            ranked = ctx.every(cands)
            results.total = len(ranked)
            page = heapq.nsmallest(k, ranked)[offset:]
        else:
            results.total = sum(c.bit_count() for c in cands)
            titled = [self._titled_as(ix, key, len(slots)) for ix, key in zip(indexes, keys, strict=True)]
            page = ctx.top(cands, titled, k)[offset:]
        out = []
        for _tier, score, a, doc in page:
            here = ctx.here(a, doc)
            for alts in (alts for per_term in here for alts in per_term):
                for t in alts:  # a completion's count: cut_at ranks it by its prefix's (any_df)
                    df.setdefault(t, 0)
            out.append((-_tier, -score, a, doc, cut_at(clauses, here, df, any_df)))
        return page_results(indexes, clauses, out, results)


class _Query:
    """One query's ranking over the words it found (keys ``(-tier, -score, archive, document)``)."""

    def __init__(
        self,
        clauses: list[Clause],
        slots: list[tuple[str, bool]],
        words: list[list[_Word]],
        n: int,
        df: dict[str, int],
        any_df: dict[str, int],
        query_terms: list[str],
        indexes: Sequence[Index],
    ) -> None:
        self.clauses, self.slots, self.words, self.n = clauses, slots, words, n
        self.df, self.any_df, self.query_terms, self.indexes = df, any_df, query_terms, indexes
        # The idf a term found for slot s is scaled by: its own term's, and any completion of its
        # prefix's (which also counts PREFIX), as rank_doc scores them.
        self.own = [_idf(n, df[t]) if t in df else 0.0 for t, _ in slots]
        self.completions = [_idf(n, any_df[t]) if p and t in any_df else 0.0 for t, p in slots]
        #: (index, slot, document) → the word's starts there (set by Engine.search: kept there).
        self.starts_of: Any = lambda a, s, doc: self.words[a][s].starts(doc)

    def here(self, a: int, doc: int) -> Here:
        out: Here = []
        s = 0
        for c in self.clauses:
            per_term = []
            for _ in c.terms:
                per_term.append(self.words[a][s].alts(doc))
                s += 1
            out.append(per_term)
        return out

    def exact(self, a: int, doc: int) -> tuple[int, float, int, int] | None:
        ranked = rank_doc(
            self.clauses,
            self.here(a, doc),
            self.n,
            self.df,
            self.any_df,
            self.indexes[a].avgdl,
            self.query_terms,
        )
        return None if ranked is None else (-ranked[0], -ranked[1], a, doc)

    def every(self, cands: list[int]) -> list[tuple[int, float, int, int]]:
        """Every candidate ranked exactly (a query with a phrase: whether it matches needs positions)."""
        out = []
        for a, cand in enumerate(cands):
            if not cand:
                continue
            for doc in bits_of(cand):
                key = self.exact(a, doc)
                if key is not None:
                    out.append(key)
        return out

    def top(self, cands: list[int], titled: list[int], k: int) -> list[tuple[int, float, int, int]]:
        """The ``k`` best candidates (no clause is a phrase): the threshold algorithm over each slot's
        documents best first, every index at once."""
        nslots = len(self.slots)
        factor = max(PHRASE, NEAR, 1.0) if len(self.clauses) > 1 else 1.0
        best: list[tuple[int, float, int, int]] = []  # a max-heap of the k best keys, negated
        seen: set[tuple[int, int]] = set()

        def keep(key: tuple[int, float, int, int]) -> None:
            neg = (-key[0], -key[1], -key[2], -key[3])
            if len(best) < k:
                heapq.heappush(best, neg)
            elif neg > best[0]:
                heapq.heapreplace(best, neg)

        # Documents whose title may be exactly the query: ranked exactly first (tier 1 goes first).
        for a, cand in enumerate(cands):
            maybe = cand & titled[a]
            if not maybe:
                continue
            for w in self.words[a]:
                maybe &= w.exact.titles if w.exact is not None else 0
            for d in bits_of(maybe):
                seen.add((a, d))
                key = self.exact(a, d)
                if key is not None:
                    keep(key)
        # Each slot's stream: every (index, term) list in impact order, scaled by its weight.
        # (A term whose idf is negative, which a term named twice in the query can give, scores 0
        # as in rank_doc: values are never below 0, so each list stays in descending order.)
        lists: list[tuple[TermData, float, bool, int]] = []
        streams: list[list[tuple[float, int, int, int, int]]] = []
        for s in range(nslots):
            heap = []
            for a, per_index in enumerate(self.words):
                if not cands[a]:
                    continue
                for td, exact in per_index[s].lists:
                    if not td.docs:
                        continue
                    w = self.own[s] if exact else self.completions[s]
                    o = td.order[0]
                    v = max(0.0, w * td.impact[o] if exact else w * td.impact[o] * PREFIX)
                    heap.append((-v, a, td.docs[o], len(lists), 0))
                    lists.append((td, w, exact, a))
            heapq.heapify(heap)
            streams.append(heap)
        single = nslots == 1
        turn = 0
        while all(streams):
            if len(best) >= k:
                worst = best[0]
                if worst[0] == 1:
                    break
                bound = 0.0
                for heap in streams:
                    bound += -heap[0][0]
                if worst[1] > bound * factor:
                    break
            now = turn % nslots
            heap = streams[now]
            turn += 1
            negv, a, doc, li, j = heap[0]
            td, w, exact, _a = lists[li]
            if j + 1 < len(td.order):  # its list's next document takes its place (one sift, not two)
                o = td.order[j + 1]
                v = max(0.0, w * td.impact[o] if exact else w * td.impact[o] * PREFIX)
                heapq.heapreplace(heap, (-v, a, td.docs[o], li, j + 1))
            else:
                heapq.heappop(heap)
            if (a, doc) in seen:
                continue
            seen.add((a, doc))
            if not (cands[a] >> doc) & 1:
                continue
            if single:
                keep((0, negv, a, doc))  # one word: its best term's score (≥ 0) is the document's
                continue
            # Its score without the proximity factor: each word's best value (the popped one is its
            # first, so its best, for the stream it came from), summed in the query's order as
            # rank_doc sums them: the same float. Not of the title tier (those were ranked above).
            base = 0.0
            for s in range(nslots):
                base += -negv if s == now else self._best(s, a, doc)
            if len(best) >= k and (0, base * factor, -a, -doc) < best[0]:
                continue  # even ×1.5 cannot enter: its positions are not read
            spans = [(self.starts_of(a, s, doc), 1) for s in range(nslots)]
            keep((0, -(base * _proximity(spans)), a, doc))
        return sorted((-t, -s, -a, -d) for t, s, a, d in best)

    def _best(self, s: int, a: int, doc: int) -> float:
        out = 0.0
        for td, exact in self.words[a][s].lists:
            i = td.find(doc)
            if i >= 0:
                v = self.own[s] * td.impact[i] if exact else self.completions[s] * td.impact[i] * PREFIX
                out = max(out, v)
        return out
