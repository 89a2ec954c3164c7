"""The builder and the query core together (formats/search.md §4–§6), as properties: every word of a
document finds it; any 2+ character substring of a Chinese or Japanese run finds its page; folding;
a page's title as the query ranks that page above every page without that title; phrases; prefixes;
paging; building is deterministic; a query loads only the shards its terms can be in."""

from __future__ import annotations

import html as htmllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.errors import FormatError
from archiver.search import build, query, store
from archiver.search.tokens import terms
from tests.one_thread import in_one_thread
from tests.search.helpers import build_files, html, index_of

_word = st.text(alphabet="abcdefghijklmnopqrstuvwxyzéüßø", min_size=1, max_size=10)
_doc = st.lists(_word, min_size=1, max_size=30)
_slow = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pages(docs: list[list[str]]) -> list[tuple[str, str]]:
    """One page per list of words (each block starts with its page's number: no block repeats, so
    none is boilerplate, §2.2)."""
    return [
        (f"p{i:03}.html", html(f"page {i}", f"<p>{i} " + " ".join(d) + "</p>")) for i, d in enumerate(docs)
    ]


@_slow
@given(st.lists(_doc, min_size=1, max_size=8), st.data())
def test_every_word_of_a_document_finds_it(docs: list[list[str]], data: st.DataObject) -> None:
    index = index_of(_pages(docs), shard_bytes=200, group_bytes=100)  # many shards and groups
    d = data.draw(st.integers(0, len(docs) - 1))
    word = data.draw(st.sampled_from(docs[d]))
    for q in (word, word + " ", f'"{word}"', word.upper()):
        found = query.search([index], q, limit=100)
        assert f"p{d:03}.html" in [r.path for r in found.results], q


_cjk_run = st.text(
    alphabet=st.sampled_from("中华人民共和国成立東京都の天気予報ですテストコンピューター한국어"),
    min_size=2,
    max_size=24,
)


@_slow
@given(st.lists(_cjk_run, min_size=1, max_size=6), st.data())
def test_any_cjk_substring_finds_its_page(runs: list[str], data: st.DataObject) -> None:
    pages = [(f"c{i}.html", html(f"文書{i}", f"<p>{r}</p><p>filler text</p>")) for i, r in enumerate(runs)]
    index = index_of(pages, shard_bytes=300)
    d = data.draw(st.integers(0, len(runs) - 1))
    i = data.draw(st.integers(0, len(runs[d]) - 2))
    j = data.draw(st.integers(i + 2, len(runs[d])))
    for q in (runs[d][i:j], runs[d][i:j] + " ", f'"{runs[d][i:j]}"'):
        found = query.search([index], q, limit=100)
        assert f"c{d}.html" in [r.path for r in found.results], q


def test_folding_finds_either_spelling() -> None:
    index = index_of(
        [("a.html", html("A", "<p>Ｆｕｌｌ ﬁne ÉCOLE Straße</p>")), ("b.html", html("B", "<p>other</p>"))]
    )
    for q in ("full", "FULL", "fine", "ﬁne", "ecole", "école", "strasse", "STRASSE", "straße"):
        assert [r.path for r in query.search([index], q + " ").results] == ["a.html"], q


_title = st.lists(
    st.sampled_from("alpha beta gamma delta omega kappa sigma zeta".split()), min_size=1, max_size=4
)


@_slow
@given(st.lists(_title, min_size=2, max_size=8), st.data())
def test_a_title_as_query_ranks_its_page_first(titles: list[list[str]], data: st.DataObject) -> None:
    """Pages whose body repeats the words many times still rank below the page titled so."""
    t = data.draw(st.integers(0, len(titles) - 1))
    wanted = " ".join(titles[t])
    pages = []
    for i, words in enumerate(titles):
        body = " ".join((titles[t] + ["filler"]) * (20 if i != t else 1))
        pages.append((f"t{i}.html", html(" ".join(words), f"<p>{body}</p>")))
    found = query.search([index_of(pages)], wanted + " ", limit=len(pages))
    first = found.results[0]
    assert " ".join(terms(first.title)) == " ".join(terms(wanted)), (wanted, [r.title for r in found.results])


