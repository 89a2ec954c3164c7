"""The search tokenizer, version :data:`TOKENIZER` (formats/search.md §3).
Pure: no network, no filesystem, no clock.

Text becomes *terms* (folded words, and overlapping character bigrams of Chinese, Japanese and Korean
runs) at *positions* (consecutive numbers; a phrase is terms at consecutive positions). The same rules
run in the browser (js/search.js ``tokens``); formats/vectors/search-tokens.json holds the vectors both
sides are tested against. Any change to what a text yields is a new :data:`TOKENIZER` number: an index
records the number it was built with and a reader refuses one it does not share.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from typing import NamedTuple

import regex

__all__ = [
    "LINE_BREAK",
    "MAX_TERM",
    "TOKENIZER",
    "Token",
    "fold",
    "lines_terms",
    "term_list",
    "terms",
    "tokens",
]

#: The tokenizer's version, written in every index manifest.
TOKENIZER = 1
#: A term longer than this many characters (after folding) is dropped; its position is still used.
MAX_TERM = 64

#: A word: a run of letters, marks and digits (Unicode general categories L, M, N).
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
#: The same in ASCII text: letters and digits (no ASCII character is a mark); the standard library's
#: engine, a fifth faster than ``regex`` on this class.
_ASCII_WORD = re.compile(r"[a-z0-9]+")
#: Characters written without spaces between words: Han, Hiragana, Katakana, Hangul and the
#: prolonged sound mark (Script=Common); a mark joins whatever precedes it.
_CJK = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]")
_MARK = regex.compile(r"\p{M}")
#: Letters no decomposition takes apart but that readers type without their stroke.
_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i", "ς": "σ"}
)

#: The combining diacritical marks folding removes (U+0300–U+036F), for ``str.translate``.
_COMBINING = dict.fromkeys(range(0x300, 0x370))


class Token(NamedTuple):
    """One term at one position, from ``start`` to ``end`` (character offsets) of the source text."""

    term: str
    position: int
    start: int
    end: int


def fold(text: str) -> str:
    """NFKC, lower case, the letters of :data:`_LETTERS`, then the combining diacritical marks
    U+0300–U+036F removed after canonical decomposition (é→e, ﬁ→fi, Ａ→a, ß→ss, ﾃ→テ)."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_LETTERS)
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).translate(_COMBINING))


def _segments(word: str) -> Iterator[tuple[bool, int, int]]:
    """(is CJK, start, end) runs of one word; a mark stays with the character before it."""
    start = 0
    kind: bool | None = None
    for i, c in enumerate(word):
        cjk = kind if (kind is not None and _MARK.match(c)) else bool(_CJK.match(c))
        if kind is None:
            kind = cjk
        elif cjk != kind:
            yield kind, start, i
            start, kind = i, cjk
    if kind is not None:
        yield kind, start, len(word)


@lru_cache(maxsize=1 << 16)
def _word_terms(word: str) -> tuple[tuple[str | None, int, int], ...]:
    """(term or None for a dropped one, start, end) of one word, offsets relative to the word."""
    out: list[tuple[str | None, int, int]] = []
    for cjk, a, b in _segments(word):
        raw = word[a:b]
        folded = fold(raw)
        exact = len(folded) == len(raw)  # offsets map one to one, else the segment's span
        if cjk:
            chars = [c for c in folded if not _MARK.match(c)] if not exact else list(folded)
            exact = exact and len(chars) == len(raw)
            for i in range(max(1, len(chars) - 1)):
                gram = "".join(chars[i : i + 2])
                if gram:
                    out.append((gram, a + i, a + i + len(gram)) if exact else (gram, a, b))
            continue
        for w in _WORD.finditer(folded):
            term = w.group() if len(w.group()) <= MAX_TERM else None
            out.append((term, a + w.start(), a + w.end()) if exact else (term, a, b))
    return tuple(out)


def tokens(text: str, position: int = 0) -> Iterator[Token]:
    """Every token of ``text``, numbered from ``position`` (formats/search.md §3)."""
    for m in _WORD.finditer(text):
        base = m.start()
        word = m.group()
        if word.isascii():  # letters and digits only: lower case is the whole folding
            if len(word) <= MAX_TERM:
                yield Token(word.lower(), position, base, m.end())
            position += 1
            continue
        for term, s, e in _word_terms(word):
            if term is not None:
                yield Token(term, position, base + s, base + e)
            position += 1


def term_list(text: str) -> list[str | None]:
    """The term at each position of ``text`` counted from 0, None where a dropped term (over
    :data:`MAX_TERM` characters) holds its place: what :func:`tokens` yields, without the offsets
    (the index builder's loop, at a fraction of the cost)."""
    words: list[str | None]
    if text.isascii():  # letters and digits only: lower case is the whole folding
        words = list(_ASCII_WORD.findall(text.lower()))
    else:
        found = _WORD.findall(text)
        if not "".join(found).isascii():
            return _mixed_terms(found)
        words = list(map(str.lower, found))  # ASCII words between other characters (’, ¶)
    if words and max(map(len, words)) > MAX_TERM:  # type: ignore[arg-type]
        words = [w if len(w) <= MAX_TERM else None for w in words]  # type: ignore[arg-type]
    return words


#: What :func:`lines_terms` gives for a line break (never a term: no letter, mark or digit).
LINE_BREAK = "|"
#: ASCII text's bytes as :func:`lines_terms` reads them: letters lowered, digits kept, a line break
#: "|", any other byte a space.
_ASCII_LINES = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 else 124 if c == 10 else 32
    for c in range(256)
)


def lines_terms(text: str) -> list[str] | None:
    """:func:`term_list` of each line of ``text`` in turn, a :data:`LINE_BREAK` between them; None
    when a term is dropped (over :data:`MAX_TERM` characters: its place would not be held as
    :func:`term_list` holds it). ASCII lines are read together, by ``bytes.translate`` and ``split``
    (a third of the regular expression's CPU), the others one at a time (a Sphinx page has a "¶" in
    each heading): the index builder's tokenizer, a chunk of a page's blocks at a time."""
    if text.isascii():
        return _ascii_lines(text)
    out: list[str] = []
    run: list[str] = []  # ASCII lines not read yet
    for line in text.split("\n"):
        if line.isascii():
            run.append(line)
            continue
        if run:
            terms = _ascii_lines("\n".join(run))
            if terms is None:
                return None
            out += terms
            out.append(LINE_BREAK)
            run = []
        words = term_list(line)
        if None in words:
            return None
        out += words  # type: ignore[arg-type]
        out.append(LINE_BREAK)
    if run:
        terms = _ascii_lines("\n".join(run))
        if terms is None:
            return None
        out += terms
    else:
        out.pop()  # the break after the last line
    return out


def _ascii_lines(text: str) -> list[str] | None:
    words = text.encode("ascii").translate(_ASCII_LINES).replace(b"|", b" | ").decode("ascii").split()
    return None if words and max(map(len, words)) > MAX_TERM else words


def _mixed_terms(words: list[str]) -> list[str | None]:
    """:func:`term_list` of the ``words`` of a text, some of them not ASCII."""
    out: list[str | None] = []
    for word in words:
        if word.isascii():
            out.append(word.lower() if len(word) <= MAX_TERM else None)
        else:
            out.extend(term for term, _s, _e in _word_terms(word))
    return out


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order (the vectors' ``out``)."""
    return [t.term for t in tokens(text)]
