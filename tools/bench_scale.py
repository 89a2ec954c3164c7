"""Benchmark: one crawl shared by 1, 2 and 4 worker processes through Redis (formats/crawl-state.md §6).

    python tools/bench_scale.py [--pages 2000] [--hosts 4] [--latency 0.05] [--delay 0.1]
                                [--workers 1,2,4] [--concurrency N] [--render] [--json]
    python tools/bench_scale.py --hosts 8 --latency 0.3 --delay 0 --concurrency 2 --workers 1,3
                                # issue 24 point 4: every slot busy, 3 workers against one

Generates a site of ``--pages`` pages spread over ``--hosts`` hosts (one fixture server each, on
127.0.0.1, every page linking to a few others on its host and one on the next host, with a shared
stylesheet and image), served with ``--latency`` seconds of injected latency. Then, for each worker
count, a fresh crawl in a fresh redis-server (Debian's, on a free loopback port, AOF everysec) is
captured by that many ``archiver capture --state redis://… --crawl …`` processes, each into its own
shard; and once by a single process with the SQLite state, for reference.

Printed per run: wall time, pages/s, Redis commands per page (``INFO commandstats``: every command
Redis ran, those inside the scripts included) and script calls per page, and the politeness check
over the fixture servers' own logs: the smallest gap between two answers to one host, which must
be at least ``--delay`` + ``--latency`` (one request at a time per host, the delay between them,
across all workers). And the mean number of requests in flight at the servers over the crawl (from
the first request's start to the last answer), by Little's law: each request is under way for at
least ``--latency`` seconds (the servers' injected wait), so requests × latency / that span, a floor
of the true mean; beside it, that mean as a share of the slots (``--concurrency`` per worker,
archiver's default 12 when not given: the mean over the workers, which the servers cannot tell
apart), and each worker count's pages/s against one worker's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from archiver.fixture import FixtureConfig, FixtureServer  # noqa: E402

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class _TimedServer(FixtureServer):
    """The fixture server with each answer's wall-clock time beside the request log."""

    def __init__(self, config: FixtureConfig, port: int) -> None:
        super().__init__(config, port=port)
        self.times: list[float] = []

    def _record(self, handler: Any, status: int) -> None:
        super()._record(handler, status)
        with self._lock:
            self.times.append(time.time())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _generate(root: Path, pages: int, hosts: int, ports: list[int]) -> None:
    """``pages`` pages over ``hosts`` folders (one per server), linked within and across hosts."""
    for h in range(hosts):
        site = root / f"h{h}"
        (site / "p").mkdir(parents=True)
        (site / "style.css").write_text("body { background: url(bg.png) }\n")
        (site / "bg.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
        (site / "robots.txt").write_text("User-agent: *\nDisallow: /private/\n")
    per_host = max(1, pages // hosts)
    for h in range(hosts):
        site = root / f"h{h}"
        nxt = f"http://127.0.0.1:{ports[(h + 1) % hosts]}/"
        for i in range(per_host):
            links = [f"/p/{(i * 7 + k) % per_host}.html" for k in (1, 2, 3)]
            links.append(f"{nxt}p/{i}.html")
            body = "".join(f'<li><a href="{u}">{u}</a></li>' for u in links)
            html = (
                f'<!doctype html><html><head><title>page {h}/{i}</title><link rel="stylesheet"'
                f' href="/style.css"></head><body><h1>page {i} of host {h}</h1><ul>{body}</ul></body></html>'
            )
            (site / "p" / f"{i}.html").write_text(html)
        home = "".join(f'<a href="/p/{i}.html">{i}</a> ' for i in range(0, per_host, max(1, per_host // 20)))
        (site / "index.html").write_text(f"<!doctype html><title>host {h}</title><p>{home}</p>")


def _redis(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [
            REDIS_SERVER,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(folder),
            "--save",
            "",
            *("--appendonly", "yes", "--appendfsync", "everysec", "--logfile", str(folder / "log")),
        ],
        stdout=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def _commands(url: str) -> tuple[int, int]:
    """(every command Redis ran, scripts' own commands included; script calls)."""
    import redis

    stats = redis.Redis.from_url(url).info("commandstats")
    total = sum(int(v["calls"]) for k, v in stats.items() if k not in ("cmdstat_info",))
    scripts = sum(int(stats.get(k, {}).get("calls", 0)) for k in ("cmdstat_evalsha", "cmdstat_eval"))
    return total, scripts


def _min_gap(servers: list[_TimedServer]) -> float:
    gaps = []
    for server in servers:
        times = sorted(server.times)
        gaps += [b - a for a, b in itertools.pairwise(times)]
    return min(gaps) if gaps else float("inf")


def _run(
    seeds: list[str], work: Path, servers: list[_TimedServer], workers: int, args: argparse.Namespace
) -> dict[str, Any]:
    for server in servers:
        server.clear_requests()
        with server._lock:
            server.times.clear()
    base = [sys.executable, "-m", "archiver", "capture", *seeds, "--depth", "50", "--delay", str(args.delay)]
    base += ["--json", *([] if args.render else ["--no-render"])]
    if args.concurrency:
        base += ["--concurrency", str(args.concurrency)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    redis_proc = None
    url = None
    if workers:
        redis_proc, url = _redis(work / f"redis-{workers}")
    try:
        before = _commands(url) if url else (0, 0)
        started = time.monotonic()
        if workers:
            procs = [
                subprocess.Popen(
                    [
                        *base,
                        "-o",
                        str(work / f"w{workers}-{i}"),
                        "--state",
                        url,
                        "--crawl",
                        f"bench{workers}",
                    ],
                    env=env,
                    stdout=subprocess.DEVNULL,
                )
                for i in range(workers)
            ]
        else:
            procs = [subprocess.Popen([*base, "-o", str(work / "single")], env=env, stdout=subprocess.PIPE)]
        outputs = [p.communicate()[0] for p in procs]
        codes = [p.returncode for p in procs]
        elapsed = time.monotonic() - started
        if url:
            import redis

            counts = redis.Redis.from_url(url, decode_responses=True).hgetall(
                f"archiver:{{bench{workers}}}:counts"
            )
            pages = int(counts.get("done:page", 0))
            after = _commands(url)
            ops, scripts = after[0] - before[0], after[1] - before[1]
        else:
            out = json.loads(outputs[0] or b"{}")
            pages, ops, scripts = int(out.get("pages", 0)), 0, 0
    finally:
        if redis_proc is not None:
            redis_proc.terminate()
            redis_proc.wait()
    times = [t for server in servers for t in server.times]
    in_flight = None
    if times and args.latency > 0:
        span = max(times) - (min(times) - args.latency)
        in_flight = len(times) * args.latency / span
    slots = (workers or 1) * (args.concurrency or 12)
    return {
        "workers": workers or "sqlite",
        "in_flight": round(in_flight, 2) if in_flight is not None else None,
        "in_flight_share": round(in_flight / slots, 3) if in_flight is not None else None,
        "exit_codes": codes,
        "seconds": round(elapsed, 2),
        "pages": pages,
        "pages_per_s": round(pages / elapsed, 2),
        "redis_ops_per_page": round(ops / pages, 1) if pages and url else None,
        "redis_scripts_per_page": round(scripts / pages, 1) if pages and url else None,
        "min_gap_per_host_s": round(_min_gap(servers), 4),
        "requests": sum(len(s.requests) for s in servers),
    }


def _share(r: dict[str, Any]) -> str:
    share = r["in_flight_share"]
    return "?" if share is None else f"{share:.0%}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--pages", type=int, default=2000)
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--delay", type=float, default=0.1)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--concurrency", type=int, default=0, help="each worker's --concurrency (default: 12)")
    p.add_argument("--render", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    counts = [int(w) for w in args.workers.split(",") if w]
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = Path(tmp)
        ports = [_free_port() for _ in range(args.hosts)]
        _generate(work / "site", args.pages, args.hosts, ports)
        servers = [
            _TimedServer(FixtureConfig(root=work / "site" / f"h{h}", latency=args.latency), ports[h])
            for h in range(args.hosts)
        ]
        for server in servers:
            server.start()
        try:
            seeds = [s.url for s in servers]
            results = [_run(seeds, work, servers, 0, args)] + [
                _run(seeds, work, servers, w, args) for w in counts
            ]
        finally:
            for server in servers:
                server.stop()
    floor = args.delay + args.latency
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    one = next((r["pages_per_s"] for r in results if r["workers"] == 1), None)
    for r in results:
        r["polite"] = r["min_gap_per_host_s"] >= floor - 0.002
        r["vs_one_worker"] = round(r["pages_per_s"] / one, 2) if one else None
    if args.json:
        print(json.dumps({"pages": args.pages, "hosts": args.hosts, "results": results}, indent=2))
    else:
        print(f"{args.pages} pages on {args.hosts} hosts, latency {args.latency} s, delay {args.delay} s")
        for r in results:
            print(
                f"  {r['workers']!s:>6} workers: {r['seconds']:7.2f} s  {r['pages_per_s']:7.2f} pages/s"
                f" ({r['vs_one_worker']}× one worker)  in flight {r['in_flight']} ({_share(r)} of the slots)"
                f"  redis ops/page {r['redis_ops_per_page']} (scripts {r['redis_scripts_per_page']})"
                f"  min gap per host {r['min_gap_per_host_s']} s"
                f" ({'polite' if r['polite'] else 'NOT POLITE'})  exit {r['exit_codes']}"
            )
    return 0 if all(r["polite"] and not any(r["exit_codes"]) for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
