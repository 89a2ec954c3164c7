"""A record's depth and referrer are a function of the crawl's discoveries (formats/tree.md §8):
:func:`archiver.capture.depths.shortest` against a sequential reference over random discovery graphs
met in random orders by random workers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.capture.depths import ROOT, Edge, Label, shortest

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
