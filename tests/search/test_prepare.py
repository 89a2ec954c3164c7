"""``build.prepare`` (formats/search.md §4.3, §5) against a plain reference: a Python step a token,
as the builder did it until h-idx29, whose term statistics are now C-speed passes over the page's
lists. Same terms in the same order, same numbers, same lengths, chunks and starts, for every format
and any page: dropped terms (over 64 characters) holding their places, blocks with no term or only
dropped ones, CJK bigrams, folding that splits a word, terms past 32 occurrences, boilerplate, the
line breaks and "|" that format 3's chunk-at-a-time tokenizer reads as the places between blocks."""

from __future__ import annotations

import operator
from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.search import build
from archiver.search.text import Page
from archiver.search.tokens import LINE_BREAK, lines_terms, term_list

_LONG = "q" * 70  # over MAX_TERM: dropped, its position kept
_words = st.sampled_from(
    [
        "a",
        "b",
        "the",
        "Straße",
        "ﬁx",
        "½",
        "東京都",
        "x_y",
        _LONG,
        "A",
        "é",
        "9",
        "a|b",
        "¶",
        "x\ny",
        "’s",
        "|",
    ]
)
_text = st.lists(_words, max_size=40).map(" ".join)
_blocks = st.lists(st.tuples(st.booleans(), _text), max_size=12)


def _reference(page: Page, skip: frozenset[str], version: int) -> build.Prepared:
    stats: dict[str, list[int]] = {}
    position = 0
    headings: list[str] = []
    fields: list[tuple[int, str]] = [(0, page.title)]
    for heading, block in page.blocks:
        if block in skip:
            continue
        fields.append((1 if heading else 2, block))
        if heading and version < 3:
            headings.append(block[:512])
    length = title_length = 0
    starts: list[int] = []
    chunks: list[list[str]] = []
    chunk_size = build.CHUNK_CHARS
    for field, block in fields:
        if field:
            if chunk_size >= build.CHUNK_CHARS:
                starts.append(position)
                chunks.append([])
                chunk_size = 0
            chunks[-1].append(block)
            chunk_size += len(block) + 1
        last = position - 1
        for at, term in enumerate(term_list(block), position):
            if term is None:
                continue
            entry = stats.setdefault(term, [0, 0, 0])
            entry[field] += 1
            if len(entry) < 3 + build.MAX_POSITIONS:
                entry.append(at)
            last = at
            length += 1
        if field == 0:
            title_length = length
        position = last + 2  # one unused position between blocks
    numbers: list[int] = []
    offsets = [0]
    for entry in stats.values():
        if version >= 3:
            numbers += entry[:4]
            numbers += map(operator.sub, entry[4:], entry[3:-1])
        else:
            numbers += (*entry[:3], length, title_length, len(entry) - 3, *entry[3:])
        offsets.append(len(numbers))
    if version >= 3:
        digits = [build.pack_numbers([n]) for n in numbers]
        bounds = [0]
        for d in digits:
            bounds.append(bounds[-1] + len(d))
        packed: bytes | array[int] = "".join(digits).encode("ascii")
        ends = array("I", [bounds[o] for o in offsets])
    else:
        packed, ends = array("I", numbers), array("I", offsets)
    return build.Prepared(
        page.title, headings, starts, ["\n".join(c) for c in chunks], length, title_length,
        list(stats), packed, ends,
    )  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_text, _blocks, st.sampled_from(build.VERSIONS), st.data())
def test_prepare_is_the_per_token_reference(
    title: str, blocks: list[tuple[bool, str]], version: int, data: st.DataObject
) -> None:
    page = Page(title, blocks, False)
    skip = frozenset(data.draw(st.lists(st.sampled_from([b for _, b in blocks] or [""]), max_size=2)))
    assert tuple(build.prepare(page, skip, version)) == tuple(_reference(page, skip, version))


def test_a_term_past_32_occurrences_and_large_positions() -> None:
    page = Page("the " * 40, [(False, "the " * 3000 + "end"), (True, "the")], False)
    for version in build.VERSIONS:
        assert tuple(build.prepare(page, frozenset(), version)) == tuple(
            _reference(page, frozenset(), version)
        )


@settings(max_examples=300, deadline=None)
@given(st.lists(_text, min_size=1, max_size=8))
def test_lines_terms_is_term_list_a_line_at_a_time(lines: list[str]) -> None:
    """Format 3's tokenizer of a chunk (ASCII lines read together, the others one by one): each
    line's terms, a line break between two lines; None when a term is dropped."""
    text = "\n".join(lines)
    expected: list[str | None] = []
    for k, line in enumerate(text.split("\n")):
        if k:
            expected.append(LINE_BREAK)
        expected += term_list(line)
    assert lines_terms(text) == (None if None in expected else expected)
