"""Search quality on real documentation sites (issue 23 point 6): for N queries taken from the sites'
own headings, is the page with that heading among the first 5 results, in every output (the tree's
index, the gwtar's and the ZIM's), and how does the site's own Sphinx search do on the same queries?

    python tools/search_quality.py [SITE_DIR ...] [--queries 50] [--seed 1] [--top 5]
                                   [--outputs tree,gwtar,zim] [--no-sphinx] [--work DIR] [--json]
                                   [--show-misses]

SITE_DIR defaults to the Debian documentation packages installed among python3-doc
(``/usr/share/doc/python3/html``, Sphinx), sphinx-doc (``/usr/share/doc/sphinx-doc/html``, Sphinx)
and mkdocs-doc (``/usr/share/doc/mkdocs/html``, MkDocs); `apt-get install python3-doc sphinx-doc
mkdocs-doc` installs them (``bash tools/bootstrap test`` does not: they are only read here).

For each site:

1. the package's folder is copied once into a plain folder (symbolic links resolved: Debian links
   the Sphinx scripts to ``/usr/share/javascript``), which is a tree (it has an ``index.html``);
2. the queries: every h1–h3 of every page, cleaned as a reader would type it (Sphinx's ``¶``,
   section numbers such as ``3.2.`` and surrounding punctuation dropped, spaces collapsed), kept
   when it has 2 to 12 words or, for a one-word heading, at least 4 characters, and when no other
   page has a heading that folds (case and accents) to the same text, so that exactly one page is
   the right answer; N of them drawn with a seeded generator (``--seed``), sorted;
3. ``archiver index`` on the copy, then ``archiver pack --format gwtar`` and ``--format zim`` of it
   (which carry that index inside); each query is run through the same query core ``archiver search``
   uses, once per output, reading each output's own index files;
4. unless ``--no-sphinx``, when the site has Sphinx's ``searchindex.js``: nginx serves the copy on
   127.0.0.1 and Chromium opens ``search.html?q=QUERY`` for each query, waits for Sphinx's
   "Search finished" line and reads the first results' links (Sphinx's own ranking, its own stemmer
   and stop words, its own script).

A hit is the expected page's path among the first ``--top`` results (fragments and ``?highlight=``
dropped). Printed: per site and output, hits/N and the share, the median and 95th percentile query
time of our core, and Sphinx's hits on the same queries; ``--show-misses`` lists each miss with
what came first. No network beyond loopback.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from archiver.search import query as search_query
from archiver.search import store

DEFAULT_SITES = (
    Path("/usr/share/doc/python3/html"),
    Path("/usr/share/doc/sphinx-doc/html"),
    Path("/usr/share/doc/mkdocs/html"),
)
_HEADING = re.compile(r"<h([123])\b[^>]*>(.*?)</h\1\s*>", re.I | re.S)
_TAGS = re.compile(r"<[^>]*>")
_NUMBERING = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.\d+(?:\.\d+)*\.?)\s+")
_EDGE_PUNCT = re.compile(r"^[\s\W_]+|[\s\W_]+$")


# ---------------------------------------------------------------------------------------------
# Pure: the queries


def clean_heading(raw_html: str) -> str:
    """A heading's text as a reader would type it (markup, ``¶``, numbering and edge punctuation out)."""
    import html as html_mod

    text = html_mod.unescape(_TAGS.sub(" ", raw_html)).replace("¶", " ").replace("\N{PILCROW SIGN}", " ")
    text = " ".join(text.split())
    text = _NUMBERING.sub("", text)
    return _EDGE_PUNCT.sub("", text)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return " ".join("".join(c for c in decomposed if not unicodedata.combining(c)).split())


def headings(html_text: str) -> list[str]:
    """The cleaned h1–h3 texts of a page, in order."""
    return [h for h in (clean_heading(m.group(2)) for m in _HEADING.finditer(html_text)) if h]


def usable(heading: str) -> bool:
    words = heading.split()
    if len(words) == 1:
        return len(heading) >= 4
    return 2 <= len(words) <= 12


