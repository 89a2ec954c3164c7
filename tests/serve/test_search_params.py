"""The numbers of ``/~/api/search?q=&limit=&offset=`` (formats/serve.md §8): a whole number of any
length is read as the number it is and then clamped by the search (limit 1–100, offset ≤ 10,000);
absent or not digits, the default. A long offset used to fall back to 0: ``offset=99999999999999``
answered the first page again, so a client paging past the end looped forever."""

from __future__ import annotations

import pytest

from archiver.serve.search import MAX_OFFSET
from archiver.serve.site import _int_param


@pytest.mark.parametrize(
    ("query", "want"),
    [
        (b"offset=3", 3),
        (b"offset=0", 0),
        (b"offset=007", 7),
        (b"offset=99999999", 99_999_999),
        (b"offset=999999999", 999_999_999),
        (b"offset=99999999999999", 99_999_999_999_999),
        (b"offset=" + b"9" * 400, 10**18),
        (b"offset=" + b"0" * 300 + b"5", 5),
        (b"offset=", 42),
        (b"", 42),
        (b"offset=-5", 42),
        (b"offset=1e9", 42),
        (b"offset=%D9%A3", 42),  # ARABIC-INDIC DIGIT THREE: a digit, not ASCII
        (b"offset=%EF%BC%93", 42),  # FULLWIDTH DIGIT THREE
        (b"offset=abc", 42),
        (b"offset=3&offset=9", 3),
    ],
)
def test_a_number_parameter(query: bytes, want: int) -> None:
    assert _int_param(query, "offset", 42) == want


def test_past_the_end_is_past_the_end() -> None:
    assert min(_int_param(b"offset=99999999999999", "offset", 0), MAX_OFFSET) == MAX_OFFSET
