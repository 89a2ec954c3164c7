"""Benchmark: archiver's search index against Pagefind and libzim's Xapian full-text index, on the same pages.

    python tools/bench_search.py [--python-docs DIR] [--debian-doc DIR] [--pages N] [--archives A]
                                 [--pagefind BIN] [--no-zim] [--only python|debian|generated] [--keep]
                                 [--repeat N]

Corpora: Python's documentation (Debian ``python3-doc``, ``/usr/share/doc/python3-doc/html``), one more
Debian documentation package (``docutils-doc``, ``/usr/share/doc/docutils-doc``), each when installed,
and a generated corpus of ``--pages`` pages (default 300) in ``--archives`` folders (default 1), a
tenth of them Chinese and a tenth Japanese, with a navigation block repeated on every page. The
issue's size is ``--pages 100000 --archives 100`` (hours here: not run by the tests). Each folder is
copied (symbolic links resolved) and every tool reads that copy, each in its own process:

- **ours**: ``python -m archiver index DIR`` (this checkout, its bytecode compiled first as an
  installed package's is: under ``PYTHONDONTWRITEBYTECODE`` every run compiled ~30 modules again,
  ~40 ms of CPU);
- **Pagefind**: ``pagefind --site DIR --output-path OUT`` (npm ``@pagefind/linux-x64``, looked for
  in ``node_modules``, or ``--pagefind BIN``; skipped when absent);
- **libzim**: ``zimwriterfs`` of the folder with and without ``--withoutFTIndex``: the index's cost is
  the difference (skipped when zimwriterfs is not installed, or with ``--no-zim``).

Columns: wall and CPU time (user + system of the process and its children, from ``wait4``; ours and
Pagefind are built ``--repeat`` times, alternated, each from the folder without its output, and the
best wall and best CPU are shown: one build of a small site is ~0.3 s, within a shared machine's
noise), index size (ours: every file of ``_archiver/search/``; Pagefind: its whole output folder; libzim: the
size difference), bytes read for a one-word query (mean over five words taken from page titles), and
the ratio ours / anchor. Bytes read, ours: the files the Python query core loads (manifest, shards,
fragment and text files of the first 10 results). Pagefind: what its JS fetches for the query, read
from its output layout: ``pagefind-entry.json``, the language's ``pf_meta``, the index chunks whose
word range can hold the word (or a word it begins) and the fragments of its first 5 results (the
pages with the most occurrences of the matching words: its exact ranking is not reproduced; the
fragment files are its real ones). Its ``pagefind.js`` and wasm (~100 KB, loaded once per page
view) are printed apart. libzim's Xapian reads pages of its B-trees through a server: not counted.
Prints the load average. No timing is asserted anywhere: the figures are for a human.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON_DOCS = Path("/usr/share/doc/python3-doc/html")
DEBIAN_DOC = Path("/usr/share/doc/docutils-doc")
PAGEFIND = ROOT / "node_modules" / "@pagefind" / "linux-x64" / "bin"


@dataclass
class Run:
    wall: float
    cpu: float


def run(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """Run one process to its end; wall and CPU (user + system, its waited-for children included)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench_search: {' '.join(argv)} failed: {err.strip()[-500:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime)


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ---------------------------------------------------------------- a generated corpus

_CJK_ZH = "".join(chr(c) for c in range(0x4E00, 0x4E00 + 3000))  # CJK ideographs
_CJK_JA = "".join(chr(c) for c in [*range(0x3041, 0x3097), *range(0x30A1, 0x30FB)]) + "ー東京都日本語検索"
_NAV = (
    '<nav><a href="index.html">Home</a> <a href="about.html">About</a></nav>'
    "<div>Copyright the authors. Edit this page.</div>"
)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(1, 4)))


