"""The query core (formats/search.md §6). Pure: no network, no filesystem, no clock.

:func:`parse` turns what a person typed into clauses; :class:`Index` reads one index through a
``load(name) -> bytes`` callback (a tree's files, a gwtar's members, an HTTP client), checking every
file against the manifest's size and SHA-256 and loading only the shards whose term range can hold
a query's terms; :func:`search` ranks the documents of one or several indexes together (global
document frequencies, so scores from different archives compare) and pages the results.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import re
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver.errors import FormatError
from archiver.search.build import (
    FORMAT,
    HASH_HEX,
    MAX_MANIFEST_BYTES,
    MAX_POSITIONS,
    VERSION,
    bounds_problem,
    inflate,
    order_key,
    payload_of,
    unpack_numbers,
)
from archiver.search.snippet import Snippet, snippet
from archiver.search.tokens import TOKENIZER, tokens

__all__ = ["Clause", "Index", "Result", "Results", "damaged_index", "parse", "search", "valid_counts"]

K1 = 1.2
B = 0.75
TITLE = 3.0  # a term in the title outweighs any number of it in the body (whose score is < K1 + 1)
HEADING = 1.5
PREFIX = 0.8  # a term the last word is only a prefix of
PHRASE = 1.5  # the words in the order typed, next to each other
NEAR = 1.2  # all within NEAR_WINDOW positions
NEAR_WINDOW = 8
MAX_EXPANSIONS = 64  # terms a prefix stands for, per index (the most frequent)
MAX_CLAUSES = 16

Load = Callable[[str], bytes]


@dataclass(frozen=True)
class Clause:
    """Terms that must appear at consecutive positions (one typed word can give several: a CJK
    run's bigrams, ``x_y``); ``prefix`` when the last term is a prefix (the word being typed)."""

    terms: tuple[str, ...]
    prefix: bool = False


_QUOTED = re.compile(r'"([^"]*)"?|(\S+)')


def parse(query: str) -> list[Clause]:
    """Words and "quoted phrases"; the last word, when nothing follows it, is also a prefix."""
    clauses: list[Clause] = []
    matches = list(_QUOTED.finditer(query))
    for i, m in enumerate(matches):
        quoted = m.group(1) is not None
        found = tuple(t.term for t in tokens(m.group(1) if quoted else m.group(2)))
        if not found:
            continue
        last = i == len(matches) - 1 and not quoted and m.end() == len(query)
        clauses.append(Clause(found, prefix=last))
    return clauses[:MAX_CLAUSES]


@dataclass(frozen=True)
class Posting:
    title: int
    headings: int
    body: int
    length: int
    title_length: int
    positions: tuple[int, ...]

    @property
    def complete(self) -> bool:
        """Whether every position of the term is kept (else a phrase is assumed to match)."""
        return len(self.positions) >= self.title + self.headings + self.body


def _decode3(flat: list[int], lengths: list[int]) -> dict[int, Posting]:
    """Format 3's postings: doc delta, tf in title, headings, body, then min(32, their sum)
    positions; the lengths are the manifest's (§4.3). ValueError when it does not add up."""
    out: dict[int, Posting] = {}
    doc = 0
    i = 0
    while i < len(flat):
        if i + 4 > len(flat):
            raise ValueError("a posting is cut")
        doc += flat[i]
        t, h, b = flat[i + 1 : i + 4]
        n = min(MAX_POSITIONS, t + h + b)
        if i + 4 + n > len(flat) or 2 * doc + 1 >= len(lengths):
            raise ValueError("a posting is cut or names no document")
        positions = []
        p = 0
        for d in flat[i + 4 : i + 4 + n]:
            p += d
            positions.append(p)
        out[doc] = Posting(t, h, b, lengths[2 * doc], lengths[2 * doc + 1], tuple(positions))
        i += 4 + n
    return out


def _decode(flat: list[int]) -> dict[int, Posting]:
    out: dict[int, Posting] = {}
    doc = 0
    i = 0
    while i + 7 <= len(flat):
        doc += flat[i]
        n = flat[i + 6]
        positions = []
        p = 0
        for d in flat[i + 7 : i + 7 + n]:
            p += d
            positions.append(p)
        out[doc] = Posting(flat[i + 1], flat[i + 2], flat[i + 3], flat[i + 4], flat[i + 5], tuple(positions))
        i += 7 + n
    return out


#: Documents a fragment group (§4.4) holds at most: a group closes at 16 KiB at the most (formats 1-2;
#: format 3: 2 KiB) and a document's row is at least 14 bytes (``["a","",[],[]]``), so a real group
#: holds fewer than 1,200; the bound keeps ``documents`` within what the manifest's own bytes list
#: (§4.2, and the server's bitmasks within the index's size: §6.5).
MAX_GROUP_DOCUMENTS = 4096


def _groups_problem(groups: Sequence[tuple[int, int, int, str]], documents: int) -> str:
    """Why the fragment groups ``groups`` and the count ``documents`` disagree ("" when they agree):
    the groups must number the documents 0 … documents−1 in order, none skipped, each group holding
    1 … :data:`MAX_GROUP_DOCUMENTS` of them."""
    at = 0
    for first, last, _size, _sha in groups:
        if first != at or not 0 <= last - first < MAX_GROUP_DOCUMENTS:
            return f"its fragment groups do not number the documents in order (at document {at})"
        at = last + 1
    if at != documents:
        return f"says {documents} documents, its fragment groups hold {at}"
    return ""


def valid_counts(postings: Any) -> bool:
    """Whether ``postings`` is a list (format 1's postings) whose every item is a count (an int, not
    negative): a negative count or position delta walked the decoders back, so a forged shard held a
    query in an endless loop; a float or a string stopped it with a traceback."""
    return isinstance(postings, list) and all(type(n) is int and n >= 0 for n in postings)


def _numbers(postings: Any) -> list[int]:
    """A term's postings as numbers: format 2's string, or format 1's list of counts."""
    if isinstance(postings, str):
        return unpack_numbers(postings)
    if valid_counts(postings):
        return postings
    raise ValueError("postings are not a list of counts")


class Index:
    """One index, read through ``load`` (a name such as ``manifest``, ``t/3``, ``d/0`` → the bytes)."""

    def __init__(self, load: Load, label: str = "") -> None:
        self._load = load
        self.label = label
        self.loaded: list[str] = []  # the files read, in order
        self.version = 0  # the manifest is never compressed
        self.manifest = self._read("manifest", None)
        m = self.manifest
        if not isinstance(m, dict) or m.get("format") != FORMAT:
            raise FormatError("is not a search index manifest", subject=self._where("manifest"))
        if bounds_problem(m):  # before its tables are read (§4.2, Bounds)
            raise FormatError(bounds_problem(m), subject=self._where("manifest"))
        if not isinstance(m.get("version"), int) or m["version"] > VERSION:
            raise FormatError(
                f"search index format {m.get('version')} is newer than this archiver reads ({VERSION})",
                subject=self._where("manifest"),
            )
        if m.get("tokenizer") != TOKENIZER:
            raise FormatError(
                f"the index was built with tokenizer {m.get('tokenizer')}, this archiver has {TOKENIZER}: "
                "build it again with archiver index",
                subject=self._where("manifest"),
            )
        try:
            self.documents = int(m["documents"])
            self.avgdl = float(m["avgdl"]) or 1.0
            self.shards = [(str(s[0]), str(s[1]), int(s[2]), str(s[3])) for s in m["shards"]]
            self.groups = [(int(g[0]), int(g[1]), int(g[2]), str(g[3])) for g in m["docs"]]
            self.version = int(m["version"])
            # Format 3 lists the text files in the fragment groups (§4.4), the manifest only counts them.
            self.texts: dict[int, TextFile] = {}
            if self.version >= 3:
                self.text_files = int(m["text_files"])
                self.lengths = unpack_numbers(m["lengths"])
                if len(self.lengths) != 2 * self.documents:
                    raise ValueError("lengths")
            else:
                self.texts = {i: _text_file(x) for i, x in enumerate(m["text"])}
                self.text_files = len(self.texts)
        except (KeyError, TypeError, ValueError, IndexError):
            raise FormatError(
                "the manifest's tables are malformed", subject=self._where("manifest")
            ) from None
        problem = _groups_problem(self.groups, self.documents)
        if problem:
            raise FormatError(problem, subject=self._where("manifest"))
        self._terms: dict[int, dict[str, list[int]]] = {}
        self._fragments: dict[int, Any] = {}
        self._chunks: dict[tuple[int, int], str] = {}
        self._group_texts: dict[int, list[int]] = {}  # format 3: group → the text files it lists

    def _where(self, name: str) -> str:
        return f"{self.label}/{name}.js" if self.label else f"{name}.js"

    def _read(self, name: str, expected: tuple[int, str] | None) -> Any:
        try:
            data = self._load(name)
        except OSError as e:
            raise FormatError(f"cannot be read: {e.strerror or e}", subject=self._where(name)) from None
        self.loaded.append(name)
        if expected is None and len(data) > MAX_MANIFEST_BYTES:  # the manifest (§4.2, Bounds)
            why = f"is {len(data)} bytes, more than the format allows ({MAX_MANIFEST_BYTES})"
            raise FormatError(why, subject=self._where(name))
        try:
            payload = payload_of(name, data)
        except ValueError as e:
            raise FormatError(str(e), subject=self._where(name)) from None
        if expected is not None:
            size, sha = expected
            if len(data) != size:
                raise FormatError(
                    f"is {len(data)} bytes, the manifest says {size}", subject=self._where(name)
                )
            if len(sha) < HASH_HEX or hashlib.sha256(payload).hexdigest()[: len(sha)] != sha:
                raise FormatError("its SHA-256 does not match the manifest's", subject=self._where(name))
        try:
            if self.version >= 3:
                payload = inflate(payload)
        except ValueError as e:
            raise FormatError(str(e), subject=self._where(name)) from None
        try:
            return json.loads(payload)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser's stack
            raise FormatError("is not valid JSON", subject=self._where(name)) from None

    def shard(self, i: int) -> dict[str, list[int]]:
        """Term → its postings as numbers (§4.3: a JSON list in format 1, a string in format 2)."""
        if i not in self._terms:
            _first, _last, size, sha = self.shards[i]
            rows = self._read(f"t/{i}", (size, sha))
            try:
                self._terms[i] = {str(r[0]): _numbers(r[1]) for r in rows}
            except (ValueError, TypeError, IndexError, KeyError) as e:
                raise FormatError(
                    f"its postings are malformed ({e})", subject=self._where(f"t/{i}")
                ) from None
        return self._terms[i]

    def shards_for(self, term: str, prefix: bool) -> list[int]:
        """The shards whose [first, last] range can hold ``term`` (or a term starting with it)."""
        key = order_key(term)
        out = []
        for i, (first, last, _, _) in enumerate(self.shards):
            if order_key(last) < key:
                continue
            if not (order_key(first) <= key or (prefix and first.startswith(term))):
                break
            out.append(i)
        return out

    def postings(self, term: str, prefix: bool) -> dict[str, dict[int, Posting]]:
        """Term → its postings: the term itself, and with ``prefix`` the most frequent terms it begins."""
        found: dict[str, list[int]] = {}
        shard_of: dict[str, int] = {}
        for i in self.shards_for(term, prefix):
            for t, flat in self.shard(i).items():
                if t == term or (prefix and t.startswith(term)):
                    found[t] = flat
                    shard_of[t] = i
        if prefix and len(found) > MAX_EXPANSIONS:
            keep = sorted(found, key=lambda t: (t != term, -len(found[t]), order_key(t)))[:MAX_EXPANSIONS]
            found = {t: found[t] for t in keep}
        if self.version < 3:
            return {t: _decode(flat) for t, flat in found.items()}
        out = {}
        for t, flat in found.items():
            try:
                out[t] = _decode3(flat, self.lengths)
            except ValueError as e:
                where = self._where(f"t/{shard_of[t]}")
                raise FormatError(f"the postings of {t!r} are malformed ({e})", subject=where) from None
        return out

    def chunk(self, doc: int, k: int) -> str:
        """Text chunk ``k`` of document ``doc`` ("" when it has none)."""
        key = (doc, k)
        if key in self._chunks:
            return self._chunks[key]
        if self.version >= 3:
            self.fragment(doc)  # its group lists the text files of its documents
            files = self._group_texts.get(self._group_of(doc), [])
        else:
            files = list(self.texts)
        for i in files:
            first, last, size, sha = self.texts[i]
            if first <= key <= last:
                rows = self._read(f"x/{i}", (size, sha))
                if not isinstance(rows, list):
                    raise FormatError("is not a list of text chunks", subject=self._where(f"x/{i}"))
                self._chunks.update({(int(r[0]), int(r[1])): str(r[2]) for r in rows})
                if key not in self._chunks:
                    raise FormatError(
                        f"does not hold chunk {k} of document {doc}", subject=self._where(f"x/{i}")
                    )
                return self._chunks[key]
        return ""

    def fragment(self, doc: int) -> Any:
        """(path, title, headings, chunk start positions) of document ``doc``."""
        if doc in self._fragments:
            return self._fragments[doc]
        i = self._group_of(doc)
        if i >= 0:
            first, last, size, sha = self.groups[i]
            rows = self._read(f"d/{i}", (size, sha))
            if self.version >= 3:
                try:
                    files = [(int(x[0]), _text_file(x[1:])) for x in rows["text"]]
                    rows = rows["docs"]
                except (KeyError, TypeError, ValueError, IndexError):
                    raise FormatError("its text table is malformed", subject=self._where(f"d/{i}")) from None
                if any(not 0 <= n < self.text_files for n, _ in files):
                    raise FormatError(
                        "names a text file the manifest does not count", subject=self._where(f"d/{i}")
                    )
                self.texts.update(files)
                self._group_texts[i] = [n for n, _ in files]
            if not isinstance(rows, list) or len(rows) != last - first + 1:
                raise FormatError("holds the wrong number of documents", subject=self._where(f"d/{i}"))
            for k, row in enumerate(rows):
                # kept as tuples (the same values): the collector stops walking a tuple of strings
                # and numbers, and a server keeps every row it read (formats/search.md §6.5)
                if isinstance(row, list):
                    row = tuple(tuple(x) if isinstance(x, list) else x for x in row)
                self._fragments[first + k] = row
            return self._fragments[doc]
        raise FormatError(f"no fragment group holds document {doc}", subject=self._where("manifest"))

    def forget_documents(self) -> None:
        """Drop the fragment rows read so far and (format 3) the text files their groups listed: each
        is read again from its group when next needed."""
        self._fragments.clear()
        if self.version >= 3:
            self.texts.clear()
            self._group_texts.clear()

    def _group_of(self, doc: int) -> int:
        """The fragment group holding document ``doc`` (-1: none)."""
        for i, (first, last, _size, _sha) in enumerate(self.groups):
            if first <= doc <= last:
                return i
        return -1

    def text_file(self, i: int) -> TextFile:
        """Text file ``i``'s (first, last, size, SHA-256); format 3 reads fragment groups until one
        lists it."""
        if i not in self.texts and self.version >= 3:
            for g, (first, _last, _size, _sha) in enumerate(self.groups):
                if g not in self._group_texts:
                    self.fragment(first)
                if i in self.texts:
                    break
        if i not in self.texts:
            raise FormatError(f"no fragment group lists text file x/{i}", subject=self._where("manifest"))
        return self.texts[i]


TextFile = tuple[tuple[int, int], tuple[int, int], int, str]


def _text_file(x: Any) -> TextFile:
    return ((int(x[0]), int(x[1])), (int(x[2]), int(x[3])), int(x[4]), str(x[5]))


@dataclass(frozen=True)
class Result:
    archive: int  # which of the indexes given
    doc: int
    score: float
    path: str
    title: str
    snippet: Snippet


@dataclass
class Results:
    total: int
    offset: int
    limit: int
    results: list[Result] = field(default_factory=list)


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def impact(title: int, headings: int, body: int, length: int, avgdl: float) -> float:
    """A posting's score without its idf (§6.3): the idf times this is :func:`_term_score`, the same
    floating-point operations in the same order (so a cached impact ranks exactly as a fresh one)."""
    tf = body + 2 * headings
    text = tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / avgdl)) if tf else 0.0
    head = HEADING * headings / (headings + 0.5)
    return (TITLE if title else 0.0) + head + text


