"""CPU per query of ``archiver serve``'s cross-archive search, in process (issue 23 point 5): the
server's :class:`~archiver.serve.search.Searcher` over a ``bench_search_serve.py --make`` corpus,
its postings tables prepared and the collector settled as ``serve`` settles it, then
``bench_search_serve``'s distinct queries: ``--warm`` of them unmeasured, the next ``--measure``
each timed by ``time.process_time`` (no HTTP, no other process: what the engine costs, by kind).

    python tools/bench_search_cpu.py CORPUS [--warm 1200] [--measure 1000] [--out FILE.json]
                                     [--answers] [--profile FILE.prof]

Kinds: ``one`` (a word), ``short`` (one word of at most 2 letters: a short prefix), ``two`` (two
words or more), ``X ba`` (words ending in a short prefix), ``cjk``. ``--answers`` keeps each query's
JSON answer in ``--out`` (compare two runs' answers: same ranking, same snippets). Set
XDG_CACHE_HOME so the tables are built and kept where you want. The load average is printed: on a
shared machine CPU time is inflated by the others' work, so compare runs made in turn. No timing
is asserted; nothing leaves the process.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from bench_search_serve import corpus_queries  # noqa: E402

from archiver.serve.mounts import Mount  # noqa: E402
from archiver.serve.search import Searcher  # noqa: E402
from archiver.serve.server import _settle_gc  # noqa: E402


def kind(query: str) -> str:
    words = query.split()
    if not query.isascii():
        return "cjk"
    if len(words) == 1:
        return "one" if len(words[0]) > 2 else "short"
    return "X ba" if len(words[-1]) <= 2 else "two"


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per kind (and ``all``): n, mean, p50, p95 and max of the rows' ``cpu_ms``."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r["kind"], []).append(r["cpu_ms"])
        by.setdefault("all", []).append(r["cpu_ms"])
    out = {}
    for k, v in sorted(by.items()):
        v.sort()
        out[k] = {
            "n": len(v),
            "mean": sum(v) / len(v),
            "p50": v[len(v) // 2],
            "p95": v[min(len(v) - 1, int(len(v) * 0.95))],
            "max": v[-1],
        }
    return out


def _anon_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--warm", type=int, default=1200)
    ap.add_argument("--measure", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--answers", action="store_true")
    ap.add_argument("--profile", type=Path)
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    trees = sorted(p for p in args.corpus.iterdir() if p.name.startswith("archive-"))
    mounts = [Mount(p.name, "tree", p) for p in trees]
    searcher = Searcher(mounts)
    searcher.prepare()
    _settle_gc()
    queries = corpus_queries(args.seed, args.warm + args.measure)
    origin = lambda m: f"http://{m.name}.localhost:1"  # noqa: E731
    for q in queries[: args.warm]:
        searcher.search(q, 10, 0, origin)
    profile = cProfile.Profile() if args.profile else None
    rows: list[dict[str, Any]] = []
    for q in queries[args.warm :]:
        if profile:
            profile.enable()
        started = time.process_time()
        doc = searcher.search(q, 10, 0, origin)
        cpu = time.process_time() - started
        if profile:
            profile.disable()
        row: dict[str, Any] = {"q": q, "kind": kind(q), "cpu_ms": cpu * 1000}
        if args.answers:
            row["doc"] = doc
        rows.append(row)
    if profile and args.profile:
        profile.dump_stats(str(args.profile))
    report = {"summary": summary(rows), "anon_mb": _anon_mb(), "load": os.getloadavg()}
    for k, s in report["summary"].items():
        print(
            f"{k:6} n={s['n']:4} mean {s['mean']:6.2f} p50 {s['p50']:6.2f} p95 {s['p95']:6.2f} "
            f"max {s['max']:6.1f} ms CPU"
        )
    print(f"anonymous memory {report['anon_mb']:.0f} MB; load average {report['load']}")
    if args.out:
        args.out.write_text(json.dumps({**report, "rows": rows}, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
