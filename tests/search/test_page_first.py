"""The search page's road to its first results (issue 23 point 5, formats/search.md §7.1): the
manifest is asked for by the page itself, beside search.js, not after it has run; every compressed
file is decoded by search.js's own inflater (no DecompressionStream: a browser without it searches,
and a file costs no stream and no task hops), which reads every zlib stream Python writes and names a
damaged one; inside the gwtar loader the index files are read as data (``gwtar.bytes``), never run as
scripts, so a member with code after its payload is damaged, not executed."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import threading
import zlib
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from archiver import gwtar
from archiver.capture.browser import launch
from archiver.search import build, store
from tests.search.helpers import html

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node") or "node"
SEARCH = "_archiver/search/index.html"
PAGES = {
    "index.html": html("Home", "<main><h1>Field notes</h1><p>Start at the guide.</p></main>"),
    "docs/install.html": html("Installing the kit", "<h1>Installing</h1><p>Unpack the kit first.</p>"),
    "docs/other.html": html("Other", "<p>Nothing about installation here, only weather.</p>"),
    "ja/index.html": html("日本語のページ", "<p>東京都の天気予報です。明日は晴れ。</p>"),
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _tree(root: Path) -> Path:
    for path, text in PAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    store.write_index(root)
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("first") / "tree")


def _done(page: Page) -> str:
    page.wait_for_selector("body[data-state=done], body[data-state=damaged]", timeout=20_000)
    return page.get_attribute("body", "data-state") or ""


def test_the_manifest_is_asked_for_before_search_js_has_run(browser: Browser, tree: Path) -> None:
    """A loopback server holds search.js back until the manifest is asked for (at most 10 s): the
    page's own ``<script id=search-manifest defer>`` asks at once; a page whose script asks for the
    manifest only once it runs would wait the 10 s and be seen asking after."""
    seen: list[str] = []
    asked = threading.Event()

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            name = self.path.split("?")[0].rsplit("/", 1)[-1]
            if name == "search.js":
                asked.wait(10)
            elif name == "manifest.js":
                asked.set()
            seen.append(name)
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(tree)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        page = browser.new_page()
        page.goto(f"http://127.0.0.1:{server.server_port}/{SEARCH}?q=kit")
        assert _done(page) == "done"
        assert page.locator("#results li a").all_inner_texts()[0] == "Installing the kit"
        assert seen.index("manifest.js") < seen.index("search.js"), seen
        assert seen.count("manifest.js") == 1, seen
        page.close()
    finally:
        server.shutdown()
        server.server_close()


def test_a_missing_manifest_is_still_named(browser: Browser, tree: Path, tmp_path: Path) -> None:
    """The page's own manifest element failing (no file) falls back to loading it as any file,
    which says what is wrong, instead of waiting."""
    copy = Path(shutil.copytree(tree, tmp_path / "tree"))
    (copy / "_archiver" / "search" / "manifest.js").unlink()
    page = browser.new_page()
    page.goto((copy / SEARCH).as_uri() + "?q=kit")
    assert _done(page) == "damaged"
    assert "The index is damaged: manifest.js cannot be loaded" in page.locator("#status").inner_text()
    page.close()


def test_the_page_searches_without_decompression_stream(browser: Browser, tree: Path) -> None:
    """Format 3's compressed files are decoded by search.js itself: with no DecompressionStream (a
    browser without it, or one where it is slow per file) the page still finds and quotes the page."""
    page = browser.new_page()
    page.add_init_script("delete window.DecompressionStream;")
    page.goto((tree / SEARCH).as_uri() + "?q=unpack")
    assert page.evaluate("typeof DecompressionStream") == "undefined"
    assert _done(page) == "done", page.locator("#status").inner_text()
    assert page.locator("#results li a").all_inner_texts() == ["Installing the kit"]
    assert page.locator("#results li mark").all_inner_texts() == ["Unpack"]
    page.close()


def _streams() -> list[bytes]:
    """Every kind of block zlib writes: stored (level 0, incompressible), fixed and dynamic Huffman
    codes, run-length and Huffman-only strategies, long matches, empty input, large input."""
    rnd = os.urandom(70_000)
    rows = [[f"w{i * 7919 % 1000}", i, "東京 é" * (i % 5)] for i in range(4000)]
    text = json.dumps(rows, ensure_ascii=False).encode()
    inputs = [b"", b"a", b" " * 100_000, rnd, text, rnd[:300] + text + rnd[:300]]
    out = []
    for data in inputs:
        for level in (0, 1, 6, 9):
            out.append(zlib.compress(data, level))
        for strategy in (zlib.Z_FIXED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE, zlib.Z_FILTERED):
            c = zlib.compressobj(6, zlib.DEFLATED, 15, 8, strategy)
            out.append(c.compress(data) + c.flush())
    return out


def _node_unzlib(streams: list[bytes]) -> list[str]:
    """search.js's unzlib of each stream: the bytes' base 64, or ``!`` and the error's message."""
    script = (
        "const s = require(process.argv[1]);"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(cases.map((c) => {"
        " try { return Buffer.from(s.unzlib(new Uint8Array(Buffer.from(c, 'base64')))).toString('base64'); }"
        " catch (e) { return '!' + e.message; } })));"
    )
    done = subprocess.run(
        [NODE, "-e", script, str(ROOT / "js" / "search.js")],
        input=json.dumps([base64.b64encode(s).decode() for s in streams]),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def test_search_js_inflates_every_kind_of_zlib_stream() -> None:
    streams = _streams()
    got = _node_unzlib(streams)
    expected = [zlib.decompress(s) for s in streams]
    assert [g if g.startswith("!") else base64.b64decode(g) for g in got] == expected


def test_search_js_names_a_damaged_zlib_stream() -> None:
    """Cut, followed by other bytes, a wrong checksum, no zlib header, a bomb past 64 MiB, and a
    byte flipped anywhere: an error, never other bytes than Python's (which refuses them all)."""
    good = zlib.compress(json.dumps([["fox", "5e1WW1"]] * 50).encode(), 6)
    bad = [good[:-1], good[:-4], good[: len(good) // 2], good + b"\0", good[:-1] + bytes([good[-1] ^ 1]),
           b"not zlib", zlib.compress(b" " * (80 << 20), 9)]  # fmt: skip
    flipped = [good[:i] + bytes([good[i] ^ (1 << (i % 8))]) + good[i + 1 :] for i in range(len(good))]
    got = _node_unzlib(bad + flipped)
    for stream, answer in zip(bad + flipped, got, strict=True):
        try:  # the Python reader (which also refuses bytes after the stream)
            expected: bytes | None = build.inflate(b'"' + base64.b64encode(stream) + b'"')
        except ValueError:
            expected = None
        if len(stream) > 1000:  # the bomb: Python's reader bounds it too
            assert answer == "!expands past 64 MiB"
        elif expected is None:
            assert answer.startswith("!"), stream
        else:  # a flip zlib itself does not notice leaves the same bytes
            assert base64.b64decode(answer) == expected


def test_search_js_sha256_is_hashlib_s() -> None:
    """search.js checks each file against the manifest with its own SHA-256 (synchronous, and there
    where the page has no crypto.subtle): every length around the 64-byte blocks, and large ones."""
    cases = [os.urandom(n) for n in [*range(200), 1000, 4096, 65_537, 300_000]]
    script = (
        "const s = require(process.argv[1]);"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "const hash = (c) => s.sha256(new Uint8Array(Buffer.from(c, 'base64')));"
        "process.stdout.write(JSON.stringify(cases.map(hash)));"
    )
    done = subprocess.run(
        [NODE, "-e", script, str(ROOT / "js" / "search.js")],
        input=json.dumps([base64.b64encode(c).decode() for c in cases]),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == [hashlib.sha256(c).hexdigest() for c in cases]


def test_a_changed_file_is_named_without_crypto_subtle(browser: Browser, tree: Path, tmp_path: Path) -> None:
    """A page with no crypto.subtle (plain http on a LAN name is no secure context) still checks each
    file's SHA-256: a shard changed inside its payload is named as such, not merely undecodable."""
    copy = Path(shutil.copytree(tree, tmp_path / "tree"))
    shard = copy / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    at = data.index(b',"') + 10  # inside the payload's base 64
    data[at] = ord("A") if data[at] != ord("A") else ord("B")
    shard.write_bytes(bytes(data))
    page = browser.new_page()
    page.add_init_script("Object.defineProperty(Crypto.prototype, 'subtle', {get: () => undefined});")
    page.goto((copy / SEARCH).as_uri() + "?q=unpack")
    assert page.evaluate("window.crypto.subtle") is None
    assert _done(page) == "damaged"
    assert "t/0.js its SHA-256 does not match the manifest's" in page.locator("#status").inner_text()
    page.close()


def test_an_index_member_inside_the_loader_is_data_not_code(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A shard whose payload still hashes to the manifest's but with a statement after it (a tree's
    index edited, then packed as it is): inside the loader the file is read as data, its wrapper is
    wrong, the page says the index is damaged and the statement never runs."""
    top = tmp_path_factory.mktemp("data-not-code")
    root = _tree(top / "tree")
    shard = root / "_archiver" / "search" / "t" / "0.js"
    shard.write_bytes(shard.read_bytes() + b"window.pwned=1;\n")
    out = top / "site.gwtar.html"
    gwtar.pack(root, out, search_index=True)
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri() + "#/" + SEARCH + "?q=kit", wait_until="commit")
    page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
    with page.expect_file_chooser() as chooser:
        page.click("#gwtar-file")
    chooser.value.set_files(str(out))
    assert _done(page) == "damaged"
    status = page.locator("#status").inner_text()
    assert status.startswith("The index is damaged: t/0.js is not an index file of this name"), status
    assert page.evaluate("window.pwned") is None
    assert page.evaluate("typeof gwtar.bytes") == "function"
    own = out.as_uri()
    assert [u for u in requests if u.split("#")[0] != own and not u.startswith(("blob:", "data:"))] == []
    page.close()