def _term_score(p: Posting, idf: float, avgdl: float) -> float:
    return idf * impact(p.title, p.headings, p.body, p.length, avgdl)


def _starts(clause_postings: list[dict[str, Posting]], complete: bool) -> list[int] | None:
    """Positions where the clause's terms follow one another (None: unknown, positions were cut)."""
    firsts = [set(p.positions) for p in clause_postings[0].values()]
    starts = set().union(*firsts)
    for k, alternatives in enumerate(clause_postings[1:], 1):
        at = set().union(*(set(p.positions) for p in alternatives.values()))
        starts = {s for s in starts if s + k in at}
    if not starts and not complete:
        return None
    return sorted(starts)


Here = list[list[dict[str, Posting]]]  # per clause, per term of it: the matched term → its posting


def rank_doc(
    clauses: Sequence[Clause],
    here: Here,
    n: int,
    df: dict[str, int],
    any_df: dict[str, int],
    avgdl: float,
    query_terms: Sequence[str],
) -> tuple[int, float] | None:
    """(tier, score) of one document whose postings for the query are ``here`` (§6.3); None when a
    clause of several terms is not found as a phrase. ``df``, ``any_df``, ``n``: the whole collection's."""
    score, spans = 0.0, []
    title_hits = 0
    for c, per_term in zip(clauses, here, strict=True):
        complete = all(p.complete for alts in per_term for p in alts.values())
        starts = (
            _starts(per_term, complete)
            if len(per_term) > 1
            else sorted({q for p in per_term[0].values() for q in p.positions})
        )
        if starts is not None and not starts and len(per_term) > 1:
            return None
        spans.append((starts or [], len(per_term)))
        for k, alts in enumerate(per_term):
            best = 0.0
            for t, p in alts.items():
                exact = t == c.terms[k]
                # A term the prefix stands for weighs as rare as the prefix is, not as its own rarity.
                s = _term_score(p, _idf(n, df[t] if exact else any_df[c.terms[k]]), avgdl)
                best = max(best, s if exact else s * PREFIX)
                if exact and p.title:
                    title_hits = max(title_hits, p.title_length)
            score += best
    if len(spans) > 1:
        score *= _proximity(spans)
    every = [alts for per_term in here for alts in per_term]
    return int(title_hits == len(query_terms) and _title_is(every, query_terms)), score


