"""The mistakes a too-eager settle would make (archiver/capture/render.py): the renderer no longer waits
Playwright's 500 ms of network silence but settles on what it knows (requests in flight, a short quiet
window, the page's frames, its pending short timers). On a server that answers every request 400 ms
late, a page that fetches something 200 ms after ``load`` and then shows an image it names, and a page
whose lazy image is reached only by scrolling, must both be stored whole: the text, both images in the
tree, and the stored page pointing at them."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer

pytestmark = pytest.mark.browser

LATE_TEXT = "LATE-FETCHED-TEXT"

LATE_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Late</title></head>
<body><p id="out">waiting</p>
<script>
addEventListener("load", () => setTimeout(() => {
  fetch("/data/late.txt").then((r) => r.text()).then((text) => {
    document.getElementById("out").textContent = text.trim();
    const img = document.createElement("img");
    img.src = "/img/late.png";
    img.alt = "late";
    document.body.appendChild(img);
  });
}, 200));
</script>
</body></html>
"""

LAZY_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Lazy</title></head>
<body><div style="height: 9000px">A tall page.</div>
<img loading="lazy" src="/img/lazy.png" width="48" height="48" alt="lazy">
</body></html>
"""


def _png(r: int, g: int, b: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + bytes((r, g, b)) * 8 for _ in range(8))
    header = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _site(root: Path) -> dict[str, bytes]:
    (root / "img").mkdir(parents=True)
    (root / "data").mkdir()
    images = {"img/late.png": _png(200, 40, 40), "img/lazy.png": _png(40, 200, 40)}
    for name, data in images.items():
        (root / name).write_bytes(data)
    (root / "data" / "late.txt").write_text(LATE_TEXT + "\n")
    (root / "late.html").write_text(LATE_PAGE)
    (root / "lazy.html").write_text(LAZY_PAGE)
    (root / "index.html").write_text('<!DOCTYPE html><title>Home</title><a href="late.html">late</a>')
    return images


def _stored_image(out: Path, page: str, name: str) -> Path:
    text = (out / page).read_text(encoding="utf-8")
    found = re.search(r'<img[^>]*src="([^"]*' + re.escape(name) + r')"', text)
    assert found, f"{page}: no <img> of {name} in the stored page"
    return (out / page).parent / found.group(1).replace("%3A", ":")


def test_late_fetch_and_slow_lazy_image_are_in_the_tree(tmp_path: Path) -> None:
    images = _site(tmp_path / "site")
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=tmp_path / "site", robots=None, latency=0.4)) as server:
        seeds = [f"{server.url}late.html", f"{server.url}lazy.html"]
        # a bound well above what the pages need: the test is about settling too early, not the bound
        report = capture(seeds, out, render=True, depth=0, delay=0, tabs=2, settle=10, progress=False)
        asked = {r.path for r in server.requests}
    assert report.pages == 2
    assert {"/data/late.txt", "/img/late.png", "/img/lazy.png"} <= asked
    late = (out / "late.html").read_text(encoding="utf-8")
    assert LATE_TEXT in late, "the text fetched 200 ms after load is not in the stored page"
    for page, name in (("late.html", "img/late.png"), ("lazy.html", "img/lazy.png")):
        stored = _stored_image(out, page, name)
        assert stored.is_file() and stored.read_bytes() == images[name], f"{page}: {name} not stored"


def test_a_reused_tab_carries_no_session_storage(tmp_path: Path) -> None:
    """A tab is kept for the next page: what a page left in ``sessionStorage`` (per tab, unlike the
    context's shared storage) must not show in the next page of the same origin, which a new tab
    would have rendered without it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<!DOCTYPE html><title>A</title><script>sessionStorage.setItem("left", "LEFT-BY-A")</script>'
        '<a href="b.html">b</a>'
    )
    (site / "b.html").write_text(
        '<!DOCTYPE html><title>B</title><p id="seen"></p><script>document.getElementById("seen")'
        '.textContent = "seen:" + (sessionStorage.getItem("left") || "nothing")</script>'
    )
    out = tmp_path / "out"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture([server.url], out, render=True, depth=1, delay=0, tabs=1, progress=False)
    assert report.pages == 2
    assert "seen:nothing" in (out / "b.html").read_text(encoding="utf-8")
