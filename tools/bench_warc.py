"""Benchmark the WARC side against Webrecorder's and openZIM's tools on the same WARC (issue 16 §6).

    python tools/bench_warc.py [SRC] [--work DIR] [--runs 3] [--samples 8]
                               [--warc2zim PATH] [--wacz PATH]

1. SRC (default: Python's HTML documentation from Debian's ``python3-doc``, or ``python3.11-doc``) is
   served by Debian's nginx on 127.0.0.1 and mirrored by ``wget --mirror --warc-file`` into one WARC
   (the input both sides read; made here, never committed).
2. **Import into a ZIM**: ``archiver pack W.warc.gz --format zim --no-render`` next to ``warc2zim``
   (PyPI, in a virtual environment of its own: it pins its own libzim; ``--warc2zim`` names its
   executable, default ``.venv-warc2zim/bin/warc2zim``: ``python3 -m venv .venv-warc2zim &&
   .venv-warc2zim/bin/pip install warc2zim``), ``--runs`` times in alternation, each a child
   process: wall time, CPU time, peak RSS (``wait4``), ZIM size; medians and the ratios.
3. **Pages**: both ZIMs served by ``kiwix-serve`` on loopback; ``--samples`` pages of the site
   screenshotted in Chromium live (nginx) and from each ZIM (``/content/BOOK/PATH``): the share of
   pixels that differ (tools/realsites.py's measure). kiwix-serve runs with ``--nosearchbar`` (Debian's
   libkiwix 11 lays a bar over every page otherwise); warc2zim's pages replay through a service
   worker (wabac.js), which that kiwix-serve may not run: a blank page shows as a large share.
4. **WACZ export**: ``archiver pack W.warc.gz --format wacz`` next to ``wacz create`` (the ``wacz``
   package) on the same WARC, in alternation.

Nothing is asserted: the figures are for the closing notes. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from bench_zim import run_measured  # noqa: E402
from realsites import free_port, nginx, pixel_share, samples, screenshots, wait_listening  # noqa: E402

SOURCES = (Path("/usr/share/doc/python3/html"), Path("/usr/share/doc/python3.11/html"))


def mirror(url: str, work: Path) -> tuple[Path, float]:
    """wget's WARC of the site at ``url`` (and the seconds it took)."""
    folder = work / "wget"
    folder.mkdir()
    started = time.monotonic()
    subprocess.run(
        ["wget", "--mirror", "--no-verbose", "-e", "robots=off", "--warc-file=site", "--no-warc-keep-log",
         "--warc-cdx=off", url],
        cwd=folder, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    warc = folder / "site.warc.gz"
    if not warc.is_file():
        raise SystemExit("bench_warc: wget wrote no WARC")
    return warc, time.monotonic() - started


@contextlib.contextmanager
def kiwix(zims: list[Path]) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        ["kiwix-serve", "--nosearchbar", "--address", "127.0.0.1", "--port", str(port), *map(str, zims)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(port, proc, "bench_warc: kiwix-serve", 15)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return int(r.status)
    except OSError:
        return 0


def zim_url(base: str, book: str, live: str, page: str) -> str | None:
    """The kiwix-serve URL of site page ``page`` in ``book`` (kiwix-serve names a book by its file's
    stem): archiver's ZIM keeps tree paths, warc2zim's host-prefixed paths."""
    host = live.split("://", 1)[1].rstrip("/")
    for prefix in ("/content", ""):  # libkiwix 12+ serves /content/BOOK/…; Debian's older one /BOOK/…
        for path in (page, f"{host}/{page}", f"A/{host}/{page}"):
            url = f"{base}{prefix}/{book}/{path}"
            if _status(url) == 200:
                return url
    return None


def row(name: str, runs: list[tuple[float, int, int, str, float]], size: int | None) -> dict[str, float]:
    failed = [r for r in runs if r[1] != 0]
    if failed:
        print(f"  {name}: exit {failed[0][1]}: {failed[0][3].strip().splitlines()[-1:]}", file=sys.stderr)
    return {
        "seconds": statistics.median(r[0] for r in runs),
        "cpu": statistics.median(r[4] for r in runs),
        "rss_mb": max(r[2] for r in runs) / 1e6,
        "size_mb": (size or 0) / 1e6,
    }


def _line(name: str, r: dict[str, float]) -> str:
    return f"  {name:<24} {r['seconds']:8.2f} {r['cpu']:7.2f} {r['rss_mb']:12.0f} {r['size_mb']:8.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--warc2zim", default=str(ROOT / ".venv-warc2zim/bin/warc2zim"))
    parser.add_argument("--wacz", default=shutil.which("wacz") or str(Path(sys.executable).parent / "wacz"))
    args = parser.parse_args(argv)
    src = args.src or next((p for p in SOURCES if (p / "index.html").is_file()), None)
    if src is None:
        raise SystemExit("bench_warc: no documentation site (apt-get install python3-doc)")
    have_w2z = Path(args.warc2zim).is_file()
    with tempfile.TemporaryDirectory(prefix="bench-warc-", dir=args.work) as scratch:
        work = Path(scratch)
        print(
            f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"
        )
        with nginx(src, work) as live:
            warc, wget_s = mirror(live, work)
            print(f"input: {src} mirrored by wget in {wget_s:.1f} s: {warc.stat().st_size / 1e6:.1f} MB WARC")
            py = sys.executable
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            ours, theirs = work / "archiver.zim", work / "w2z"
            zim_runs: dict[str, list[tuple[float, int, int, str, float]]] = {"archiver": [], "warc2zim": []}
            wacz_runs: dict[str, list[tuple[float, int, int, str, float]]] = {
                "archiver": [],
                "wacz create": [],
            }
            for i in range(args.runs):
                order = ["archiver", "warc2zim"] if i % 2 == 0 else ["warc2zim", "archiver"]
                for name in order:
                    if name == "archiver":
                        ours.unlink(missing_ok=True)
                        argv_ = [py, "-m", "archiver", "pack", str(warc), "--format", "zim", "--no-render",
                                 "-o", str(ours)]  # fmt: skip
                        zim_runs[name].append(run_measured(argv_, env))
                    elif have_w2z:
                        shutil.rmtree(theirs, ignore_errors=True)
                        theirs.mkdir()
                        argv_ = [args.warc2zim, "--name", "docs", "--title", "Docs", "--output", str(theirs),
                                 "--url", live, str(warc)]  # fmt: skip
                        zim_runs[name].append(run_measured(argv_))
                for name in ["archiver", "wacz create"] if i % 2 == 0 else ["wacz create", "archiver"]:
                    out = work / f"{name.replace(' ', '-')}.wacz"
                    out.unlink(missing_ok=True)
                    if name == "archiver":
                        argv_ = [py, "-m", "archiver", "pack", str(warc), "--format", "wacz", "-o", str(out)]
                        wacz_runs[name].append(run_measured(argv_, env))
                    else:
                        wacz_runs[name].append(run_measured([args.wacz, "create", "-o", str(out), str(warc)]))
            w2z_zims = sorted(theirs.glob("*.zim")) if theirs.is_dir() else []
            keep = work.parent / "bench-warc-last"
            if w2z_zims:
                shutil.rmtree(keep, ignore_errors=True)
                keep.mkdir()
                shutil.copy(w2z_zims[0], keep / "warc2zim.zim")
            table = {
                "archiver": row(
                    "archiver", zim_runs["archiver"], ours.stat().st_size if ours.is_file() else None
                ),
            }
            if zim_runs["warc2zim"]:
                table["warc2zim"] = row(
                    "warc2zim", zim_runs["warc2zim"], w2z_zims[0].stat().st_size if w2z_zims else None
                )
            print("\nWARC → ZIM (medians)        seconds   cpu s   peak RSS MB   ZIM MB")
            for name, r in table.items():
                print(_line(name, r))
            if "warc2zim" in table:
                a, b = table["archiver"], table["warc2zim"]
                print(f"  archiver / warc2zim: time {a['seconds'] / b['seconds']:.2f}x, size "
                      f"{a['size_mb'] / max(b['size_mb'], 1e-9):.2f}x")  # fmt: skip
            else:
                print(f"  warc2zim not found at {args.warc2zim}: only archiver measured")
            wz = {
                k: row(k, v, (work / f"{k.replace(' ', '-')}.wacz").stat().st_size)
                for k, v in wacz_runs.items()
            }
            print("\nWARC → WACZ (medians)       seconds   cpu s   peak RSS MB  WACZ MB")
            for name, r in wz.items():
                print(_line(name, r))
            ratio = wz["archiver"]["seconds"] / wz["wacz create"]["seconds"]
            print(f"  archiver / wacz create: time {ratio:.2f}x")
            # pages: live vs each ZIM through kiwix-serve
            pages = sorted(
                p.relative_to(src).as_posix() for p in src.rglob("*.html") if "_sources" not in p.parts
            )
            chosen = samples(pages, args.samples)
            zims = [ours, *w2z_zims[:1]]
            with kiwix(zims) as base:
                pairs: dict[str, list[tuple[str, str]]] = {z.stem: [] for z in zims}
                missing: dict[str, int] = {z.stem: 0 for z in zims}
                for page in chosen:
                    for z in zims:
                        url = zim_url(base, z.stem, live, page)
                        if url is None:
                            missing[z.stem] += 1
                        else:
                            pairs[z.stem].append((live + page, url))
                print(f"\npages against the live site ({len(chosen)} samples), share of pixels that differ:")
                for book, got in pairs.items():
                    shares = [pixel_share(a, b) for a, b in screenshots(got)] if got else []
                    worst = max(shares) if shares else float("nan")
                    mean = statistics.mean(shares) if shares else float("nan")
                    print(f"  {book:<24} found {len(got)}/{len(chosen)}, mean {mean:.3%}, worst {worst:.3%}"
                          f" (missing {missing[book]})")  # fmt: skip
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
