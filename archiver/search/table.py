"""An index's postings table (formats/search.md §6.5, Tables): every term of a format 3 index with its
postings string and number count, and for each term of at least :data:`HEAVY` numbers its decoded
:class:`~archiver.search.postings.TermData` (documents, impacts, impact order, offsets, bitmasks) as
flat arrays, so that ``archiver serve`` reads a frequent term's documents from a mapped file instead
of decoding its postings on the first query that meets it. Built once per index (:func:`build`,
from the index's verified shards); read in place (:class:`Table`, over the bytes or a memory map),
checked against its own SHA-256 and the index's identity. Pure: no network, no filesystem, no clock.

Version 2 also stores, for each prefix whose completions cost most to merge (at least
:data:`MERGED_NUMBERS` numbers) or that stands for more than 64 terms, the terms it stands for and
their merged list (:func:`~archiver.search.postings.merge`), so a query's last word reads one list
instead of decoding and merging 64 (formats/search.md §6.5); those completions are stored decoded
too, however few their numbers (a document shown needs their postings).

Layout (version 2, little-endian): ``MAGIC``, a 4-byte header length, the header (JSON: ``table``,
``identity``, ``documents``, ``terms``, ``heavy``, ``mask``, ``prefixes``, ``merged``, ``sections``
name → [offset, length] from the body's start, ``body`` its SHA-256), the body: ``kstart`` u32 ×
(T+1) and ``keys`` (each term's UTF-16-BE order key, in that order), ``rstart`` u32 × (T+1) and
``raw`` (postings strings, ASCII), ``count`` u32 × T, ``shard`` u32 × T, ``heavy`` i32 × T (−1:
decoded on demand), ``pstart`` u32 × (H+1), ``docs`` i32 × P, ``impact`` f64 × P, ``order`` i32 × P,
``offs`` i32 × (P+H), ``masks`` (per heavy term its documents' then its titles' bitmask, ``mask``
bytes each); the prefixes (E of them, each named by the range of terms it begins and whether the
first is the prefix itself): ``pkey`` u64 × E ((first << 33) | (end << 1) | itself, increasing),
``pidstart`` u32 × (E+1) and ``pids`` i32 (the terms it stands for, in the engine's order; none:
every term of its range), ``pmerged`` i32 × E (its merged list, −1: none), ``mstart`` u32 × (M+1),
``mdocs`` i32, ``mimpact`` f64, ``morder`` i32 (the merged lists) and ``mmasks`` (their documents'
bitmasks, ``mask`` bytes each)."""

from __future__ import annotations

import hashlib
import heapq
import json
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

from archiver.search.build import order_key
from archiver.search.postings import TERM_BYTES, TermData, merge, number_count, term_data, valid_postings
from archiver.search.query import MAX_EXPANSIONS, Index

__all__ = ["HEAVY", "MAGIC", "MERGED_NUMBERS", "VERSION", "Table", "build"]

MAGIC = b"archiver-search-table\n"
VERSION = 2
#: A prefix whose completions (but itself) hold at least this many numbers has them stored merged.
MERGED_NUMBERS = 2048
#: A term of at least this many numbers in its postings string is stored decoded (about 8 postings).
HEAVY = 48
#: One key in this many is kept decoded in memory for the lookups (:attr:`Table.sample`).
SAMPLE = 32
_LITTLE = array("H", [1]).tobytes() == b"\x01\x00"
_new = object.__new__
_from_bytes = int.from_bytes
_SIZES = {"I": 4, "i": 4, "d": 8, "Q": 8}
_ARRAYS = {
    "kstart": "I", "rstart": "I", "count": "I", "shard": "I", "heavy": "i", "pstart": "I",
    "docs": "i", "impact": "d", "order": "i", "offs": "i",
    "pkey": "Q", "pidstart": "I", "pids": "i", "pmerged": "i",
    "mstart": "I", "mdocs": "i", "mimpact": "d", "morder": "i",
}  # fmt: skip


def _usable() -> bool:
    return _LITTLE and all(array(c).itemsize == n for c, n in _SIZES.items())


