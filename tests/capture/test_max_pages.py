"""``--max-pages`` counts stored pages, not attempts: a page of the budget that fails (an error
status, not HTML) gives its place to the next page waiting beyond the budget, in priority order; an
alias of a page is not charged."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records


def _pages(out: Path) -> list[str]:
    return sorted(r.path for r in read_records(out) if r.kind == "page" and (r.status or 200) < 300)


def test_failed_pages_do_not_use_up_the_budget(tmp_path: Path) -> None:
    with FixtureServer() as server:
        first = capture([server.url], tmp_path / "a", render=False, delay=0, max_pages=6, progress=False)
        taken = _pages(tmp_path / "a")
        assert first.pages == len(taken) == 6
    broken = [p for p in taken if p != "index.html"][:2]
    status = {"/" + p.removesuffix("index.html"): 404 for p in broken}
    with FixtureServer(FixtureConfig(status=status)) as server:
        report = capture([server.url], tmp_path / "b", render=False, delay=0, max_pages=6, progress=False)
    stored = _pages(tmp_path / "b")
    assert report.pages == len(stored) == 6, (stored, broken)
    assert not set(broken) & set(stored)
    failed = [i for i in report.items if i.outcome == "failed" and i.status == 404]
    assert len(failed) == 2


@pytest.mark.parametrize("concurrency", [1, 3, 12])
def test_aliases_are_not_charged_as_pages(tmp_path: Path, concurrency: int) -> None:
    """A link to an alias of a page (another URL of the same file, tree.md §3.3) is no page of its
    own: with ``--prefer`` reordering the frontier the fixture site's aliases were charged to the
    budget and 18 or 19 pages of 20 stored, 24 to 29 of 30, by concurrency. Now always N."""
    with FixtureServer() as server:
        for n in (20, 30):
            out = tmp_path / f"n{n}"
            report = capture(
                [server.url], out, render=False, delay=0, max_pages=n, progress=False,
                prefer=["guide", "2025"], concurrency=concurrency,
            )  # fmt: skip
            assert report.pages == len(_pages(out)) == n


def test_a_link_beyond_the_budget_keeps_its_fragment(tmp_path: Path) -> None:
    """A relative link to a page the budget leaves out is written as its absolute URL, fragment and
    all (it lost the fragment)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<!doctype html><title>i</title><a href="a.html#part-2">a</a> <a href="b.html">b</a>'
    )
    for name in ("a", "b"):
        (site / f"{name}.html").write_text(f"<!doctype html><title>{name}</title><p>{name}</p>")
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture([server.url], tmp_path / "out", render=False, delay=0, max_pages=1, progress=False)
        base = server.url
    assert report.pages == 1
    html = (tmp_path / "out" / "index.html").read_text()
    assert f'href="{base}a.html#part-2"' in html and f'href="{base}b.html"' in html


def test_the_budget_holds_across_resumes_that_retry_failures(tmp_path: Path) -> None:
    """Two pages of the budget fail (500), give their places to waiting pages, and come back for
    another try on a resume while the server is well again: before, the resume stored them on top
    of the N pages (12 of 10; a user met 1502 of 1500); now it stores exactly N, and the summary
    gives the whole tree's size beside this run's (before: "(0 B)", this run's only)."""
    out = tmp_path / "t"
    config = FixtureConfig(status={"/about.html": 500, "/docs/": 500})
    with FixtureServer(config) as server:
        options = {"render": False, "delay": 0, "max_pages": 10, "retries": 0, "progress": False}
        first = capture([server.url], out, **options)  # type: ignore[arg-type]
        assert first.pages == len(_pages(out)) == 10
        assert {i.url for i in first.items if i.outcome == "failed"} >= {server.url + "about.html"}
        config.status.clear()  # type: ignore[attr-defined]  # the server is well again
        for _ in range(2):
            again = capture([server.url], out, **options)  # type: ignore[arg-type]
            assert again.pages == len(_pages(out)) == 10, _pages(out)
    assert again.bytes == first.bytes > 0 and again.run_bytes == 0
    assert again.summary().splitlines()[0].startswith(f"captured 10 pages and {again.assets} assets (")
    assert "(this run: 0 pages, 0 assets, 0 B)" in again.summary()
