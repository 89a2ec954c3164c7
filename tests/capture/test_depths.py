"""A record's depth and referrer are a function of the crawl's discoveries (formats/tree.md §8):
:func:`archiver.capture.depths.shortest` against a sequential reference over random discovery graphs
met in random orders by random workers; the SQLite state records every discovery and settles its
rows from them; a version 1 state (no ``found`` table) still opens, resumes and finishes; a page a
stale depth had left beyond the depth limit is fetched after all."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.capture import capture
from archiver.capture.depths import ROOT, Edge, Label, shortest
from archiver.capture.state import NewURL, State
from archiver.fixture import FixtureConfig, FixtureServer

#: the three kinds of discovery the crawler records: a link or asset (+1, referrer the document),
#: a page's redirect target (+0, the redirecting URL's referrer), an asset redirect target (+1, same)
KINDS = [(1, False), (0, True), (1, True)]


def reference(seeds: list[str], edges: list[Edge]) -> dict[str, Label]:
    """The sequential reference: from the seeds, relax every discovery in turn, again and again,
    until a whole pass changes nothing."""
    label = {s: ROOT for s in seeds}
    changed = True
    while changed:
        changed = False
        for source, key, step, inherit in edges:
            if source in label:
                depth, referrer = label[source]
                candidate = (depth + step, referrer if inherit else source)
                if key not in label or candidate < label[key]:
                    label[key] = candidate
                    changed = True
    return label


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[Edge]]]:
    """Seeds and, per key, the discoveries its document makes (names chosen so that string order
    and discovery order disagree)."""
    n = draw(st.integers(1, 14))
    keys = [f"https://ex.com/{draw(st.sampled_from('zyxabc'))}{i}" for i in range(n)]
    seeds = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=3, unique=True))
    out: dict[str, list[Edge]] = {k: [] for k in keys}
    for source, key, kind in draw(
        st.lists(st.tuples(st.sampled_from(keys), st.sampled_from(keys), st.sampled_from(KINDS)), max_size=40)
    ):
        out[source].append((source, key, kind[0], kind[1]))
    return seeds, out


def crawl(
    draw: st.DrawFn, seeds: list[str], out: dict[str, list[Edge]], workers: int
) -> tuple[dict[str, Label], list[list[Edge]]]:
    """A crawl of the graph as ``add`` runs it: each key taken once, in an order drawn at random,
    by a worker drawn at random, its discoveries met with the label its row had when it was taken
    (the smallest so far, never improved afterwards for what it found). Returns the rows' labels
    and each worker's recorded discoveries."""
    rows: dict[str, Label] = {s: ROOT for s in seeds}
    pending = list(dict.fromkeys(seeds))
    recorded: list[list[Edge]] = [[] for _ in range(workers)]
    while pending:
        key = pending.pop(draw(st.integers(0, len(pending) - 1)))
        worker = draw(st.integers(0, workers - 1))
        depth, referrer = rows[key]
        for edge in out[key]:
            _, found, step, inherit = edge
            recorded[worker].append(edge)
            if draw(st.booleans()):  # a lease expired: another worker did it again
                recorded[draw(st.integers(0, workers - 1))].append(edge)
            candidate = (depth + step, referrer if inherit else key)
            if found not in rows:
                pending.append(found)
            if found not in rows or candidate < rows[found]:
                rows[found] = candidate
    return rows, recorded


@settings(max_examples=300, deadline=None)
@given(data=st.data(), graph=graphs(), workers=st.integers(1, 4))
def test_any_order_and_any_split_give_the_reference(
    data: st.DataObject, graph: tuple[list[str], dict[str, list[Edge]]], workers: int
) -> None:
    seeds, out = graph
    every = [e for edges in out.values() for e in edges]
    want = reference(seeds, every)
    rows, recorded = crawl(data.draw, seeds, out, workers)
    assert set(rows) == set(want)
    assert all(rows[k] >= want[k] for k in want)  # what add kept is a real path, never shorter
    union = [e for edges in recorded for e in edges]
    union = data.draw(st.permutations(union))
    assert shortest(seeds, union) == want
    assert shortest(seeds, union, rows) == want  # the stored rows as bounds change nothing
    # each worker alone (a shard at the end of a Redis crawl: the crawl-wide rows as bounds, its own
    # discoveries), then the merge: the union of the discoveries, the shards' labels as bounds
    shards = [shortest(seeds, edges, rows) for edges in recorded]
    bounds = {k: min(s[k] for s in shards) for k in rows}
    assert all(rows[k] >= bounds[k] >= want[k] for k in want)
    assert shortest(list(reversed(seeds)), list(reversed(union)), bounds) == want


