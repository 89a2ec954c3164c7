"""Benchmark the gwtar loader: bytes fetched until the first render against the floor, and the time to
first render against the same page as one inlined (SingleFile-style) HTML file, both under a
throttled connection (Chromium's network emulation, 10 Mbit/s by default).

The site (issue 4): a whole-site tree of about 200 MB whose main page shows one above-the-fold image
(with a stylesheet and a web font) and has a 150 MB video below the fold; the rest is other pages
with large images. It is packed with ``archiver.gwtar.pack`` and served, with the inlined page, by
``archiver serve`` (Range and multi-range). The inlined page holds the same stylesheet, font, image
and video as ``data:`` URIs, in document order, as SingleFile writes them.

Times are ``performance.now()`` values, from the navigation's start, and the output names each one:

- *first render*: the above-the-fold content is on screen, the image decoded and the fonts loaded.
  For the gwtar file the loader reports it (``gwtar.stats.firstRender``: its page is written,
  stylesheets and fonts applied, images near the viewport decoded, nothing pending); for the inlined
  page it is the later of the image's ``load`` event and ``document.fonts.ready``.
- *image painted*: the browser's own Largest Contentful Paint entry for the hero image, the same
  measure on both pages (the fairest comparison of the two).
- *first paint*: the inlined page's first contentful paint (its heading and text, before the image
  has arrived: an inlined page renders progressively) and, for the gwtar file, the loader's start
  (``gwtar.stats.boot``) and the moment its page is written (``gwtar.stats.written``).
- *load event*: the inlined page's ``load`` event, when all of it (the video too) has arrived.

Bytes are response bodies as Chromium's network events count them (the browser cache off), up to the
gwtar file's first render.

The floor is what the first render cannot do without: the header (everything before the tar), the
page, its stylesheet, its font and the image.

    python tools/bench_loader.py [--total-mb 200] [--video-mb 150] [--mbit 10] [--latency-ms 40]
        [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from archiver import gwtar
from archiver.capture.browser import launch
from archiver.fixture import site_root
from archiver.serve import running

FONT = site_root() / "fonts" / "acme-field-sans.woff2"
A = "_archiver/bench.example/"


def png(width: int, height: int, seed: int) -> bytes:
    """A real PNG of noisy colour bands (it does not compress much, like a photograph)."""
    rows = []
    block = hashlib.sha256(str(seed).encode()).digest()
    for y in range(height):
        noise = bytearray()
        while len(noise) < width * 3:
            block = hashlib.sha256(block).digest()
            noise += block
        band = (y * 255 // max(1, height - 1), 120, 255 - y * 255 // max(1, height - 1))
        row = bytes((noise[i] // 3 + band[i % 3] * 2 // 3) & 255 for i in range(width * 3))
        rows.append(b"\x00" + row)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"".join(rows), 6))
        + chunk(b"IEND", b"")
    )


def write_blob(path: Path, size: int, seed: str) -> None:
    """``size`` deterministic bytes (a stand-in for a video: it is never played)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    block = hashlib.sha256(seed.encode()).digest() * 2048
    with path.open("wb") as fh:
        left = size
        while left > 0:
            fh.write(block[: min(left, len(block))])
            left -= len(block)


CSS = """@font-face{font-family:Bench;src:url(../fonts/bench.woff2) format("woff2")}
body{font-family:Bench,sans-serif;margin:0;color:#222;background:#f6f5f0}
main{max-width:900px;margin:0 auto;padding:16px}
.hero{display:block;width:100%;height:auto}
.spacer{height:3000px}
"""


