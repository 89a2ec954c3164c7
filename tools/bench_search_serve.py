"""Cross-archive search through ``archiver serve`` under load (issue 23 point 5: p95 ≤ 100 ms over
100,000 pages in 100 archives, 2 cores, loopback), with wrk.

    python tools/bench_search_serve.py --make DIR [--archives 100] [--pages 1000] [--seed 1]
    python tools/bench_search_serve.py ARCHIVE... | --corpus DIR
                                       [--duration 20] [--connections 8] [--workers 2] [--json]

``--make DIR`` writes a generated corpus: ``--archives`` trees of ``--pages`` pages each (English-like
pages from a seeded vocabulary with a Zipf distribution, and one page in ten Chinese, one in ten
Japanese), and builds each tree's index with ``archiver index`` (two at a time). It prints the build
time and the index sizes, and writes ``DIR/queries.txt``: one-word and two-word queries drawn from
the vocabulary by the same distribution, and two-character Chinese and Japanese words.

Then (given trees, gwtar or ZIM files, or ``--corpus DIR`` for every tree and archive in DIR):
``archiver serve --workers W`` mounts them all and is asked **queries never asked before in the
run** (a server process answers a repeated query from the answers it keeps, formats/serve.md §8:
that measures the kept answers, not the engine): ``--distinct`` of them (40,000), generated from
the corpus's vocabulary (``--seed``: the corpus's), one-word and two-word by the pages' own
distribution, one in ten a Chinese or Japanese word (:func:`distinct_queries`), or each line of
``--queries FILE`` once; each part below asks its own. **Cold**: ``--cold`` queries (2,000) shared
out among 2×W clients at once: p50, p95, max. **Warm**: one client asks 200 in turn (p50, p95),
then wrk (``-t2 -c<connections>``) asks ``/~/api/search?q=…&limit=10`` on the bare host for
``--duration`` seconds, its two threads each their own share of the rest: requests/s, p50, p95,
p99 (wrk's own latency histogram), non-2xx answers and socket errors. It prints how many queries
were asked, how many distinct and how many repeated (wrk asking more than it was given).
``--cycle``: the old bench, the corpus's ``queries.txt`` (500), every cold client asking all of
them, wrk's threads cycling through them. Then the server processes' resident memory (VmRSS, VmHWM).
``--compare N``: the first N queries' results (mount, path, score, in order) from the API against
:func:`archiver.search.query.search` run in this process over the same archives (the ranking
before the serve engine); mismatches are printed. The load average is printed first. No timing is
asserted anywhere; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

from nginx_static import free_port  # noqa: E402

_SYLLABLES = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ar", "en", "is", "on")]
_HIRAGANA = [chr(c) for c in range(0x3042, 0x3094)]
_HANZI = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]


# ---------------------------------------------------------------------------------------------
# Pure: the corpus


def vocabulary(n: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))))
    return sorted(words)


def zipf_weights(n: int) -> list[float]:
    """Cumulative Zipf weights (``random.choices(cum_weights=…)``: no sum per call)."""
    total, out = 0.0, []
    for rank in range(n):
        total += 1.0 / (rank + 1)
        out.append(total)
    return out


def english(rng: random.Random, words: Sequence[str], weights: Sequence[float], n: int) -> str:
    return " ".join(rng.choices(words, cum_weights=weights, k=n))


def cjk(rng: random.Random, alphabet: Sequence[str], n: int) -> str:
    # runs without spaces, as Chinese and Japanese are written: the index must find words inside them
    return "。".join("".join(rng.choices(alphabet, k=rng.randint(8, 30))) for _ in range(max(1, n // 20)))


def page_html(
    rng: random.Random,
    words: Sequence[str],
    weights: Sequence[float],
    kind: str,
    seen: list[str] | None = None,
) -> str:
    """A page; its Chinese or Japanese runs are added to ``seen`` (queries are drawn from them)."""
    if kind == "zh":
        alphabet: Sequence[str] = _HANZI[:600]
    elif kind == "ja":
        alphabet = _HIRAGANA + _HANZI[:300]
    else:
        alphabet = ()

    def text(n: int) -> str:
        if not alphabet:
            return english(rng, words, weights, n)
        run = cjk(rng, alphabet, n)
        if seen is not None and len(seen) < 5000:
            seen.append(run)
        return run

    lang = {"zh": "zh", "ja": "ja"}.get(kind, "en")
    parts = [
        f"<!DOCTYPE html><html lang={lang}><head><meta charset=utf-8><title>{text(5)}</title></head><body>"
    ]
    parts.append("<nav><a href=../index.html>Home</a> Contents Index Search</nav><main>")
    parts.append(f"<h1>{text(4)}</h1>")
    for _ in range(rng.randint(2, 5)):
        parts.append(f"<h2>{text(3)}</h2>")
        for _ in range(rng.randint(1, 4)):
            parts.append(f"<p>{text(rng.randint(40, 160))}</p>")
    parts.append("</main><footer>Generated corpus</footer></body></html>\n")
    return "".join(parts)


def kind_of(i: int) -> str:
    return "zh" if i % 10 == 3 else "ja" if i % 10 == 7 else "en"


def queries(
    rng: random.Random, words: Sequence[str], weights: Sequence[float], runs: Sequence[str], n: int
) -> list[str]:
    """One-word and two-word queries by the pages' own distribution; one in ten a two-character
    word from inside a Chinese or Japanese run of the corpus."""
    out: list[str] = []
    for i in range(n):
        if i % 10 == 9 and runs:
            run = rng.choice(runs).replace("。", "")
            at = rng.randrange(max(1, len(run) - 1))
            out.append(run[at : at + 2])
        elif i % 3 == 2:
            out.append(" ".join(rng.choices(words, cum_weights=weights, k=2)))
        else:
            out.append(rng.choices(words, cum_weights=weights, k=1)[0])
    return out


def distinct_queries(words: Sequence[str], weights: Sequence[float], n: int, seed: int) -> list[str]:
    """``n`` queries, none twice (issue 23: a query asked again is answered from the answers a
    server process keeps, so a bench that repeats queries measures that, not the engine): by the
    pages' own distribution, two in three one word and one in three two words, one in ten a
    two-character Chinese or Japanese word (the corpus's alphabets: nearly every pair occurs). A
    query drawn before is drawn again; a one-word draw that keeps meeting words already asked (the
    frequent words run out first) becomes a two-word one."""
    rng = random.Random(f"distinct-{seed}")
    zh, ja = _HANZI[:600], _HIRAGANA + _HANZI[:300]
    seen: set[str] = set()
    out: list[str] = []
    i = 0
    while len(out) < n:
        i += 1
        q = ""
        for _ in range(20):
            if i % 10 == 9:
                alphabet = zh if rng.random() < 0.5 else ja
                q = rng.choice(alphabet) + rng.choice(alphabet)
            elif i % 3 == 2:
                q = " ".join(rng.choices(words, cum_weights=weights, k=2))
            else:
                q = rng.choices(words, cum_weights=weights, k=1)[0]
            if q not in seen:
                break
        else:
            while q in seen:
                q = " ".join(rng.choices(words, cum_weights=weights, k=2))
        seen.add(q)
        out.append(q)
    return out


def corpus_queries(seed: int, n: int) -> list[str]:
    """:func:`distinct_queries` from the vocabulary of the corpus ``--make`` writes with ``seed``."""
    words = vocabulary(20_000, random.Random(seed))  # make_corpus's first draw: the same words
    return distinct_queries(words, zipf_weights(len(words)), n, seed)


def parts(qs: Sequence[str], sizes: Sequence[int]) -> list[list[str]]:
    """``qs`` cut into consecutive parts of ``sizes`` (the last part: the rest), none shared."""
    out, at = [], 0
    for size in sizes:
        out.append(list(qs[at : at + size]))
        at += size
    out.append(list(qs[at:]))
    return out


# ---------------------------------------------------------------------------------------------
# IO


def _index_one(tree: str) -> tuple[str, float, int]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "index", tree, "--json"], capture_output=True, text=True, cwd=REPO
    )
    if done.returncode:
        raise SystemExit(f"bench_search_serve: archiver index {tree}: {done.stderr.strip()}")
    return tree, time.monotonic() - started, int(json.loads(done.stdout)["bytes"])


def make_corpus(folder: Path, archives: int, pages: int, seed: int) -> None:
    rng = random.Random(seed)
    words = vocabulary(20_000, rng)
    weights = zipf_weights(len(words))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    trees, runs = [], []
    for a in range(archives):
        tree = folder / f"archive-{a:03d}"
        if tree.exists():
            shutil.rmtree(tree)
        (tree / "p").mkdir(parents=True)
        links = "".join(f"<li><a href=p/{i:05d}.html>{i}</a></li>" for i in range(1, pages))
        (tree / "index.html").write_text(
            f"<!DOCTYPE html><html><head><meta charset=utf-8><title>Archive {a}</title></head>"
            f"<body><main><h1>Archive {a}</h1><ul>{links}</ul></main></body></html>\n",
            encoding="utf-8",
        )
        for i in range(1, pages):
            (tree / "p" / f"{i:05d}.html").write_text(
                page_html(rng, words, weights, kind_of(i), runs), encoding="utf-8"
            )
        trees.append(str(tree))
    print(f"wrote {archives} trees of {pages} pages in {time.monotonic() - started:.1f} s", flush=True)
    started = time.monotonic()
    cpu0 = os.times()
    sizes = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for n, (_, _, size) in enumerate(pool.map(_index_one, trees), 1):
            sizes += size
            if n % 10 == 0:
                print(f"  indexed {n}/{archives}", flush=True)
    cpu1 = os.times()
    cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    print(
        f"indexed {archives * pages} pages in {time.monotonic() - started:.1f} s wall, {cpu:.1f} s CPU; "
        f"index {sizes / 1e6:.1f} MB"
    )
    (folder / "queries.txt").write_text(
        "\n".join(queries(rng, words, weights, runs, 500)) + "\n", encoding="utf-8"
    )


def memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (MB) of the server process ``pid`` and its forked workers, summed."""
    pids = [pid]
    with suppress(OSError):
        pids += [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    out = {"processes": len(pids), "rss_mb": 0.0, "hwm_mb": 0.0, "anon_mb": 0.0, "file_mb": 0.0}
    for p in pids:
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            key = {"VmRSS:": "rss_mb", "VmHWM:": "hwm_mb", "RssAnon:": "anon_mb", "RssFile:": "file_mb"}
            name = line.split(None, 1)[0] if line else ""
            if name in key:  # RssFile: the postings tables' mapped pages, shared and reclaimable
                out[key[name]] += int(line.split()[1]) / 1024
    return out


def cpu(pid: int) -> float:
    """CPU seconds (user + system) of the server process ``pid`` and its forked workers so far."""
    pids = [pid]
    with suppress(OSError):
        pids += [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    total = 0
    for p in pids:
        with suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def cold(port: int, qs: Sequence[str], clients: int, *, each: bool = False) -> dict[str, Any]:
    """``clients`` clients at once, each its share of ``qs`` (``each``: every query, in its own
    order: a query is then asked ``clients`` times)."""
    times: list[float] = []
    resets: list[str] = []

    def run(seed: int) -> None:
        order = list(qs) if each else list(qs[seed::clients])
        random.Random(seed).shuffle(order)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        for q in order:
            started = time.perf_counter()
            try:
                conn.request("GET", api_path(q), headers={"Host": f"localhost:{port}"})
                conn.getresponse().read()
            except (ConnectionError, http.client.HTTPException):
                # the server closes a kept-alive connection its process was too busy to read in time
                resets.append(q)
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
                continue
            times.append(time.perf_counter() - started)
        conn.close()

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        list(pool.map(run, range(clients)))
    times.sort()
    return {
        "answers": len(times),
        "seconds": time.monotonic() - started,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] * 1000,
        "max_ms": times[-1] * 1000,
        "resets": len(resets),
    }


def compare(port: int, paths: Sequence[Path], qs: Sequence[str]) -> dict[str, Any]:
    """The API's results against the query core's over the same archives (trees only)."""
    from archiver.search import query, store

    trees = [p for p in paths if p.is_dir()]
    indexes = [store.open_index(t, f"{t.name}/_archiver/search") for t in trees]
    bad = []
    for q in qs:
        # a connection a query: the core's search below can outlast the server's keep-alive
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        conn.request("GET", api_path(q), headers={"Host": f"localhost:{port}"})
        doc = json.loads(conn.getresponse().read())
        conn.close()
        got = [(r["mount"], r["path"], r["score"], r["snippet"]) for r in doc["results"]]
        found = query.search(indexes, q, limit=10)
        want = [(trees[r.archive].name, r.path, r.score, r.snippet.text) for r in found.results]
        if got != want or doc["total"] != found.total:
            bad.append(q)
            print(f"  differs: {q!r}", flush=True)
    return {"queries": len(qs), "differ": len(bad)}


@contextmanager
def serving(paths: Sequence[Path], workers: int) -> Iterator[tuple[int, int]]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "archiver",
        "serve",
        "--quiet",
        "--workers",
        str(workers),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(
        [*cmd, *map(str, paths)], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        # The server answers once every mount's postings table is open, built first when the cache
        # folder has none (formats/search.md §6.5): minutes for a new 100-archive corpus. (Its socket
        # is bound before that: the first answer is what says it is ready.)
        started = time.monotonic()
        deadline = started + 3600
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=deadline - time.monotonic())
                conn.request("GET", "/", headers={"Host": f"localhost:{port}"})
                conn.getresponse().read()
                conn.close()
                break
            except (OSError, http.client.HTTPException):
                if proc.poll() is not None or time.monotonic() > deadline:
                    why = proc.stderr.read().decode() if proc.stderr else ""
                    raise SystemExit(f"bench_search_serve: archiver serve did not start: {why}") from None
                time.sleep(0.1)
        print(
            f"server ready in {time.monotonic() - started:.1f} s (its postings tables opened or built), "
            f"{cpu(proc.pid):.1f} s of CPU",
            flush=True,
        )
        yield port, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def api_path(q: str) -> str:
    return "/~/api/search?" + urllib.parse.urlencode({"q": q, "limit": 10})


def one_client(port: int, qs: Sequence[str]) -> dict[str, Any]:
    times, totals = [], []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for q in qs:
        started = time.perf_counter()
        conn.request("GET", api_path(q), headers={"Host": f"localhost:{port}"})
        resp = conn.getresponse()
        body = resp.read()
        times.append(time.perf_counter() - started)
        if resp.status != 200:
            raise SystemExit(f"bench_search_serve: {q!r}: HTTP {resp.status}")
        totals.append(json.loads(body)["total"])
    conn.close()
    times.sort()
    return {
        "queries": len(qs),
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))] * 1000,
        "with_results": sum(1 for t in totals if t),
    }