def generate(out: Path, pages: int, archives: int, seed: int = 23) -> list[Path]:
    """``pages`` pages in ``archives`` folders under ``out``: English-like text from a Zipf-like
    vocabulary of 20,000 words, a tenth of the pages Chinese and a tenth Japanese."""
    rng = random.Random(seed)
    vocabulary = sorted({_word(rng) for _ in range(20000)})
    weights = [1 / (k + 1) for k in range(len(vocabulary))]
    folders = []
    for a in range(archives):
        folder = out / f"site{a:03d}"
        folder.mkdir(parents=True)
        folders.append(folder)
        count = pages // archives + (a < pages % archives)
        for p in range(count):
            kind = p % 10
            if kind == 3:
                words = lambda n: "".join(rng.choice(_CJK_ZH) for _ in range(n))  # noqa: E731
                title, lang = words(6), "zh"
            elif kind == 7:
                words = lambda n: "".join(rng.choice(_CJK_JA) for _ in range(n))  # noqa: E731
                title, lang = words(6), "ja"
            else:
                words = lambda n: " ".join(rng.choices(vocabulary, weights, k=n))  # noqa: E731
                title, lang = words(4).title(), "en"
            body = [f"<h1>{title}</h1>"]
            for _ in range(rng.randint(3, 12)):
                body.append(
                    f"<h2>{words(3)}</h2>" if rng.random() < 0.3 else f"<p>{words(rng.randint(20, 120))}</p>"
                )
            html = (
                f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
                f"<title>{title}</title></head>"
                f"<body>{_NAV}<main>{''.join(body)}</main></body></html>\n"
            )
            (folder / f"page{p:06d}.html").write_text(html, encoding="utf-8")
        (folder / "index.html").write_text(
            '<!DOCTYPE html><html><head><meta charset="utf-8"><title>Index</title></head><body>'
            + "".join(f'<a href="page{p:06d}.html">{p}</a> ' for p in range(min(count, 50)))
            + "</body></html>\n",
            encoding="utf-8",
        )
    return folders


# ---------------------------------------------------------------- ours


