"""The serve engine ranks exactly as the query core (formats/search.md §6.5): over several indexes
at once, the same total, the same documents in the same order, the same scores and snippets, for
one-word, prefix, several-word, quoted, CJK and title-exact queries, deep pages (offset), indexes of
formats 1, 2 and 3, and the same answers again from its cache, under a budget that evicts. The
mistake it guards against: a cache or a top-k bound that drops, reorders or rescores a document."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.search import engine, query, table
from archiver.search import snippet as snippet_module
from archiver.search import words as words_module
from tests.search.helpers import build_files, html

WORDS = ["ba", "baba", "bar", "barn", "bake", "be", "ko", "kona", "zu", "zulu", "lima", "li", "mar"]
CJK = "東京都の天気中华人民共和国"


def _page(rng: random.Random, i: int) -> tuple[str, str]:
    if i % 7 == 3:
        run = "".join(rng.choice(CJK) for _ in range(rng.randint(3, 12)))
        return f"p/{i}.html", html(run[:4], f"<p>{run}</p><p>{' '.join(rng.choices(WORDS, k=5))}</p>")
    title = " ".join(rng.choices(WORDS, k=rng.choice([1, 2, 2, 3, 5])))
    weights = [1 / (r + 1) for r in range(len(WORDS))]
    body = "".join(
        f"<h2>{' '.join(rng.choices(WORDS, weights, k=2))}</h2>"
        f"<p>{' '.join(rng.choices(WORDS, weights, k=rng.randint(3, 60)))}</p>"
        for _ in range(rng.randint(1, 3))
    )
    return f"p/{i}.html", html(title, body)


def _indexes(seed: int, count: int, version: int = 3) -> list[query.Index]:
    rng = random.Random(seed)
    out = []
    for a in range(count):
        pages = [_page(rng, i) for i in range(rng.randint(1, 40))]
        files = build_files(pages, shard_bytes=rng.choice([64, 256, 4096]), group_bytes=128, version=version)

        def load(name: str, files: dict[str, bytes] = files) -> bytes:
            if name not in files:
                raise OSError("no such file")
            return files[name]

        out.append(query.Index(load, f"i{a}"))
    return out


QUERIES = ["ba", "ba ", "b", "bar", "baba ba", "ba baba", "ba ba", "kona zu", '"ba baba"', "zu lima ko",
           "東京", "天気 ba", "人民共和", "中", "bake be", "nothing", "li ma", "mar ba ",
           "ko ko ko"]  # fmt: skip


def _shape(found: query.Results) -> tuple[int, list[tuple[object, ...]]]:
    return found.total, [
        (
            r.archive,
            r.doc,
            r.path,
            r.score,
            r.snippet.text,
            r.snippet.marks,
            r.snippet.before,
            r.snippet.after,
        )
        for r in found.results
    ]


def _same(
    indexes: list[query.Index], eng: engine.Engine, keys: list[str], q: str, limit: int, offset: int
) -> None:
    want = _shape(query.search(indexes, q, limit=limit, offset=offset))
    got = _shape(eng.search(indexes, keys, q, limit=limit, offset=offset))
    assert got == want, (q, limit, offset)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_engine_ranks_as_the_core_over_several_indexes(version: int) -> None:
    indexes = _indexes(7 + version, 5, version)
    keys = [f"k{i}" for i in range(len(indexes))]
    eng = engine.Engine(64 << 20)
    for q in QUERIES:
        for limit, offset in [(10, 0), (3, 0), (3, 3), (100, 0), (5, 20)]:
            _same(indexes, eng, keys, q, limit, offset)
    assert any(query.search(indexes, q).total > 10 for q in QUERIES)  # pages deep enough to cut


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    count=st.integers(1, 6),
    words=st.lists(st.sampled_from([*WORDS, "東京", "天", '"ba', "ba_ko"]), min_size=1, max_size=3),
    space=st.booleans(),
    limit=st.integers(1, 12),
    offset=st.integers(0, 15),
    budget=st.sampled_from([1, 4096, 64 << 20]),
)
def test_the_engine_ranks_as_the_core_for_any_query(
    seed: int, count: int, words: list[str], space: bool, limit: int, offset: int, budget: int
) -> None:
    indexes = _indexes(seed, count)
    keys = [f"k{i}" for i in range(count)]
    eng = engine.Engine(budget)  # 1 byte: every query decodes again; the answers stay the same
    q = " ".join(words) + (" " if space else "")
    for _ in range(2):  # and again, from the cache
        _same(indexes, eng, keys, q, limit, offset)


def test_a_title_that_is_exactly_the_query_comes_first_from_every_index() -> None:
    many = [(f"p/{i}.html", html("other", "<p>" + "barn " * 30 + "</p>")) for i in range(30)]
    exact = [("p/x.html", html("barn", "<p>barn</p>"))]
    indexes = []
    for pages in (many, exact, many):
        files = build_files(pages)
        indexes.append(query.Index(files.__getitem__, "mem"))
    eng = engine.Engine(1 << 20)
    got = eng.search(indexes, ["a", "b", "c"], "barn", limit=3)
    assert (got.results[0].archive, got.results[0].path) == (1, "p/x.html")
    assert _shape(got) == _shape(query.search(indexes, "barn", limit=3))


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.characters(max_codepoint=127), max_size=300)
    | st.lists(st.sampled_from([*WORDS, " ", ".", "_", "Ba", "BA9", "x" * 70, "\n"])).map("".join),
    terms=st.frozensets(st.sampled_from([*WORDS, "ba9", "a", "x" * 70])),
    prefix=st.sampled_from(["", "b", "ba", "x", "9"]),
)
def test_the_snippets_ascii_path_finds_what_the_tokenizer_finds(
    text: str, terms: frozenset[str], prefix: str
) -> None:
    """The snippet's fast path for ASCII text (serve cuts ten snippets an answer) finds the same
    matches, at the same offsets, as the tokenizer's path."""
    assert snippet_module._ascii_hits(text, terms, prefix) == snippet_module._hits(text, terms, prefix)


