"""Benchmark: pack one real documentation site into a ZIM with archiver and with zimwriterfs.

    python tools/bench_zim.py [SRC] [--work DIR] [--threads N] [--runs N] [--check] [--check-site]
                              [--random-mb N] [--baseline DIR]

SRC defaults to Python's HTML documentation from Debian's ``python3-doc``
(``/usr/share/doc/python3/html``, 530 pages, 67 MB). It is copied once into a plain folder (symlinks
resolved) with a 48×48 ``favicon.png`` added, and both tools pack that same folder, each in its own
process, in alternating rounds (``--runs``, default 3; medians reported, so a change in the machine's
load hits both alike): ``zimwriterfs`` (Debian zim-tools 3.1.3, libzim 8.1) with its defaults
plus the mandatory metadata, and ``archiver.zim.pack`` (python-libzim 3.13, libzim 9.8) with the
same metadata. Wall time, CPU time (user + system), output size and the child's peak RSS
(``wait4``) are printed with the load average and the ratios archiver / zimwriterfs (acceptance:
time ≤ 1.0×, size ≤ 1.0×). ``--check`` also runs bookworm's zimcheck (all checks but integrity)
on both outputs and ``archiver.zim.verify`` on archiver's; ``--check-site`` captures the docs served
on 127.0.0.1 with archiver, packs that and checks it the same way (the raw tree has broken links of
its own, see :func:`check_site`).
``--random-mb N`` adds N MB of random bytes as ``blobs/*.bin`` files (application/octet-stream,
fixed seed; 10 MB down to 60 kB) to the copied tree: data no codec shrinks, which archiver now stores
without compressing (formats/zim.md §3.2). ``--baseline DIR`` also packs with the archiver checkout
in DIR (say ``git worktree add /tmp/zimhead HEAD`` before a change), in the same alternating rounds,
and prints archiver / baseline.
No timing is asserted anywhere: this prints figures for a human.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SRC = Path("/usr/share/doc/python3/html")
META = {
    "title": "Python 3 documentation",
    "description": "The Python 3 documentation, offline",
    "language": "eng",
    "creator": "Python Software Foundation",
    "publisher": "archiver",
    "name": "docs.python.org_en_all",
}


Run = tuple[float, int, int, str, float]


def run_measured(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """(wall seconds, exit status, peak RSS in bytes, stderr tail, CPU seconds user+system) of one
    child process."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, proc.returncode, usage.ru_maxrss * 1024, err.decode("utf-8", "replace")[-2000:], cpu


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _summary(rows: list[Run]) -> tuple[float, int, int, str, float]:
    """Median wall time, worst exit status, highest peak RSS, the last stderr, median CPU time."""
    return (
        _median([r[0] for r in rows]),
        max(r[1] for r in rows),
        max(r[2] for r in rows),
        rows[-1][3],
        _median([r[4] for r in rows]),
    )


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def prepare(src: Path, work: Path) -> Path:
    tree = work / "tree"
    if tree.exists():
        return tree
    shutil.copytree(src, tree, symlinks=False)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from archiver.zim.icon import generated_png

    (tree / "favicon.png").write_bytes(generated_png("python-docs"))
    return tree


#: Sizes of the random files ``--random-mb`` adds, in turn, until the total is reached.
_BLOB_SIZES = (10_000_000, 3_000_000, 1_000_000, 300_000, 60_000)


def add_random(tree: Path, megabytes: int) -> int:
    """Write ``megabytes`` MB of random bytes (fixed seed) as ``tree/blobs/NNNN.bin``; the count."""
    import random

    folder = tree / "blobs"
    if folder.exists():
        return sum(1 for _ in folder.iterdir())
    folder.mkdir()
    rng = random.Random(20261130)
    left, n = megabytes * 1_000_000, 0
    while left > 0:
        size = min(left, _BLOB_SIZES[n % len(_BLOB_SIZES)])
        (folder / f"{n:04d}.bin").write_bytes(rng.randbytes(size))
        left -= size
        n += 1
    return n