# Each wrk thread runs its own copy of the script: ``tid`` (set by setup) and ``asked`` are its
# globals. Thread t asks paths t, t + stride, t + 2 stride, … (stride 1, spread 0: every thread
# cycles through all of them from the first, the old bench).
_LUA = """
local paths = {}
for line in io.lines("%s") do paths[#paths + 1] = line end
local stride, spread = %d, %d
local threads, started = {}, 0
tid, asked = 0, 0
setup = function(thread)
  thread:set("tid", started)
  started = started + 1
  threads[#threads + 1] = thread
end
request = function()
  local k = (asked * stride + tid * spread) %% #paths + 1
  asked = asked + 1
  return wrk.format("GET", paths[k])
end
done = function(summary, latency, requests)
  for _, t in ipairs(threads) do io.write(string.format("ASKED %%d\\n", t:get("asked"))) end
  io.write(string.format("P95US %%d\\n", latency:percentile(95)))
  io.write(string.format("P50US %%d\\n", latency:percentile(50)))
  io.write(string.format("P99US %%d\\n", latency:percentile(99)))
end
"""


def load(
    port: int, qs: Sequence[str], seconds: int, connections: int, work: Path, *, cycle: bool = False
) -> dict[str, Any]:
    """wrk over ``qs``: its two threads ask different queries, each once until they run out
    (``cycle``: both cycle through all of them, the old bench); ``repeated``: requests that asked
    a query asked before in this wrk run."""
    paths = work / "paths.txt"
    paths.write_text("\n".join(api_path(q) for q in qs) + "\n", encoding="utf-8")
    script = work / "rotate.lua"
    threads = 2
    script.write_text(_LUA % (paths, *((1, 0) if cycle else (threads, 1))), encoding="utf-8")
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", str(script)]
    cmd += ["-H", f"Host: localhost:{port}", f"http://127.0.0.1:{port}/"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120).stdout

    def grab(key: str) -> float:
        for line in out.splitlines():
            if line.startswith(key + " "):
                return int(line.split()[1]) / 1000
        return float("nan")

    asked = [int(x.split()[1]) for x in out.splitlines() if x.startswith("ASKED ")]
    if cycle:
        repeated = sum(asked) - min(len(qs), max(asked)) if asked else 0
    else:  # thread t's own share: the paths t, t + threads, …
        share = [len(range(t, len(qs), threads)) for t in range(len(asked))]
        repeated = sum(max(0, a - n) for a, n in zip(asked, share, strict=True))
    rps = next((float(x.split()[1]) for x in out.splitlines() if x.startswith("Requests/sec:")), 0.0)
    non = next((int(x.split(":")[1]) for x in out.splitlines() if "Non-2xx" in x), 0)
    errors = next((x.strip() for x in out.splitlines() if "Socket errors" in x), "")
    return {"rps": rps, "p50_ms": grab("P50US"), "p95_ms": grab("P95US"), "p99_ms": grab("P99US"),
            "non_2xx": non, "socket_errors": errors, "asked": sum(asked), "repeated": repeated}  # fmt: skip


