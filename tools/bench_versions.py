"""A site's history, measured (issue 25 point 5): a generated site of ``--pages`` pages served by
Debian's nginx (ETag and Last-Modified on every file), captured, captured again unchanged, then
changed, each time with ``archiver capture --new-version`` and with ``wget -N --mirror`` (the anchor)
on the same states, on 127.0.0.1.

    python tools/bench_versions.py [--pages 1000] [--changed 10] [--removed 5] [--added 5]
                                   [--volatile 50] [--work DIR] [--json]

The site: ``index.html`` links to every page that exists in any state (``p/0.html`` …), so adding or
removing a page never changes the index; each page shows a "Generated at" line (the volatile pages get
a new time in the third state, nothing else) and text of its own; ``--removed`` pages are deleted in
the third state (their links then answer 404: gone), ``--added`` ones exist only there (404 before),
``--changed`` ones get a new paragraph.

For each run: wall time and CPU time (user + system of the child, from its rusage: on a shared
machine the wall time says more about the other processes than about archiver), bytes nginx sent
(its access log: status and body bytes of every request), new bytes stored (archiver:
``ls --versions``'s ``new_bytes``; wget: bytes of files it rewrote), and the ratios to the first
capture (wall and CPU). Each child runs with archiver's bytecode cached in the work folder
(``PYTHONPYCACHEPREFIX``, warmed before the first run, as tools/bench_capture.py does: an installed
archiver has its ``.pyc`` files, and a shell with ``PYTHONDONTWRITEBYTECODE`` would otherwise charge
every run ~0.15 s of CPU for compiling the modules it imports, a fifth of an unchanged re-capture).
After the unchanged state, two rows bound what an unchanged re-capture can cost on this machine:
``archiver nothing`` (the same capture resumed with nothing left to do: interpreter start, imports,
the state, the report; it asks again the URLs that failed, the 404s of the pages not yet added) and
``bare loop`` (a plain socket loop in the bench's own process asking every page once with its ETag
over one kept-alive connection, one request at a time as archiver's politeness does). Their sum is a
floor for the unchanged row, which does both and more (records, the version). Then ``archiver diff``
between the last two versions, checked against the truth:
every changed page named ``changed``, every removed page ``gone``, every added page ``added``, the
volatile-only pages ``unchanged, volatile`` (never ``changed``), and nothing else
(false positives and misses are listed). The load average is printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))

from nginx_static import serve_folder  # noqa: E402


def _page(i: int, stamp: str, extra: str = "") -> str:
    words = " ".join(f"w{(i * 7 + k) % 997}" for k in range(120))
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>Page {i}</title></head><body>"
        f'<nav><a href="../index.html">Home</a></nav><main><h1>Page {i}</h1><p>{words}</p>{extra}'
        f"<p>Generated at {stamp}</p></main></body></html>\n"
    )


def write_state(
    root: Path, pages: int, present: set[int], changed: set[int], volatile: set[int], third: bool
) -> None:
    """The site in one state (files written only when their bytes change, as a static site generator
    that keeps mtimes would not: every write changes Last-Modified and the ETag)."""
    (root / "p").mkdir(parents=True, exist_ok=True)
    index = "".join(f'<li><a href="p/{i}.html">Page {i}</a></li>' for i in range(pages + 64))
    _write(
        root / "index.html",
        f"<!DOCTYPE html><html><head><title>Home</title></head><body><ul>{index}</ul></body></html>\n",
    )
    for i in range(pages + 64):
        path = root / "p" / f"{i}.html"
        if i not in present:
            if path.exists():
                path.unlink()
            continue
        stamp = "2026-12-02 10:15:00" if third and i in volatile else "2026-12-01 09:00:00"
        extra = "<p>A paragraph added in the third state.</p>" if third and i in changed else ""
        _write(path, _page(i, stamp, extra))


def _write(path: Path, text: str) -> None:
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)


def _log_bytes(log: Path, since: int) -> tuple[int, int, int]:
    """(requests, body bytes, 304s) of the access log's lines after byte ``since``."""
    with log.open("rb") as f:
        f.seek(since)
        lines = f.read().decode().splitlines()
    total = sum(int(x.split()[1]) for x in lines if x.strip())
    return len(lines), total, sum(1 for x in lines if x.startswith("304 "))


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _warm(work: Path) -> None:
    """Compile archiver's modules once into a bytecode cache of ``work`` that every child then uses."""
    _ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    code = (
        "import archiver.cli.capture, archiver.cli.history, archiver.capture.crawl, archiver.capture.page,"
        " archiver.capture.seeds, archiver.versions.recapture, archiver.versions.diff"
    )
    subprocess.run([sys.executable, "-c", code], env=_ENV, check=True, cwd=REPO)