@pytest.mark.parametrize(
    ("text", "terms", "prefix"),
    [
        ("baba ba bab ba", frozenset({"ba"}), ""),  # a term inside a longer run is no match
        ("aaa aa aaaa aa", frozenset({"aa"}), "aa"),  # overlapping finds of the needle
        ("Ba9 ba9ba BA", frozenset({"ba9"}), "b"),  # case, digits, term and prefix on one run
        ("x" * 70 + " " + "x" * 64 + " xx", frozenset({"x" * 70}), "x"),  # over MAX_TERM: dropped
        ("bar barn_bar bar-bar", frozenset({"bar", "é", "東京", ""}), "é"),  # non-ASCII needles: none
        ("ab", frozenset(), "abc"),
        ("", frozenset({"a"}), "a"),
    ],
)
def test_the_snippets_ascii_path_finds_whole_runs(text: str, terms: frozenset[str], prefix: str) -> None:
    """Each needle found by str.find: a match only where a whole run of letters and digits is it
    (or starts with the prefix), whatever else the needle is found inside."""
    assert snippet_module._ascii_hits(text, terms, prefix) == snippet_module._hits(text + " é", terms, prefix)


# --- postings tables (formats/search.md §6.5, Tables): the server's precomputed term data ---------


def _tabled(
    indexes: list[query.Index], keys: list[str], budget: int, entries: int = engine.KEPT_ENTRIES
) -> engine.Engine:
    eng = engine.Engine(budget, entries)
    for ix, key in zip(indexes, keys, strict=True):
        data = table.build(ix, f"id-{key}")
        if data is not None:
            eng.tables[key] = table.Table(data, f"id-{key}", ix.documents)
    return eng


@pytest.mark.parametrize("merged", [0, 40, table.MERGED_NUMBERS])
@pytest.mark.parametrize("heavy", [0, 6, 48])
def test_an_engine_with_tables_ranks_as_the_core(
    heavy: int, merged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(table, "HEAVY", heavy)  # 0: every term stored decoded; 48: most decoded on demand
    monkeypatch.setattr(table, "MERGED_NUMBERS", merged)  # 0: every prefix's completions stored merged
    indexes = _indexes(11, 5)
    keys = [f"k{i}" for i in range(len(indexes))]
    eng = _tabled(indexes, keys, 64 << 20)
    assert len(eng.tables) == 5
    for q in QUERIES:
        for limit, offset in [(10, 0), (3, 3), (100, 0)]:
            _same(indexes, eng, keys, q, limit, offset)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    count=st.integers(1, 5),
    words=st.lists(st.sampled_from([*WORDS, "東京", "天", '"ba', "ba_ko"]), min_size=1, max_size=3),
    space=st.booleans(),
    limit=st.integers(1, 12),
    offset=st.integers(0, 15),
    heavy=st.sampled_from([0, 4, 48]),
    version=st.sampled_from([1, 2, 3]),
    merged=st.sampled_from([0, 30, table.MERGED_NUMBERS]),
    entries=st.sampled_from([1, 2, engine.KEPT_ENTRIES]),
)
def test_an_engine_with_tables_ranks_as_the_core_for_any_query(
    seed: int,
    count: int,
    words: list[str],
    space: bool,
    limit: int,
    offset: int,
    heavy: int,
    version: int,
    merged: int,
    entries: int,
) -> None:
    old = table.HEAVY, table.MERGED_NUMBERS
    table.HEAVY, table.MERGED_NUMBERS = heavy, merged
    try:
        indexes = _indexes(seed, count, version)  # formats 1-2 get no table: the engine reads shards
        keys = [f"k{i}" for i in range(count)]
        eng = _tabled(indexes, keys, 1 << 20, entries)
        assert (len(eng.tables) == count) == (version == 3)
        q = " ".join(words) + (" " if space else "")
        for _ in range(3):  # a table's word is kept at its second meeting, used from the cache at the third
            _same(indexes, eng, keys, q, limit, offset)
            assert len(eng._lru) <= entries
    finally:
        table.HEAVY, table.MERGED_NUMBERS = old