def test_phrase_and_prefix() -> None:
    pages = [
        ("a.html", html("A", "<p>the quick brown fox</p>")),
        ("b.html", html("B", "<p>the brown quick fox</p>")),
        ("c.html", html("C", "<p>quickly</p>")),
    ]
    index = index_of(pages)
    assert [r.path for r in query.search([index], '"quick brown"').results] == ["a.html"]
    assert {r.path for r in query.search([index], "quick brown ").results} == {"a.html", "b.html"}
    assert query.search([index], "quick brown ").results[0].path == "a.html"  # the phrase bonus
    assert {r.path for r in query.search([index], "quic").results} == {"a.html", "b.html", "c.html"}
    assert {r.path for r in query.search([index], "quic ").results} == set()  # a finished word is whole


def test_snippet_marks_the_match() -> None:
    body = "<p>" + "lorem ipsum " * 50 + "the needle is here" + " dolor sit" * 50 + "</p>"
    found = query.search([index_of([("n.html", html("N", body))])], "needle ")
    s = found.results[0].snippet
    assert [s.text[a:b] for a, b in s.marks] == ["needle"] and s.before and s.after
    assert len(s.text) <= 200


def test_paging() -> None:
    pages = [(f"p{i:02}.html", html(f"P{i}", f"<p>common {'word ' * (i + 1)}</p>")) for i in range(25)]
    index = index_of(pages, group_bytes=200)
    everything = query.search([index], "common ", limit=100)
    assert everything.total == 25
    paged = [
        r.path for o in (0, 10, 20) for r in query.search([index], "common ", limit=10, offset=o).results
    ]
    assert paged == [r.path for r in everything.results]


@_slow
@given(st.lists(_doc, min_size=1, max_size=6))
def test_building_is_deterministic(docs: list[list[str]]) -> None:
    assert build_files(_pages(docs), shard_bytes=300) == build_files(_pages(docs), shard_bytes=300)


def test_a_query_loads_only_the_shards_of_its_terms() -> None:
    words = [f"w{i:04}" for i in range(3000)]
    pages = [
        (f"p{i}.html", html(f"p{i}", "<p>" + " ".join(words[i * 30 : i * 30 + 30]) + "</p>"))
        for i in range(100)
    ]
    index = index_of(pages, shard_bytes=1536)
    assert len(index.shards) > 30
    query.search([index], "w1234 ", limit=1)
    assert [n for n in index.loaded if n.startswith("t/")] == [n for n in index.loaded if n.startswith("t/")][
        :1
    ]
    assert sum(n.startswith("t/") for n in index.loaded) == 1
    assert sum(n.startswith("d/") for n in index.loaded) == 1


def test_results_across_indexes_rank_together() -> None:
    """Two archives ranked as one: the document frequencies of both (§6.3), so a page scores what it
    would in one archive holding both sets of pages."""
    a = index_of([(f"a{i}.html", html(f"A{i}", f"<p>zebra filler {i}</p>")) for i in range(10)])
    b = index_of([("b.html", html("B", "<p>zebra zebra zebra filler</p>"))])
    found = query.search([a, b], "zebra ", limit=20)
    assert found.total == 11
    assert found.results[0].archive == 1  # the page that says it three times
    assert {r.archive for r in found.results} == {0, 1}
    together = index_of(
        [(f"a{i}.html", html(f"A{i}", f"<p>zebra filler {i}</p>")) for i in range(10)]
        + [("b.html", html("B", "<p>zebra zebra zebra filler</p>"))]
    )
    alone = query.search([together], "zebra ", limit=20)
    assert [r.path for r in alone.results] == [r.path for r in found.results]


def test_boilerplate_is_not_indexed() -> None:
    nav = "<div>Site menu: Home Blog Contact</div>"
    pages = [(f"p{i}.html", html(f"P{i}", nav + f"<p>unique{i} text</p>")) for i in range(6)]
    index = index_of(pages)
    assert query.search([index], "contact ").total == 0
    assert query.search([index], "unique3 ").results[0].path == "p3.html"


def test_what_a_reader_does_not_see_is_not_indexed() -> None:
    body = (
        "<nav>navword</nav><script>scriptword</script><style>.stylew{}</style><template>tplword</template>"
        "<div hidden>hiddenword</div><p style='display: none'>nonew</p><footer>footword</footer>"
        "<aside>asideword</aside><div role=navigation>roleword</div><main><p>seenword</p></main>"
        + htmllib.escape("<p>escaped</p>")
    )
    index = index_of([("x.html", html("X", body))])
    for w in (
        "navword",
        "scriptword",
        "stylew",
        "tplword",
        "hiddenword",
        "nonew",
        "footword",
        "asideword",
        "roleword",
    ):
        assert query.search([index], w + " ").total == 0, w
    assert query.search([index], "seenword ").total == 1
    assert query.search([index], "escaped ").total == 1


