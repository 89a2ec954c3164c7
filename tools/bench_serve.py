"""Benchmark ``archiver serve`` against nginx and kiwix-serve with wrk, on 127.0.0.1 only.

    python tools/bench_serve.py [--size-mb 100] [--duration 10] [--rounds 3] [--connections 32]
                                [--workers 1] [--nginx-workers 1] [--soak 60] [--workdir DIR] [--json]

What it does, all bounded in time and on loopback:

1. Builds a tree holding one ``--size-mb`` MB video (seeded random bytes) and packs it into a gwtar
   and a ZIM with archiver's own packers.
2. Starts ``archiver serve`` (a subprocess, ``--workers`` processes), nginx (configured by
   ``archiver serve --print-config nginx``, ``--nginx-workers`` workers, access log off) and
   ``kiwix-serve`` on free ports, and checks each answers a Range request with the right bytes.
3. Runs wrk (``-t2 -c<connections>``) against each, in alternating rounds so that noise from the
   machine hits both sides alike, and reports the median of the rounds:
   - 4 KiB ranges of the gwtar (req/s), archiver vs nginx;
   - 1 MiB ranges of the gwtar (MB/s of body), archiver vs nginx;
   - 64 KiB ranges of the ZIM's video entry and whole small entries, archiver vs kiwix-serve.
4. Soak: ``--soak`` seconds of mixed load on ``archiver serve`` (gwtar ranges, member URLs, multi-range,
   If-None-Match, tree files, ZIM entries, the index page) while sampling its RSS; reports socket
   errors, statuses outside 2xx/3xx, and RSS at the start, the end and its maximum.

wrk is Debian's ``wrk`` package (``apt-get install wrk``). Every process it starts is stopped by its
PID. Figures are ratios on the same machine in the same run, never absolute promises.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from archiver.serve import print_config  # noqa: E402

VIDEO = "_archiver/bench.example/media/video.mp4"
PAGE = "index.html"
CSS = "_archiver/bench.example/css/site.css"


# ------------------------------------------------------------------------------------ inputs


def build_inputs(work: Path, size: int) -> dict[str, Path]:
    from archiver import gwtar, zim

    tree = work / "site"
    if not (work / "site.gwtar.html").exists():
        (tree / "_archiver/bench.example/media").mkdir(parents=True, exist_ok=True)
        (tree / "_archiver/bench.example/css").mkdir(parents=True, exist_ok=True)
        (tree / PAGE).write_text(
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bench</title>'
            f'<link rel="stylesheet" href="{CSS}"></head><body><h1>Bench</h1>'
            f'<video src="{VIDEO}" controls></video></body></html>\n',
            encoding="utf-8",
        )
        (tree / CSS).write_text("body { font-family: sans-serif; color: #222 }\n" * 20, encoding="utf-8")
        rng = random.Random(20261129)
        with (tree / VIDEO).open("wb") as f:
            left = size
            while left:
                n = min(left, 1 << 22)
                f.write(rng.randbytes(n))
                left -= n
        try:
            gwtar.pack(tree, work / "site.gwtar.html")
        except Exception:  # no bundled loader in this checkout: the bytes served are what matter
            gwtar.pack(tree, work / "site.gwtar.html", loader="/* bench */")
        zim.pack(tree, work / "book.zim")
    return {"tree": tree, "gwtar": work / "site.gwtar.html", "zim": work / "book.zim"}


# ------------------------------------------------------------------------------------ servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen[Any], what: str) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"bench_serve: {what} did not start") from None
            time.sleep(0.05)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def archiver_serve(paths: list[Path], workers: int) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    code = (
        "import sys; from archiver.serve import serve; "
        f"sys.exit(serve({[str(p) for p in paths]!r}, port=0, quiet=True, workers={workers}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit("bench_serve: archiver serve did not print its URL")
        wait_port(int(url.rsplit(":", 1)[1].strip("/")), proc, "archiver serve")
        yield url.rstrip("/"), proc
    finally:
        stop(proc)


@contextlib.contextmanager
def nginx(work: Path, paths: list[Path], workers: int) -> Iterator[tuple[str, int]]:
    port = free_port()
    folder = work / "nginx"
    (folder / "temp").mkdir(parents=True, exist_ok=True)
    block = print_config("nginx", paths, listen=f"127.0.0.1:{port}")
    conf = folder / "nginx.conf"
    import getpass

    conf.write_text(
        f"daemon off;\nuser {getpass.getuser()};\nworker_processes {workers};\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/error.log warn;\nevents {{ worker_connections 4096; }}\n"
        "http {\n    include /etc/nginx/mime.types;\n    access_log off;\n    keepalive_requests 1000000;\n"
        + "".join(
            f"    {k}_temp_path {folder}/temp/{k};\n"
            for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + block
        + "}\n",
        encoding="utf-8",
    )
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([binary, "-c", str(conf), "-p", str(folder)], stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc, "nginx")
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        stop(proc)


@contextlib.contextmanager
def kiwix(zim_file: Path) -> Iterator[tuple[str, int]]:
    port = free_port()
    proc = subprocess.Popen(
        ["kiwix-serve", "--address=127.0.0.1", f"--port={port}", "--nosearchbar", str(zim_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc, "kiwix-serve")
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        stop(proc)


def fetch(url: str, headers: dict[str, str]) -> tuple[int, bytes]:
    rest = url.split("//", 1)[1]
    hostport, _, path = rest.partition("/")
    host, port = hostport.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", "/" + path, headers=headers)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def check_range(url: str, want: bytes, start: int) -> None:
    status, body = fetch(
        url, {"Range": f"bytes={start}-{start + len(want) - 1}", "Accept-Encoding": "identity"}
    )
    if status != 206 or body != want:
        raise SystemExit(f"bench_serve: {url} answered {status} with {len(body)} bytes, not the 206 wanted")


# ------------------------------------------------------------------------------------ wrk


def wrk(
    url: str, seconds: int, connections: int, headers: dict[str, str], script: Path | None = None
) -> dict[str, Any]:
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "10s"]
    for k, v in headers.items():
        cmd += ["-H", f"{k}: {v}"]
    if script is not None:
        cmd += ["-s", str(script)]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, timeout=seconds + 60).stdout
    return parse_wrk(out)


def _duration_ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if not m:
        return float("nan")
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[m.group(2)]
    return float(m.group(1)) * scale


def parse_wrk(out: str) -> dict[str, Any]:
    result: dict[str, Any] = {"raw": out}
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    result["rps"] = float(m.group(1)) if m else 0.0
    m = re.search(r"(\d+) requests in", out)
    result["requests"] = int(m.group(1)) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non_2xx_3xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    result["socket_errors"] = sum(map(int, m.groups())) if m else 0
    for pct in ("50", "99"):
        m = re.search(rf"\s{pct}%\s+([\d.]+\w+)", out)
        result[f"p{pct}_ms"] = _duration_ms(m.group(1)) if m else float("nan")
    m = re.search(r"STATUS (.*)", out)
    result["statuses"] = json.loads(m.group(1)) if m else {}
    return result


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its direct children (nginx's or our workers)."""
    ticks = os.sysconf("SC_CLK_TCK")
    pids = [pid]
    with contextlib.suppress(OSError):
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    total = 0
    for p in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def rounds(
    targets: dict[str, tuple[str, int]], seconds: int, n: int, connections: int, headers: dict[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """wrk against each target in turn, ``n`` times, alternating the order; each run also records
    the server's CPU time per request (a figure that other load on the machine disturbs less)."""
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in targets}
    for i in range(n):
        order = list(targets.items()) if i % 2 == 0 else list(reversed(targets.items()))
        for name, (url, pid) in order:
            before = cpu_seconds(pid)
            result = wrk(url, seconds, connections, headers)
            used = cpu_seconds(pid) - before
            result["cpu_us_per_request"] = (
                used / result["requests"] * 1e6 if result["requests"] else float("nan")
            )
            runs[name].append(result)
    return runs


def summary(runs: list[dict[str, Any]], body: int) -> dict[str, Any]:
    rps = statistics.median(r["rps"] for r in runs)
    return {
        "rps": round(rps, 1),
        "mb_per_s": round(rps * body / 1e6, 1),
        "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 3),
        "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 3),
        "rounds_rps": [round(r["rps"]) for r in runs],
        "cpu_us_per_request": round(statistics.median(r["cpu_us_per_request"] for r in runs), 1),
        "non_2xx_3xx": sum(r["non_2xx_3xx"] for r in runs),
        "socket_errors": sum(r["socket_errors"] for r in runs),
    }


# ------------------------------------------------------------------------------------ soak

SOAK_LUA = r"""
local size = @SIZE@
local video = @VIDEO@
local function ranged(path, total, n)
  local o = math.random(0, total - n)
  return wrk.format("GET", path, {["Range"] = "bytes=" .. o .. "-" .. (o + n - 1)})
end
local reqs = {
  function() return ranged("/site.gwtar.html", size, 4096) end,
  function() return ranged("/site.gwtar.html", size, 1048576) end,
  function() return wrk.format("GET", "/site.gwtar.html", {["Range"] = "bytes=0-99,1000-1099,-100"}) end,
  function() return wrk.format("GET", "/site.gwtar.html/~/@PAGE@") end,
  function() return ranged("/site.gwtar.html/~/@VIDEO_PATH@", video, 65536) end,
  function() return wrk.format("GET", "/site/@CSS@", {["If-None-Match"] = @ETAG@}) end,
  function() return wrk.format("GET", "/site/@PAGE@") end,
  function() return wrk.format("GET", "/site/@CSS@") end,  -- (wrk mis-parses HEAD responses: none here)
  function() return wrk.format("GET", "/book/@PAGE@") end,
  function() return ranged("/book/@VIDEO_PATH@", video, 65536) end,
  function() return wrk.format("GET", "/book/") end,
  function() return wrk.format("GET", "/") end,
}
counts = {}  -- a global: done() reads it from each thread with thread:get
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) math.randomseed(os.time() + math.floor(os.clock() * 1e6)) end
function request() return reqs[math.random(1, #reqs)]() end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    local c = t:get("counts") or {}
    for k, v in pairs(c) do total[tostring(k)] = (total[tostring(k)] or 0) + v end
  end
  local parts = {}
  for k, v in pairs(total) do table.insert(parts, string.format("%q: %d", k, v)) end
  io.write("STATUS {" .. table.concat(parts, ", ") .. "}\n")
end
"""


def rss_kib(pid: int) -> int:
    total = 0
    pids = [pid]
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    for p in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total


def soak(
    url: str, proc: subprocess.Popen[str], work: Path, seconds: int, connections: int, sizes: dict[str, Any]
) -> dict[str, Any]:
    rest = url.split("//", 1)[1]
    host, port = rest.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("HEAD", f"/site/{CSS}")
    etag = conn.getresponse().getheader("etag") or ""
    conn.close()
    script = work / "soak.lua"
    values = {
        "@SIZE@": str(sizes["gwtar"]),
        "@VIDEO@": str(sizes["video"]),
        "@PAGE@": PAGE,
        "@CSS@": CSS,
        "@VIDEO_PATH@": VIDEO,
        "@ETAG@": json.dumps(etag),  # a JSON string is a valid Lua string literal here
    }
    text = SOAK_LUA
    for key, value in values.items():
        text = text.replace(key, value)
    script.write_text(text, encoding="utf-8")
    samples: list[tuple[float, int]] = []
    start = time.monotonic()
    runner = subprocess.Popen(
        [
            "wrk",
            "-t2",
            f"-c{connections}",
            f"-d{seconds}s",
            "--latency",
            "--timeout",
            "10s",
            "-s",
            str(script),
            url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    while runner.poll() is None:
        samples.append((round(time.monotonic() - start, 1), rss_kib(proc.pid)))
        time.sleep(2)
    out = runner.stdout.read() if runner.stdout else ""
    result = parse_wrk(out)
    statuses = {int(k): v for k, v in result["statuses"].items()}
    after_warmup = [kib for t, kib in samples if t >= 5] or [kib for _, kib in samples]
    return {
        "seconds": seconds,
        "requests": result["requests"],
        "rps": result["rps"],
        "statuses": dict(sorted(statuses.items())),
        "unexpected": sum(v for k, v in statuses.items() if not 200 <= k < 400),
        "socket_errors": result["socket_errors"],
        "rss_kib_first": after_warmup[0] if after_warmup else 0,
        "rss_kib_last": after_warmup[-1] if after_warmup else 0,
        "rss_kib_max": max(after_warmup) if after_warmup else 0,
        "rss_samples": samples,
    }


# ------------------------------------------------------------------------------------ main


def _load() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every figure."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_serve.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mb", type=int, default=100)
    p.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--workers", type=int, default=1, help="archiver serve processes")
    p.add_argument("--nginx-workers", type=int, default=1)
    p.add_argument("--soak", type=int, default=60, help="seconds of mixed load (0: skip)")
    p.add_argument("--workdir", type=Path, default=None, help="keep inputs here (reused when present)")
    p.add_argument(
        "--only", default="", help="run only scenarios whose title has one of these words (4 KiB,1 MiB,ZIM)"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = p.parse_args(argv)
    for tool in ("wrk", "nginx", "kiwix-serve"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            package = "kiwix-tools" if tool == "kiwix-serve" else tool
            print(f"bench_serve: {tool} is not installed (Debian: apt-get install {package})")
            return 2
    with contextlib.ExitStack() as stack:
        work = args.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-serve-")))
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        inputs = build_inputs(work, args.size_mb * 1_000_000)
        sizes = {"gwtar": inputs["gwtar"].stat().st_size, "video": (inputs["tree"] / VIDEO).stat().st_size}
        took = time.monotonic() - t0
        print(f"inputs: gwtar {sizes['gwtar']:,} B, video entry {sizes['video']:,} B ({took:.1f} s to build)")
        print(f"load average at start: {_load()} ({os.cpu_count()} CPUs)")
        gwtar_bytes = inputs["gwtar"].read_bytes()
        video = (inputs["tree"] / VIDEO).read_bytes()
        served = [inputs["tree"], inputs["gwtar"], inputs["zim"]]
        ours_url, ours_proc = stack.enter_context(archiver_serve(served, args.workers))
        ngx_url, ngx_pid = stack.enter_context(nginx(work, [inputs["gwtar"]], args.nginx_workers))
        kiwix_url, kiwix_pid = stack.enter_context(kiwix(inputs["zim"]))
        ours_pid = ours_proc.pid
        g_ours, g_ngx = f"{ours_url}/site.gwtar.html", f"{ngx_url}/site.gwtar.html"
        z_ours, z_kiwix = f"{ours_url}/book/{VIDEO}", f"{kiwix_url}/book/{VIDEO}"
        p_ours, p_kiwix = f"{ours_url}/book/{CSS}", f"{kiwix_url}/book/{CSS}"
        off4k, off1m, off64k = (
            50_000_000 % (sizes["gwtar"] - 4096),
            30_000_000 % (sizes["gwtar"] - (1 << 20)),
            7_000_000 % (sizes["video"] - 65536),
        )
        for url in (g_ours, g_ngx):
            check_range(url, gwtar_bytes[off4k : off4k + 4096], off4k)
        for url in (z_ours, z_kiwix):
            check_range(url, video[off64k : off64k + 65536], off64k)
        del gwtar_bytes, video
        d, n, c = args.duration, args.rounds, args.connections
        identity = {"Accept-Encoding": "identity"}
        results: dict[str, Any] = {
            "machine": {"cpus": os.cpu_count()},
            "args": {k: str(v) for k, v in vars(args).items()},
        }
        scenarios = [
            (
                "gwtar 4 KiB ranges",
                {"archiver": (g_ours, ours_pid), "nginx": (g_ngx, ngx_pid)},
                {"Range": f"bytes={off4k}-{off4k + 4095}"},
                4096,
                "rps",
            ),
            (
                "gwtar 1 MiB ranges",
                {"archiver": (g_ours, ours_pid), "nginx": (g_ngx, ngx_pid)},
                {"Range": f"bytes={off1m}-{off1m + (1 << 20) - 1}"},
                1 << 20,
                "mb_per_s",
            ),
            (
                "ZIM video entry, 64 KiB ranges",
                {"archiver": (z_ours, ours_pid), "kiwix-serve": (z_kiwix, kiwix_pid)},
                {"Range": f"bytes={off64k}-{off64k + 65535}"},
                65536,
                "rps",
            ),
            (
                "ZIM small entry (CSS), whole",
                {"archiver": (p_ours, ours_pid), "kiwix-serve": (p_kiwix, kiwix_pid)},
                {},
                (inputs["tree"] / CSS).stat().st_size,
                "rps",
            ),
        ]
        for title, targets, headers, body, metric in scenarios:
            if args.only and not any(
                re.search(rf"\b{re.escape(word.strip())}", title, re.IGNORECASE)
                for word in args.only.split(",")
            ):
                continue
            runs = rounds(targets, d, n, c, {**identity, **headers})
            summaries = {name: summary(r, body) for name, r in runs.items()}
            names = list(targets)
            ratio = (
                summaries[names[0]][metric] / summaries[names[1]][metric]
                if summaries[names[1]][metric]
                else float("nan")
            )
            results[title] = {**summaries, "ratio": round(ratio, 3), "metric": metric}
            print(f"\n{title} (wrk -t2 -c{c} -d{d}s, median of {n} rounds; load average {_load()})")
            for name, s in summaries.items():
                print(
                    f"  {name:12} {s['rps']:>10,.0f} req/s {s['mb_per_s']:>9,.1f} MB/s"
                    f"  p50 {s['p50_ms']:.2f} ms  p99 {s['p99_ms']:.2f} ms"
                    f"  CPU {s['cpu_us_per_request']} us/req  rounds {s['rounds_rps']}"
                    f"  non-2xx/3xx {s['non_2xx_3xx']}  socket errors {s['socket_errors']}"
                )
            cpu = summaries[names[1]]["cpu_us_per_request"] / summaries[names[0]]["cpu_us_per_request"]
            results[title]["cpu_ratio"] = round(cpu, 3)
            print(f"  ratio {names[0]}/{names[1]} ({metric}): {ratio:.2f}")
            print(f"  CPU per request, {names[1]}/{names[0]}: {cpu:.2f}")
        if args.soak:
            s = soak(ours_url, ours_proc, work, args.soak, c, sizes)
            results["soak"] = s
            print(
                f"\nsoak: {s['seconds']} s mixed load on archiver serve, {s['requests']:,} requests"
                f" (load average {_load()})"
            )
            print(f"  statuses {s['statuses']}; outside 2xx/3xx: {s['unexpected']}")
            print(f"  socket errors: {s['socket_errors']}")
            print(
                f"  RSS (KiB, after 5 s warm-up): first {s['rss_kib_first']:,}, last {s['rss_kib_last']:,},"
                f" max {s['rss_kib_max']:,}"
            )
            print(f"  RSS samples (s, KiB): {s['rss_samples']}")
        if args.json:
            print(json.dumps(results, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