def page_html(title: str, css: str, img: str, body_extra: str = "") -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="{css}"></head>
<body><main><h1>{title}</h1><p>The above-the-fold image, then a long page.</p>
<img class="hero" src="{img}" alt="hero" width="900" height="420">
<p>Text under the image.</p><div class="spacer"></div>{body_extra}</main></body></html>
"""


def build_tree(root: Path, total_mb: int, video_mb: int) -> dict[str, int]:
    """Write the tree; return the sizes of the main page's members."""
    (root / A / "css").mkdir(parents=True)
    (root / A / "fonts").mkdir(parents=True)
    (root / A / "img").mkdir(parents=True)
    (root / A / "css" / "site.css").write_text(CSS)
    shutil.copyfile(FONT, root / A / "fonts" / "bench.woff2")
    (root / A / "img" / "hero.png").write_bytes(png(900, 420, 1))
    write_blob(root / A / "media" / "film.mp4", video_mb << 20, "film")
    video = (
        f'<h2>The film</h2><video controls preload="none" width="640" height="360" src="{A}media/film.mp4">'
        "</video>"
    )
    links = "".join(f'<p><a href="pages/p{i:02}.html">Page {i}</a></p>' for i in range(40))
    (root / "index.html").write_text(
        page_html("Bench home", f"{A}css/site.css", f"{A}img/hero.png", video + links)
    )
    # Other pages, each with a large image of its own, until the site is about total_mb.
    rest = (total_mb - video_mb) << 20
    used = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    (root / "pages").mkdir()
    big = png(1600, 1000, 2)
    for i in range(40):
        img = f"img/p{i:02}.png"
        if used < rest:
            (root / A / img).write_bytes(big)
            used += len(big)
        else:
            img = "img/hero.png"
        (root / "pages" / f"p{i:02}.html").write_text(
            page_html(f"Page {i}", f"../{A}css/site.css", f"../{A}{img}")
        )
    write_blob(
        root / A / "media" / "filler.bin",
        max(0, (total_mb << 20) - sum(f.stat().st_size for f in root.rglob("*") if f.is_file())),
        "filler",
    )
    return {
        "page": (root / "index.html").stat().st_size,
        "css": (root / A / "css" / "site.css").stat().st_size,
        "font": (root / A / "fonts" / "bench.woff2").stat().st_size,
        "image": (root / A / "img" / "hero.png").stat().st_size,
    }


def write_inline(root: Path, out: Path) -> tuple[int, int]:
    """The main page as one SingleFile-style HTML: stylesheet inline, font, image and video as data: URIs.
    Return its size and where the image's bytes end (what its first render cannot do without)."""

    def data_uri(path: Path, mime: str) -> bytes:
        return b"data:" + mime.encode() + b";base64," + base64.b64encode(path.read_bytes())

    css = CSS.replace(
        "../fonts/bench.woff2", data_uri(root / A / "fonts" / "bench.woff2", "font/woff2").decode()
    )
    with out.open("wb") as fh:
        fh.write(
            b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Bench home</title>\n<style>'
            + css.encode()
            + b"</style></head>\n"
        )
        fh.write(
            b"<body><main><h1>Bench home</h1><p>The above-the-fold image, then a long page.</p>\n"
            b'<img class="hero" src="'
        )
        fh.write(data_uri(root / A / "img" / "hero.png", "image/png"))
        image_end = fh.tell()
        fh.write(
            b'" alt="hero" width="900" height="420">\n<p>Text under the image.</p><div class="spacer"></div>'
        )
        fh.write(
            b'<h2>The film</h2><video controls preload="none" width="640" height="360" '
            b'src="data:video/mp4;base64,'
        )
        with (root / A / "media" / "film.mp4").open("rb") as video:
            while chunk := video.read(3 << 20):
                fh.write(base64.b64encode(chunk))
        fh.write(b'"></video></main></body></html>\n')
    return out.stat().st_size, image_end


# In the inlined page: the first render is the later of the hero image's load and the fonts.
# The browser's Largest Contentful Paint entry of the hero image (both pages), once it is there.
LCP_JS = """new Promise(resolve => new PerformanceObserver(list => {
  const img = list.getEntries().filter(e => e.element && e.element.localName === "img").pop();
  resolve(img ? img.startTime : null);
}).observe({type: "largest-contentful-paint", buffered: true}))"""

INLINE_PROBE = """
window.__bench = {};
document.addEventListener("load", e => {
  if (e.target.localName === "img") { window.__bench.image = performance.now(); }
}, true);
document.fonts && document.fonts.ready.then(() => { window.__bench.fonts = performance.now(); });
addEventListener("load", () => { window.__bench.load = performance.now(); });
"""