def test_a_rare_completion_does_not_outrank_the_word_typed() -> None:
    """'dict' as typed also stands for 'dictconfig'; a page saying 'dictconfig' (rare) ranks below the
    pages saying 'dict' (common) itself: a completion weighs as rare as the prefix (§6.3)."""
    pages = [(f"p{i}.html", html(f"P{i}", f"<p>dict {i} filler</p>")) for i in range(10)]
    pages.append(("a.html", html("A", "<p>dict dict dict more</p>")))
    pages.append(("b.html", html("B", "<p>dictconfig dictconfig dictconfig more</p>")))
    found = query.search([index_of(pages)], "dict", limit=20)
    assert found.results[0].path == "a.html"
    assert found.results[-1].path == "b.html"


def _tree_of_pages(root: Path, count: int) -> None:
    for i in range(count):
        lang = ("en", "zh", "ja")[i % 3]
        body = {
            "en": f"page {i} about widgets and gadgets",
            "zh": f"第{i}页 中华人民共和国",
            "ja": f"{i} 東京都の天気予報",
        }
        (root / f"p{i:03}.html").write_text(
            html(f"Page {i}", f"<nav>Home About</nav><p>{body[lang]}</p><p>Edit this page</p>"),
            encoding="utf-8",
        )


def test_worker_processes_write_the_bytes_one_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages extracted by two worker processes come back in path order: the same files, byte for
    byte, as one process builds, also when most sampled pages are extracted again (a small
    ``_KEPT``: the builder takes kept and re-extracted pages in turn)."""
    _tree_of_pages(tmp_path, 90)
    monkeypatch.setattr(store, "_KEPT", 1500)
    one: dict[str, bytes] = {}
    two: dict[str, bytes] = {}
    assert store.build_index(tmp_path, one.__setitem__, workers=1)[1] == 90
    assert store.build_index(tmp_path, two.__setitem__, workers=2)[1] == 90
    assert one == two
    index = query.Index(one.__getitem__, "t")
    assert [r.path for r in query.search([index], "p042", limit=3).results] == []
    assert query.search([index], "gadgets", limit=100).total == 30
    assert query.search([index], "天気", limit=100).total == 30


def test_an_unreadable_page_is_named_when_workers_extract(tmp_path: Path) -> None:
    """A page a worker cannot read is the same one-line error, naming the file, as in one process."""
    _tree_of_pages(tmp_path, 3)
    with store._Extractor(tmp_path, workers=2) as extractor, pytest.raises(FormatError) as caught:
        list(extractor.pages(["p000.html", "gone.html", "p001.html"]))
    assert caught.value.subject == str(tmp_path / "gone.html")
    assert caught.value.message.startswith("cannot be read")


def test_postings_past_three_digit_numbers_read_back() -> None:
    """Format 3's postings are packed into digits by ``prepare`` (in the workers) and only
    concatenated by the builder: a position past 32,767 (beyond the table of numbers of at most three
    digits) reads back, and so does a document gap that large, packed by the builder."""
    far = " ".join(f"w{i}" for i in range(33_000))
    index = index_of([("a.html", html("A", f"<p>{far} needle</p>")), ("b.html", html("B", "<p>needle</p>"))])
    assert [r.path for r in query.search([index], '"w32999 needle"').results] == ["a.html"]
    assert {r.path for r in query.search([index], "needle ").results} == {"a.html", "b.html"}
    for value in (0, 31, 32, 32767, 32768, 40_000, 2**32 - 1):
        assert build._packed_bytes(value).decode() == build.pack_numbers([value])


def test_the_table_of_short_numbers_is_each_numbers_digits() -> None:
    """The builder's table of every number below 32,768 (made from the alphabet's halves) holds what
    ``_digits`` writes for each, and reads back to the number."""
    assert len(build._SHORT) == 1 << 15
    assert [build._digits(v) for v in range(1 << 15)] == build._SHORT
    assert build.unpack_numbers("".join(build._SHORT)) == list(range(1 << 15))


def test_a_small_tree_is_indexed_without_worker_processes() -> None:
    """The pool is for trees of many pages and much HTML: below either bound, or on one CPU, this
    process reads every page (a pool's forks and its workers' markup-guard children cost more)."""
    many, much = store._PARALLEL_PAGES, store._PARALLEL_BYTES
    assert store.workers_for(many, much, 2) == 2
    assert store.workers_for(10 * many, 100 * much, 64) == store._MAX_WORKERS
    assert store.workers_for(many - 1, 100 * much, 2) == 1
    assert store.workers_for(10 * many, much - 1, 2) == 1
    assert store.workers_for(10 * many, 100 * much, 1) == 1


def test_the_html_bytes_are_added_up_to_enough(tmp_path: Path) -> None:
    for name, size in (("a.html", 100), ("b.html", 200), ("c.html", 300)):
        (tmp_path / name).write_bytes(b"x" * size)
    assert store._html_bytes(tmp_path, ["a.html", "b.html", "gone.html", "c.html"], 10_000) == 600
    assert store._html_bytes(tmp_path, ["a.html", "b.html", "c.html"], 250) == 300


def test_a_build_that_fails_midway_leaves_no_temporary_folder_and_the_old_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files already handed to the writing thread when the build fails are not left behind: the
    thread is ended before the temporary folder is removed; the index in place stays."""
    _tree_of_pages(tmp_path, 6)
    store.write_index(tmp_path)
    before = {p: p.read_bytes() for p in (tmp_path / store.INDEX_DIR).rglob("*") if p.is_file()}

    def failing(root: Path, emit: build.Emit, *args: object, **kwargs: object) -> tuple[dict, int]:
        for i in range(3 * store._WRITE_AHEAD * store._WRITE_BATCH):
            emit(f"x/{i}", b"data")
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "build_index", failing)
    with pytest.raises(KeyboardInterrupt):
        store.write_index(tmp_path)
    tmp = tmp_path / "_archiver" / "tmp"
    assert not tmp.exists() or not list(tmp.iterdir())  # (removed when the build made it)
    assert {p: p.read_bytes() for p in (tmp_path / store.INDEX_DIR).rglob("*") if p.is_file()} == before