def cut_at(clauses: Sequence[Clause], here: Here, df: dict[str, int], any_df: dict[str, int]) -> int:
    """Where the snippet of a document whose postings are ``here`` is cut (§6.4)."""
    every = [alts for per_term in here for alts in per_term]
    rarity = {t: df[t] for alts in every for t in alts}
    for c in clauses:
        if c.prefix:
            for alts in every:
                for t in alts:
                    if t != c.terms[-1] and t.startswith(c.terms[-1]):
                        rarity[t] = any_df[c.terms[-1]]
    return _where_to_cut(every, rarity)


def page_results(
    indexes: Sequence[Index],
    clauses: Sequence[Clause],
    page: Sequence[tuple[int, float, int, int, int]],
    results: Results,
) -> Results:
    """Fill ``results`` with the page's (tier, score, archive, document, cut position): each one's
    fragment and the text chunk its snippet is cut from (§6.2, §6.4)."""
    wanted = frozenset(t for c in clauses for t in (c.terms[:-1] if c.prefix else c.terms))
    prefix = clauses[-1].terms[-1] if clauses[-1].prefix else ""
    for _tier, score, a, doc, at in page:
        path, title, _headings, starts = indexes[a].fragment(doc)
        k = max((i for i, s in enumerate(starts) if s <= at), default=0)
        cut = snippet(indexes[a].chunk(doc, k), wanted, prefix)
        if k > 0 or k < len(starts) - 1:
            cut = Snippet(cut.text, cut.marks, cut.before or k > 0, cut.after or k < len(starts) - 1)
        results.results.append(Result(a, doc, round(score, 6), str(path), str(title), cut))
    return results


