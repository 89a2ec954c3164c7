"""Snippets: the part of a document's text where the query's terms are densest, with the matches
as character ranges (formats/search.md §6.4). Pure: no network, no filesystem, no clock."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from unicodedata import is_normalized

import regex

from archiver.search.tokens import _CJK, _WORD, MAX_TERM, fold, tokens

__all__ = ["Snippet", "snippet"]

#: Characters of text in a snippet, and before its first match.
WIDTH = 200
LEAD = 40


@dataclass(frozen=True)
class Snippet:
    """``text`` (a slice of the document's text), the matches in it as [start, end) ranges, and
    whether text was left out before and after it."""

    text: str
    marks: list[tuple[int, int]] = field(default_factory=list)
    before: bool = False
    after: bool = False


_ASCII_WORD = re.compile(r"[a-z0-9]+")
_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
#: A word of CJK characters only (the tokenizer's ``_CJK`` class, no mark): one segment, its bigrams.
_CJK_WORD = regex.compile(_CJK.pattern + "+")


def _hits(text: str, terms: frozenset[str], prefix: str) -> list[tuple[int, int, str]]:
    """The matches of a text that is not all ASCII: each word (a run of letters, marks and digits,
    as the tokenizer cuts them) tokenized alone, except a word that cannot hold one. A word that
    folding leaves as it is (formats/search.md §3: NFKC, lower case, accents) and that is in NFKD
    form (nothing a segment's folding could change) gives only terms that are substrings of it (its
    CJK bigrams, its runs), and so does a word of CJK characters only that folding keeps (its
    bigrams: a kana with a voicing mark, が, is not NFKD); when no query term nor the prefix is a
    substring, it has no match. A
    Chinese or Japanese page is a few long words whose bigrams are all new to the tokenizer's
    cache: tokenizing them all was most of a CJK answer's snippets."""
    needles = [t for t in terms if t]
    if prefix:
        needles.append(prefix)
    out = []
    for m in _WORD.finditer(text):
        word = m.group()
        if not any(n in word for n in needles):
            # its tokens are substrings of it (an NFKD word that folding keeps), or its bigrams (CJK
            # characters only, kept by folding: a kana with its voicing mark is not NFKD): no match
            if (is_normalized("NFKD", word) or _CJK_WORD.fullmatch(word)) and fold(word) == word:
                continue
        elif _CJK_WORD.fullmatch(word) and fold(word) == word:
            out += _cjk_hits(word, m.start(), terms, needles, prefix)
            continue
        base = m.start()
        out += [
            (base + t.start, base + t.end, t.term)
            for t in tokens(word)
            if t.term in terms or (prefix and t.term.startswith(prefix))
        ]
    return out


def _cjk_hits(
    word: str, base: int, terms: frozenset[str], needles: list[str], prefix: str
) -> list[tuple[int, int, str]]:
    """:func:`_hits` of one word of CJK characters that folding leaves as it is: its tokens are its
    bigrams ``word[i : i + 2]`` at ``i`` (the word itself when one character long), so the matches
    are where a needle (a term, or the prefix) is found in it, not every bigram tokenized (a Chinese
    or Japanese page's words are long runs: most of a CJK answer's snippets)."""
    last = max(0, len(word) - 2)  # the last bigram's start
    found: dict[int, str] = {}
    for n in needles:
        if len(n) > 2:  # longer than any bigram
            continue
        at = word.find(n)
        while 0 <= at <= last:
            term = word[at : at + 2]
            if term in terms or (prefix and term.startswith(prefix)):
                found[at] = term
            at = word.find(n, at + 1)
    return [(base + i, base + i + len(found[i]), found[i]) for i in sorted(found)]


def _ascii_hits(text: str, terms: frozenset[str], prefix: str) -> list[tuple[int, int, str]]:
    """:func:`_hits` of an ASCII text: its words are its runs of letters and digits, lower case
    is their whole folding (formats/search.md §3), and lowering keeps every offset; a match is a
    whole run that is a term or starts with the prefix. Each needle (a term, the prefix) is found
    with ``str.find`` and kept where no letter or digit is on either side of the run (no regular
    expression compiled for each query: every query has other terms)."""
    low = text.lower()
    found: dict[int, tuple[int, int, str]] = {}
    for term in terms:
        if not _ASCII_WORD.fullmatch(term) or len(term) > MAX_TERM:
            continue
        at = low.find(term)
        while at >= 0:
            end = at + len(term)
            if (not at or low[at - 1] not in _ALNUM) and (end == len(low) or low[end] not in _ALNUM):
                found[at] = (at, end, term)
            at = low.find(term, end)
    if prefix and _ASCII_WORD.fullmatch(prefix):
        at = low.find(prefix)
        while at >= 0:
            if not at or low[at - 1] not in _ALNUM:
                run = _ASCII_WORD.match(low, at)  # (the prefix is letters and digits: a run)
                end = run.end() if run is not None else at + len(prefix)
                if end - at <= MAX_TERM:
                    found[at] = (at, end, low[at:end])
                at = low.find(prefix, end)
            else:  # inside a run: the next run starts after the prefix's letters at the earliest
                at = low.find(prefix, at + len(prefix))
    return [found[k] for k in sorted(found)]


def snippet(text: str, terms: frozenset[str], prefix: str = "", width: int = WIDTH) -> Snippet:
    """The window of ``width`` characters of ``text`` holding the most distinct matched terms
    (``terms``, or a term starting with ``prefix``); its start when nothing matches."""
    hits = _ascii_hits(text, terms, prefix) if text.isascii() else _hits(text, terms, prefix)
    if not hits:
        cut = text[:width]
        return Snippet(cut, [], False, len(text) > width)
    best = (0, 0)  # (distinct terms, index of the first hit)
    counts: Counter[str] = Counter()
    j = 0
    for start, _end, term in hits:
        counts[term] += 1
        while hits[j][0] < start - width + LEAD:
            counts[hits[j][2]] -= 1
            if not counts[hits[j][2]]:
                del counts[hits[j][2]]
            j += 1
        if len(counts) > best[0]:
            best = (len(counts), j)
    first = hits[best[1]][0]
    begin = max(0, first - LEAD)
    space = text.rfind(" ", begin, first)
    if begin > 0 and space >= 0:
        begin = space + 1
    end = min(len(text), begin + width)
    marks: list[tuple[int, int]] = []
    for start, stop, _term in hits:
        if start >= begin and stop <= end:
            a, b = start - begin, stop - begin
            if marks and a <= marks[-1][1]:
                marks[-1] = (marks[-1][0], max(marks[-1][1], b))
            else:
                marks.append((a, b))
    return Snippet(text[begin:end], marks, begin > 0, end < len(text))