def test_a_file_the_writing_thread_cannot_write_is_the_builds_error(tmp_path: Path) -> None:
    writer = store._Writer(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "0.js").write_bytes(b"in the way")
    writer.put("t/0.js", b"new")
    with pytest.raises(FileExistsError):
        writer.close()
    writer = store._Writer(tmp_path)
    writer.put("x/0.js", b"a")
    writer.put("x/1.js", b"bc")
    writer.close()
    assert (tmp_path / "x" / "1.js").read_bytes() == b"bc" and writer.written == 3


def test_the_search_pages_files_queued_first_leave_the_build_its_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_index hands the writer the search page's files before the build (they are not left to
    the end, where the writer's queue drains) without starting its thread, so a tree past the pool's
    bounds is still read by worker processes (a fork copies no other thread: with one running, the
    build would fall back to this process alone). In a fork of the test process: one thread, as
    an ``archiver index`` has (an xdist worker may hold earlier tests' threads)."""
    in_one_thread(lambda: _queued_first_leave_the_workers(tmp_path, monkeypatch))


def _queued_first_leave_the_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from archiver import forks

    words = " ".join(f"w{i}" for i in range(store._PARALLEL_BYTES // store._PARALLEL_PAGES // 4))
    for i in range(store._PARALLEL_PAGES):
        (tmp_path / f"p{i:03}.html").write_text(html(f"Page {i}", f"<p>{words}</p>"), encoding="utf-8")
    monkeypatch.setattr(forks, "cpus", lambda: 2)
    monkeypatch.setattr(store, "_WRITE_BATCH_BYTES", 1)  # each file alone would fill a batch
    pools: list[bool] = []
    real = store._Extractor.__init__

    def spy(self: store._Extractor, root: Path, workers: int) -> None:
        real(self, root, workers)
        pools.append(self._pool is not None)

    monkeypatch.setattr(store._Extractor, "__init__", spy)
    store.write_index(tmp_path)
    assert pools == [True]
    assert (tmp_path / store.INDEX_DIR / "search.js").is_file()