def build(index: Index, identity: str) -> bytes | None:
    """The table of ``index`` (``identity``: its name, serve.search.table_identity), or None when the
    index is not one a table can answer exactly as the engine's reading of its shards does (not format
    3, shards out of order or overlapping, a term out of its shard's range, rows not [term, string],
    malformed postings): the engine then reads the shards itself, and says what is wrong. A damaged
    shard raises the core's FormatError."""
    if index.version < 3 or not _usable():
        return None
    lengths = index.lengths
    rows: list[tuple[bytes, int, str]] = []
    terms: list[str] = []
    before = b""
    for i, (first, last, size, sha) in enumerate(index.shards):
        lo, hi = order_key(first), order_key(last)
        if lo > hi or (i and lo <= before):
            return None
        before = hi
        got = index._read(f"t/{i}", (size, sha))
        if not isinstance(got, list):
            return None
        prev = b""
        for r in got:
            if not (isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], str)):
                return None
            key = order_key(r[0])
            if not lo <= key <= hi or (prev and key <= prev) or not valid_postings(r[1]) or not r[0]:
                return None
            prev = key
            rows.append((key, i, r[1]))
            terms.append(r[0])
    mask = (index.documents + 7) // 8
    a: dict[str, array] = {name: array(code) for name, code in _ARRAYS.items()}
    keys, raw, masks = bytearray(), bytearray(), bytearray()
    tds: dict[int, TermData] = {}
    a["kstart"].append(0)
    a["rstart"].append(0)
    a["pstart"].append(0)
    for key, i, value in rows:
        keys += key
        raw += value.encode("ascii")
        a["kstart"].append(len(keys))
        a["rstart"].append(len(raw))
        a["count"].append(number_count(value))
        a["shard"].append(i)

    def decode(j: int) -> TermData:
        td = tds.get(j)
        if td is None:
            td = tds[j] = term_data(rows[j][2], index.version, lengths, index.avgdl, index.documents)
        return td

    try:
        # the completions of a prefix stored merged are stored decoded too, however light: a
        # document shown needs their postings, and decoding 64 light terms costs more than the merge
        mmasks, completions = _prefixes(a, terms, decode, mask)
        for j, numbers in enumerate(a["count"]):
            if numbers < HEAVY and j not in completions:
                a["heavy"].append(-1)
                continue
            td = decode(j)
            a["heavy"].append(len(a["pstart"]) - 1)
            a["docs"].extend(td.docs)
            a["impact"].extend(td.impact)
            a["order"].extend(td.order)
            a["offs"].extend(td.offs)
            a["pstart"].append(len(a["docs"]))
            masks += td.mask.to_bytes(mask, "little") + td.titles.to_bytes(mask, "little")
            tds.pop(j, None)
    except ValueError:
        return None
    parts: list[tuple[str, bytes]] = [(name, arr.tobytes()) for name, arr in a.items()]
    parts += [("keys", bytes(keys)), ("raw", bytes(raw)), ("masks", bytes(masks)), ("mmasks", mmasks)]
    body, sections = bytearray(), {}
    for name, data in parts:
        body += b"\0" * (-len(body) % 8)
        sections[name] = [len(body), len(data)]
        body += data
    header = {
        "table": VERSION,
        "identity": identity,
        "documents": index.documents,
        "terms": len(rows),
        "heavy": len(a["pstart"]) - 1,
        "mask": mask,
        "prefixes": len(a["pkey"]),
        "merged": len(a["mstart"]) - 1,
        "sections": sections,
        "body": hashlib.sha256(body).hexdigest(),
    }
    head = json.dumps(header, sort_keys=True).encode("ascii")
    start = len(MAGIC) + 4 + len(head)
    pad = b" " * (-start % 8)
    head += pad
    return MAGIC + len(head).to_bytes(4, "little") + head + bytes(body)


def _nodes(terms: list[str]) -> Iterator[tuple[int, int, int, int]]:
    """(first, end, length, its parent's length) of every prefix shared by two terms or more: the
    terms in key order, a prefix's terms are a range; the prefixes of one range are those longer than
    its parent's (the longest prefix of a wider range) up to its own length (their common prefix)."""
    stack = [(0, 0)]  # (length, first)
    for j in range(1, len(terms) + 1):
        common = 0
        if j < len(terms):
            x, y = terms[j - 1], terms[j]
            most = min(len(x), len(y))
            while common < most and x[common] == y[common]:
                common += 1
        first = j - 1
        while stack[-1][0] > common:
            length, first = stack.pop()
            yield first, j, length, max(stack[-1][0], common)
        if stack[-1][0] < common:
            stack.append((common, first))