def ours(folder: Path) -> tuple[Run, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = run([sys.executable, "-m", "archiver", "index", str(folder)], env)
    return r, folder_size(folder / "_archiver" / "search")


def query_words(folder: Path, n: int = 5) -> list[str]:
    """``n`` words from the titles of pages spread over the index (lower case, ASCII letters, 4+)."""
    sys.path.insert(0, str(ROOT))
    from archiver.search import store

    index = store.open_index(folder)
    words: list[str] = []
    docs = index.documents
    for k in range(docs):
        doc = (k * 7919) % docs
        _path, title, _h, _s = index.fragment(doc)
        for w in str(title).split():
            w = w.lower().strip(".,:;()—-")
            if len(w) >= 4 and w.isascii() and w.isalpha() and w not in words:
                words.append(w)
                break
        if len(words) >= n:
            break
    return words


_KINDS = {"manifest": "manifest", "t": "shards", "d": "fragments", "x": "text"}


def ours_kinds(folder: Path) -> dict[str, int]:
    """Bytes of the index by kind of file (§4.1): manifest, shards, fragments, text, page."""
    out = dict.fromkeys([*_KINDS.values(), "page"], 0)
    for f in (folder / "_archiver" / "search").rglob("*"):
        if f.is_file():
            rel = f.relative_to(folder / "_archiver" / "search").as_posix()
            out[_KINDS.get(rel.split("/")[0].removesuffix(".js"), "page")] += f.stat().st_size
    return out


def ours_bytes(folder: Path, word: str, kinds: dict[str, int] | None = None) -> int:
    """Bytes the query core reads for ``word`` (and, into ``kinds``, by kind of file)."""
    from archiver.search import query, store

    read = 0

    def load(name: str) -> bytes:
        nonlocal read
        data = (folder / "_archiver" / "search" / f"{name}.js").read_bytes()
        read += len(data)
        if kinds is not None:
            kind = _KINDS[name.split("/")[0]]
            kinds[kind] = kinds.get(kind, 0) + len(data)
        return data

    index = query.Index(load, str(folder))
    query.search([index], word, limit=10)
    assert store is not None
    return read


# ---------------------------------------------------------------- Pagefind


def _cbor(data: bytes, i: int = 0) -> tuple[object, int]:
    """One CBOR item of ``data`` at ``i`` (the subset Pagefind writes); (value, next offset)."""
    head = data[i]
    major, info = head >> 5, head & 31
    i += 1
    if info < 24:
        arg = info
    elif info <= 27:
        width = 1 << (info - 24)
        arg = int.from_bytes(data[i : i + width], "big")
        i += width
    else:
        raise ValueError(f"unsupported CBOR item {head:#x}")
    if major == 0:
        return arg, i
    if major == 1:
        return -1 - arg, i
    if major in (2, 3):
        raw = data[i : i + arg]
        return (raw if major == 2 else raw.decode("utf-8")), i + arg
    if major == 4:
        out = []
        for _ in range(arg):
            v, i = _cbor(data, i)
            out.append(v)
        return out, i
    if major == 5:
        m = {}
        for _ in range(arg):
            k, i = _cbor(data, i)
            v, i = _cbor(data, i)
            m[k] = v
        return m, i
    if major == 6:
        return _cbor(data, i)
    return arg, i  # simple values


def pagefind_file(path: Path) -> object:
    data = gzip.decompress(path.read_bytes())
    sig = b"pagefind_dcd"
    return _cbor(data[len(sig) :] if data.startswith(sig) else data)[0]


def pagefind_bytes(out: Path, word: str) -> int:
    """What Pagefind's JS fetches for ``word``: entry, meta, the chunks that can hold it, 5 fragments."""
    entry = out / "pagefind-entry.json"
    import json

    total = entry.stat().st_size
    language = next(iter(json.loads(entry.read_text())["languages"].values()))
    meta_path = out / f"pagefind.{language['hash']}.pf_meta"
    total += meta_path.stat().st_size
    meta = pagefind_file(meta_path)
    assert isinstance(meta, list)
    pages, chunks = meta[1], meta[2]
    occurrences: dict[int, int] = {}
    for first, last, chash in chunks:
        if last < word or not (first <= word or first.startswith(word)):
            continue
        path = out / "index" / f"{chash}.pf_index"
        total += path.stat().st_size
        rows = pagefind_file(path)
        assert isinstance(rows, list)
        for row in rows[0]:
            if str(row[0]).startswith(word):
                for page in row[1]:
                    occurrences[page[0]] = occurrences.get(page[0], 0) + len(page[1])
    best = sorted(occurrences, key=lambda p: (-occurrences[p], p))[:5]
    for p in best:
        total += (out / "fragment" / f"{pages[p][0]}.pf_fragment").stat().st_size
    return total


def pagefind_runtime(out: Path) -> int:
    return (out / "pagefind.js").stat().st_size + sum(f.stat().st_size for f in out.glob("wasm.*.pagefind"))


# ---------------------------------------------------------------- libzim


def zimwriterfs(folder: Path, out: Path, index: bool) -> tuple[Run, int]:
    welcome = (
        "index.html" if (folder / "index.html").is_file() else next(p.name for p in folder.glob("*.html"))
    )
    argv = [
        "zimwriterfs", "-w", welcome, "-I", "favicon.png", "-l", "eng", "-t", "bench", "-d", "bench",
        "-c", "bench", "-p", "bench", "-n", "bench",
    ]  # fmt: skip
    if not index:
        argv.append("--withoutFTIndex")
    r = run([*argv, str(folder), str(out)])
    size = out.stat().st_size
    out.unlink()
    return r, size


# ---------------------------------------------------------------- the table


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "-"


def bench(
    name: str, folders: list[Path], work: Path, pagefind: Path | None, zim: bool, repeat: int = 1
) -> None:
    sys.path.insert(0, str(ROOT))
    from archiver.zim.icon import generated_png

    copies = []
    for k, src in enumerate(folders):
        dst = work / name / f"{k:03d}"
        shutil.copytree(src, dst, symlinks=False)
        (dst / "favicon.png").write_bytes(generated_png(name))
        if not (dst / "index.html").is_file():  # a tree has a home page (archiver index wants one)
            links = "".join(f'<li><a href="{p.name}">{p.stem}</a>' for p in sorted(dst.glob("*.html")))
            (dst / "index.html").write_text(
                f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{name}</title></head>'
                f"<body><ul>{links}</ul></body></html>\n",
                encoding="utf-8",
            )
        copies.append(dst)
    pages = sum(1 for c in copies for p in c.rglob("*") if p.suffix.lower() in (".html", ".htm"))
    rows: dict[str, dict[str, float]] = {}

    def total(label: str, each: Callable[[Path], tuple[Run, int]]) -> None:
        wall = cpu = size = 0.0
        for c in copies:
            r, s = each(c)
            wall, cpu, size = wall + r.wall, cpu + r.cpu, size + s
        rows[label] = {"wall": wall, "cpu": cpu, "size": size}

    outs = {c: work / name / f"pagefind-{c.name}" for c in copies}

    def pf(c: Path) -> tuple[Run, int]:
        assert pagefind is not None
        r = run([str(pagefind), "--site", str(c), "--output-path", str(outs[c])])
        return r, folder_size(outs[c])

    least: dict[str, dict[str, float]] = {}

    trash = work / name / "trash"
    trash.mkdir()
    moved = iter(range(1 << 30))

    def once(label: str, each: Callable[[Path], tuple[Run, int]], output: Callable[[Path], Path]) -> None:
        # each build starts from the folder without its output, moved aside rather than deleted: on
        # ext4 without a journal (this machine's /tmp) inodes freed just before slow the next files
        # created, so both tools were charged for the bench's own deletion (all go with `work`)
        for c in copies:
            if output(c).exists():
                output(c).rename(trash / f"{next(moved)}")
        total(label, each)
        seen = least.get(label, rows[label])
        least[label] = {k: min(v, seen[k]) for k, v in rows[label].items()}

    for _ in range(repeat):  # the two alternate: a slow moment of a shared machine falls on both
        once("ours", ours, lambda c: c / "_archiver" / "search")
        if pagefind is not None:
            once("pagefind", pf, lambda c: outs[c])
    rows.update(least)
    words = query_words(copies[0])
    per_kind: dict[str, int] = {}
    rows["ours"]["query"] = (
        sum(ours_bytes(copies[0], w, per_kind) for w in words) / len(words) if words else 0
    )
    sizes = {k: 0 for k in ours_kinds(copies[0])}
    for c in copies:
        for k, v in ours_kinds(c).items():
            sizes[k] += v
    if pagefind is not None:
        out0 = outs[copies[0]]
        rows["pagefind"]["query"] = sum(pagefind_bytes(out0, w) for w in words) / len(words) if words else 0
        rows["pagefind"]["runtime"] = pagefind_runtime(out0)
    if zim and shutil.which("zimwriterfs"):
        zpath = work / name / "bench.zim"
        total("zim+index", lambda c: zimwriterfs(c, zpath, True))
        total("zim", lambda c: zimwriterfs(c, zpath, False))
        rows["libzim index"] = {k: rows["zim+index"][k] - rows["zim"][k] for k in ("wall", "cpu", "size")}
    print(f"\n== {name}: {len(copies)} folder(s), {pages} pages; one-word queries: {' '.join(words)}")
    print(f"{'':14s}{'wall':>9s}{'CPU':>9s}{'index size':>13s}{'bytes/query':>13s}")
    for label, r in rows.items():
        q = f"{r['query'] / 1e3:.0f} KB" if "query" in r else "-"
        print(f"{label:14s}{r['wall']:8.2f}s{r['cpu']:8.2f}s{_mb(r['size']):>13s}{q:>13s}")
    for anchor in ("pagefind", "libzim index"):
        if anchor in rows:
            a, o = rows[anchor], rows["ours"]
            q = _ratio(o["query"], a["query"]) if "query" in a else "-"
            print(
                f"ours/{anchor:9s}{_ratio(o['wall'], a['wall']):>8s} {_ratio(o['cpu'], a['cpu']):>8s} "
                f"{_ratio(o['size'], a['size']):>12s} {q:>12s}"
            )
    print("ours by kind of file, size: " + ", ".join(f"{k} {_mb(v)}" for k, v in sizes.items()))
    if words:
        read = ", ".join(f"{k} {v / len(words) / 1e3:.1f} KB" for k, v in per_kind.items())
        print(f"ours by kind of file, read by a one-word query (mean): {read}")
    if "pagefind" in rows:
        runtime = rows["pagefind"]["runtime"] / 1e3
        print(f"(Pagefind's pagefind.js and wasm, loaded once per page view: {runtime:.0f} KB)")


def find_pagefind(given: str | None) -> Path | None:
    if given:
        return Path(given)
    for name in ("pagefind", "pagefind_extended"):
        if (PAGEFIND / name).is_file():
            return PAGEFIND / name
    return None


def corpora(args: argparse.Namespace, work: Path) -> Iterator[tuple[str, list[Path]]]:
    if args.only in (None, "python") and Path(args.python_docs).is_dir():
        yield "python3-doc", [Path(args.python_docs)]
    elif args.only in (None, "python"):
        print(f"python3-doc is not installed ({args.python_docs}): skipped")
    if args.only in (None, "debian") and Path(args.debian_doc).is_dir():
        yield Path(args.debian_doc).name, [Path(args.debian_doc)]
    elif args.only in (None, "debian"):
        print(f"{args.debian_doc} is not installed: skipped")
    if args.only in (None, "generated") and args.pages > 0:
        yield "generated", generate(work / "src", args.pages, args.archives)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python-docs", default=str(PYTHON_DOCS))
    ap.add_argument("--debian-doc", default=str(DEBIAN_DOC))
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--archives", type=int, default=1)
    ap.add_argument("--pagefind", help="the pagefind binary (default: node_modules' @pagefind/linux-x64)")
    ap.add_argument("--no-zim", action="store_true", help="do not run zimwriterfs")
    ap.add_argument("--only", choices=("python", "debian", "generated"))
    ap.add_argument("--keep", action="store_true", help="keep the work folder (printed)")
    ap.add_argument("--repeat", type=int, default=3, help="builds of each, alternated; the best is shown (3)")
    args = ap.parse_args(argv)
    pagefind = find_pagefind(args.pagefind)
    if pagefind is None:
        print("Pagefind not found (bash tools/bootstrap test installs it): its columns are skipped")
    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    compileall.compile_dir(ROOT / "archiver", quiet=1)  # __pycache__ is ignored by git
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"load average {load}; {os.cpu_count()} CPUs; work {work}")
        for name, folders in corpora(args, work):
            bench(name, folders, work, pagefind, not args.no_zim, args.repeat)
        print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