def damaged_index(indexes: Sequence[Index], error: FormatError) -> int:
    """The position in ``indexes`` of the index whose file ``error`` names (the subject starts with
    its label: the longest such label), -1 when it names none: a search over several archives then
    leaves that one out and ranks the others (formats/search.md §6.3)."""
    subject = error.subject or ""
    best, at = -1, -1
    for a, index in enumerate(indexes):
        label = index.label
        if label and subject.startswith(label + "/") and len(label) > best:
            best, at = len(label), a
    return at


def search(indexes: Sequence[Index], query: str, *, limit: int = 10, offset: int = 0) -> Results:
    """The documents of ``indexes`` matching every clause of ``query``, best first (formats/search.md §6)."""
    clauses = parse(query)
    results = Results(0, offset, limit)
    if not clauses or not indexes:
        return results
    # Per index, per clause, per term position in the clause: term → postings.
    looked: list[list[list[dict[str, dict[int, Posting]]]]] = []
    df: dict[str, int] = {}
    any_df: dict[str, int] = {}  # a prefix: the documents holding any of its terms
    for index in indexes:
        per_clause = []
        for c in clauses:
            per_term = []
            for k, term in enumerate(c.terms):
                prefix = c.prefix and k == len(c.terms) - 1
                found = index.postings(term, prefix)
                for t, posts in found.items():
                    df[t] = df.get(t, 0) + len(posts)
                if prefix:
                    any_df[term] = any_df.get(term, 0) + len(set().union(*(p.keys() for p in found.values())))
                per_term.append(found)
            per_clause.append(per_term)
        looked.append(per_clause)
    n = sum(i.documents for i in indexes)
    query_terms = [t for c in clauses for t in c.terms]
    ranked: list[tuple[int, float, int, int]] = []
    heres: dict[tuple[int, int], Here] = {}
    for a, (index, per_clause) in enumerate(zip(indexes, looked, strict=True)):
        candidates: set[int] | None = None
        for per_term in per_clause:
            for found in per_term:
                docs = set().union(*(p.keys() for p in found.values())) if found else set()
                candidates = docs if candidates is None else candidates & docs
        for doc in sorted(candidates or ()):
            here = [[{t: p[doc] for t, p in found.items() if doc in p} for found in pc] for pc in per_clause]
            ranked_doc = rank_doc(clauses, here, n, df, any_df, index.avgdl, query_terms)
            if ranked_doc is None:
                continue
            ranked.append((ranked_doc[0], ranked_doc[1], a, doc))
            heres[(a, doc)] = here
    results.total = len(ranked)
    page = heapq.nsmallest(offset + limit, ranked, key=lambda r: (-r[0], -r[1], r[2], r[3]))[offset:]
    cuts = [(t, s, a, d, cut_at(clauses, heres[(a, d)], df, any_df)) for t, s, a, d in page]
    return page_results(indexes, clauses, cuts, results)


