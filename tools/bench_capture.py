"""Benchmark ``archiver capture`` against the reference tools on a generated site on 127.0.0.1.

    python tools/bench_capture.py [--pages 500] [--rendered-pages 40] [--tabs 3] [--single-file PATH]
                                  [--repeat N] [--warc] [--site DIR] [--no-chromium] [--rendered-only]

1. Generates a site of ``--pages`` pages (each links to the next five pages and the home page, shares
   one stylesheet with a background image and a web font, and shows two of 50 images) and serves it
   with :class:`archiver.fixture.FixtureServer` (no robots.txt, no latency).
2. **No rendering**: ``archiver capture --no-render`` against ``wget --mirror --convert-links
   --page-requisites`` on the whole site. Same politeness: no delay, one request at a time (wget is
   sequential; archiver's rule is one request at a time per host). With ``--repeat N`` the two take
   turns N times and each keeps its fastest run (for a machine that other work makes noisy).
   A third row, ``python_floor``, runs ``tools/capture_floor.py`` in the same turns: the least a Python
   capture can do (fetch, parse, rewrite, atomic write, one SQLite commit per URL, nothing else), so the
   table shows how much of the gap to wget is Python's floor and how much is archiver's own work.
3. **Rendering**: ``archiver capture`` (Chromium) against ``single-file-cli`` (npm) on the same first
   ``--rendered-pages`` pages, given to both as a URL list, ``--tabs`` pages at a time for both
   (``--max-parallel-workers`` for single-file). Skipped, with the reason printed, when single-file is
   not installed (``npm install single-file-cli``), and altogether with ``--rendered-pages 0``.
   Beside them, Chromium alone on the same URLs with the same number of tabs (``tools/chromium_floor.py``,
   issue 24): ``chromium_bare`` (navigate, wait for ``load``, serialise the DOM) and ``chromium_careful``
   (the same plus one scroll to the bottom and a wait of at most 2 s for the network to go idle), and
   the ratios of ``archiver_render`` to each (``--no-chromium`` leaves them out).
4. **Recording** (``--warc``): the same archiver captures again with ``--warc`` (every exchange
   written as WARC, formats/warc.md §7), in the same turns as the plain ones (no-render) and right
   after the plain rendered one: rows ``archiver_no_render_warc`` and ``archiver_render_warc``, and the
   overhead of recording as a ratio (issue 16 asks for at most 10 %).

**A real site** (``--site DIR``, for example ``/usr/share/doc/python3/html`` from Debian's python3-doc
or ``/usr/share/doc/rust-doc/html`` from rust-doc): instead of the generated site, Debian's nginx serves
that folder on 127.0.0.1 (``tools/nginx_static.py``) and every tool reads it from there: no-render
archiver and wget mirror the whole site from its ``index.html``; the rendered rows take
``--rendered-pages`` of its pages, spread evenly over the sorted list of its ``.html`` files. The
Python floor is left out there (it understands only the generated site).

Each tool runs as a child process, Python ones with their bytecode cached in a temporary folder
(``PYTHONPYCACHEPREFIX``, warmed before the first run: an installed archiver has its ``.pyc`` files,
and a shell with ``PYTHONDONTWRITEBYTECODE`` would otherwise charge every run the compiling of each
module it imports, the recorder's more than the rest); wall time and the child's peak RSS
(``wait4``: the largest of the process and the children it waited for) are measured. Prints one
table and the ratios; ``--json`` prints them as JSON instead. Nothing here asserts a speed: the
numbers are for the closing notes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOOR = ROOT / "tools" / "capture_floor.py"
CHROMIUM_FLOOR = ROOT / "tools" / "chromium_floor.py"
sys.path.insert(0, str(ROOT))

from archiver.fixture import FixtureConfig, FixtureServer, site_root  # noqa: E402

CAPTURE = """
import sys
from pathlib import Path
from archiver.capture import capture
seeds = sys.argv[3:]
r = capture(seeds, Path(sys.argv[1]), render=sys.argv[2].startswith("render"),
            depth=0 if len(seeds) > 1 else 10000, delay=0, progress=False, tabs={tabs},
            warc=sys.argv[2].endswith("+warc"))