def _pick(count: Any, lo: int, hi: int, itself: bool) -> list[int]:
    """A prefix's terms when more than 64 begin with it: itself first, then the 64 with most numbers
    (ties in key order), as the engine and the core choose them."""
    exact = [lo] if itself else []
    return exact + heapq.nlargest(
        MAX_EXPANSIONS - len(exact), range(lo + len(exact), hi), key=count.__getitem__
    )


def _prefixes(
    a: dict[str, array], terms: list[str], decode: Callable[[int], TermData], mask: int
) -> tuple[bytes, set[int]]:
    """Fill the prefix sections of ``a`` (a ValueError when a completion's postings are malformed);
    the merged lists' bitmasks and the terms merged."""
    count = a["count"]
    total = [0]
    for c in count:
        total.append(total[-1] + c)
    entries: list[tuple[int, list[int] | None, int]] = []
    merged: list[tuple[array, array, array, int]] = []
    completions: set[int] = set()
    for lo, hi, length, parent in _nodes(terms):
        if hi - lo <= MAX_EXPANSIONS and total[hi] - total[lo] < MERGED_NUMBERS:
            continue
        itself = len(terms[lo]) == length
        for exact in (True, False):
            if exact != itself and (exact or length - 1 <= parent):
                continue  # no prefix of this range is itself a term / every one is
            ids = _pick(count, lo, hi, exact) if hi - lo > MAX_EXPANSIONS else None
            rest = [j for j in (ids if ids is not None else range(lo, hi)) if not (exact and j == lo)]
            m = -1
            if sum(count[j] for j in rest) >= MERGED_NUMBERS:
                got = [td for td in map(decode, rest) if td.docs]
                if len(got) > 1:
                    m = len(merged)
                    merged.append(merge(got))
                    completions.update(rest)
            if ids is not None or m >= 0:
                entries.append(((lo << 33) | (hi << 1) | exact, ids, m))
    entries.sort(key=lambda e: e[0])
    a["pidstart"].append(0)
    a["mstart"].append(0)
    for key, ids, m in entries:
        a["pkey"].append(key)
        a["pids"].extend(ids or ())
        a["pidstart"].append(len(a["pids"]))
        a["pmerged"].append(m)
    out = bytearray()
    for docs, impacts, order, bits in merged:
        a["mdocs"].extend(docs)
        a["mimpact"].extend(impacts)
        a["morder"].extend(order)
        a["mstart"].append(len(a["mdocs"]))
        out += bits.to_bytes(mask, "little")
    return bytes(out), completions