def _where_to_cut(every: list[dict[str, Posting]], rarity: dict[str, int]) -> int:
    """The position a snippet is cut around: the first one in the text (after the title) of the
    rarest matched term (fewest documents, then fewest occurrences in this one); -1 when no matched
    term is known in the text (§6.4)."""
    pairs = sorted(
        ((rarity[t], p.title + p.headings + p.body, t, p) for alts in every for t, p in alts.items()),
        key=lambda x: (x[0], x[1], x[2]),
    )
    for _rarity, _tf, _t, p in pairs:
        body = [q for q in p.positions if q >= p.title_length]
        if body:
            return min(body)
    return -1


def _title_is(here: list[dict[str, Posting]], query_terms: Sequence[str]) -> bool:
    """The title is exactly the query's terms, in order: term k of the query at position k."""
    for k, (term, alts) in enumerate(zip(query_terms, here, strict=True)):
        p = alts.get(term)
        if p is None or not p.title or (p.complete and k not in p.positions):
            return False
    return True


def _proximity(spans: list[tuple[list[int], int]]) -> float:
    """PHRASE when every clause starts right after the previous one ends, NEAR when all are close."""
    best = math.inf
    for i in range(1, len(spans)):
        prev, width = spans[i - 1]
        cur, _ = spans[i]
        if not prev or not cur:
            return 1.0
        gap = _nearest([p + width for p in prev[:MAX_EXPANSIONS]], cur[:MAX_EXPANSIONS])
        best = gap if best is math.inf else max(best, gap)
    if best == 0:
        return PHRASE
    return NEAR if best <= NEAR_WINDOW else 1.0


def _nearest(ends: list[int], starts: list[int]) -> int:
    """min |s - e| over every pair (what the page's script computes pair by pair), by bisection."""
    ends = sorted(ends)
    best = -1
    for c in starts:
        i = bisect_left(ends, c)
        for j in (i - 1, i):
            if 0 <= j < len(ends):
                d = abs(c - ends[j])
                if best < 0 or d < best:
                    best = d
    return best