def child_pack(tree: Path, out: Path, threads: int | None) -> None:
    """Runs in the child process: archiver's pack, its result as JSON on stdout."""
    from archiver.zim import pack

    result = pack(tree, out, metadata=META, workers=threads)
    print(json.dumps(result.to_json()), file=sys.stderr)


ZIMCHECK = ["zimcheck", "-C", "-M", "-F", "-P", "-U", "-X", "-L", "-0", "-R"]  # all but -I (integrity)


def zimcheck_and_verify(name: str, zim: Path, *, verify_it: bool = True) -> None:
    """Print bookworm zimcheck's verdict (and archiver verify's) on one ZIM."""
    run = subprocess.run([*ZIMCHECK, str(zim)], capture_output=True, text=True, check=False)
    errors = [line for line in run.stdout.splitlines() if "[ERROR]" in line]
    print(f"zimcheck {name}: exit {run.returncode}, {len(errors)} error lines")
    for line in errors[:5]:
        print("   ", line[:200])
    if not verify_it:
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from archiver.zim import verify

    report = verify(zim)
    print(f"archiver verify {name}: ok={report.ok}, {report.links} links in {report.documents} documents, "
          f"{len(report.problems)} problems")  # fmt: skip
    for p in report.problems[:5]:
        print("   ", str(p)[:200])


