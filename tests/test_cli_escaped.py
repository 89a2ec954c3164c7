"""archiver/cli/output.py ``_escaped``: a printable text without a backslash is returned as it is,
without the pattern; any text gives what the pattern's substitution gives (control characters, line
and paragraph separators, lone surrogates from bytes that are not UTF-8, backslashes)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.cli import output

_SPECIAL = st.sampled_from(["\\", "\x00", "\n", "\x1f", "\x7f", "\x85", "\x9f", "\u2028", "\u2029", "\udc80"])
_TEXT = st.lists(st.one_of(st.characters(), _SPECIAL), max_size=30).map("".join)


@settings(max_examples=500, deadline=None)
@given(_TEXT)
def test_escaped_is_the_patterns_substitution(text: str) -> None:
    assert output._escaped(text) == output._unprintable().sub(output._escape_one, text)


def test_a_printable_name_is_itself_without_the_pattern() -> None:
    output._unprintable.cache_clear()
    assert output._escaped("/tmp/site é 東京/_archiver/search") == "/tmp/site é 東京/_archiver/search"
    assert output._unprintable.cache_info().currsize == 0
    assert output._escaped("a\\b\nc\udcff") == "a\\\\b\\nc\\xff"
