"""Capture real documentation sites from Debian's packages, next to wget, and measure the result.

    python tools/realsites.py [--site python|postgresql|nodejs]... [--modes norender,render,wget]
                              [--samples 5] [--workdir DIR] [--json]

For each site (a Debian documentation package, installed with apt-get when missing) it:

1. serves the package's HTML folder with nginx on a free 127.0.0.1 port (nothing leaves loopback);
2. counts the source: its HTML pages, the pages reachable from the home page by local links (what
   any crawler can find), and how many of the source's own local links resolve;
3. captures it with ``archiver capture --no-render``, ``archiver capture`` (Chromium) and
   ``wget --mirror --convert-links --page-requisites --no-parent``, each into its own folder,
   timing each run (pages/s);
4. for each copy: reachable source pages stored, local links that resolve on disk (a folder link
   counts when the folder has an ``index.html``), and for ``--samples`` pages spread over the site,
   the share of pixels that differ between the live page and the offline copy opened from
   ``file://`` (1024×768 viewport, same Chromium, a pixel differs when any channel differs by more
   than 24).

It is a tool, not a test: figures go into the closing notes. Run it on a quiet machine. Beware:
Debian's ``nodejs-doc`` conflicts with Node.js packages from outside Debian (NodeSource's
``nodejs``), which apt-get then removes; ``bash tools/bootstrap`` installs Debian's ``nodejs``
again when ``node`` is missing (the loader's tests need it).
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import os
import posixpath
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SITES = {
    "python": ("python3.11-doc", Path("/usr/share/doc/python3.11/html")),
    "postgresql": ("postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
    "nodejs": ("nodejs-doc", Path("/usr/share/doc/nodejs/api")),
}
VIEWPORT = {"width": 1024, "height": 768}
THRESHOLD = 24


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_package(package: str, root: Path) -> None:
    if (root / "index.html").is_file():
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", package], check=True, env=env, stdout=subprocess.DEVNULL
    )
    if not (root / "index.html").is_file():
        raise SystemExit(f"realsites: {package} installed no {root}/index.html")


def wait_listening(port: int, proc: subprocess.Popen[bytes], name: str, seconds: float) -> None:
    """Wait until something listens on 127.0.0.1:``port``; exit with ``name`` when ``proc`` ends or
    ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name} did not start") from None
            time.sleep(0.05)


@contextlib.contextmanager
def nginx(root: Path, work: Path) -> Iterator[str]:
    port = free_port()
    folder = work / "nginx"
    (folder / "temp").mkdir(parents=True, exist_ok=True)
    conf = folder / "nginx.conf"
    conf.write_text(
        f"daemon off;\nuser {getpass.getuser()};\nworker_processes 1;\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/error.log warn;\nevents {{ worker_connections 1024; }}\nhttp {{\n"
        "  include /etc/nginx/mime.types;\n  access_log off;\n"
        + "".join(
            f"  {k}_temp_path {folder}/temp/{k};\n"
            for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        + f"  server {{\n    listen 127.0.0.1:{port};\n    root {root};\n    index index.html;\n  }}\n}}\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", str(conf), "-p", str(folder)])
    try:
        wait_listening(port, proc, "realsites: nginx", 10)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=15)


# ---- links on disk ------------------------------------------------------------------------------


def local_refs(path: Path) -> Iterator[str]:
    """The local (relative or root-absolute) references an HTML file loads or links to."""
    from archiver.urls import ref_action
    from archiver.zim.links import html_refs

    for ref in html_refs(path.read_bytes()):
        text = ref.ref.strip()
        if ref_action(text) != "fetch" or text.startswith(("//", "\\\\")) or ":" in text.split("/", 1)[0]:
            continue
        if text.startswith("#"):
            continue
        yield text