def queries(pages: dict[str, Sequence[str]], n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` (query, expected path) pairs from the pages' headings: a heading is a candidate when no
    other page has one that folds to the same text; drawn with ``random.Random(seed)``, sorted."""
    where: dict[str, set[str]] = {}
    text_of: dict[str, str] = {}
    for path in sorted(pages):
        for h in pages[path]:
            if not usable(h):
                continue
            key = _fold(h)
            where.setdefault(key, set()).add(path)
            text_of.setdefault(key, h)
    candidates = sorted((text_of[k], next(iter(p))) for k, p in where.items() if len(p) == 1)
    picked = random.Random(seed).sample(candidates, min(n, len(candidates)))
    return sorted(picked)


def result_path(href: str, base: str) -> str:
    """A result link as a path of the site served at ``/`` (query and fragment dropped, ``%xx`` decoded)."""
    absolute = urllib.parse.urljoin(base, href)
    return urllib.parse.unquote(urllib.parse.urlsplit(absolute).path).lstrip("/")


def rank_of(expected: str, found: Sequence[str]) -> int | None:
    """1-based rank of ``expected`` among ``found`` (a folder's ``index.html`` = the folder)."""

    def norm(p: str) -> str:
        p = p.lstrip("/")
        return p[: -len("index.html")] if p.endswith("index.html") else p

    target = norm(expected)
    for i, p in enumerate(found, 1):
        if norm(p) == target:
            return i
    return None


# ---------------------------------------------------------------------------------------------
# IO: the site, the outputs, Sphinx


@dataclass
class Outcome:
    output: str
    hits: int = 0
    ranks: list[int | None] = field(default_factory=list)
    firsts: list[list[str]] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def read_pages(tree: Path) -> dict[str, list[str]]:
    pages: dict[str, list[str]] = {}
    for p in sorted(tree.rglob("*.html")):
        rel = p.relative_to(tree).as_posix()
        if rel.startswith("_archiver/"):
            continue
        pages[rel] = headings(p.read_text(encoding="utf-8", errors="replace"))
    return pages


def archiver(*args: str) -> None:
    cmd = [sys.executable, "-m", "archiver", *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"search_quality: {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")


def open_outputs(tree: Path, work: Path, outputs: Sequence[str], stack: ExitStack) -> dict[str, Any]:
    from archiver.cli.search import _open_packed

    found: dict[str, Any] = {}
    for out in outputs:
        if out == "tree":
            found[out] = store.open_index(tree, str(tree / store.INDEX_DIR))
            continue
        target = work / (f"{tree.name}.gwtar.html" if out == "gwtar" else f"{tree.name}.zim")
        if not target.exists():
            started = time.monotonic()
            archiver("pack", str(tree), "--format", out, "-o", str(target))
            print(
                f"  packed {out}: {target.stat().st_size / 1e6:.1f} MB in {time.monotonic() - started:.1f} s"
            )
        found[out] = _open_packed(target, stack)
    return found


def run_ours(index: Any, output: str, qs: Sequence[tuple[str, str]], top: int) -> Outcome:
    outcome = Outcome(output)
    for q, expected in qs:
        started = time.perf_counter()
        results = search_query.search([index], q, limit=top)
        outcome.seconds.append(time.perf_counter() - started)
        paths = [r.path.split("#", 1)[0] for r in results.results]
        rank = rank_of(expected, paths)
        outcome.ranks.append(rank)
        outcome.firsts.append(paths[:3])
        outcome.hits += rank is not None
    return outcome


@contextmanager
def nginx(root: Path, work: Path) -> Iterator[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nginx_static import serve_folder

    with serve_folder(root, work) as base:
        yield base


def run_sphinx(root: Path, work: Path, qs: Sequence[tuple[str, str]], top: int) -> Outcome:
    from playwright.sync_api import sync_playwright

    from archiver.capture.browser import launch

    outcome = Outcome("sphinx")
    with nginx(root, work) as base, sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        outside: list[str] = []
        page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
        for q, expected in qs:
            url = base + "search.html?" + urllib.parse.urlencode({"q": q})
            started = time.perf_counter()
            page.goto(url)
            # Sphinx shows its results one at a time, best first, fetching each page for its summary
            # (hundreds of fetches for a common word): wait for the first `top` or for its last line.
            page.wait_for_function(
                "top => document.querySelectorAll('#search-results ul.search > li').length >= top"
                " || /\\S/.test(document.querySelector('#search-results .search-summary')"
                "?.textContent || '')",
                arg=top,
                timeout=120_000,
            )
            outcome.seconds.append(time.perf_counter() - started)
            hrefs = page.eval_on_selector_all(
                "#search-results ul.search > li",
                "lis => lis.map(li => li.querySelector('a')?.getAttribute('href') || '')",
            )
            paths = [result_path(h, url) for h in hrefs[:top]]
            rank = rank_of(expected, paths)
            outcome.ranks.append(rank)
            outcome.firsts.append(paths[:3])
            outcome.hits += rank is not None
        browser.close()
    if outside:
        raise SystemExit(
            f"search_quality: Sphinx's page asked for {len(outside)} URL(s) off the site: {outside[:3]}"
        )
    return outcome


def copy_site(src: Path, work: Path) -> Path:
    tree = work / src.parent.name if src.name == "html" else work / src.name
    if not tree.exists():
        shutil.copytree(src, tree, symlinks=False)
    return tree


def percentile(values: Iterable[float], q: float) -> float:
    vs = sorted(values)
    if not vs:
        return 0.0
    return vs[min(len(vs) - 1, round(q * (len(vs) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sites", nargs="*", type=Path)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--outputs", default="tree,gwtar,zim")
    ap.add_argument("--no-sphinx", action="store_true")
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args(argv)
    sites = args.sites or [s for s in DEFAULT_SITES if s.is_dir()]
    if not sites:
        print("search_quality: no site (apt-get install python3-doc sphinx-doc mkdocs-doc)", file=sys.stderr)
        return 2
    outputs = [o for o in args.outputs.split(",") if o]
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    report: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="search-quality-") as scratch, ExitStack() as stack:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        for src in sites:
            tree = copy_site(src, work)
            qs = queries(read_pages(tree), args.queries, args.seed)
            print(f"{src}: {sum(1 for _ in tree.rglob('*.html'))} pages, {len(qs)} queries")
            if not store.has_index(tree):
                started = time.monotonic()
                archiver("index", str(tree))
                print(f"  archiver index: {time.monotonic() - started:.1f} s")
            outcomes = [
                run_ours(ix, out, qs, args.top)
                for out, ix in open_outputs(tree, work, outputs, stack).items()
            ]
            if (
                not args.no_sphinx
                and (tree / "searchindex.js").is_file()
                and (tree / "search.html").is_file()
            ):
                nginx_work = work / f"{tree.name}-nginx"
                nginx_work.mkdir(exist_ok=True)
                outcomes.append(run_sphinx(tree, nginx_work, qs, args.top))
            for o in outcomes:
                share = o.hits / len(qs) if qs else 0.0
                p50 = statistics.median(o.seconds) * 1000 if o.seconds else 0.0
                p95 = percentile(o.seconds, 0.95) * 1000
                firsts = sum(1 for r in o.ranks if r == 1)
                print(
                    f"  {o.output:7} top-{args.top}: {o.hits}/{len(qs)} = {share:.0%}  first: {firsts}"
                    f"  query p50 {p50:.1f} ms p95 {p95:.1f} ms"
                )
                report.append(
                    {"site": str(src), "output": o.output, "queries": len(qs), "hits": o.hits,
                     "first": firsts, "ranks": o.ranks, "p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                     "queries_run": [q for q, _ in qs]}
                )  # fmt: skip
            if args.show_misses:
                by = {o.output: o for o in outcomes}
                for i, (q, expected) in enumerate(qs):
                    row = {name: o.ranks[i] for name, o in by.items()}
                    if any(r is None for r in row.values()):
                        firsts = {name: o.firsts[i] for name, o in by.items()}
                        print(f"    miss {q!r} → {expected}: ranks {row}; first {json.dumps(firsts)}")
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
