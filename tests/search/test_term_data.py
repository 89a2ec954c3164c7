"""A format 3 postings string decoded for the engine (archiver.search.postings.term_data) gives the
core's documents, impacts and postings (query._decode3), whatever the numbers' widths: one digit,
two (a light term's document steps, read from a table of every two-digit number) or more, and a
document named twice (the last posting counts; the posting of the document before it keeps its own
positions, not the dropped posting's: its slice of the string spans both)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.search import postings
from archiver.search.build import MAX_POSITIONS, pack_numbers, unpack_numbers
from archiver.search.query import _decode3, impact


def test_every_one_or_two_digit_number_is_the_decoders() -> None:
    assert len(postings._FEW) == 32 + 32 * 32
    for text, value in postings._FEW.items():
        assert unpack_numbers(text) == [value]
    assert sorted(postings._FEW.values()) == sorted(list(range(32)) + list(range(1024)))


_POSTING = st.tuples(
    st.sampled_from([0, 1, 5, 31, 32, 33, 100, 1023, 1024, 1025, 40_000]),  # the document step
    st.integers(0, 2),
    st.integers(0, 40),
    st.integers(0, 40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_POSTING, max_size=12), st.randoms(use_true_random=False))
def test_term_data_decodes_as_the_core(steps: list[tuple[int, int, int, int]], rng: Any) -> None:
    flat: list[int] = []
    for step, t, h, b in steps:
        n = min(MAX_POSITIONS, t + h + b)
        flat += [step, t, h, b] + [rng.choice([0, 1, 31, 32, 1000, 70_000]) for _ in range(n)]
    documents = sum(s for s, *_ in steps) + 1
    lengths = [v for d in range(documents) for v in (50 + d % 700, d % 9)]
    core = _decode3(flat, lengths)
    td = postings.term_data(pack_numbers(flat), 3, lengths, 120.0, documents)
    assert list(td.docs) == sorted(core)
    assert list(td.impact) == [
        impact(p.title, p.headings, p.body, lengths[2 * d], 120.0) for d, p in sorted(core.items())
    ]
    assert [td.posting(i) for i in range(len(td.docs))] == [core[d] for d in sorted(core)]
    assert [td.positions(i) for i in range(len(td.docs))] == [core[d].positions for d in sorted(core)]
