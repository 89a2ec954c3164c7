"""An index's postings table (formats/search.md §6.5, Tables): every term of a format 3 index with its
postings string and number count, and for each term of at least :data:`HEAVY` numbers its decoded
:class:`~archiver.search.postings.TermData` (documents, impacts, impact order, offsets, bitmasks) as
flat arrays, so that ``archiver serve`` reads a frequent term's documents from a mapped file instead
of decoding its postings on the first query that meets it. Built once per index (:func:`build`,
from the index's verified shards); read in place (:class:`Table`, over the bytes or a memory map),
checked against its own SHA-256 and the index's identity. Pure: no network, no filesystem, no clock.

Layout (version 1, little-endian): ``MAGIC``, a 4-byte header length, the header (JSON: ``table``,
``identity``, ``documents``, ``terms``, ``heavy``, ``mask``, ``sections`` name → [offset, length]
from the body's start, ``body`` its SHA-256), the body: ``kstart`` u32 × (T+1) and ``keys`` (each
term's UTF-16-BE order key, in that order), ``rstart`` u32 × (T+1) and ``raw`` (postings strings,
ASCII), ``count`` u32 × T, ``shard`` u32 × T, ``heavy`` i32 × T (−1: decoded on demand), ``pstart``
u32 × (H+1), ``docs`` i32 × P, ``impact`` f64 × P, ``order`` i32 × P, ``offs`` i32 × (P+H),
``masks`` (per heavy term its documents' then its titles' bitmask, ``mask`` bytes each)."""

from __future__ import annotations

import hashlib
import heapq
import json
from array import array
from bisect import bisect_left
from typing import Any

from archiver.search.build import order_key
from archiver.search.postings import TERM_BYTES, TermData, number_count, term_data, valid_postings
from archiver.search.query import MAX_EXPANSIONS, Index

__all__ = ["HEAVY", "MAGIC", "VERSION", "Table", "build"]

MAGIC = b"archiver-search-table\n"
VERSION = 1
#: A term of at least this many numbers in its postings string is stored decoded (about 8 postings).
HEAVY = 48
#: One key in this many is kept decoded in memory for the lookups (:attr:`Table.sample`).
SAMPLE = 32
_LITTLE = array("H", [1]).tobytes() == b"\x01\x00"
_SIZES = {"I": 4, "i": 4, "d": 8}
_ARRAYS = {
    "kstart": "I", "rstart": "I", "count": "I", "shard": "I", "heavy": "i", "pstart": "I",
    "docs": "i", "impact": "d", "order": "i", "offs": "i",
}  # fmt: skip


def _usable() -> bool:
    return _LITTLE and all(array(c).itemsize == n for c, n in _SIZES.items())


def build(index: Index, identity: str) -> bytes | None:
    """The table of ``index`` (``identity``: the SHA-256 of its manifest's bytes), or None when the
    index is not one a table can answer exactly as the engine's reading of its shards does (not format
    3, shards out of order or overlapping, a term out of its shard's range, rows not [term, string],
    malformed postings): the engine then reads the shards itself, and says what is wrong. A damaged
    shard raises the core's FormatError."""
    if index.version < 3 or not _usable():
        return None
    lengths = index.lengths
    rows: list[tuple[bytes, int, str]] = []
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
    mask = (index.documents + 7) // 8
    a: dict[str, array] = {name: array(code) for name, code in _ARRAYS.items()}
    keys, raw, masks = bytearray(), bytearray(), bytearray()
    a["kstart"].append(0)
    a["rstart"].append(0)
    a["pstart"].append(0)
    for key, i, value in rows:
        keys += key
        raw += value.encode("ascii")
        a["kstart"].append(len(keys))
        a["rstart"].append(len(raw))
        numbers = number_count(value)
        a["count"].append(numbers)
        a["shard"].append(i)
        if numbers < HEAVY:
            a["heavy"].append(-1)
            continue
        try:
            td = term_data(value, index.version, lengths, index.avgdl, index.documents)
        except ValueError:
            return None
        a["heavy"].append(len(a["pstart"]) - 1)
        a["docs"].extend(td.docs)
        a["impact"].extend(td.impact)
        a["order"].extend(td.order)
        a["offs"].extend(td.offs)
        a["pstart"].append(len(a["docs"]))
        masks += td.mask.to_bytes(mask, "little") + td.titles.to_bytes(mask, "little")
    parts: list[tuple[str, bytes]] = [(name, arr.tobytes()) for name, arr in a.items()]
    parts += [("keys", bytes(keys)), ("raw", bytes(raw)), ("masks", bytes(masks))]
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
        "sections": sections,
        "body": hashlib.sha256(body).hexdigest(),
    }
    head = json.dumps(header, sort_keys=True).encode("ascii")
    start = len(MAGIC) + 4 + len(head)
    pad = b" " * (-start % 8)
    head += pad
    return MAGIC + len(head).to_bytes(4, "little") + head + bytes(body)


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
        except (ValueError, KeyError, TypeError):
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
        t, hv, p = self.terms, self.heavies, len(s["docs"])
        want = {"kstart": t + 1, "rstart": t + 1, "count": t, "shard": t, "heavy": t, "pstart": hv + 1}
        want |= {"impact": p, "order": p, "offs": p + hv}
        if any(len(s[k]) != v for k, v in want.items()) or len(s["masks"]) != 2 * self.mask * hv:
            raise ValueError("its sections disagree")
        self.s = s
        self.kstart, self.keys, self.count, self.heavy = s["kstart"], s["keys"], s["count"], s["heavy"]
        self.bytes = len(view)
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
        want = order_key(term)
        lo = self._first(want, False)
        if not prefix:
            return [lo] if lo < self.terms and self.key(lo) == want else []
        hi = self._first(want, True)
        if hi - lo <= MAX_EXPANSIONS:
            return list(range(lo, hi))
        exact = [lo] if self.key(lo) == want else []
        rest = heapq.nlargest(
            MAX_EXPANSIONS - len(exact), range(lo + len(exact), hi), key=self.count.__getitem__
        )
        return exact + rest

    def data(self, j: int, index: Index) -> TermData:
        """Term ``j``'s data: read in place when stored decoded, else decoded now (ValueError when its
        postings are malformed, with the core's message)."""
        raw = self.s["raw"][self.s["rstart"][j] : self.s["rstart"][j + 1]]
        h = self.heavy[j]
        if h < 0:
            return term_data(str(raw, "ascii"), index.version, index.lengths, index.avgdl, index.documents)
        td = TermData(raw, index.lengths)
        a, b = self.s["pstart"][h], self.s["pstart"][h + 1]
        td.docs, td.impact, td.order = self.s["docs"][a:b], self.s["impact"][a:b], self.s["order"][a:b]
        td.offs = self.s["offs"][a + h : b + h + 1]
        m = self.mask
        masks = self.s["masks"]
        td.mask = int.from_bytes(masks[2 * m * h : 2 * m * h + m], "little")
        td.titles = int.from_bytes(masks[2 * m * h + m : 2 * m * (h + 1)], "little")
        td.size = TERM_BYTES + 4 * m
        return td