def measure(
    browser: Any,
    url: str,
    *,
    gwtar_page: bool,
    mbit: float,
    latency_ms: float,
    timeout_s: float,
    video: tuple[int, int] = (0, 0),
    wait_load: bool = False,
) -> dict[str, Any]:
    """Open ``url`` in a fresh context under the throttle; return the first render time (ms), the bytes
    received until then (all of them, and those of the navigation itself), and the requests made."""
    context = browser.new_context(viewport={"width": 1024, "height": 768})
    page = context.new_page()
    if not gwtar_page:
        page.add_init_script(INLINE_PROBE)
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    rate = mbit * 1_000_000 / 8
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": latency_ms, "downloadThroughput": rate, "uploadThroughput": rate},
    )
    events: list[tuple[float, int, str]] = []
    network: list[str] = []  # request ids, in order: the first is the navigation
    clock: dict[str, float] = {}
    requests: list[dict[str, Any]] = []

    def sent(ev: dict[str, Any]) -> None:
        if "wall" not in clock:
            clock["wall"] = ev["wallTime"] - ev["timestamp"]
        if ev["request"]["url"].startswith(("http:", "https:")):  # blob: and data: loads are not the network
            network.append(ev["requestId"])
            requests.append({"url": ev["request"]["url"], "range": ev["request"]["headers"].get("Range")})

    def received(ev: dict[str, Any]) -> None:
        if ev["requestId"] in network:
            events.append((ev["timestamp"], ev["dataLength"], ev["requestId"]))

    cdp.on("Network.requestWillBeSent", sent)
    cdp.on("Network.dataReceived", received)
    page.goto(url, wait_until="commit")
    if gwtar_page:
        page.wait_for_function(
            "window.gwtar && gwtar.stats.firstRender != null", timeout=timeout_s * 1000, polling=50
        )
        first = page.evaluate("gwtar.stats.firstRender")
        marks = page.evaluate("({boot: gwtar.stats.boot, written: gwtar.stats.written})")
    else:
        page.wait_for_function(
            "window.__bench && __bench.image != null && __bench.fonts != null",
            timeout=timeout_s * 1000,
            polling=50,
        )
        first = page.evaluate("Math.max(__bench.image, __bench.fonts)")
        marks = {
            "first_paint": page.evaluate(
                "(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
            )
        }
    painted = None
    for _ in range(40):  # the LCP entry follows the image's paint by a frame or two
        painted = page.evaluate(LCP_JS)
        if painted is not None:
            break
        page.wait_for_timeout(50)
    origin = page.evaluate("performance.timeOrigin") / 1000
    page.wait_for_timeout(300)  # let the network events of the first render reach us
    cutoff = origin + first / 1000 - clock["wall"]
    result: dict[str, Any] = {
        "first_render_ms": first,
        "image_painted_ms": painted,
        **{k + "_ms": v for k, v in marks.items()},
        "bytes": sum(n for t, n, _ in events if t <= cutoff),
        "navigation_bytes": sum(n for t, n, rid in events if t <= cutoff and rid == network[0]),
        "ranges": [r["range"] for r in requests],
        "video_requested": any(_covers(r["range"], video) for r in requests if r["range"])
        or any("film.mp4" in r["url"] for r in requests),
    }
    if wait_load:  # the inlined page is complete only when all of it has arrived (its load event)
        try:
            page.wait_for_function("__bench.load != null", timeout=timeout_s * 1000, polling=500)
            result["load_ms"] = page.evaluate("__bench.load")
        except Exception:
            result["load_ms"] = None
    context.close()
    return result


def _covers(header: str, member: tuple[int, int]) -> bool:
    for part in header.removeprefix("bytes=").split(","):
        a, _, b = part.partition("-")
        if int(a) < member[0] + member[1] and int(b or 1 << 62) >= member[0]:
            return True
    return False


