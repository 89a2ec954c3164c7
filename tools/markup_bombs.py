"""Pages whose markup costs the HTML parser far more than its size (formats/tree.md §9.5): what
``archiver.html_depth.bound_depth`` bounds, and what it does not yet.

Each input is generated here (nothing fetched), parsed by ``archiver.capture.rewrite_html.parse`` (the
depth pre-pass, then Lexbor) in a child process of its own with limits (``--cpu`` seconds of CPU,
``--memory`` MiB of address space), and reported with its size, its start tags, the parse's CPU
and the child's peak RSS, or the limit it hit; then what ``archiver.markup_guard.vet`` says of it
(passed, or refused, and in how long). The ``bounded`` rows are kept by the pre-pass (a fraction of
a second each); the ``open`` rows are the tree-construction moves the pre-pass does not see: a page
of a few hundred kilobytes that costs seconds or gigabytes, which the guard refuses before archiver
parses it.

    .venv/bin/python tools/markup_bombs.py [--units 30000] [--cpu 30] [--memory 4096] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: (name, state, prefix, unit): the page is ``<!doctype html><body>`` + prefix + unit * units
CASES: list[tuple[str, str, str, str]] = [
    ("nested div", "bounded", "", "<div>x"),
    ("self-closed div", "bounded", "", "<div/>x"),
    ("ruby rt", "bounded", "", "<rt>x"),
    ("empty comment <!-->", "bounded", "<!-->", "<div>x"),
    ("style end tag with attributes", "bounded", "<style></style x>", "<div>x"),
    ("noscript", "bounded", "<noscript>", "<div>x"),
    ("long-s style <ſtyle>", "bounded", "<ſtyle>", "<div>x"),
    ("misnested end tag", "open", "", "<span><div></span>x"),
    ("adoption agency", "open", "", "<b><div></b>x"),
    ("comment start inside a tag", "open", "<a <!-- >", "<div>x"),
    ("comment start inside a bogus comment", "open", "<? <!-- >", "<div>x"),
    ("reopened formatting elements", "open", "<p>" + "".join(f"<b a{i}>" for i in range(500)), "</p><p>x"),
]


def _child(prefix: str, unit: str, units: int) -> None:
    from archiver.capture.rewrite_html import parse

    page = "<!doctype html><body>" + prefix + unit * units
    started = time.process_time()
    parse(page)
    cpu = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tags = page.count("<") - page.count("</")
    print(json.dumps({"bytes": len(page.encode()), "start_tags": tags, "cpu": cpu, "rss": peak}))


def _guard(n: int, units: int) -> dict[str, object]:
    from archiver import markup_guard

    _, _, prefix, unit = CASES[n]
    page = "<!doctype html><body>" + prefix + unit * units
    started = time.monotonic()
    try:
        markup_guard.vet(page)
        said = "passed"
    except markup_guard.CostlyMarkup as e:
        said = f"refused ({e})"
    return {"guard": said, "guard_seconds": round(time.monotonic() - started, 3)}


def _limits(cpu: int, memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (memory << 20, memory << 20))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=30000, help="repetitions of each input's unit")
    ap.add_argument("--cpu", type=int, default=30, help="CPU seconds a parse may take")
    ap.add_argument("--memory", type=int, default=4096, help="MiB of address space a parse may take")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        _, _, prefix, unit = CASES[args.child]
        _child(prefix, unit, args.units)
        return 0
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    for n, (name, state, _, _) in enumerate(CASES):
        cmd = [sys.executable, __file__, "--child", str(n), "--units", str(args.units)]
        done = subprocess.run(
            cmd, capture_output=True, text=True, cwd=REPO, preexec_fn=lambda: _limits(args.cpu, args.memory)
        )
        row: dict[str, object] = {"input": name, "state": state}
        row.update(_guard(n, args.units))
        if done.returncode == 0:
            row.update(json.loads(done.stdout.splitlines()[-1]))
        else:
            last = (done.stderr.strip().splitlines() or ["killed"])[-1][-80:]
            row["limit"] = f"exit {done.returncode}: {last}"
        rows.append(row)
        if args.json:
            print(json.dumps(row), flush=True)
        elif "cpu" in row:
            print(
                f"{state:8} {name:40} {row['bytes'] / 1024:8.0f} KiB {row['start_tags']:8} tags "
                f"{row['cpu']:7.2f} s CPU {int(row['rss']) >> 20:6} MiB peak  "  # type: ignore[call-overload]
                f"guard: {row['guard']} in {row['guard_seconds']:.2f} s",
                flush=True,
            )
        else:
            print(
                f"{state:8} {name:40} over a limit ({row['limit']})  "
                f"guard: {row['guard']} in {row['guard_seconds']:.2f} s",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
