"""A non-ASCII text's snippet matches (archiver.search.snippet._hits), which skip the words that
cannot hold a query term without tokenizing them, are the tokenizer's: every token of the whole
text whose term is a query term or starts with the prefix, at the same offsets. Texts of CJK runs,
marks, compatibility and upper-case letters, final sigma, fullwidth and astral characters; terms
and prefixes taken from the text's own tokens and from elsewhere. The mistake it guards against: a
word skipped whose folding would have made a match."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.search import snippet
from archiver.search.tokens import tokens

PIECES = [
    "東京", "都の", "天気", "中华", "人民", "ｶﾀｶﾅ", "カタカナ", "ー", "한국어", "𠀋", "Ａｂｃ", "ﬁ",
    "é", "e\u0301", "\u0301", "Σ", "ΟΔΟΣ", "σς", "İ", "ß", "①", "x", "Bar", "bar", " ", "。", "-", "'",
    "\u3099", "か\u3099", "が", "ｶﾞ", "Ⅻ", "ǅ", "ﾟ", "12", "٣",
    "中", "国", "人", "国中", "\uf900", "豈", "가", "ーー",
]  # fmt: skip


def _reference(text: str, terms: frozenset[str], prefix: str) -> list[tuple[int, int, str]]:
    return [
        (t.start, t.end, t.term)
        for t in tokens(text)
        if t.term in terms or (prefix and t.term.startswith(prefix))
    ]


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=30),
    picks=st.lists(st.integers(0, 1000), max_size=3),
    extra=st.lists(
        st.sampled_from(["東京", "天気", "bar", "σς", "ab", "が", "fi", "かﾞ", "カタ", "中", "国中", "豈"]),
        max_size=2,
    ),
    prefix_pick=st.integers(-1, 1000),
)
def test_the_hits_are_the_tokenizers(
    parts: list[str], picks: list[int], extra: list[str], prefix_pick: int
) -> None:
    text = "".join(parts)
    own = [t.term for t in tokens(text)]
    terms = frozenset([own[i % len(own)] for i in picks if own] + extra)
    prefix = own[prefix_pick % len(own)][: 1 + prefix_pick % 2] if own and prefix_pick >= 0 else ""
    if text.isascii():
        text += "é"
    assert snippet._hits(text, terms, prefix) == _reference(text, terms, prefix)


def test_a_chinese_page_is_matched_as_the_tokenizer_does() -> None:
    text = "中华人民共和国。東京都の天気は晴れ。ＡＢＣ東京" * 20
    for terms, prefix in [(frozenset({"東京"}), ""), (frozenset({"天気", "abc"}), ""), (frozenset(), "晴")]:
        got = snippet._hits(text, terms, prefix)
        assert got == _reference(text, terms, prefix) and got


def test_a_run_of_cjk_characters_matched_where_its_needles_are() -> None:
    """The words of CJK characters only that folding keeps (:func:`snippet._cjk_hits`: found, not
    tokenized): one character long, a needle at the run's last character (no bigram starts there),
    overlapping needles, a one-character term inside a run (no bigram is it), a prefix."""
    for text, terms, prefix in [
        ("中 国中国 中国中", frozenset({"中国"}), ""),
        ("中。国中国中", frozenset({"中", "国"}), ""),
        ("中国中国中", frozenset(), "国"),
        ("中国中国中", frozenset(), "国中"),
        ("中国 豈中国", frozenset({"豈中"}), "中"),
        ("ああああ", frozenset({"ああ"}), "あ"),
        ("がぎぐげご。中国がぎ", frozenset({"中国"}), ""),  # voiced kana: no NFKD word, no needle
        ("がぎぐ ｶﾞｷﾞ がぎ", frozenset({"がぎ"}), ""),  # halfwidth: folding changes it, tokenized
        ("がぎぐ ｶﾞｷﾞ", frozenset({"ガギ"}), "ギ"),
    ]:
        assert snippet._hits(text, terms, prefix) == _reference(text, terms, prefix)