def _ms(v: float | None) -> str:
    return f"{v:6.0f} ms" if v is not None else "     n/a"


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def _load() -> str:
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total-mb", type=int, default=200)
    parser.add_argument("--video-mb", type=int, default=150)
    parser.add_argument("--mbit", type=float, default=10.0)
    parser.add_argument("--latency-ms", type=float, default=40.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a first render")
    parser.add_argument(
        "--runs", type=int, default=3, help="measurements of each page (medians are reported)"
    )
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it")
    args = parser.parse_args(argv)

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-loader-"))
    try:
        tree, served = work / "tree", work / "served"
        if tree.exists():
            shutil.rmtree(tree)
        served.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        sizes = build_tree(tree, args.total_mb, args.video_mb)
        result = gwtar.pack(tree, served / "site.gwtar.html", main="index.html")
        inline_size, inline_needs = write_inline(tree, served / "inline.html")
        print(
            f"built in {time.monotonic() - t:.1f} s: gwtar {result.size / 1e6:.1f} MB "
            f"({result.members} members, "
            f"header {result.overhead} B), inlined page {inline_size / 1e6:.1f} MB"
        )
        floor = result.overhead + sum(sizes.values())
        print(
            "floor: header {} + page {page} + css {css} + font {font} + image {image} = {} B".format(
                result.overhead, floor, **sizes
            )
        )
        print(
            f"the inlined page's first render needs its first {inline_needs} B (up to the image's end: "
            f"base64 costs 4/3), the gwtar file's floor is {floor} B: at one bandwidth its first render "
            f"can be at most about {inline_needs / floor:.2f}x faster (less the round trip it adds); "
            "only against the inlined page's load event can the speed-up be large"
        )
        reader = gwtar.open(served / "site.gwtar.html")
        film = next(m for m in reader.members if m.path.endswith("film.mp4"))
        reader.close()
        print(_load(), "(the machine's other work slows the browser: re-measure on a quiet machine)")
        throttle = {"mbit": args.mbit, "latency_ms": args.latency_ms, "timeout_s": args.timeout}
        runs_g, runs_i = [], []
        with sync_playwright() as p, running([served / "site.gwtar.html", served / "inline.html"]) as base:
            browser = launch(p)
            try:
                for run in range(args.runs):
                    runs_g.append(
                        measure(
                            browser,
                            base + "site.gwtar.html",
                            gwtar_page=True,
                            video=(film.offset, film.size),
                            **throttle,
                        )
                    )
                    last = run == args.runs - 1
                    runs_i.append(
                        measure(browser, base + "inline.html", gwtar_page=False, wait_load=last, **throttle)
                    )
            finally:
                browser.close()
        print(
            f"throttle: {args.mbit} Mbit/s, {args.latency_ms} ms latency; {args.runs} runs, medians; "
            + _load()
        )
        for r in runs_g:
            print(
                f"  gwtar run:   first render {_ms(r['first_render_ms'])}, image painted "
                f"{_ms(r['image_painted_ms'])}, loader start {_ms(r['boot_ms'])}, page written "
                f"{_ms(r['written_ms'])}; {r['bytes']} B (navigation {r['navigation_bytes']} B, ranges "
                f"{r['bytes'] - r['navigation_bytes']} B) {r['ranges']}"
            )
        for r in runs_i:
            print(
                f"  inlined run: first render {_ms(r['first_render_ms'])}, image painted "
                f"{_ms(r['image_painted_ms'])}, first paint {_ms(r['first_paint_ms'])}"
            )
        g_ms = statistics.median(r["first_render_ms"] for r in runs_g)
        g_paint = _median(runs_g, "image_painted_ms")
        g_bytes = statistics.median(r["bytes"] for r in runs_g)
        g_ranges = statistics.median(r["bytes"] - r["navigation_bytes"] for r in runs_g)
        i_ms = statistics.median(r["first_render_ms"] for r in runs_i)
        i_paint = _median(runs_i, "image_painted_ms")
        i_fcp = _median(runs_i, "first_paint_ms")
        load = runs_i[-1]["load_ms"]
        load_ms = load or args.timeout * 1000

        def ratio(a: float | None, b: float | None) -> str:
            return f"{a / b:.2f}x" if a and b else "n/a"

        print(
            f"gwtar:   first render {_ms(g_ms)}, image painted {_ms(g_paint)}; bytes to first render "
            f"{g_bytes:.0f} = {g_bytes / floor:.3f} x floor (range requests alone {g_ranges:.0f} B = "
            f"{g_ranges / (floor - result.overhead):.4f} x page+assets); video requested: "
            f"{any(r['video_requested'] for r in runs_g)}"
        )
        print(
            f"inlined: first render {_ms(i_ms)}, image painted {_ms(i_paint)}, first paint (text, no "
            f"image yet) {_ms(i_fcp)}, load event {f'{load:.0f} ms' if load else f'> {args.timeout:.0f} s'}"
        )
        print("speed-up of the gwtar file's first render (inlined time / gwtar time; > 1 = gwtar faster):")
        print(f"  vs the inlined page's first render (image + fonts, same content): {ratio(i_ms, g_ms)}")
        print(f"  vs the inlined page's image paint (LCP, same measure on both):   {ratio(i_paint, g_paint)}")
        print(f"  vs the inlined page's first paint (text before its image):       {ratio(i_fcp, g_ms)}")
        print(
            f"  vs the inlined page's load event (all of it, video included):    {ratio(load_ms, g_ms)}"
            f"{'' if load else ' (at least: the load event did not come before the timeout)'}"
        )
        print(f"bytes ratio {g_bytes / floor:.3f} (bound 1.05); {_load()}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
