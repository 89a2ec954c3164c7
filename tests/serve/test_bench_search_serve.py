"""tools/bench_search_serve.py asks queries never asked before in its run (issue 23: a repeated
query is answered from a server process's kept answers, which says nothing of the engine), and the
old cycling bench is still there behind --cycle. No server is started: the parts that choose the
queries, and wrk's script, which is checked for the stride its threads ask with."""

from __future__ import annotations

import importlib.util
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_search_serve", ROOT / "tools" / "bench_search_serve.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_search_serve"] = module
    spec.loader.exec_module(module)
    return module


def test_the_generated_queries_are_distinct_seeded_and_of_one_and_two_words() -> None:
    bench = _bench()
    words = bench.vocabulary(300, random.Random(1))  # few words: one-word draws run out early
    weights = bench.zipf_weights(len(words))
    qs = bench.distinct_queries(words, weights, 3000, seed=1)
    assert len(qs) == 3000 and len(set(qs)) == 3000
    assert qs == bench.distinct_queries(words, weights, 3000, seed=1)
    assert qs != bench.distinct_queries(words, weights, 3000, seed=2)
    vocab = set(words)
    one = [q for q in qs if " " not in q and q in vocab]
    two = [q for q in qs if q.count(" ") == 1 and set(q.split()) <= vocab]
    cjk = [q for q in qs if len(q) == 2 and all(ord(c) >= 0x3000 for c in q)]
    assert len(one) + len(two) + len(cjk) == len(qs)
    assert len(one) == len(vocab)  # every word once, then two-word queries instead
    assert len(cjk) >= 250 and len(two) > 1000


def test_the_corpus_queries_come_from_the_corpus_vocabulary() -> None:
    bench = _bench()
    words = set(bench.vocabulary(20_000, random.Random(7)))
    qs = bench.corpus_queries(7, 500)
    assert len(set(qs)) == 500
    latin = [q for q in qs if q.isascii()]
    assert latin and all(set(q.split()) <= words for q in latin)


def test_the_run_cuts_the_queries_into_parts_that_share_none() -> None:
    bench = _bench()
    qs = [str(i) for i in range(1000)]
    compared, first, client, rest = bench.parts(qs, [20, 500, 200])
    assert (len(compared), len(first), len(client), len(rest)) == (20, 500, 200, 280)
    assert compared + first + client + rest == qs


def test_wrk_threads_ask_their_own_share_unless_cycling() -> None:
    bench = _bench()
    distinct = bench._LUA % ("/x", 2, 1)
    assert "local stride, spread = 2, 1" in distinct
    assert 'io.write(string.format("ASKED %d\\n", t:get("asked")))' in distinct
    cycling = bench._LUA % ("/x", 1, 0)  # --cycle: both threads from the first path, the old bench
    assert "local stride, spread = 1, 0" in cycling


def test_the_old_cycle_is_still_an_option() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "bench_search_serve.py"), "--help"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert "--cycle" in out and "--distinct" in out and "--cold" in out


def test_the_cpu_bench_sorts_queries_by_kind_and_sums_them_up() -> None:
    """tools/bench_search_cpu.py: the kinds it reports per query, and its summary (no timing)."""
    sys.path.insert(0, str(ROOT / "tools"))
    spec = importlib.util.spec_from_file_location("bench_search_cpu", ROOT / "tools" / "bench_search_cpu.py")
    assert spec is not None and spec.loader is not None
    cpu = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cpu)
    assert [cpu.kind(q) for q in ["bakar", "ba", "bakar dino", "bakar ba", "東京", "a b c"]] == [
        "one",
        "short",
        "two",
        "X ba",
        "cjk",
        "X ba",
    ]
    rows = [{"kind": "one", "cpu_ms": float(x)} for x in range(1, 21)] + [{"kind": "cjk", "cpu_ms": 7.0}]
    got = cpu.summary(rows)
    assert got["one"] == {"n": 20, "mean": 10.5, "p50": 11.0, "p95": 20.0, "max": 20.0}
    assert got["cjk"]["n"] == 1 and got["all"]["n"] == 21 and got["all"]["max"] == 20.0
