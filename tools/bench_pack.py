"""Benchmark gwtar packing and verifying against GNU tar + sha256sum on the same generated tree.

    python tools/bench_pack.py [--size-gb 1.0] [--rounds 2] [--dir DIR] [--keep]

Generates a tree of at least ``--size-gb`` GB (many small files of 1–48 KiB in nested folders, pages
linking some of them, and a few large files) in a temporary folder (printed; removed at the end unless
``--keep``), then runs each operation as its own process, ``--rounds`` times in alternation, and keeps
each one's best wall time and its peak RSS (``ru_maxrss`` from ``os.wait4``):

- ``archiver pack`` (the library call ``archiver.gwtar.pack``, no FEC) vs ``tar cf`` + ``sha256sum``
  of the tar (both read the tree once and write one archive), and vs ``tar cf`` + ``sync FILE`` +
  ``sha256sum`` (pack fsyncs its output before renaming it; plain tar does not);
- ``archiver verify`` (``archiver.gwtar.verify``) vs ``sha256sum`` of the gwtar.

Prints a table with the ratios. Exit status 0 when the acceptance bounds of issue 3 hold (pack ≤ 1.1×,
verify ≤ 1.1×, peak RSS ≤ 150 MB), 1 otherwise. Timing is never asserted in tests; this is where it
is measured.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAND_IN_LOADER = "window.stop();\n/* benchmark stand-in: js/loader.js is not in this checkout */\n"


@dataclass
class Run:
    seconds: float
    rss_mb: float


GNU_TIME = Path("/usr/bin/time")


def run(argv: list[str], *, cwd: Path | None = None) -> Run:
    """Run one process; its wall time and peak resident set size. The RSS comes from GNU time's %M
    when it is installed (a child forked from this driver would count the driver's pages too), else
    from ``os.wait4``."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        wrapped = [str(GNU_TIME), "-f", "%M", "-o", rss.name, *argv] if GNU_TIME.exists() else argv
        start = time.perf_counter()
        proc = subprocess.Popen(wrapped, cwd=cwd, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(f"bench: {' '.join(argv)} exited {code}")
        text = rss.read().strip()
        kib = int(text.splitlines()[-1]) if GNU_TIME.exists() and text else usage.ru_maxrss
    return Run(elapsed, kib / 1024)


def generate(root: Path, size: int, seed: int = 3) -> tuple[int, int]:
    """Write the tree; return (files, bytes)."""
    rng = random.Random(seed)
    pool = os.urandom(64 << 20)

    def blob(n: int) -> bytes:
        at = rng.randrange(0, len(pool) - n) if n < len(pool) else 0
        return pool[at : at + n] if n <= len(pool) else (pool * (n // len(pool) + 1))[:n]

    files = written = 0
    large = [size // 5, size // 6, size // 8]  # a few large ones: about half the bytes
    for i, n in enumerate(large):
        p = root / "_archiver" / "bench.example" / "media" / f"large-{i}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        with p.open("wb") as f:
            left = n
            while left:
                chunk = min(left, len(pool))
                f.write(pool[:chunk])
                left -= chunk
        files, written = files + 1, written + n
    links: list[str] = []
    while written < size:
        depth = rng.randrange(1, 5)
        folder = "/".join(f"d{rng.randrange(40)}" for _ in range(depth))
        n = rng.randrange(1024, 48 * 1024)
        if rng.random() < 0.1:
            rel = f"{folder}/page-{files}.html"
            data = f"<!DOCTYPE html><title>Page {files}</title><p>{'x' * (n // 2)}</p>".encode()
        else:
            rel = (
                f"_archiver/bench.example/{folder}/asset-{files}.{rng.choice(['png', 'css', 'js', 'woff2'])}"
            )
            data = blob(n)
            if len(links) < 200:
                links.append(rel)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        files, written = files + 1, written + len(data)
    body = "".join(f'<img src="{link}">' for link in links if link.endswith(".png"))
    (root / "index.html").write_text(f"<!DOCTYPE html><title>Bench</title>{body}", encoding="utf-8")
    return files + 1, written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--generate"]:
        print(*generate(Path(argv[1]), int(argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-gb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=None, help="where to make the temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the generated tree and outputs")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="gwtar-bench-", dir=args.dir))
    print(f"bench: working in {work} (removed at the end{'; --keep: kept' if args.keep else ''})", flush=True)
    try:
        tree, out = work / "tree", work / "out"
        tree.mkdir()
        out.mkdir()
        t = time.perf_counter()
        # in a child process, so this driver never holds the generator's buffers
        gen = subprocess.run(
            [sys.executable, __file__, "--generate", str(tree), str(int(args.size_gb * (1 << 30)))],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        count, total = map(int, gen.stdout.split())
        took = time.perf_counter() - t
        print(f"bench: generated {count} files, {total / (1 << 30):.2f} GiB in {took:.1f} s",
              flush=True)  # fmt: skip
        loader_file = work / "loader.js"
        found = ROOT / "js" / "loader.js"
        loader_file.write_text(found.read_text() if found.is_file() else STAND_IN_LOADER, encoding="ascii")
        gw = out / "bench.gwtar.html"
        tarball = out / "bench.tar"
        py = sys.executable
        pack_code = (
            "import sys; from pathlib import Path; from archiver.gwtar import pack; "
            f"pack(Path({str(tree)!r}), Path({str(gw)!r}), loader=Path({str(loader_file)!r}).read_text())"
        )
        verify_code = (
            "import sys; from pathlib import Path; from archiver.gwtar import verify; "
            f"r = verify(Path({str(gw)!r})); print(*r.lines(), sep='\\n', file=sys.stderr); "
            "sys.exit(r.exit_code)"
        )
        best: dict[str, Run] = {}

        def keep(name: str, r: Run) -> None:
            old = best.get(name)
            best[name] = Run(min(r.seconds, old.seconds) if old else r.seconds,
                             max(r.rss_mb, old.rss_mb) if old else r.rss_mb)  # fmt: skip

        for i in range(args.rounds):
            tar_run = run(["tar", "cf", str(tarball), "-C", str(tree), "."])
            sum_run = run(["sha256sum", str(tarball)])
            keep(
                "tar cf + sha256sum",
                Run(tar_run.seconds + sum_run.seconds, max(tar_run.rss_mb, sum_run.rss_mb)),
            )
            tar_run = run(["tar", "cf", str(tarball), "-C", str(tree), "."])
            sync_run = run(["sync", str(tarball)])  # fsync the tar, as pack fsyncs its output
            sum_run = run(["sha256sum", str(tarball)])
            keep(
                "tar cf + sync + sha256sum",
                Run(
                    tar_run.seconds + sync_run.seconds + sum_run.seconds, max(tar_run.rss_mb, sum_run.rss_mb)
                ),
            )
            keep("archiver pack", run([py, "-c", pack_code], cwd=ROOT))
            keep("sha256sum (gwtar)", run(["sha256sum", str(gw)]))
            keep("archiver verify", run([py, "-c", verify_code], cwd=ROOT))
            print(f"bench: round {i + 1} done", flush=True)

        size = gw.stat().st_size
        print()
        print(
            f"tree: {count} files, {total / 1e9:.3f} GB; gwtar {size / 1e9:.3f} GB; "
            f"tar {tarball.stat().st_size / 1e9:.3f} GB"
        )
        print(f"{'operation':<26} {'seconds':>8} {'peak RSS MB':>12}")
        for name, r in best.items():
            print(f"{name:<26} {r.seconds:>8.2f} {r.rss_mb:>12.1f}")
        pack_ratio = best["archiver pack"].seconds / best["tar cf + sha256sum"].seconds
        durable_ratio = best["archiver pack"].seconds / best["tar cf + sync + sha256sum"].seconds
        verify_ratio = best["archiver verify"].seconds / best["sha256sum (gwtar)"].seconds
        print()
        print(f"pack / (tar cf + sha256sum) = {pack_ratio:.2f}   (bound 1.10)")
        print(f"pack / (tar cf + sync + sha256sum) = {durable_ratio:.2f}   (pack fsyncs; plain tar does not)")
        print(f"verify / sha256sum          = {verify_ratio:.2f}   (bound 1.10)")
        rss = max(best["archiver pack"].rss_mb, best["archiver verify"].rss_mb)
        print(f"peak RSS of pack and verify = {rss:.1f} MB (bound 150)")
        try:
            load = os.getloadavg()
            print(
                f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs"
            )
        except OSError:
            pass
        return 0 if pack_ratio <= 1.1 and verify_ratio <= 1.1 and rss <= 150 else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