class Table:
    """A table read in place from ``data`` (bytes or a memory map); ValueError when it is not one
    :func:`build` wrote for the index ``identity`` of ``documents`` documents, or its bytes changed."""

    def __init__(self, data: Any, identity: str, documents: int) -> None:
        try:
            self._open(data, identity, documents)
        except (KeyError, TypeError, AttributeError, IndexError, OverflowError):
            # a header whose hash checks but whose fields are missing or of the wrong kind (planted)
            raise ValueError("its header is malformed") from None

    def _open(self, data: Any, identity: str, documents: int) -> None:
        if not _usable():
            raise ValueError("tables are for little-endian 32-bit arrays")
        view = memoryview(data)
        if bytes(view[: len(MAGIC)]) != MAGIC or len(view) < len(MAGIC) + 4:
            raise ValueError("is not a search table")
        n = int.from_bytes(view[len(MAGIC) : len(MAGIC) + 4], "little")
        start = len(MAGIC) + 4 + n
        try:
            h = json.loads(bytes(view[len(MAGIC) + 4 : start]))
            ok = h["table"] == VERSION and h["identity"] == identity and h["documents"] == documents
        except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: nested too deep
            raise ValueError("its header is malformed") from None
        if not ok:
            raise ValueError("is of another index or version")
        body = view[start:]
        if hashlib.sha256(body).hexdigest() != h["body"]:
            raise ValueError("its SHA-256 does not match its header's")
        self.terms, self.heavies, self.mask = int(h["terms"]), int(h["heavy"]), int(h["mask"])
        s: dict[str, memoryview] = {}
        for name, (off, length) in h["sections"].items():
            if not (off >= 0 and length >= 0 and off + length <= len(body) and off % 8 == 0):
                raise ValueError("a section is out of bounds")
            part = body[off : off + length]
            s[name] = part.cast(_ARRAYS[name]) if name in _ARRAYS else part
        self.prefixes, self.merges = int(h["prefixes"]), int(h["merged"])
        t, hv, p = self.terms, self.heavies, len(s["docs"])
        e, m, q = self.prefixes, self.merges, len(s["mdocs"])
        want = {"kstart": t + 1, "rstart": t + 1, "count": t, "shard": t, "heavy": t, "pstart": hv + 1}
        want |= {"impact": p, "order": p, "offs": p + hv}
        want |= {"pkey": e, "pidstart": e + 1, "pmerged": e, "mstart": m + 1, "mimpact": q, "morder": q}
        if any(len(s[k]) != v for k, v in want.items()) or len(s["masks"]) != 2 * self.mask * hv:
            raise ValueError("its sections disagree")
        if len(s["mmasks"]) != self.mask * m or any(not -1 <= x < m for x in s["pmerged"]):
            raise ValueError("its sections disagree")
        # a prefix's terms and merged lists inside the table (C-speed scans: ~1 ms a table)
        pids, ps, ms = s["pids"], s["pidstart"], s["mstart"]
        if (len(pids) and not 0 <= min(pids) <= max(pids) < t) or ps[e] != len(pids) or ms[m] != q:
            raise ValueError("its prefixes disagree")
        if any(x > y for x, y in pairwise(ps)) or any(x > y for x, y in pairwise(ms)):
            raise ValueError("its prefixes disagree")
        self.s = s
        self.kstart, self.keys, self.count, self.heavy = s["kstart"], s["keys"], s["count"], s["heavy"]
        self.bytes = len(view)
        self._raw, self._rstart, self._pstart, self._masks = s["raw"], s["rstart"], s["pstart"], s["masks"]
        self._docs, self._impact, self._order, self._offs = s["docs"], s["impact"], s["order"], s["offs"]
        #: Every SAMPLE-th key, decoded once: a word's first lookup bisects these in C, then at most
        #: SAMPLE keys of the table (about 1.7 KB of memory a thousand terms: 250 KB a table of the
        #: generated corpus, 148,000 terms).
        self.sample = [self.key(j) for j in range(0, self.terms, SAMPLE)]

    def key(self, j: int) -> bytes:
        return bytes(self.keys[self.kstart[j] : self.kstart[j + 1]])

    def term(self, j: int) -> str:
        return self.key(j).decode("utf-16-be")

    def shard(self, j: int) -> int:
        return int(self.s["shard"][j])

    def _first(self, want: bytes, prefix: bool) -> int:
        """The first term whose key is ≥ ``want`` (``prefix``: no longer starts with it): the sampled
        keys bisected first (in C), then the keys between two samples."""
        sample = self.sample
        if prefix:  # the keys that start with ``want`` are those from it up to its successor
            top = want.rstrip(b"\xff")
            s = bisect_left(sample, top[:-1] + bytes([top[-1] + 1])) if top else len(sample)
        else:
            s = bisect_left(sample, want)
        lo, hi = max(0, (s - 1) * SAMPLE), min(self.terms, s * SAMPLE)
        while lo < hi:
            mid = (lo + hi) // 2
            k = self.key(mid)
            if (k.startswith(want) or k < want) if prefix else k < want:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def find(self, term: str, prefix: bool) -> list[int]:
        """The terms a query word stands for, in the engine's order: the term itself, or its prefix's
        completions in key order, or when more than 64 the term first then the 64 with most numbers
        (ties in key order), as ``Engine._word`` and the core choose them."""
        return self.lookup(term, prefix)[0]

    def _span(self, want: bytes, prefix: bool) -> tuple[int, int]:
        """The terms whose key is ``want`` (``prefix``: starts with it), as a range ``[lo, hi)``
        (empty: none). The sampled keys are bisected (in C); the first key ≥ ``want`` is then among
        the keys after the sample before it up to the sample at it, and those keys' bytes are one
        slice of :attr:`keys` searched with ``bytes.find`` (a match counts where a key starts and is
        long enough), not compared one slice at a time. A prefix whose keys reach past those is ended
        by :meth:`_first`."""
        if not want:
            return 0, self.terms if prefix else 0
        s = bisect_left(self.sample, want)
        first = (s - 1) * SAMPLE + 1 if s else 0
        last = min(self.terms, s * SAMPLE + 1)
        if first >= last:
            return 0, 0
        ks = self.kstart
        offs = ks[first : last + 1].tolist()
        base = offs[0]
        blk = bytes(self.keys[base : offs[-1]])
        size = len(want)
        pos = blk.find(want)
        while pos >= 0:
            i = bisect_left(offs, pos + base)
            if offs[i] == pos + base:
                room = offs[i + 1] - offs[i]
                if room == size or (prefix and room > size):
                    break
            pos = blk.find(want, pos + 1)
        else:
            return 0, 0
        if not prefix:
            return first + i, first + i + 1
        j = i + 1
        end = len(offs) - 1
        while j < end and offs[j + 1] - offs[j] >= size and blk.startswith(want, offs[j] - base):
            j += 1
        if j == end and last < self.terms:  # its keys may go on past the block
            return first + i, self._first(want, True)
        return first + i, first + j

    def lookup(self, term: str, prefix: bool) -> tuple[list[int], tuple[Any, Any, Any, int] | None]:
        """:meth:`find`'s terms, and for a prefix whose completions are stored merged their list
        (documents, impacts, impact order, bitmask: what :func:`~archiver.search.postings.merge`
        gives for them, read in place)."""
        want = order_key(term)
        lo, hi = self._span(want, prefix)
        if not prefix or hi - lo <= 1:
            return list(range(lo, hi)), None
        itself = self.kstart[lo + 1] - self.kstart[lo] == len(want)
        e = self._entry((lo << 33) | (hi << 1) | itself)
        if e < 0:
            return (
                list(range(lo, hi)) if hi - lo <= MAX_EXPANSIONS else _pick(self.count, lo, hi, itself)
            ), None
        s = self.s
        a, b = s["pidstart"][e], s["pidstart"][e + 1]
        ids = s["pids"][a:b].tolist() if b > a else list(range(lo, hi))
        m = s["pmerged"][e]
        if m < 0:
            return ids, None
        a, b = s["mstart"][m], s["mstart"][m + 1]
        bits = int.from_bytes(s["mmasks"][self.mask * m : self.mask * (m + 1)], "little")
        return ids, (s["mdocs"][a:b], s["mimpact"][a:b], s["morder"][a:b], bits)

    def _entry(self, key: int) -> int:
        keys = self.s["pkey"]
        e = bisect_left(keys, key)
        return e if e < len(keys) and keys[e] == key else -1

    def data(self, j: int, index: Index) -> TermData:
        """Term ``j``'s data: read in place when stored decoded, else decoded now (ValueError when its
        postings are malformed, with the core's message). A stored one is made without
        :class:`TermData`'s constructor (its four empty arrays would be replaced at once)."""
        raw = self._raw[self._rstart[j] : self._rstart[j + 1]]
        h = self.heavy[j]
        if h < 0:
            return term_data(str(raw, "ascii"), index.version, index.lengths, index.avgdl, index.documents)
        td = _new(TermData)
        td.raw, td.lengths = raw, index.lengths
        pstart = self._pstart
        a, b = pstart[h], pstart[h + 1]
        td.docs, td.impact, td.order = self._docs[a:b], self._impact[a:b], self._order[a:b]
        td.offs = self._offs[a + h : b + h + 1]
        m = self.mask
        at = 2 * m * h
        masks = self._masks
        td.mask = _from_bytes(masks[at : at + m], "little")
        td.titles = _from_bytes(masks[at + m : at + 2 * m], "little")
        td.size = TERM_BYTES + 4 * m
        return td
