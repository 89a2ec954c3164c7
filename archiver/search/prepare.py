"""A page made ready for the search index builder (formats/search.md §4.3, §5): its terms, their
statistics and postings, and its text in chunks (:func:`prepare`, which the index build's worker
processes run), and the postings' digits (§4.3). Pure: no network, no filesystem, no clock."""

from __future__ import annotations

import operator
from array import array
from collections import Counter, defaultdict, deque
from itertools import accumulate, compress, repeat
from typing import NamedTuple

from archiver.search.text import Page
from archiver.search.tokens import LINE_BREAK, lines_terms, term_list

__all__ = ["CHUNK_CHARS", "DIGITS", "MAX_POSITIONS", "Prepared", "prepare"]

#: Version 2's postings: each number in little-endian groups of 5 bits, one character a group, from
#: this alphabet of 64 (JSON needs no escape for any of them): the first 32 end a number, the last
#: 32 say more groups follow.
DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_"
#: Positions kept per term per document (the term frequencies count every occurrence).
MAX_POSITIONS = 32
#: A document's text is stored in chunks of whole blocks of at least this many characters; a result
#: loads the one chunk its snippet comes from.
CHUNK_CHARS = 2048
_GAP = 1  # positions skipped between blocks, so no phrase spans two blocks


def _digits(value: int) -> str:
    out = []
    while value >= 32:
        out.append(DIGITS[32 + (value & 31)])
        value >>= 5
    out.append(DIGITS[value])
    return "".join(out)


def _short_table() -> list[str]:
    """``_digits(v)`` of every number of at most three characters (``v`` < 32,768), put together
    from the alphabet's two halves instead of one ``_digits`` call a number: a number's digits are its
    low groups' continuation characters, then its last group's end character (~6 ms instead of the
    ~25 ms the calls cost every process that imports the builder: index, pack, search, serve, verify;
    the 1,024 pairs of continuation characters made once: 4.9 -> 3.1 ms with the bytes below)."""
    end, more = DIGITS[:32], DIGITS[32:]
    two = [low + high for high in end[1:] for low in more]
    pairs = [low + mid for mid in more for low in more]
    three = [pair + high for high in end[1:] for pair in pairs]
    return [*end, *two, *three]


_SHORT = _short_table()  # every number of at most three characters
_SHORT_BYTES = list(map(str.encode, _SHORT))  # ASCII: UTF-8 is the same bytes


class Prepared(NamedTuple):
    """A document made ready for :meth:`archiver.search.build.Builder.add_prepared` by
    :func:`prepare`: all of the per-page work (tokenising, the term statistics, the text chunks),
    which is pure, so worker processes can do it; the builder only merges it in document order."""

    title: str
    headings: list[str]
    starts: list[int]  # the position each text chunk starts at
    chunks: list[str]
    length: int
    title_length: int
    terms: list[str]  # the page's distinct terms, in the order first met
    #: per term, in that order, a posting less its document number: format 3, t, h, b (occurrences
    #: by field) and the gaps between the positions kept (§4.3), already packed as the shard writes
    #: them (§4.3's digits, ASCII bytes: the workers pack, the builder only concatenates); before,
    #: t, h, b, the document's length and title length, n (positions kept) and the n positions
    numbers: array[int] | bytes
    offsets: array[int]  # where each term's numbers (format 3: digits) start, and their end


def prepare(page: Page, skip: frozenset[str], version: int) -> Prepared:
    """The per-page work of indexing ``page`` in format ``version`` (its blocks in ``skip`` left
    out; §5): format 3 a chunk of text at a time (:func:`_by_lines`), else, or for a page that way
    does not take, a block at a time (:func:`_by_blocks`); the same result either way."""
    if version >= 3:
        prepared = _by_lines(page, skip)
        if prepared is not None:
            return prepared
    return _by_blocks(page, skip, version)


def _by_lines(page: Page, skip: frozenset[str]) -> Prepared | None:
    """Format 3's :func:`prepare` with one tokenizer call a chunk of text (a block a line, a line
    break a term of its own holding the position between two blocks: :func:`lines_terms`) instead
    of one a block (docutils-doc: 18,000 blocks in 600 chunks); None for a page it does not take: a
    term dropped (its place is not a line break's), a block holding a line break."""
    blocks = [b for b in page.blocks if b[1] not in skip] if skip else page.blocks
    texts = list(map(operator.itemgetter(1), blocks))
    firsts: list[int] = []  # the first block of each chunk
    size = CHUNK_CHARS
    for i, n in enumerate(map(len, texts)):
        if size >= CHUNK_CHARS:
            firsts.append(i)
            size = 0
        size += n + 1
    chunks = list(map("\n".join, map(texts.__getitem__, map(slice, firsts, [*firsts[1:], len(texts)]))))
    title = term_list(page.title)
    if None in title:
        return None
    found: list[str] = title.copy()  # type: ignore[assignment]
    starts: list[int] = []
    for chunk in chunks:
        found.append(LINE_BREAK)  # the position between the title or the last chunk and this one
        starts.append(len(found))
        terms = lines_terms(chunk)
        if terms is None:
            return None
        found += terms
    # each term's positions, in order, its terms in the order first met (lists made and appended to
    # by map); the line breaks' taken out: one a block (each block's, and the one before each chunk)
    stats: defaultdict[str, list[int]] = defaultdict(list)
    deque(map(list.append, map(stats.__getitem__, found), range(len(found))), maxlen=0)
    breaks = len(stats.pop(LINE_BREAK, ()))
    if breaks != len(texts):  # a block held a line break
        return None
    heads: list[str] = []
    for text in compress(texts, map(operator.itemgetter(0), blocks)):
        heads += term_list(text)  # type: ignore[arg-type]  # (a dropped term: lines_terms said None)
    terms_met = list(stats)
    every = list(stats.values())
    in_title = list(map(Counter(title).get, terms_met, repeat(0)))
    in_heads = list(map(Counter(heads).get, terms_met, repeat(0)))
    body = list(map(operator.sub, map(operator.sub, map(len, every), in_title), in_heads))
    packed, offsets = _packed(every, in_title, in_heads, body)
    return Prepared(
        page.title, [], starts, chunks, len(found) - breaks, len(title), terms_met, packed, offsets
    )