def test_a_tables_word_is_kept_at_its_second_meeting_and_the_cache_keeps_to_its_entries() -> None:
    """What the collector walks (formats/search.md §6.5, The collector): a word a table makes again in
    microseconds is kept only when it is met a second time (most words of distinct queries are met
    once), a word of one term never, and the cache never holds more than its entries, whatever its
    bytes; the answers stay the core's throughout."""
    indexes = _indexes(5, 3)
    keys = [f"k{i}" for i in range(3)]
    eng = _tabled(indexes, keys, 64 << 20, entries=4)
    assert len(eng.tables) == 3
    kept = lambda: {k[1:] for k in eng._lru if k[0] == "w"}  # noqa: E731
    for _ in range(3):
        _same(indexes, eng, keys, "ba ", 10, 0)  # "ba" as a word of one term: never kept (its number is)
        assert not kept() and {(k, "ba", False) for k in keys} <= set(eng._ones)
    _same(indexes, eng, keys, "ba", 10, 0)  # as a prefix: several terms, met once
    assert not kept()
    _same(indexes, eng, keys, "ba", 10, 0)
    several = {
        (k, "ba", True)
        for k, ix in zip(keys, indexes, strict=True)
        if len(eng.tables[k].find("ba", True)) > 1
    }
    assert several and kept() == several
    for q in [*QUERIES, *QUERIES]:
        _same(indexes, eng, keys, q, 10, 0)
        assert len(eng._lru) <= 4


