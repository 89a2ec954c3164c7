"""``--max-pages`` counts stored pages, not attempts: a page of the budget that fails (an error
status, not HTML) gives its place to the next page waiting beyond the budget, in priority order."""

from __future__ import annotations

from pathlib import Path

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