@settings(max_examples=200, deadline=None)
@given(data=st.data(), graph=graphs())
def test_bounds_stand_for_discoveries_not_recorded(
    data: st.DataObject, graph: tuple[list[str], dict[str, list[Edge]]]
) -> None:
    """A state older than the table recorded only the later discoveries: its rows' labels make up
    for the others (never worse than the reference of the recorded ones, never better than the
    reference of all)."""
    seeds, out = graph
    every = [e for edges in out.values() for e in edges]
    rows, recorded = crawl(data.draw, seeds, out, 1)
    cut = data.draw(st.integers(0, len(recorded[0])))
    later = recorded[0][cut:]
    got = shortest(seeds, later, rows)
    partial = reference(seeds, later)
    full = reference(seeds, every)
    assert set(got) == set(rows)
    for key, label in got.items():
        assert full[key] <= label <= rows[key]
        assert key not in partial or label <= partial[key]


def test_a_redirect_target_stands_where_the_redirecting_url_stood() -> None:
    seeds = ["s"]
    edges: list[Edge] = [
        ("s", "b", 1, False),
        ("s", "a", 1, False),
        ("a", "r", 1, False),
        ("b", "r", 1, False),
        ("r", "t", 0, True),  # r redirected to the page t
        ("r", "i", 1, True),  # or to the asset i: one step deeper, r's referrer kept
        ("s", "t2", 0, True),
    ]
    got = shortest(seeds, edges)
    assert got["r"] == (2, "a") and got["t"] == (2, "a") and got["i"] == (3, "a")
    assert got["t2"] == (0, "")  # a seed's redirect target: depth 0, no referrer
    with pytest.raises(ValueError):
        shortest(seeds, [("s", "x", -1, False)])


@given(st.permutations(["a", "b", "c"]))
def test_a_file_links_from_its_shallowest_url_whichever_was_fetched(fetched: list[str]) -> None:
    """``a``, ``b`` and ``c`` are one file (aliases, tree.md §3.3; ``b`` and ``c`` are named ``a``):
    ``b`` is met at depth 1, ``a`` at 3, ``c`` at 2. Whichever of them was fetched records the
    file's discoveries, and they leave from depth 1 with the referrer ``a`` (a Redis crawl that
    fetched ``a`` gave ``t`` depth 4: the kill -9 test's merged tree differed from the single one)."""
    seeds = ["s"]
    edges: list[Edge] = [
        ("s", "b", 1, False),
        ("s", "x", 1, False),
        ("x", "c", 1, False),
        ("x", "y", 1, False),
        ("y", "a", 1, False),
        (fetched[0], "t", 1, False),
        (fetched[0], "u", 0, True),  # the file redirected (a stub's URLs): u stands where it stood
    ]
    names = {"b": "a", "c": "a"}
    got = shortest(seeds, edges, names=names)
    assert got["t"] == (2, "a") and got["u"] == (1, "s")
    assert (got["a"], got["b"], got["c"]) == ((3, "y"), (1, "s"), (2, "x"))  # each URL keeps its own


def test_the_state_records_every_discovery_and_settles_its_rows(tmp_path: Path) -> None:
    a, b, c, d = (f"https://ex.com/{x}" for x in "abcd")
    state = State(tmp_path / "crawl.sqlite")
    state.add_seed(a)
    state.add([NewURL(a, "page", 0, None)])
    state.finish(a, state="done", outcome="ok", new=[NewURL(b, "page", 1, a, source=a)])
    # b taken before the shorter path to c was known: d is found one step too deep
    state.finish(b, state="done", outcome="ok", new=[NewURL(c, "page", 2, b, source=b)])
    reason = "beyond the depth limit"
    state.finish(c, state="done", outcome="ok",
                 new=[NewURL(d, "page", 3, c, state="skipped", reason=reason, source=c)])  # fmt: skip
    state.add([NewURL(c, "page", 1, a, source=a)])  # a's link to c met last
    state.add([NewURL(c, "page", 1, a, source=a)])  # again: the row is settled, no statement
    found = sorted(state.found())
    assert found == [(a, b, 1, False), (a, c, 1, False), (a, c, 1, False), (b, c, 1, False), (c, d, 1, False)]
    assert state.row(d).depth == 3  # type: ignore[union-attr]
    revive = state.settle_depths(max_depth=2)
    assert [(r.key, r.depth, r.referrer) for r in revive] == [(d, 2, c)]
    assert [(r.key, r.depth, r.referrer) for r in state.rows()] == [
        (a, 0, None),
        (b, 1, a),
        (c, 1, a),
        (d, 2, c),
    ]
    assert state.settle_depths(max_depth=1) == []
    state.close()


