"""The search tokenizer, version :data:`TOKENIZER` (formats/search.md §3).
Pure: no network, no filesystem, no clock.

Text becomes *terms* (folded words, and overlapping character bigrams of Chinese, Japanese and Korean
runs) at *positions* (consecutive numbers; a phrase is terms at consecutive positions). The same rules
run in the browser (js/search.js ``tokens``); formats/vectors/search-tokens.json holds the vectors both
sides are tested against. Any change to what a text yields is a new :data:`TOKENIZER` number: an index
records the number it was built with and a reader refuses one it does not share.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

import regex

__all__ = ["MAX_TERM", "TOKENIZER", "Token", "fold", "terms", "tokens"]

#: The tokenizer's version, written in every index manifest.
TOKENIZER = 1
#: A term longer than this many characters (after folding) is dropped; its position is still used.
MAX_TERM = 64

#: A word: a run of letters, marks and digits (Unicode general categories L, M, N).
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+")
#: Characters written without spaces between words: Han, Hiragana, Katakana, Hangul and the
#: prolonged sound mark (Script=Common); a mark joins whatever precedes it.
_CJK = regex.compile(r"[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc]")
_MARK = regex.compile(r"\p{M}")
#: Letters no decomposition takes apart but that readers type without their stroke.
_LETTERS = str.maketrans(
    {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i", "ς": "σ"}
)


@dataclass(frozen=True, slots=True)
class Token:
    """One term at one position, from ``start`` to ``end`` (character offsets) of the source text."""

    term: str
    position: int
    start: int
    end: int


def fold(text: str) -> str:
    """NFKC, lower case, the letters of :data:`_LETTERS`, then the combining diacritical marks
    U+0300–U+036F removed after canonical decomposition (é→e, ﬁ→fi, Ａ→a, ß→ss, ﾃ→テ)."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_LETTERS)
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(c for c in decomposed if not "\u0300" <= c <= "\u036f")
    return unicodedata.normalize("NFC", stripped)


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


def tokens(text: str, position: int = 0) -> Iterator[Token]:
    """Every token of ``text``, numbered from ``position`` (formats/search.md §3)."""
    for m in _WORD.finditer(text):
        base = m.start()
        for cjk, a, b in _segments(m.group()):
            raw = m.group()[a:b]
            folded = fold(raw)
            exact = len(folded) == len(raw)  # offsets map one to one, else the segment's span
            if cjk:
                chars = [c for c in folded if not _MARK.match(c)] if not exact else list(folded)
                exact = exact and len(chars) == len(raw)
                grams = ["".join(chars[i : i + 2]) for i in range(max(1, len(chars) - 1))]
                for i, gram in enumerate(grams):
                    if gram:
                        s, e = (base + a + i, base + a + i + len(gram)) if exact else (base + a, base + b)
                        yield Token(gram, position, s, e)
                        position += 1
                continue
            for w in _WORD.finditer(folded):
                s, e = (base + a + w.start(), base + a + w.end()) if exact else (base + a, base + b)
                if len(w.group()) <= MAX_TERM:
                    yield Token(w.group(), position, s, e)
                position += 1


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order (the vectors' ``out``)."""
    return [t.term for t in tokens(text)]