print(r.pages)
import gc
gc.freeze()  # as the archiver command does before it ends (archiver.cli.entry): no last collection
"""


def _png(r: int, g: int, b: int, size: int = 48) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes([r, g, b]) * size
    raw = zlib.compress(row * size)
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def make_site(root: Path, pages: int) -> None:
    """A site of ``pages`` pages under ``root`` (see the module docstring)."""
    (root / "css").mkdir(parents=True)
    (root / "img").mkdir()
    (root / "fonts").mkdir()
    font = site_root() / "fonts" / "acme-field-sans.woff2"
    shutil.copy(font, root / "fonts" / "sans.woff2")
    (root / "img" / "bg.png").write_bytes(_png(240, 236, 220, 16))
    for i in range(50):
        (root / "img" / f"{i}.png").write_bytes(_png(i * 5 % 256, 100, 200 - i))
    (root / "css" / "site.css").write_text(
        '@font-face { font-family: "Bench Sans"; src: url(../fonts/sans.woff2) format("woff2"); }\n'
        'body { font-family: "Bench Sans", sans-serif; background: url(../img/bg.png); margin: 2rem; }\n'
        "img { width: 48px; height: 48px; }\n"
    )

    def page(i: int) -> str:
        links = "".join(
            f'<li><a href="/p/{(i + k) % pages}.html">Page {(i + k) % pages}</a></li>' for k in range(1, 6)
        )
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Page '
            f'{i}</title><link rel="stylesheet" href="/css/site.css"></head><body><h1>Page {i}</h1>'
            f"<p>Some text for page {i}. " + "Lorem ipsum dolor sit amet. " * 20 + "</p>"
            f'<img src="/img/{i % 50}.png" alt=""><img src="/img/{(i * 7) % 50}.png" alt="">'
            f'<ul>{links}</ul><p><a href="/">Home</a></p></body></html>\n'
        )

    (root / "p").mkdir()
    for i in range(pages):
        (root / "p" / f"{i}.html").write_text(page(i))
    (root / "index.html").write_text(
        page(0).replace("<title>Page 0", "<title>Home").replace("/p/0.html", "/")
    )


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_ENV["PYTHONPATH"] = str(ROOT)


def _warm(work: Path) -> None:
    """Compile archiver's modules once into a bytecode cache of ``work`` that every child then uses."""
    _ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    code = "import archiver.capture.crawl, archiver.capture.render, archiver.warc.record"
    subprocess.run([sys.executable, "-c", code], env=_ENV, check=True, cwd=work)