# ---- whole captures


def _site(root: Path, pages: dict[str, list[str]]) -> Path:
    root.mkdir()
    for name, links in pages.items():
        body = "".join(f'<a href="{link}">{link}</a>' for link in links)
        (root / name).write_text(f"<!doctype html><title>{name}</title><body>{body}</body>", encoding="utf-8")
    return root


def _records(tree: Path) -> list[dict[str, Any]]:
    lines = (tree / "_archiver/manifest.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "fetched"} for line in lines[1:]]


#: with ``prefer=["guide"]`` and one page at a time, the guides go first: guide3 is taken at depth
#: 3 (its link to deep.html beyond the limit) before a.html shows it is at depth 2
PREFERRED = {
    "index.html": ["a.html", "guide1.html"],
    "guide1.html": ["guide2.html"],
    "guide2.html": ["guide3.html"],
    "a.html": ["guide3.html"],
    "guide3.html": ["deep.html"],
    "deep.html": ["deeper.html"],
    "deeper.html": [],
}


def test_a_page_a_stale_depth_left_beyond_the_limit_is_fetched(tmp_path: Path) -> None:
    site = _site(tmp_path / "site", PREFERRED)
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        origin = server.url.rstrip("/")
        options: dict[str, Any] = {"render": False, "depth": 3, "delay": 0, "progress": False}
        one = tmp_path / "one"
        capture([server.url], one, prefer=["guide"], concurrency=1, **options)
        many = tmp_path / "many"
        capture([server.url], many, concurrency=12, **options)
    records = {r["path"]: r for r in _records(one)}
    assert set(records) == {"index.html", "a.html", "guide1.html", "guide2.html", "guide3.html", "deep.html"}
    assert (records["guide3.html"]["depth"], records["guide3.html"]["referrer"]) == (2, f"{origin}/a.html")
    assert (records["deep.html"]["depth"], records["deep.html"]["referrer"]) == (3, f"{origin}/guide3.html")
    assert _records(one) == _records(many)  # the order the crawl met them in changes nothing
    html = (one / "guide3.html").read_text(encoding="utf-8")
    assert 'href="deep.html"' in html  # relinked: the page is in the tree
    assert f'href="{origin}/deeper.html"' in (one / "deep.html").read_text(encoding="utf-8")


def test_a_version_1_state_opens_resumes_and_finishes(tmp_path: Path) -> None:
    """A crawl state written before ``found`` existed (built here from a finished capture: the
    table dropped, the schema 1, a few pages to do again): the resumed capture finishes it with the
    records of an uninterrupted capture, its stored depths standing for the discoveries it lacks."""
    site = _site(tmp_path / "site", PREFERRED)
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        origin = server.url.rstrip("/")
        options: dict[str, Any] = {"render": False, "depth": 3, "delay": 0, "progress": False}
        reference_tree = tmp_path / "reference"
        capture([server.url], reference_tree, **options)
        old = tmp_path / "old"
        shutil.copytree(reference_tree, old)
        db = sqlite3.connect(old / "_archiver/crawl.sqlite")
        db.execute("DROP TABLE found")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        db.execute("UPDATE meta SET value = '0' WHERE key = 'complete'")
        db.execute(
            "UPDATE urls SET state = 'pending', attempts = 0 WHERE path IN ('guide3.html', 'deep.html')"
        )
        db.commit()
        db.close()
        # the two pages asked unconditionally and parsed again (a 304 would keep them unparsed,
        # history.md §6.1): what this run finds goes into the new found table
        report = capture([server.url], old, **options, rerender=True)
    assert report.complete and report.run_pages == 2
    assert _records(old) == _records(reference_tree)
    for path, record in {r["path"]: r for r in _records(old)}.items():
        assert hashlib.sha256((old / path).read_bytes()).hexdigest() == record["sha256"]
    db = sqlite3.connect(old / "_archiver/crawl.sqlite")
    try:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
        srcs = {s for (s,) in db.execute("SELECT DISTINCT src FROM found")}
    finally:
        db.close()
    assert srcs == {f"{origin}/guide3.html", f"{origin}/deep.html"}  # only what this run found