def _cpu_of_children() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, CPU seconds of the child and its own children, the finished process)."""
    cpu = _cpu_of_children()
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_ENV)
    return time.monotonic() - started, _cpu_of_children() - cpu, done


def _floors(resume: list[str], base: str, pages: int, log: Path) -> list[dict[str, Any]]:
    """Two rows that bound what an unchanged re-capture can cost here: archiver's fixed cost (the
    same capture resumed with nothing left to do: interpreter, imports, state, report) and the bare
    requests (a plain socket loop asking every page once with its ETag over one kept-alive
    connection, one request at a time as archiver's politeness does; in this process, so no start).
    Their sum is a floor: an unchanged re-capture does both and more (records, the version)."""
    rows = []
    mark = log.stat().st_size
    seconds, cpu, done = _run(resume)
    if done.returncode not in (0, 3):
        raise SystemExit(
            f"bench_versions: archiver capture (resumed): exit {done.returncode}: {done.stderr[-400:]}"
        )
    requests, sent, not_modified = _log_bytes(log, mark)
    rows.append(
        {
            "tool": "archiver",
            "run": "nothing",
            "seconds": round(seconds, 2),
            "cpu": round(cpu, 3),
            "requests": requests,
            "sent": sent,
            "not_modified": not_modified,
            "stored": 0,
        }
    )
    paths = ["/"] + [f"/p/{i}.html" for i in range(pages + 64)]
    tags = {p: _bare_get(base, p, b"")[1] for p in paths}  # the validators (not timed)
    mark = log.stat().st_size
    started, cpu0 = time.monotonic(), time.process_time()
    for p in paths:
        if tags[p]:
            _bare_get(base, p, b"If-None-Match: " + tags[p] + b"\r\n")
    seconds, cpu = time.monotonic() - started, time.process_time() - cpu0
    requests, sent, not_modified = _log_bytes(log, mark)
    rows.append(
        {
            "tool": "bare loop",
            "run": "unchanged",
            "seconds": round(seconds, 3),
            "cpu": round(cpu, 3),
            "requests": requests,
            "sent": sent,
            "not_modified": not_modified,
            "stored": 0,
        }
    )
    _BARE.clear()
    return rows


_BARE: list[socket.socket] = []


def _bare_get(base: str, path: str, extra: bytes) -> tuple[bytes, bytes]:
    """(status, ETag) of one GET over the kept connection (a new one when the server closed it)."""
    host = base.split("//", 1)[1].rstrip("/")
    for _ in range(2):
        if not _BARE:
            name, port = host.rsplit(":", 1)
            s = socket.create_connection((name, int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _BARE.append(s)
        s = _BARE[0]
        s.sendall(
            b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + host.encode() + b"\r\n" + extra + b"\r\n"
        )
        buf = b""
        while b"\r\n\r\n" not in buf and (chunk := s.recv(65536)):
            buf += chunk
        if b"\r\n\r\n" not in buf:  # closed (nginx's keepalive_requests): again on a new one
            _BARE.pop().close()
            continue
        head, _, body = buf.partition(b"\r\n\r\n")
        fields = dict(
            (k.strip().lower(), v.strip()) for k, _, v in (x.partition(b":") for x in head.split(b"\r\n")[1:])
        )
        size = int(fields.get(b"content-length", b"0"))
        while len(body) < size and (chunk := s.recv(65536)):
            body += chunk
        if fields.get(b"connection", b"").lower() == b"close":
            _BARE.pop().close()
        return head.split(b" ", 2)[1], fields.get(b"etag", b"")
    raise SystemExit(f"bench_versions: {base}{path}: no answer")


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--changed", type=int, default=10)
    ap.add_argument("--removed", type=int, default=5)
    ap.add_argument("--added", type=int, default=5)
    ap.add_argument("--volatile", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rng = random.Random(args.seed)
    first = set(range(args.pages))
    added = set(range(args.pages, args.pages + args.added))
    removed = set(rng.sample(sorted(first), args.removed))
    rest = sorted(first - removed)
    changed = set(rng.sample(rest, args.changed))
    volatile = set(rng.sample(sorted(set(rest) - changed), args.volatile))
    third = (first - removed) | added
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-versions-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)  # a --work folder that does not exist yet is made
        shutil.rmtree(work / "site", ignore_errors=True)
        site, tree, mirror, log = work / "site", work / "tree", work / "wget", work / "access.log"
        for p in (tree, mirror):
            shutil.rmtree(p, ignore_errors=True)
        log.unlink(missing_ok=True)
        log.touch()
        write_state(site, args.pages, first, changed, volatile, third=False)
        _warm(work)
        with serve_folder(site, work / "nginx", access_log=log) as base:
            states = [("first", False), ("unchanged", False), ("changed", True)]
            for n, (label, is_third) in enumerate(states):
                if is_third:
                    time.sleep(1.1)  # a new second: Last-Modified moves for the files rewritten
                    write_state(site, args.pages, third, changed, volatile, third=True)
                time.sleep(1.1)  # versions are named by the second their run started
                mark = log.stat().st_size
                cmd = [
                    sys.executable,
                    "-m",
                    "archiver",
                    "capture",
                    base,
                    "-o",
                    str(tree),
                    "--no-render",
                    "--delay",
                    "0",
                    "--json",
                    "--depth",
                    "3",
                ] + (["--new-version"] if n else [])
                seconds, cpu, done = _run(cmd)
                if done.returncode not in (0, 3):
                    raise SystemExit(
                        f"bench_versions: archiver capture: exit {done.returncode}: {done.stderr[-400:]}"
                    )
                requests, sent, not_modified = _log_bytes(log, mark)
                listed = subprocess.run(
                    [sys.executable, "-m", "archiver", "ls", str(tree), "--versions", "--json"],
                    capture_output=True,
                    text=True,
                    cwd=REPO,
                ).stdout.splitlines()
                new_bytes = json.loads(listed[-1])["new_bytes"] if listed else 0
                rows.append(
                    {
                        "tool": "archiver",
                        "run": label,
                        "seconds": round(seconds, 2),
                        "cpu": round(cpu, 3),
                        "requests": requests,
                        "sent": sent,
                        "not_modified": not_modified,
                        "stored": new_bytes,
                    }
                )
                if label == "unchanged":
                    rows.extend(_floors(cmd[: cmd.index("--new-version")], base, args.pages, log))
                mark = log.stat().st_size
                before = _du(mirror) if mirror.exists() else 0
                seconds, cpu, done = _run(["wget", "-N", "--mirror", "--no-verbose", "-P", str(mirror), base])
                requests, sent, not_modified = _log_bytes(log, mark)
                rows.append(
                    {
                        "tool": "wget -N",
                        "run": label,
                        "seconds": round(seconds, 2),
                        "cpu": round(cpu, 3),
                        "requests": requests,
                        "sent": sent,
                        "not_modified": not_modified,
                        "stored": max(0, _du(mirror) - before),
                    }
                )
        diff = subprocess.run(
            [sys.executable, "-m", "archiver", "diff", str(tree), "--json"],
            capture_output=True,
            text=True,
            cwd=REPO,
        )
        got: dict[str, str] = {}
        for line in diff.stdout.splitlines():
            if line.startswith('{"class"'):
                doc = json.loads(line)
                got[doc["path"]] = doc["class"]
    truth = {f"p/{i}.html": "changed" for i in changed}
    truth |= {f"p/{i}.html": "gone" for i in removed}
    truth |= {f"p/{i}.html": "added" for i in added}
    named = {p: c for p, c in got.items() if c not in ("volatile", "markup", "unchanged")}
    volatile_ok = sum(1 for i in volatile if got.get(f"p/{i}.html") == "volatile")
    misses = {p: c for p, c in truth.items() if named.get(p) != c}
    false = {p: c for p, c in named.items() if p not in truth}
    print(
        f"site: {args.pages} pages; third state: {args.changed} changed, {args.removed} removed, "
        f"{args.added} added, {args.volatile} volatile-only"
    )
    firsts = {r["tool"]: r for r in rows if r["run"] == "first"}
    for r in rows:
        base_row = firsts.get(r["tool"], firsts["archiver"])
        t_ratio = r["seconds"] / base_row["seconds"] if base_row["seconds"] else 0
        c_ratio = r["cpu"] / base_row["cpu"] if base_row["cpu"] else 0
        s_ratio = r["sent"] / base_row["sent"] if base_row["sent"] else 0
        st_ratio = r["stored"] / base_row["stored"] if base_row["stored"] else 0
        print(
            f"  {r['tool']:9} {r['run']:9} {r['seconds']:7.3f} s ({t_ratio:.2f}x)  CPU {r['cpu']:6.2f} s "
            f"({c_ratio:.2f}x)  {r['requests']:5} "
            f"requests ({r['not_modified']} x 304)  sent {r['sent']:>10} B ({s_ratio:.3f}x)  "
            f"stored {r['stored']:>10} B ({st_ratio:.3f}x)"
        )
    print(
        f"  diff: {len(truth) - len(misses)}/{len(truth)} pages named rightly, {len(false)} false positives, "
        f"{volatile_ok}/{len(volatile)} volatile-only pages 'unchanged, volatile'"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if misses:
        print(f"  misses: {dict(sorted(misses.items())[:10])}")
    if false:
        print(f"  false positives: {dict(sorted(false.items())[:10])}")
    if args.json:
        print(
            json.dumps({"rows": rows, "misses": misses, "false": false, "volatile_ok": volatile_ok}, indent=1)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