def _packed(
    every: list[list[int]], title: list[int], heads: list[int], body: list[int]
) -> tuple[bytes, array[int]]:
    """Format 3's postings as written (§4.3) of the terms whose positions are ``every`` and
    occurrences by field ``title``, ``heads`` and ``body``: t, h, b and the position gaps, as
    digits, and where each term's digits start (and their end)."""
    flat: list[int] = []
    ends: list[int] = []
    add = flat.extend
    for places, t, h, b in zip(every, title, heads, body, strict=True):
        if len(places) == 1:
            add((t, h, b, places[0]))
        else:
            kept = places[:MAX_POSITIONS]
            add((t, h, b, kept[0]))
            add(map(operator.sub, kept[1:], kept))
        ends.append(len(flat))
    # each number's digits; the terms' bounds move to the digits' (C speed)
    table = _SHORT
    digits = list(map(table.__getitem__, flat)) if not flat or max(flat) < 32768 else None
    if digits is None:
        digits = [table[v] if v < 32768 else _digits(v) for v in flat]
    bounds = [0, *accumulate(map(len, digits))]
    offsets = array("I", [0, *map(bounds.__getitem__, ends)])
    return "".join(digits).encode("ascii"), offsets


def _by_blocks(page: Page, skip: frozenset[str], version: int) -> Prepared:
    """:func:`prepare` a block at a time (every format; a page :func:`_by_lines` does not take)."""
    position = 0
    headings: list[str] = []
    fields: list[tuple[int, str]] = [(0, page.title)]
    for heading, block in page.blocks:
        if block in skip:
            continue
        fields.append((1 if heading else 2, block))
        if heading and version < 3:  # format 3: no reader shows them; the text holds them
            headings.append(block[:512])
    # every kept token's term and position, and the title's and the headings' terms apart: the
    # statistics below are C-speed passes over these lists (maps, Counter), not a Python step a token
    found: list[str] = []
    at: list[int] = []
    by_field: tuple[list[str], list[str]] = ([], [])
    title_length = 0
    starts: list[int] = []
    chunks: list[list[str]] = []
    chunk_size = CHUNK_CHARS
    for field, block in fields:
        if field:
            if chunk_size >= CHUNK_CHARS:
                starts.append(position)
                chunks.append([])
                chunk_size = 0
            chunks[-1].append(block)
            chunk_size += len(block) + 1
        terms = term_list(block)
        if None in terms:  # a dropped term holds its place
            places = [p for p, term in enumerate(terms, position) if term is not None]
            terms = [term for term in terms if term is not None]
        else:
            places = range(position, position + len(terms))  # type: ignore[assignment]
        if terms:
            found += terms  # type: ignore[arg-type]
            at += places
            if field < 2:
                by_field[field].extend(terms)  # type: ignore[arg-type]
            position = places[-1] + 1 + _GAP
        else:
            position += _GAP
        if field == 0:
            title_length = len(found)
    length = len(found)
    # each term's positions, in order, its terms in the order first met: lists made and appended
    # to by map (a term's first position; the positions past the first 32 are cut below)
    stats: defaultdict[str, list[int]] = defaultdict(list)
    deque(map(list.append, map(stats.__getitem__, found), at), maxlen=0)
    terms_met = list(stats)
    every = list(stats.values())
    title = list(map(Counter(by_field[0]).get, terms_met, repeat(0)))
    heads = list(map(Counter(by_field[1]).get, terms_met, repeat(0)))
    body = list(map(operator.sub, map(operator.sub, map(len, every), title), heads))
    if version >= 3:
        packed, offsets = _packed(every, title, heads, body)
    else:
        flat: list[int] = []
        ends: list[int] = []
        add = flat.extend
        for places, t, h, b in zip(every, title, heads, body, strict=True):
            kept = places[:MAX_POSITIONS]
            add((t, h, b, length, title_length, len(kept)))
            add(kept)
            ends.append(len(flat))
        numbers = array("I", flat)
        offsets = array("I", [0, *ends])
    return Prepared(
        page.title, headings, starts, ["\n".join(c) for c in chunks], length, title_length,
        terms_met, packed if version >= 3 else numbers, offsets,
    )  # fmt: skip
