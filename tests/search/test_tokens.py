"""The tokenizer (formats/search.md §3): the vectors of formats/vectors/search-tokens.json, folding as a
reader expects, CJK bigrams, the 64-character bound, and js/search.js giving the same terms as Python
for every vector and for text hypothesis makes up (the page tokenizes queries and snippets itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.search.tokens import MAX_TERM, TOKENIZER, fold, term_list, terms, tokens
from tests.vectors import VECTORS, rows

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node") or "node"


@pytest.mark.parametrize("row", rows("search-tokens.json", "terms"))
def test_vectors(row: dict) -> None:
    assert terms(row["in"]) == row["out"]


def test_vectors_name_this_tokenizer() -> None:
    data = json.loads((VECTORS / "search-tokens.json").read_text(encoding="utf-8"))
    assert data["tokenizer"] == TOKENIZER


@pytest.mark.parametrize(
    ("a", "b"),
    [("É", "e"), ("ﬁ", "fi"), ("Ｆｕｌｌ", "full"), ("ﾃｽﾄ", "テスト"), ("Straße", "strasse"), ("ẞ", "ss"),
     ("Ångström", "angstrom"), ("naïve", "naive"), ("Œuvre", "oeuvre")],
)  # fmt: skip
def test_folding_as_a_reader_expects(a: str, b: str) -> None:
    assert fold(a) == fold(b) and terms(a) == terms(b)


_latin = st.text(alphabet=st.characters(min_codepoint=0x41, max_codepoint=0x24F), min_size=1, max_size=12)


@given(_latin)
def test_case_and_accents_never_matter(word: str) -> None:
    assert terms(word.upper()) == terms(word.lower()) == terms(word)


_cjk = st.text(
    alphabet=st.sampled_from("中华人民共和国東京都の天気予報ですテスト한국어漢字かなカナー"),
    min_size=2,
    max_size=30,
)


@given(_cjk, st.data())
def test_any_substring_of_a_cjk_run_is_a_run_of_its_bigrams(run: str, data: st.DataObject) -> None:
    """The index-side guarantee: a 2+ character substring's terms appear, at consecutive positions,
    among the run's terms (so a phrase query of them finds it)."""
    i = data.draw(st.integers(0, len(run) - 2))
    j = data.draw(st.integers(i + 2, len(run)))
    whole, part = terms(run), terms(run[i:j])
    assert any(whole[k : k + len(part)] == part for k in range(len(whole) - len(part) + 1))


def test_term_bound_and_positions() -> None:
    found = list(tokens("a " + "x" * (MAX_TERM + 1) + " b"))
    assert [(t.term, t.position) for t in found] == [("a", 0), ("b", 2)]  # the long term keeps its place
    assert terms("y" * MAX_TERM) == ["y" * MAX_TERM]
    assert terms("x" * 10_000) == []


def test_offsets_point_at_the_source_text() -> None:
    text = "Café 東京都 ﬁne"
    spans = [(t.term, text[t.start : t.end]) for t in tokens(text)]
    assert spans == [("cafe", "Café"), ("東京", "東京"), ("京都", "京都"), ("fine", "ﬁne")]


_JS = """
const s = require(process.argv[1]);
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(texts.map((t) => s.terms(t))));
"""


def _js_terms(texts: list[str]) -> list[list[str]]:
    done = subprocess.run(
        [NODE, "-e", _JS, str(ROOT / "js" / "search.js")],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_js_gives_the_vectors_terms() -> None:
    data = json.loads((VECTORS / "search-tokens.json").read_text(encoding="utf-8"))
    got = _js_terms([r["in"] for r in data["terms"]])
    assert got == [r["out"] for r in data["terms"]]


_any_text = st.lists(
    st.text(
        alphabet=st.one_of(
            st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFFF),
            st.sampled_from("ÉéßﬁＡﾃｽ東京の天気한국ー\u0301\u3099 -'"),
        ),
        max_size=40,
    ),
    min_size=1,
    max_size=50,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_any_text)
def test_js_and_python_agree(texts: list[str]) -> None:
    assert _js_terms(texts) == [terms(t) for t in texts]


_any_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from("abcXYZ019 _-.東京都の天気テスト한국ﬁ½ẞÉ\u0301\u3099"),
    ),
    max_size=80,
) | st.builds(lambda a, n: a * n, st.sampled_from(["x", "ab ", "é"]), st.integers(60, 140))


@given(_any_text, st.integers(0, 1000))
def test_the_builders_term_list_is_what_tokens_yields(text: str, start: int) -> None:
    """The builder's fast path (``term_list``) gives the term at every position ``tokens`` numbers,
    None where a term over 64 characters was dropped, on ASCII and on any other text alike."""
    listed = term_list(text)
    yielded = {t.position - start: t.term for t in tokens(text, start)}
    assert {k: t for k, t in enumerate(listed) if t is not None} == yielded
    assert len(listed) >= (max(yielded) + 1 if yielded else 0)
    assert all(t is None for t in listed[max(yielded, default=-1) + 1 :])


def _fold_by_characters(text: str) -> str:
    """fold as tokenizer version 1 first wrote it: the combining marks dropped one character at a time."""
    import unicodedata

    from archiver.search.tokens import _LETTERS

    text = unicodedata.normalize("NFKC", text).lower().translate(_LETTERS)
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not "\u0300" <= c <= "\u036f"))


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=12))
def test_fold_drops_the_combining_marks_as_the_first_fold_did(text: str) -> None:
    """fold removes U+0300-U+036F with str.translate: the same strings as the loop over characters."""
    assert fold(text) == _fold_by_characters(text)


@pytest.mark.parametrize("text", ["e\u0301", "\u0300\u036f\u0370", "ÅﬁⅫ", "が\u0301", "ǅ\u0345", "ΐ"])
def test_fold_drops_the_combining_marks_at_the_range_ends(text: str) -> None:
    assert fold(text) == _fold_by_characters(text)
