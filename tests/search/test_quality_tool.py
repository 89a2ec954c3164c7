"""tools/search_quality.py (issue 23 point 6): the queries it takes from headings and how it scores a
result list (pure, table-driven), and one run on a small generated site through every output."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.search.helpers import html

TOOL = Path(__file__).resolve().parents[2] / "tools" / "search_quality.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("archiver_search_quality_tool", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sq = _load()


@pytest.mark.parametrize(
    ("raw", "typed"),
    [
        (
            '3.2. The standard type hierarchy<a class="headerlink" href="#x">¶</a>',
            "The standard type hierarchy",
        ),
        ("<code>itertools</code> — Functions creating iterators", "itertools — Functions creating iterators"),
        ("  Installing   &amp; upgrading: ", "Installing & upgrading"),
        ("A.1.2 Appendix", "Appendix"),
        ("¶", ""),
        ("Überblick", "Überblick"),
    ],
)
def test_a_heading_is_cleaned_as_a_reader_would_type_it(raw: str, typed: str) -> None:
    assert sq.clean_heading(raw) == typed


def test_queries_are_unique_headings_drawn_with_the_seed() -> None:
    pages = {
        "a.html": ["Getting started", "Examples", "x"],
        "b.html": ["Examples", "Configuration reference"],
        "c.html": ["GETTING STARTED"],  # folds to a's: ambiguous, left out
        "d.html": ["Café crème", "One two three four five six seven eight nine ten eleven twelve thirteen"],
    }
    qs = sq.queries(pages, 10, seed=1)
    assert qs == [("Café crème", "d.html"), ("Configuration reference", "b.html")]
    assert sq.queries(pages, 1, seed=1) == sq.queries(pages, 1, seed=1)
    assert len(sq.queries(pages, 1, seed=1)) == 1


@pytest.mark.parametrize(
    ("href", "base", "path"),
    [
        ("library/os.html?highlight=os#os.open", "http://127.0.0.1:1/search.html?q=os", "library/os.html"),
        ("../b%20c.html", "http://127.0.0.1:1/x/search.html", "b c.html"),
        ("http://127.0.0.1:1/d/", "http://127.0.0.1:1/search.html", "d/"),
    ],
)
def test_a_result_link_becomes_a_site_path(href: str, base: str, path: str) -> None:
    assert sq.result_path(href, base) == path


def test_rank_counts_a_folder_as_its_index_page() -> None:
    assert sq.rank_of("guide/index.html", ["a.html", "guide/"]) == 2
    assert sq.rank_of("a.html", ["b.html"]) is None


def test_the_tool_scores_every_output_of_a_small_site(tmp_path: Path) -> None:
    site = tmp_path / "site"
    topics = ["Volcanoes", "Glaciers", "Deserts", "Rivers", "Forests", "Coral reefs"]
    for i, topic in enumerate(topics):
        low = topic.lower()
        body = f"<main><h1>{topic} of the world</h1><p>About {low}.</p><h2>Visiting {low}</h2></main>"
        path = site / ("index.html" if i == 0 else f"t/{i}.html")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html(topic, body), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            str(TOOL),
            str(site),
            "--queries",
            "8",
            "--no-sphinx",
            "--work",
            str(tmp_path / "w"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for output in ("tree", "gwtar", "zim"):
        assert f"{output:7} top-5: 8/8 = 100%" in done.stdout, done.stdout