def check_site(tree: Path, work: Path) -> None:
    """The docs as a *site*: served on 127.0.0.1, captured by archiver (HTTP only, no browser),
    packed, then zimcheck and verify. The raw Debian tree has broken links of its own (every page
    links the root-absolute ``/license.html`` and ``/bugs.html``; ``whatsnew/changelog.html`` is not
    shipped), which capture rewrites or keeps pointing at the origin."""
    from concurrent.futures import ThreadPoolExecutor

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from archiver.capture import capture
    from archiver.fixture import FixtureConfig, FixtureServer
    from archiver.zim import pack

    site = work / "site-tree"
    if not site.exists():
        with FixtureServer(FixtureConfig(root=tree)) as server, ThreadPoolExecutor(1) as pool:
            pool.submit(
                capture, [server.url + "/index.html"], site, render=False, delay=0, depth=50,
                progress=False, skip_extensions=frozenset(),
            ).result()  # fmt: skip
    out = work / "site.zim"
    result = pack(site, out, metadata=META)
    print(f"captured docs site: {result.entries} entries, {result.size / 1e6:.2f} MB")
    zimcheck_and_verify("captured site", out)


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--threads", type=int, default=None, help="workers for both (default: each's own)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tool, alternating order; medians shown")
    parser.add_argument("--check", action="store_true", help="also run zimcheck and archiver verify")
    parser.add_argument(
        "--check-site", action="store_true",
        help="also capture the docs served on 127.0.0.1, pack that, and run zimcheck and verify",
    )  # fmt: skip
    parser.add_argument("--random-mb", type=int, default=0, help="add N MB of random .bin files")
    parser.add_argument(
        "--baseline", type=Path, help="another archiver checkout to pack with too (e.g. a worktree of HEAD)"
    )
    parser.add_argument("--child", nargs=2, metavar=("TREE", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_pack(Path(args.child[0]), Path(args.child[1]), args.threads)
        return 0
    if not args.src.is_dir():
        print(f"bench_zim: {args.src}: not a folder (apt-get install python3-doc)", file=sys.stderr)
        return 2
    pages = sum(1 for _ in args.src.rglob("*.html"))
    with tempfile.TemporaryDirectory(prefix="bench-zim-") as scratch:
        work = args.work or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        tree = prepare(args.src, work)
        if args.random_mb:
            blobs = add_random(tree, args.random_mb)
            print(f"added {blobs} random .bin files, {args.random_mb} MB")
        files = sum(1 for p in tree.rglob("*") if p.is_file())
        size_in = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        print(f"input: {args.src} → {files} files, {pages} pages, {size_in / 1e6:.1f} MB")
        ref_out, our_out = work / "zimwriterfs.zim", work / "archiver.zim"
        ref_argv = [
            "zimwriterfs", "-w", "index.html", "-I", "favicon.png", "-l", META["language"],
            "-t", META["title"], "-d", META["description"], "-c", META["creator"],
            "-p", META["publisher"], "-n", META["name"],
        ]  # fmt: skip
        if args.threads:
            ref_argv += ["-J", str(args.threads)]
        our_argv = [sys.executable, __file__, "--child", str(tree), str(our_out)]
        if args.threads:
            our_argv += ["--threads", str(args.threads)]
        argvs = {"zimwriterfs": [*ref_argv, str(tree), str(ref_out)], "archiver": our_argv}
        outs = {"zimwriterfs": ref_out, "archiver": our_out}
        envs: dict[str, dict[str, str] | None] = {"zimwriterfs": None, "archiver": None}
        if args.baseline:
            base_out = work / "baseline.zim"
            argvs["baseline"] = [*our_argv[:3], str(tree), str(base_out), *our_argv[5:]]
            outs["baseline"] = base_out
            envs["baseline"] = {**os.environ, "PYTHONPATH": str(args.baseline.resolve())}
        runs: dict[str, list[Run]] = {name: [] for name in argvs}
        print(f"before: {_load()}")
        for i in range(args.runs):
            # alternate who goes first, so a change in the machine's load hits both alike
            order = list(argvs) if i % 2 == 0 else list(reversed(argvs))
            for name in order:
                outs[name].unlink(missing_ok=True)  # zimwriterfs refuses to overwrite
                runs[name].append(run_measured(argvs[name], env=envs[name]))
        print(f"after:  {_load()}")
        rows = {name: _summary(got) for name, got in runs.items()}
        for name, got in runs.items():
            print(f"{name} seconds per run: " + ", ".join(f"{r[0]:.1f} (cpu {r[4]:.1f})" for r in got))
        pairs = [a[0] / b[0] for a, b in zip(runs["archiver"], runs["zimwriterfs"], strict=True)]
        print("time ratio per round: " + ", ".join(f"{p:.2f}" for p in pairs))
        sizes = outs
        print(f"{'tool':<12} {'seconds':>8} {'cpu s':>8} {'MB':>8} {'peak RSS MB':>12}  exit")
        for name, (seconds, code, rss, err, cpu) in rows.items():
            size = sizes[name].stat().st_size if sizes[name].exists() else 0
            print(f"{name:<12} {seconds:8.2f} {cpu:8.2f} {size / 1e6:8.2f} {rss / 1e6:12.0f}  {code}")
            if code:
                print(err, file=sys.stderr)
        if all(row[1] == 0 for row in rows.values()):
            t = rows["archiver"][0] / rows["zimwriterfs"][0]
            c = rows["archiver"][4] / rows["zimwriterfs"][4]
            s = our_out.stat().st_size / ref_out.stat().st_size
            r = rows["archiver"][2] / rows["zimwriterfs"][2]
            print(
                f"ratio archiver/zimwriterfs (medians): time {t:.2f}x, cpu {c:.2f}x, size {s:.2f}x, "
                f"peak RSS {r:.2f}x"
            )
        if args.baseline and rows["archiver"][1] == 0 and rows["baseline"][1] == 0:
            t = rows["archiver"][0] / rows["baseline"][0]
            c = rows["archiver"][4] / rows["baseline"][4]
            s = our_out.stat().st_size / outs["baseline"].stat().st_size
            print(f"ratio archiver/baseline (medians): time {t:.2f}x, cpu {c:.2f}x, size {s:.2f}x")
        if args.check and our_out.exists():
            # the raw tree's own broken links (see check_site) fail both tools' ZIMs alike
            zimcheck_and_verify("zimwriterfs (raw tree)", ref_out, verify_it=False)
            zimcheck_and_verify("archiver (raw tree)", our_out)
        if args.check_site:
            check_site(tree, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