@pytest.mark.parametrize("merged", [0, table.MERGED_NUMBERS])
def test_a_prefix_of_more_than_64_terms_keeps_the_cores_64_from_the_table(
    merged: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 completions of ``ba``, many with the same number count: the 64 kept (the term itself first,
    then most numbers, ties in key order) and so the ranking are the core's, whether the table stores
    the prefixes' terms and merged lists or not."""
    monkeypatch.setattr(table, "MERGED_NUMBERS", merged)
    rng = random.Random(3)
    words = [f"ba{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(200)]
    pages = [
        (f"p/{i}.html", html("ba " * (i % 3), "<p>" + " ".join(rng.choices(words, k=40)) + "</p>"))
        for i in range(60)
    ]
    indexes = [query.Index(build_files(pages, shard_bytes=512).__getitem__, "mem")]
    eng = _tabled(indexes, ["a"], 64 << 20)
    assert eng.tables
    for q in ["ba", "b", "bab", "ba bac", "bacz ba"]:
        for limit, offset in [(10, 0), (20, 40)]:
            _same(indexes, eng, ["a"], q, limit, offset)


def test_a_prefixs_completions_are_read_merged_from_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """Table version 2 stores the merged list of a prefix whose completions hold many numbers (the
    tail of issue 23: 64 completions decoded and merged in each of 100 indexes, ~4 ms an index): the
    engine reads it in place and merges nothing, and the list is the one it would merge."""
    rng = random.Random(7)
    words = [f"ba{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(120)] + ["ba"]
    pages = [
        (f"p/{i}.html", html("t", "<p>" + " ".join(rng.choices(words, k=200)) + "</p>")) for i in range(50)
    ]
    ix = query.Index(build_files(pages, shard_bytes=4096).__getitem__, "mem")
    data = table.build(ix, "me")
    assert data is not None
    t = table.Table(data, "me", ix.documents)
    assert t.prefixes > 0 and t.merges > 0
    ids, stored = t.lookup("ba", True)
    assert stored is not None and ids == t.find("ba", True) and len(ids) == query.MAX_EXPANSIONS
    rest = [t.data(j, ix) for j in ids if t.term(j) != "ba"]
    want = words_module.merge([td for td in rest if td.docs])
    assert [list(x) for x in stored[:3]] == [list(x) for x in want[:3]] and stored[3] == want[3]

    def no_merge(tds: object) -> object:
        raise AssertionError("merged again")

    eng = _tabled([ix], ["a"], 64 << 20)
    want_results = _shape(query.search([ix], "ba", limit=10))
    monkeypatch.setattr(words_module, "merge", no_merge)
    assert _shape(eng.search([ix], ["a"], "ba", limit=10)) == want_results


def test_a_table_is_refused_when_changed_or_of_another_index() -> None:
    ix = _indexes(5, 1)[0]
    data = table.build(ix, "me")
    assert data is not None
    table.Table(data, "me", ix.documents)
    with pytest.raises(ValueError, match="another index"):
        table.Table(data, "you", ix.documents)
    for at in (len(data) // 2, len(data) - 1):
        bad = bytearray(data)
        bad[at] ^= 1
        with pytest.raises(ValueError, match="SHA-256"):
            table.Table(bytes(bad), "me", ix.documents)
    with pytest.raises(ValueError):
        table.Table(data[: len(data) // 3], "me", ix.documents)
    with pytest.raises(ValueError):
        table.Table(b"archiver-search-table\n\xff\xff\xff\x7f{", "me", ix.documents)


def test_shards_out_of_order_get_no_table() -> None:
    """An index whose shards a table cannot answer exactly as the engine reads them (out of order:
    the engine then takes its per-shard scan) gets none."""
    files = build_files(
        [(f"p/{i}.html", html("t", f"<p>ba be ko zu {i}</p>")) for i in range(20)], shard_bytes=64
    )
    ix = query.Index(files.__getitem__, "mem")
    assert len(ix.shards) > 2 and table.build(ix, "x") is not None
    _first, last, size, sha = ix.shards[1]
    ix.shards[1] = (ix.shards[0][0], last, size, sha)  # its range overlaps the shard before
    assert table.build(ix, "x") is None


def test_a_document_ranked_by_the_top_k_loop_builds_no_posting_and_its_prefix_positions_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tail of issue 23 (``X ba``: each document ranked exactly decoded ~65 completions' postings):
    the threshold loop reads a document's positions only (no Posting built: those are for the page
    shown), and a prefix's positions in a document are kept, so the next query with that prefix
    reads none of its completions' postings again; the answers stay the core's."""
    indexes = _indexes(21, 4)
    keys = [f"k{i}" for i in range(len(indexes))]
    eng = engine.Engine(64 << 20)
    built: list[int] = []
    read: list[str] = []
    posting, starts = engine.TermData.posting, engine._Word.starts

    def counted_posting(self: engine.TermData, i: int) -> query.Posting:
        built.append(i)
        return posting(self, i)

    def counted_starts(self: engine._Word, doc: int) -> list[int]:
        read.append(self.term)
        return starts(self, doc)

    monkeypatch.setattr(engine.TermData, "posting", counted_posting)
    monkeypatch.setattr(engine._Word, "starts", counted_starts)
    _same(indexes, eng, keys, "ko ba", 1, 0)
    assert read.count("ba") >= 3 and read.count("ko") == read.count("ba")  # several ranked exactly
    built.clear()
    found = eng.search(indexes, keys, "ko ba", limit=1)
    decoded = len(built)
    r = found.results[0]
    words = [eng._word(indexes[r.archive], keys[r.archive], t, p) for t, p in [("ko", False), ("ba", True)]]
    assert decoded == sum(len(w.alts(r.doc)) for w in words)  # the page's postings only
    read.clear()
    _same(indexes, eng, keys, "ko ba", 1, 0)
    assert read and "ba" not in read  # the prefix's positions kept, the other word's read again


@pytest.mark.parametrize("numbers", [[99, 0, 0, 1, 5], [0, 0, 0, 3, 1]])
def test_a_light_terms_malformed_postings_in_a_table_name_its_shard(numbers: list[int]) -> None:
    """A term a table stores undecoded (few numbers) whose posting names no document or is short of
    positions: the engine names the shard it came from (the table's number of it, found only then),
    as the core names it, not another shard nor an IndexError."""
    import hashlib
    import json

    from archiver.errors import FormatError
    from archiver.search import build
    from tests.search.helpers import build_files

    pages = [_page(random.Random(3), i) for i in range(30)]
    files = build_files(pages, shard_bytes=256)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    last = len(manifest["shards"]) - 1
    assert last > 0
    name = f"t/{last}"
    rows = json.loads(build.inflate(build.payload_of(name, files[name])))
    rows[0][1] = build.pack_numbers(numbers)
    payload = build.deflate(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode())
    files[name] = build.wrap(name, payload)
    manifest["shards"][last][2:4] = [len(files[name]), hashlib.sha256(payload).hexdigest()]
    files["manifest"] = build.manifest_bytes(manifest)
    ix = query.Index(files.__getitem__, "mem")
    eng = _tabled([ix], ["k"], 64 << 20)
    assert "k" in eng.tables  # the table was built: a light term is decoded when met
    for found in (
        lambda: eng.search([ix], ["k"], rows[0][0] + " "),
        lambda: query.search([ix], rows[0][0] + " "),
    ):
        with pytest.raises(FormatError) as caught:
            found()
        assert caught.value.subject == f"mem/{name}.js" and "malformed" in caught.value.message