def targets(args: argparse.Namespace) -> list[Path]:
    if args.corpus:
        found = sorted(
            p for p in args.corpus.iterdir() if p.is_dir() or p.name.endswith((".zim", ".gwtar.html"))
        )
        return found
    return list(args.archives)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archives", nargs="*", type=Path)
    ap.add_argument("--make", type=Path, help="write a generated corpus into this folder, then measure it")
    ap.add_argument("--corpus", type=Path)
    ap.add_argument("--archives-count", "--archives", dest="count", type=int, default=100)
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queries", type=Path, help="one query a line, each asked once (default: generated)")
    ap.add_argument("--distinct", type=int, default=40_000, metavar="N", help="queries generated")
    ap.add_argument("--cold", type=int, default=2_000, metavar="N", help="queries of the cold pass")
    ap.add_argument(
        "--cycle",
        action="store_true",
        help="the old bench: the corpus's queries.txt, every cold client asks all, wrk cycles through them",
    )
    ap.add_argument("--compare", type=int, default=0, metavar="N", help="check the first N queries' results")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    if args.make:
        make_corpus(args.make, args.count, args.pages, args.seed)
        args.corpus = args.make
    paths = targets(args)
    if not paths:
        ap.error("give archives, --corpus DIR or --make DIR")
    qfile = args.queries or (args.corpus / "queries.txt" if args.corpus and args.cycle else None)
    if qfile is not None:
        if not qfile.is_file():
            ap.error("give --queries FILE (one query a line)")
        qs = [q for q in qfile.read_text(encoding="utf-8").splitlines() if q.strip()]
        if not args.cycle:
            qs = list(dict.fromkeys(qs))  # each once
    else:
        qs = corpus_queries(args.seed, args.distinct)
    if args.cycle:  # every part asks the same queries again
        compared, first, client, rest = qs[: args.compare], qs, qs[:200], qs
    else:
        compared, first, client, rest = parts(qs, [args.compare, args.cold, 200])
    report: dict[str, Any] = {"mounts": len(paths), "load": os.getloadavg()}
    with (
        tempfile.TemporaryDirectory(prefix="bench-search-serve-") as scratch,
        serving(paths, args.workers) as (port, pid),
    ):
        if args.compare:
            report["compare"] = compare(port, paths, compared)
            print(f"compared {report['compare']['queries']} queries: {report['compare']['differ']} differ")
        before = cpu(pid)
        report["cold"] = cold(port, first, 2 * args.workers, each=args.cycle)
        k = report["cold"]
        k["cpu_ms_per_answer"] = (cpu(pid) - before) * 1000 / max(1, k["answers"])
        print(
            f"cold: {k['answers']} answers in {k['seconds']:.1f} s, p50 {k['p50_ms']:.1f} ms, "
            f"p95 {k['p95_ms']:.1f} ms, max {k['max_ms']:.1f} ms, {k['resets']} connections reset; "
            f"server CPU {k['cpu_ms_per_answer']:.1f} ms an answer; {memory(pid)}",
            flush=True,
        )
        report["one_client"] = one_client(port, client)
        before = cpu(pid)
        report["wrk"] = load(port, rest, args.duration, args.connections, Path(scratch), cycle=args.cycle)
        report["wrk"]["server_cpu_s"] = cpu(pid) - before
        report["memory"] = memory(pid)
    c, w = report["one_client"], report["wrk"]
    k = report["cold"]
    asked = len(compared) + k["answers"] + k["resets"] + c["queries"] + w["asked"]
    distinct = len(set(compared) | set(first) | set(client) | set(rest[: w["asked"]]))
    if not args.cycle:
        distinct = asked - w["repeated"]
    report["queries"] = {
        "asked": asked,
        "distinct": min(asked, distinct),
        "repeated": asked - min(asked, distinct),
    }
    print(
        f"queries: {asked} asked, {report['queries']['distinct']} distinct, "
        f"{report['queries']['repeated']} repeated" + (" (--cycle)" if args.cycle else "")
    )
    print(
        f"memory of the {report['memory']['processes']} server processes: RSS "
        f"{report['memory']['rss_mb']:.0f} MB (anonymous {report['memory']['anon_mb']:.0f} MB, "
        f"mapped files {report['memory']['file_mb']:.0f} MB), peak {report['memory']['hwm_mb']:.0f} MB"
    )
    print(
        f"{len(paths)} mounts, {len(qs)} queries; warm, one client: p50 {c['p50_ms']:.1f} ms, "
        f"p95 {c['p95_ms']:.1f} ms ({c['with_results']}/{c['queries']} with results)\n"
        f"wrk -c{args.connections}, {args.workers} workers: {w['rps']:.1f} req/s, p50 {w['p50_ms']:.1f} ms, "
        f"p95 {w['p95_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms, non-2xx {w['non_2xx']} {w['socket_errors']}; "
        f"server CPU {w['server_cpu_s'] * 1000 / max(1.0, w['rps'] * args.duration):.1f} ms a request"
    )
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