def _run(cmd: list[str], cwd: Path) -> tuple[float, int, str, float]:
    """(seconds, peak RSS in MiB, stdout, CPU seconds) of one child process (CPU: user + system of the
    process and the children it waited for, which on a shared, busy machine is the fairer measure)."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.DEVNULL, env=_ENV)
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    if os.waitstatus_to_exitcode(status) not in (0, 8):  # wget exits 8 when a link is a 404
        raise SystemExit(f"{cmd[0]} failed with status {status}: {text[-500:]}")
    return seconds, usage.ru_maxrss // 1024, text, usage.ru_utime + usage.ru_stime


def _descendants_cpu(root: int) -> dict[int, float]:
    """CPU seconds (user + system, from /proc) of ``root``'s descendants now alive, by pid."""
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        parent[int(name)] = int(fields[1])
        cpu[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        for child in (c for c, p in parent.items() if p == pid):
            found[child] = cpu[child]
            todo.append(child)
    return found


def _run_tree(cmd: list[str], cwd: Path) -> tuple[float, int, str, float, float]:
    """:func:`_run` and the CPU seconds of the child's whole process tree, sampled from /proc every
    0.1 s (a browser's processes are not all waited for by their parents, so wait4 leaves some out:
    Chromium alone on 60 python3-doc pages, 13 s by wait4 and 31 s by /proc)."""
    seen: dict[int, float] = {}
    stop = threading.Event()
    me = os.getpid()
    before = set(_descendants_cpu(me))  # the server (nginx) and anything else already running

    def sample() -> None:
        while not stop.wait(0.1):
            seen.update((pid, cpu) for pid, cpu in _descendants_cpu(me).items() if pid not in before)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        seconds, rss, text, cpu = _run(cmd, cwd)
    finally:
        stop.set()
        thread.join()
    return seconds, rss, text, cpu, max(sum(seen.values()), cpu)


def _count_html(root: Path) -> int:
    return sum(1 for p in root.rglob("*.html") if "_archiver" not in p.parts)


def _row(pages: int, seconds: float, rss: int, cpu: float, digits: int = 1) -> dict[str, object]:
    """One tool's figures; rates to ``digits`` decimals (2 for the slow rendered rates)."""
    return {
        "seconds": round(seconds, 2),
        "pages": pages,
        "pages_per_s": round(pages / seconds, digits),
        "rss_mib": rss,
        "cpu_s": round(cpu, 2),
        "pages_per_cpu_s": round(pages / max(cpu, 1e-3), digits),
    }


def _keep_fastest(rows: dict[str, object], name: str, row: dict[str, object]) -> None:
    old = rows.get(name)
    if not isinstance(old, dict) or row["seconds"] < old["seconds"]:  # type: ignore[operator]
        rows[name] = row


def spread(paths: list[str], n: int) -> list[str]:
    """``n`` of ``paths`` spread evenly over the list (its first always among them), in list order."""
    if n >= len(paths):
        return list(paths)
    return [paths[i * len(paths) // n] for i in range(n)]


@contextlib.contextmanager
def _serving(work: Path, pages: int, real_site: Path | None) -> Iterator[tuple[str, list[str]]]:
    """(base URL, page paths) of the generated site served by the fixture server, or of ``real_site``
    served by nginx."""
    if real_site is None:
        site = work / "site"
        make_site(site, pages)
        with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
            yield server.url, [""] + [f"p/{i}.html" for i in range(1, pages)]
        return
    sys.path.insert(0, str(ROOT / "tools"))
    from nginx_static import serve_folder

    found = sorted(p.relative_to(real_site).as_posix() for p in real_site.rglob("*.html"))
    first = ["index.html"] if "index.html" in found else []
    with serve_folder(real_site, work / "nginx") as base:
        yield base, first + [p for p in found if p != "index.html"]


def _file_create_us(work: Path, n: int = 300) -> float:
    """Microseconds to create (write 1 KiB, close) and remove a file in ``work``, median of ``n``.
    Every tool here writes a file a page, and the disk's cost of it moves a lot on this kind of
    machine (20 µs quiet, 200-500 µs while something else writes): wget's time for the 500 pages
    went from 0.36 s to 1.4 s with it, and the no-render ratio with it (0.46x -> 1.0x; 0.55x on
    tmpfs, TMPDIR=/dev/shm). The figure is printed beside the load average so a ratio can be read."""
    probe = work / "create-probe"
    probe.mkdir()
    times = []
    for i in range(n):
        t = time.perf_counter()
        fd = os.open(probe / f"{i}.html", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"x" * 1024)
        os.close(fd)
        times.append(time.perf_counter() - t)
    shutil.rmtree(probe)
    return round(statistics.median(times) * 1e6, 1)


def bench(
    pages: int,
    rendered_pages: int,
    tabs: int,
    single_file: str | None,
    repeat: int = 1,
    warc: bool = False,
    real_site: Path | None = None,
    chromium: bool = True,
    rendered_only: bool = False,
) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    try:
        _warm(work)
        rows: dict[str, object] = {
            "work": str(work),
            "file_create_us": _file_create_us(work),
            "site": str(real_site) if real_site else "generated",
            "pages": pages,
            "rendered_pages": rendered_pages,
            "tabs": tabs,
            "repeat": max(repeat, 1),
        }
        with _serving(work, pages, real_site) as (base, page_paths):
            rows["pages"] = len(page_paths)
            script = CAPTURE.replace("{tabs}", str(tabs))
            wget = shutil.which("wget")
            if not wget:
                rows["wget"] = "not installed"
            for turn in range(
                0 if rendered_only else max(repeat, 1)
            ):  # the two tools take turns; each keeps its fastest run
                ours = work / f"ours-{turn}"
                cmd = [sys.executable, "-c", script, str(ours), "no-render", base]
                t, rss, _, cpu = _run(cmd, work)
                _keep_fastest(rows, "archiver_no_render", _row(_count_html(ours), t, rss, cpu))
                shutil.rmtree(ours, ignore_errors=True)
                if warc:
                    cmd = [sys.executable, "-c", script, str(ours), "no-render+warc", base]
                    t, rss, _, cpu = _run(cmd, work)
                    _keep_fastest(rows, "archiver_no_render_warc", _row(_count_html(ours), t, rss, cpu))
                    shutil.rmtree(ours, ignore_errors=True)
                if wget:
                    theirs = work / f"wget-{turn}"
                    cmd = [wget, "--mirror", "--convert-links", "--page-requisites", "--no-verbose"]
                    t, rss, _, cpu = _run([*cmd, "-P", str(theirs), base], work)
                    _keep_fastest(rows, "wget", _row(_count_html(theirs), t, rss, cpu))
                    shutil.rmtree(theirs, ignore_errors=True)
                if real_site is None:
                    floor = work / f"floor-{turn}"
                    t, rss, _, cpu = _run([sys.executable, str(FLOOR), base, str(floor)], work)
                    _keep_fastest(rows, "python_floor", _row(_count_html(floor), t, rss, cpu))
                    shutil.rmtree(floor, ignore_errors=True)
                else:
                    rows["python_floor"] = "skipped (it reads only the generated site)"
            if rendered_pages <= 0:
                rows["archiver_render"] = "skipped (--rendered-pages 0)"
                rows["single_file"] = "skipped (--rendered-pages 0)"
                return rows
            urls = [base + p for p in spread(page_paths, rendered_pages)]
            t, rss, _, cpu, tree = _run_tree(
                [sys.executable, "-c", script, str(work / "ours-rendered"), "render", *urls], work
            )
            rows["archiver_render"] = _row(_count_html(work / "ours-rendered"), t, rss, cpu, digits=2)
            rows["archiver_render"]["cpu_tree_s"] = round(tree, 2)  # type: ignore[index]
            if warc:
                t, rss, _, cpu = _run(
                    [sys.executable, "-c", script, str(work / "ours-rendered-warc"), "render+warc", *urls],
                    work,
                )
                rows["archiver_render_warc"] = _row(
                    _count_html(work / "ours-rendered-warc"), t, rss, cpu, digits=2
                )
            for mode in ("bare", "careful") if chromium else ():
                out = work / f"chromium-{mode}"
                cmd = [sys.executable, str(CHROMIUM_FLOOR), mode, str(out), "--tabs", str(tabs), *urls]
                t, rss, _, cpu, tree = _run_tree(cmd, work)
                rows[f"chromium_{mode}"] = _row(_count_html(out), t, rss, cpu, digits=2)
                rows[f"chromium_{mode}"]["cpu_tree_s"] = round(tree, 2)  # type: ignore[index]
            if single_file:
                out = work / "single-file"
                out.mkdir()
                (work / "urls.txt").write_text("\n".join(urls) + "\n")
                cmd = [
                    single_file,
                    "--urls-file",
                    str(work / "urls.txt"),
                    "--output-directory",
                    str(out),
                    "--browser-executable-path",
                    "/usr/bin/chromium",
                    "--browser-arg",
                    "--no-sandbox",
                    "--max-parallel-workers",
                    str(tabs),
                    "--filename-template",
                    "{url-pathname-flat}.html",
                ]
                t, rss, _, cpu = _run(cmd, work)
                rows["single_file"] = _row(sum(1 for _ in out.glob("*.html")), t, rss, cpu, digits=2)
            else:
                rows["single_file"] = "not installed (npm install single-file-cli)"
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _ratio(rows: dict[str, object], ours: str, theirs: str) -> str:
    a, b = rows.get(ours), rows.get(theirs)
    if not isinstance(a, dict) or not isinstance(b, dict) or not b["pages_per_s"]:
        return "n/a"
    return (
        f"{a['pages_per_s'] / b['pages_per_s']:.2f}x wall, "
        f"{a['pages_per_cpu_s'] / b['pages_per_cpu_s']:.2f}x per CPU second"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--rendered-pages", type=int, default=40)
    parser.add_argument("--tabs", type=int, default=3)
    parser.add_argument("--single-file", default=shutil.which("single-file"))
    parser.add_argument("--repeat", type=int, default=1, help="no-render runs of each tool (fastest kept)")
    parser.add_argument("--warc", action="store_true", help="also time archiver with --warc (recording)")
    parser.add_argument(
        "--site", type=Path, help="a folder of HTML (a documentation package) served by nginx"
    )
    parser.add_argument("--no-chromium", action="store_true", help="leave out the chromium_bare/careful rows")
    parser.add_argument(
        "--rendered-only", action="store_true", help="only the rendered rows (no no-render, wget or floor)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.site is not None and not (args.site / "index.html").is_file():
        parser.error(f"--site {args.site}: no index.html there (apt-get install python3-doc?)")
    rows = bench(
        args.pages, args.rendered_pages, args.tabs, args.single_file, args.repeat, args.warc,
        real_site=args.site, chromium=not args.no_chromium, rendered_only=args.rendered_only,
    )  # fmt: skip
    rows["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows["ratio_no_render_vs_wget"] = _ratio(rows, "archiver_no_render", "wget")
    rows["ratio_render_vs_single_file"] = _ratio(rows, "archiver_render", "single_file")
    rows["ratio_floor_vs_wget"] = _ratio(rows, "python_floor", "wget")
    rows["ratio_render_vs_chromium_bare"] = _ratio(rows, "archiver_render", "chromium_bare")
    rows["ratio_render_vs_chromium_careful"] = _ratio(rows, "archiver_render", "chromium_careful")
    rows["ratio_no_render_vs_floor"] = _ratio(rows, "archiver_no_render", "python_floor")
    if args.warc:  # below 1: recording is slower; 0.91 means 10 % more time per page
        rows["ratio_no_render_warc_vs_plain"] = _ratio(rows, "archiver_no_render_warc", "archiver_no_render")
        rows["ratio_render_warc_vs_plain"] = _ratio(rows, "archiver_render_warc", "archiver_render")
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"site: {rows['site']}, {rows['pages']} pages; rendered comparison on {args.rendered_pages} pages,",
        end=" ",
    )
    print(f"{args.tabs} at a time; no-render: best of {rows['repeat']}; load average {rows['load_average']}")
    print(f"work folder {rows['work']}: creating a file costs {rows['file_create_us']} µs (median)")
    names = [
        "archiver_no_render",
        "wget",
        "python_floor",
        "archiver_render",
        "chromium_bare",
        "chromium_careful",
    ]
    names.append("single_file")
    if args.warc:
        names[1:1] = ["archiver_no_render_warc"]
        names.insert(names.index("archiver_render") + 1, "archiver_render_warc")
    for name in names:
        row = rows.get(name, "skipped")
        if isinstance(row, dict):
            print(
                f"  {name:<20} {row['pages']:>5} pages {row['seconds']:>8.2f} s"
                f" {row['pages_per_s']:>8} pages/s"
                f"  CPU {row['cpu_s']:>7.2f} s {row['pages_per_cpu_s']:>8} pages/CPU-s"
                f"  peak RSS {row['rss_mib']} MiB"
                + (f"  CPU of all its processes {row['cpu_tree_s']:.2f} s" if "cpu_tree_s" in row else "")
            )
        else:
            print(f"  {name:<20} {row}")
    print(f"  no-render vs wget: {rows['ratio_no_render_vs_wget']}")
    print(f"  python floor vs wget: {rows['ratio_floor_vs_wget']}")
    print(f"  no-render vs python floor: {rows['ratio_no_render_vs_floor']}")
    print(f"  rendered vs chromium bare: {rows['ratio_render_vs_chromium_bare']}")
    print(f"  rendered vs chromium careful: {rows['ratio_render_vs_chromium_careful']}")
    print(f"  rendered vs single-file: {rows['ratio_render_vs_single_file']}")
    if args.warc:
        print(f"  no-render --warc vs without: {rows['ratio_no_render_warc_vs_plain']}")
        print(f"  rendered --warc vs without: {rows['ratio_render_warc_vs_plain']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