def resolve_on_disk(root: Path, doc: Path, ref: str, *, site_root: bool) -> Path | None:
    """The file a reference in ``doc`` names under ``root`` (None when it leaves it). A root-absolute
    reference counts from ``root`` only for a site served from it (``site_root``)."""
    target = unquote(ref.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return doc
    if target.startswith("/"):
        if not site_root:
            return None
        joined = posixpath.normpath(target.lstrip("/"))
    else:
        base = doc.parent.relative_to(root).as_posix()
        joined = posixpath.normpath(posixpath.join(base, target))
    if joined.startswith(("..", "/")):
        return None
    path = root / joined
    if path.is_dir():
        path = path / "index.html"
    return path


@dataclass
class Links:
    total: int = 0
    resolved: int = 0
    broken: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.resolved / self.total if self.total else 1.0


def check_links(root: Path, *, site_root: bool, skip: tuple[str, ...] = ()) -> Links:
    out = Links()
    for doc in sorted(root.rglob("*.html")):
        rel = doc.relative_to(root).as_posix()
        if any(rel.startswith(s) for s in skip):
            continue
        for ref in local_refs(doc):
            out.total += 1
            found = resolve_on_disk(root, doc, ref, site_root=site_root)
            if found is not None and found.is_file():
                out.resolved += 1
            elif len(out.broken) < 20:
                out.broken.append(f"{rel}: {ref}")
    return out


def reachable(root: Path, home: str = "index.html") -> set[str]:
    """Source pages (paths relative to ``root``) reachable from ``home`` by local links."""
    seen = {home}
    todo = [home]
    while todo:
        rel = todo.pop()
        doc = root / rel
        if not doc.is_file():
            continue
        for ref in local_refs(doc):
            found = resolve_on_disk(root, doc, ref, site_root=True)
            if found is None or not found.is_file() or found.suffix.lower() not in (".html", ".htm"):
                continue
            key = found.relative_to(root).as_posix()
            if key not in seen:
                seen.add(key)
                todo.append(key)
    return {p for p in seen if (root / p).is_file()}


# ---- copies -------------------------------------------------------------------------------------


@dataclass
class Copy:
    name: str
    folder: Path
    seconds: float
    pages: dict[str, Path]  # source page path → its file in the copy
    links: Links | None = None
    pixels: dict[str, float] = field(default_factory=dict)


def run_archiver(url: str, out: Path, render: bool) -> float:
    cmd = [sys.executable, "-m", "archiver", "capture", url, "-o", str(out), "--delay", "0", "--depth", "100",
           "--json"]  # fmt: skip
    if not render:
        cmd.append("--no-render")
    started = time.monotonic()
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if run.returncode not in (0,):
        print(run.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"realsites: archiver capture exited {run.returncode}")
    return time.monotonic() - started


def archiver_pages(out: Path, base: str) -> dict[str, Path]:
    """Source page path → tree file, from the tree's manifest (every URL a file stands for)."""
    pages: dict[str, Path] = {}
    for line in (out / "_archiver" / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[1:]:
        record = json.loads(line)
        if record.get("kind") != "page":
            continue
        for url in record.get("urls", []):
            if not url.startswith(base):
                continue
            path = unquote(urlsplit(url).path).lstrip("/")
            if path == "" or path.endswith("/"):
                path += "index.html"
            pages.setdefault(path, out / record["path"])
    return pages


def run_wget(url: str, out: Path) -> float:
    started = time.monotonic()
    subprocess.run(
        ["wget", "--mirror", "--convert-links", "--page-requisites", "--no-parent", "-e", "robots=off",
         "--quiet", "-P", str(out), url],
        check=False,
    )  # fmt: skip
    return time.monotonic() - started


def wget_pages(out: Path, url: str) -> dict[str, Path]:
    host = urlsplit(url).netloc
    root = out / host
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*.html")}


# ---- pixels -------------------------------------------------------------------------------------


def pixel_share(a: bytes, b: bytes) -> float:
    import io

    from PIL import Image, ImageChops

    one = Image.open(io.BytesIO(a)).convert("RGB")
    two = Image.open(io.BytesIO(b)).convert("RGB")
    if one.size != two.size:
        return 1.0
    diff = ImageChops.difference(one, two).convert("L").point(lambda v: 255 if v > THRESHOLD else 0)
    histogram = diff.histogram()
    return histogram[255] / (one.size[0] * one.size[1])


def screenshots(pairs: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    from playwright.sync_api import sync_playwright

    from archiver.capture import browser

    shots = []
    with sync_playwright() as pw:
        chromium = browser.launch(pw)
        try:
            context = chromium.new_context(viewport=VIEWPORT)
            page = context.new_page()
            for live, offline in pairs:
                got = []
                for url in (live, offline):
                    page.goto(url, wait_until="load")
                    page.evaluate("document.fonts.ready")
                    page.wait_for_timeout(300)
                    got.append(page.screenshot())
                shots.append((got[0], got[1]))
        finally:
            chromium.close()
    return shots


def samples(pages: list[str], n: int) -> list[str]:
    if len(pages) <= n:
        return pages
    step = len(pages) / n
    return [pages[int(i * step)] for i in range(n)]


# ---- one site -----------------------------------------------------------------------------------


def measure(site: str, modes: list[str], n_samples: int, work: Path) -> dict[str, Any]:
    package, root = SITES[site]
    ensure_package(package, root)
    work = work / site
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    source_pages = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))
    reach = reachable(root)
    source_links = check_links(root, site_root=True)
    result: dict[str, Any] = {
        "site": site,
        "package": package,
        "source": {
            "pages": len(source_pages),
            "reachable_pages": len(reach),
            "local_links": source_links.total,
            "links_resolving": round(source_links.share * 100, 2),
        },
        "copies": {},
    }
    with nginx(root, work) as url:
        copies: list[Copy] = []
        for mode in modes:
            out = work / mode
            if mode == "wget":
                seconds = run_wget(url, out)
                copies.append(Copy(mode, out, seconds, wget_pages(out, url)))
            else:
                seconds = run_archiver(url, out, render=mode == "render")
                copies.append(Copy(mode, out, seconds, archiver_pages(out, url)))
        chosen = samples(sorted(reach), n_samples)
        for copy in copies:
            folder = copy.folder / urlsplit(url).netloc if copy.name == "wget" else copy.folder
            copy.links = check_links(
                folder, site_root=False, skip=("_archiver/",) if copy.name != "wget" else ()
            )
            pairs = [(url + p, copy.pages[p].resolve().as_uri()) for p in chosen if p in copy.pages]
            for p, (a, b) in zip([p for p in chosen if p in copy.pages], screenshots(pairs), strict=True):
                copy.pixels[p] = pixel_share(a, b)
            stored = len(reach & set(copy.pages))
            result["copies"][copy.name] = {
                "seconds": round(copy.seconds, 1),
                "pages_stored": stored,
                "reachable_missing": sorted(reach - set(copy.pages))[:10],
                "pages_per_second": round(len(copy.pages) / copy.seconds, 2) if copy.seconds else None,
                "local_links": copy.links.total,
                "links_resolving": round(copy.links.share * 100, 2),
                "broken_examples": copy.links.broken[:5],
                "pixels_differing": {p: round(v * 100, 3) for p, v in copy.pixels.items()},
                "max_pixels_differing": round(max(copy.pixels.values(), default=0.0) * 100, 3),
            }
    return result


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        f"{'site':<11} {'copy':<9} {'pages':>12} {'pages/s':>8} {'links ok %':>11} {'max px diff %':>14}",
    ]
    for r in results:
        src = r["source"]
        lines.append(
            f"{r['site']:<11} {'source':<9} {src['reachable_pages']:>5}/{src['pages']:<6} {'':>8} "
            f"{src['links_resolving']:>11} {'':>14}"
        )
        for name, c in r["copies"].items():
            lines.append(
                f"{'':<11} {name:<9} {c['pages_stored']:>5}/{src['reachable_pages']:<6} "
                f"{c['pages_per_second'] or 0:>8} {c['links_resolving']:>11} {c['max_pixels_differing']:>14}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--site", action="append", choices=sorted(SITES), help="repeatable (default: all)")
    p.add_argument("--modes", default="norender,render,wget", help="comma-separated: norender,render,wget")
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/archiver-realsites"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]
    if set(modes) - {"norender", "render", "wget"}:
        p.error(f"unknown mode in {args.modes!r}")
    results = [measure(site, modes, args.samples, args.workdir) for site in (args.site or sorted(SITES))]
    print(table(results))
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
