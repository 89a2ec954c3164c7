"""Outside tools on our ZIMs: bookworm's zimcheck and kiwix-serve (Debian zim-tools, kiwix-tools)."""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from archiver.tree import read_records
from archiver.zim import extract, pack, verify
from archiver.zim import open as open_zim
from archiver.zim.source import STORED_EDITS
from archiver.zim.zimsafe import decode_edits

from .conftest import MINI, MakeTree, build_tree, page, tree_files
from .zimfile import cluster_compression

pytestmark = pytest.mark.interop

# every bookworm check but -I (integrity), which misfires on libzim >= 9.3 files (research zim.md §3)
ZIMCHECK = ["zimcheck", "-C", "-M", "-F", "-P", "-U", "-X", "-L", "-0", "-R"]
CLIP = hashlib.sha256(b"clip").digest() * (300_000 // 32)
BLOB = random.Random(5).randbytes(200_000)  # random bytes of no known type: stored uncompressed


def _zimcheck(zim: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ZIMCHECK, str(zim)], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def rich_zim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini tree plus a 300 kB video, a page that plays it, a 200 kB random octet-stream file
    (an uncompressed cluster, formats/zim.md §3.2) and redirect aliases."""
    root = tmp_path_factory.mktemp("rich")
    files = {r.path: (MINI / r.path).read_bytes() for r in read_records(MINI)}
    files["_archiver/mini.example/media/clip.mp4"] = CLIP
    files["_archiver/mini.example/files/blob.bin"] = BLOB
    files["docs/video.html"] = page(
        "Video",
        '<video controls src="../_archiver/mini.example/media/clip.mp4" '
        'poster="../_archiver/mini.example/img/a%20b.png"></video>',
    )
    extra = {
        "docs/video.html": {"urls": ["https://mini.example/docs/video.html", "https://mini.example/clip"]},
        "greatwork.html": {"redirects": ["https://mini.example/old/great.html"]},
    }
    tree = build_tree(root / "tree", files, home="https://mini.example/", extra=extra)
    result = pack(tree, root / "rich.zim")
    assert result.redirects == 2
    assert cluster_compression(result.path)["_archiver/mini.example/files/blob.bin"] == "none"
    return result.path


@pytest.mark.parametrize("which", ["mini", "rich"])
def test_zimcheck_reports_no_error(which: str, mini_zim: Path, rich_zim: Path) -> None:
    zim = mini_zim if which == "mini" else rich_zim
    run = _zimcheck(zim)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[ERROR]" not in run.stdout and "Overall Test Status: Pass" in run.stdout
    assert verify(zim).ok


def test_zimcheck_sees_one_broken_link_per_page_where_verify_sees_all(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    body = '<a href="one.html">1</a><a href="two.html">2</a><img srcset="three.png 2x"><img src="four.png">'
    zim = pack(make_tree({"index.html": page("Home", body)}), tmp_path / "broken.zim").path
    run = _zimcheck(zim)
    assert run.returncode == 1 and "[ERROR]" in run.stdout
    ours = verify(zim).problems
    assert sorted(p.message.split("'")[1] for p in ours) == ["four.png", "one.html", "three.png", "two.html"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def kiwix(rich_zim: Path, tmp_path: Path) -> Iterator[str]:
    book = tmp_path / "rich.zim"
    shutil.copy(rich_zim, book)
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            ["kiwix-serve", "-i", "127.0.0.1", "-p", str(port), str(book)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                httpx.get(base + "/", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        if proc.poll() is None:
            break
    else:
        pytest.fail("kiwix-serve did not start")
    try:
        yield f"{base}/rich/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_kiwix_serve_serves_pages_assets_and_ranges(kiwix: str) -> None:
    with httpx.Client(timeout=10) as client:
        home = client.get(kiwix, follow_redirects=True)
        assert home.status_code == 200 and home.headers["content-type"].startswith("text/html")
        assert re.search(r"<title>Mini home</title>", home.text)
        css = client.get(kiwix + quote("_archiver/mini.example/css/main__q-269fc2.css"))
        assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
        assert css.content == (MINI / "_archiver/mini.example/css/main__q-269fc2.css").read_bytes()
        image = client.get(kiwix + quote("_archiver/mini.example/img/hash#1.png"))
        assert image.status_code == 200 and image.headers["content-type"] == "image/png"
        assert image.content == (MINI / "_archiver/mini.example/img/hash#1.png").read_bytes()
        page_with_query_name = client.get(kiwix + quote("what?.html"))
        assert page_with_query_name.status_code == 200 and "<title>What?</title>" in page_with_query_name.text
        clip = kiwix + quote("_archiver/mini.example/media/clip.mp4")
        part = client.get(clip, headers={"Range": "bytes=100000-100999"})
        assert part.status_code == 206
        assert part.headers["content-range"] == f"bytes 100000-100999/{len(CLIP)}"
        assert part.content == CLIP[100000:101000]
        tail = client.get(clip, headers={"Range": "bytes=299000-"})
        assert tail.status_code == 206 and tail.content == CLIP[299000:]
        blob = client.get(
            kiwix + quote("_archiver/mini.example/files/blob.bin"), headers={"Range": "bytes=150000-"}
        )
        assert blob.status_code == 206 and blob.content == BLOB[150000:]
        alias = client.get(kiwix + "clip/index.html")
        assert alias.status_code == 302 and alias.headers["location"].endswith("docs/video.html")


@pytest.fixture(scope="module")
def site_capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The fixture site captured over HTTP (no browser, every asset type kept) and packed."""
    from archiver.capture import capture
    from archiver.fixture import FixtureConfig, FixtureServer, site_root

    root = tmp_path_factory.mktemp("site")
    with FixtureServer(FixtureConfig(root=site_root())) as server, ThreadPoolExecutor(1) as pool:
        # capture runs its own event loop (asyncio.run): in a thread of its own, so a sync Playwright
        # session left open by another suite's session fixture in this process does not get in the way
        pool.submit(
            capture, [server.url + "/"], root / "tree", render=False, delay=0, depth=10, progress=False,
            skip_extensions=frozenset(),
        ).result()  # fmt: skip
    result = pack(root / "tree", root / "site.zim")
    return root / "tree", result.path


def _tree_link_problems(tree: Path) -> set[str]:
    from archiver.zim.links import check_document

    records = list(read_records(tree))
    paths = {r.path for r in records}
    out = set()
    for r in records:
        _, problems = check_document(r.path, (tree / r.path).read_bytes(), r.media_type, paths.__contains__)
        out |= {f"{r.path}: {p}" for p in problems}
    return out


def test_fixture_site_zim_passes_zimcheck_and_verify(
    site_capture: tuple[Path, Path],
) -> None:
    tree, zim = site_capture
    report = verify(zim)
    # packing neither breaks nor hides a link: the ZIM's problems are exactly the tree's own (none)
    assert {str(p) for p in report.problems} == _tree_link_problems(tree) == set()
    assert report.ok and report.documents > 45 and report.links > 600
    # the site shows `<base href="/docs/guide/">` as text and has an `href=""`: zimcheck 3.1.3 would
    # take both for broken links; pack writes them so it does not (formats/zim.md §3.1)
    with open_zim(zim) as z:
        assert "demo/base-href.html" in decode_edits(z.get(STORED_EDITS).read())
    run = _zimcheck(zim)
    assert run.returncode == 0 and "[ERROR]" not in run.stdout, run.stdout
    assert "external dependence" not in run.stdout
    back = zim.parent / "back"
    extract(zim, back)
    content = {
        p: b for p, b in tree_files(tree).items() if p.count("/") > 1 or not p.startswith("_archiver/")
    }
    assert tree_files(back) == content  # the crawl state is no content; the pages are byte for byte
