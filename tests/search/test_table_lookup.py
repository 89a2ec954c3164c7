"""A postings table's lookups (archiver.search.table.Table.find) give the terms a scan of every key
gives: a word's term, a prefix's completions (the term first, then the 64 with most numbers when
more), whatever keys are sampled for the first bisection (1 a key to more than the table's terms)
and for words before, between and after every key, CJK and astral ones. The mistake it guards
against: a sampled bisection that starts one block too late or stops one too early."""

from __future__ import annotations

import random

import pytest

from archiver.search import query, table
from archiver.search.build import order_key
from tests.search.helpers import build_files, html


def _table(sample: int, monkeypatch: pytest.MonkeyPatch) -> tuple[table.Table, list[bytes]]:
    monkeypatch.setattr(table, "SAMPLE", sample)
    rng = random.Random(5)
    words = [f"ba{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(150)] + ["ba", "b", "zz", "za"]
    words += ["東京", "京都", "天気", "𠀋字", "ÿÿ", "ÿ"]
    pages = [
        (f"p/{i}.html", html("t", "<p>" + " ".join(rng.choices(words, k=30)) + "</p>")) for i in range(40)
    ]
    ix = query.Index(build_files(pages, shard_bytes=512).__getitem__, "mem")
    data = table.build(ix, "me")
    assert data is not None
    t = table.Table(data, "me", ix.documents)
    return t, [t.key(j) for j in range(t.terms)]


def _scan(t: table.Table, keys: list[bytes], term: str, prefix: bool) -> list[int]:
    want = order_key(term)
    if not prefix:
        return [j for j, k in enumerate(keys) if k == want]
    found = [j for j, k in enumerate(keys) if k.startswith(want)]
    if len(found) <= query.MAX_EXPANSIONS:
        return found
    exact = [j for j in found if keys[j] == want]
    rest = sorted((j for j in found if keys[j] != want), key=lambda j: (-t.count[j], j))
    return exact + rest[: query.MAX_EXPANSIONS - len(exact)]


@pytest.mark.parametrize("sample", [1, 2, 3, 7, 32, 10_000])
def test_a_tables_lookups_are_a_scans(sample: int, monkeypatch: pytest.MonkeyPatch) -> None:
    t, keys = _table(sample, monkeypatch)
    assert t.terms > 150 and len(t.sample) == len(range(0, t.terms, sample))
    words = {t.term(j) for j in range(t.terms)}
    probes = set(words) | {w[:n] for w in words for n in range(len(w))}
    probes |= {w + "a" for w in words} | {"", "a", "bb", "zzz", "ÿÿÿ", "京", "\uffff", "𠀋"}
    for word in sorted(probes):
        for prefix in (False, True):
            got = t.find(word, prefix)
            want = _scan(t, keys, word, prefix)
            assert got == want, (word, prefix)


@pytest.mark.parametrize("sample", [1, 2, 4, 32])
def test_a_word_found_inside_two_keys_or_a_shorter_key_is_not_a_term(
    sample: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block of keys is searched as one bytes object: a match across two keys ("ab" + "cd"
    holds "bc"), at an odd byte, or at a key's start but longer than that key ("ab" for "abc") is
    no term and no prefix; the key itself, and the keys that start with it, are."""
    monkeypatch.setattr(table, "SAMPLE", sample)
    words = ["ab", "abd", "b", "bcx", "cd", "d", "京", "京都", "都"]
    pages = [(f"p/{i}.html", html("t", f"<p>{w} {w}</p>")) for i, w in enumerate(words)]
    ix = query.Index(build_files(pages).__getitem__, "mem")
    data = table.build(ix, "me")
    assert data is not None
    t = table.Table(data, "me", ix.documents)
    keys = [t.key(j) for j in range(t.terms)]
    terms = [t.term(j) for j in range(t.terms)]
    assert set(words) <= set(terms)
    for word in ["bc", "abc", "bd", "db", "c", "京都都", "都京", "x", "abdz", "dd", *words]:
        for prefix in (False, True):
            assert t.find(word, prefix) == _scan(t, keys, word, prefix), (word, prefix)
    assert [t.term(j) for j in t.find("ab", True)] == ["ab", "abd"]
    assert [t.term(j) for j in t.find("bc", True)] == ["bcx"]
    assert t.find("bc", False) == [] and t.find("京", False) == [terms.index("京")]
