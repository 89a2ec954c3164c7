"""Benchmark: pack one real documentation site into a ZIM with archiver and with zimwriterfs.

    python tools/bench_zim.py [SRC] [--work DIR] [--threads N] [--runs N] [--check]

SRC defaults to Python's HTML documentation from Debian's ``python3-doc``
(``/usr/share/doc/python3/html``, 530 pages, 67 MB). It is copied once into a plain folder (symlinks
resolved) with a 48×48 ``favicon.png`` added, and both tools pack that same folder, each in its own
process, one after the other: ``zimwriterfs`` (Debian zim-tools 3.1.3, libzim 8.1) with its defaults
plus the mandatory metadata, and ``archiver.zim.pack`` (python-libzim 3.13, libzim 9.8) with the
same metadata. Wall time, output size and the child's peak RSS (``wait4``) are printed with the
ratios archiver / zimwriterfs (acceptance: time ≤ 1.0×, size ≤ 1.0×). ``--check`` also runs
bookworm's zimcheck (all checks but integrity) and ``archiver.zim.verify`` on archiver's output.
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


def run_measured(argv: list[str]) -> tuple[float, int, int, str]:
    """(seconds, exit status, peak RSS in bytes, stderr tail) of one child process."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    return seconds, proc.returncode, usage.ru_maxrss * 1024, err.decode("utf-8", "replace")[-2000:]


def _median(rows: list[tuple[float, int, int, str]]) -> tuple[float, int, int, str]:
    ordered = sorted(rows, key=lambda r: r[0])
    middle = ordered[len(ordered) // 2]
    return middle[0], max(r[1] for r in rows), max(r[2] for r in rows), middle[3]


def prepare(src: Path, work: Path) -> Path:
    tree = work / "tree"
    if tree.exists():
        return tree
    shutil.copytree(src, tree, symlinks=False)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from archiver.zim.icon import generated_png

    (tree / "favicon.png").write_bytes(generated_png("python-docs"))
    return tree


def child_pack(tree: Path, out: Path, threads: int | None) -> None:
    """Runs in the child process: archiver's pack, its result as JSON on stdout."""
    from archiver.zim import pack

    result = pack(tree, out, metadata=META, workers=threads)
    print(json.dumps(result.to_json()), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("src", nargs="?", type=Path, default=DEFAULT_SRC)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--threads", type=int, default=None, help="workers for both (default: each's own)")
    parser.add_argument("--runs", type=int, default=1, help="runs per tool, alternating order; medians shown")
    parser.add_argument("--check", action="store_true", help="also run zimcheck and archiver verify")
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
        runs: dict[str, list[tuple[float, int, int, str]]] = {"zimwriterfs": [], "archiver": []}
        for i in range(args.runs):
            # alternate who goes first, so a change in the machine's load hits both alike
            for name in ("zimwriterfs", "archiver") if i % 2 == 0 else ("archiver", "zimwriterfs"):
                (ref_out if name == "zimwriterfs" else our_out).unlink(
                    missing_ok=True
                )  # zimwriterfs refuses to overwrite
                runs[name].append(run_measured(argvs[name]))
        rows = {name: _median(got) for name, got in runs.items()}
        for name, got in runs.items():
            print(f"{name} seconds per run: " + ", ".join(f"{r[0]:.1f}" for r in got))
        sizes = {"zimwriterfs": ref_out, "archiver": our_out}
        print(f"{'tool':<12} {'seconds':>8} {'MB':>8} {'peak RSS MB':>12}  exit")
        for name, (seconds, code, rss, err) in rows.items():
            size = sizes[name].stat().st_size if sizes[name].exists() else 0
            print(f"{name:<12} {seconds:8.2f} {size / 1e6:8.2f} {rss / 1e6:12.0f}  {code}")
            if code:
                print(err, file=sys.stderr)
        if all(code == 0 for _, code, _, _ in rows.values()):
            t = rows["archiver"][0] / rows["zimwriterfs"][0]
            s = our_out.stat().st_size / ref_out.stat().st_size
            r = rows["archiver"][2] / rows["zimwriterfs"][2]
            print(f"ratio archiver/zimwriterfs: time {t:.2f}x, size {s:.2f}x, peak RSS {r:.2f}x")
        if args.check and our_out.exists():
            check = ["zimcheck", "-C", "-M", "-F", "-P", "-U", "-X", "-L", "-0", "-R"]
            for name, path in sizes.items():
                run = subprocess.run([*check, str(path)], capture_output=True, text=True, check=False)
                errors = [line for line in run.stdout.splitlines() if "[ERROR]" in line]
                print(f"zimcheck {name}: exit {run.returncode}, {len(errors)} error lines")
                for line in errors[:5]:
                    print("   ", line[:200])
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from archiver.zim import verify

            report = verify(our_out)
            print(f"archiver verify: ok={report.ok}, {report.links} links in {report.documents} documents, "
                  f"{len(report.problems)} problems")  # fmt: skip
            for p in report.problems[:5]:
                print("   ", str(p)[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main())
