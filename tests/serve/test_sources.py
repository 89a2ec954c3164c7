"""What ``archiver serve`` serves: mounts, trees, gwtar files and members, ZIM entries, the index and
search pages, large bodies, the process entry point and the nginx/Caddy configurations."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver import gwtar, zim
from archiver.errors import UsageError
from archiver.media import media_type_for
from archiver.serve import make_app, print_config, running
from archiver.serve import representation as representation_module
from archiver.serve.sources import plan_mounts
from archiver.tree import Header, Record, write_records
from tests.serve.helpers import REPO, free_port, nginx, nginx_block, parse_multipart, request

LOADER = "/* the loader is not under test here */"
BIG = 3 * (1 << 20) + 12345  # spans several 1 MiB chunks


def _pattern(n: int, seed: bytes = b"x") -> bytes:
    out = bytearray()
    i = 0
    while len(out) < n:
        out += hashlib.sha256(seed + i.to_bytes(8, "big")).digest()
        i += 1
    return bytes(out[:n])


def _site(root: Path) -> Path:
    """A small canonical tree with a manifest, an alias (→ a ZIM redirect), a deep page with a unique
    word, CSS, and a multi-MiB binary."""
    root.mkdir()
    pages = {
        "index.html": "<!doctype html><html lang='en'><head><title>Home</title>"
        "<link rel='stylesheet' href='_archiver/ex.com/site.css'></head>"
        "<body><a href='docs/deep.html'>deep</a></body></html>",
        "docs/deep.html": "<!doctype html><html lang='en'><head><title>Deep page</title></head>"
        "<body><p>quokkatermite only here</p></body></html>",
    }
    records = []
    for path, text in pages.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text, encoding="utf-8")
        data = text.encode()
        url = "https://ex.com/" + ("" if path == "index.html" else path)
        records.append(
            Record(path=path, kind="page", media_type="text/html", size=len(data),
                   sha256=hashlib.sha256(data).hexdigest(), urls=[url],
                   title="Home" if path == "index.html" else "Deep page",
                   redirects=["https://ex.com/old-home"] if path == "index.html" else [])
        )  # fmt: skip
    assets = {
        "_archiver/ex.com/site.css": b"body{color:#123}\n",
        "_archiver/ex.com/big.bin": _pattern(BIG),
    }
    for path, data in assets.items():
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data)
        records.append(
            Record(path=path, kind="asset", media_type=media_type_for(path), size=len(data),
                   sha256=hashlib.sha256(data).hexdigest(), urls=["https://ex.com/" + path.split("/", 2)[2]])
        )  # fmt: skip
    write_records(root, Header(home="https://ex.com/", created="2026-01-01T00:00:00Z"), records)
    return root


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    top = tmp_path_factory.mktemp("sources")
    tree = _site(top / "site")
    archives = top / "archives"
    archives.mkdir()
    gwtar.pack(tree, archives / "site.gwtar.html", loader=LOADER)
    zim.pack(tree, archives / "book.zim")
    (archives / "notes.txt").write_text("plain file\n", encoding="utf-8")
    (archives / ".hidden").write_text("never listed\n", encoding="utf-8")
    (archives / "scratch").mkdir()  # a folder that is neither a tree nor an archive: skipped
    return {"top": top, "tree": tree, "archives": archives}


@pytest.fixture(scope="module")
def base(world: dict[str, Path]) -> Iterator[str]:
    with running([world["tree"], world["archives"]]) as url:
        yield url


def get(base: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"):
    return request(base, method, path, headers)


# ------------------------------------------------------------------------------------ mounts


def test_plan_names_and_kinds(world: dict[str, Path]) -> None:
    plan = plan_mounts([world["tree"], world["archives"], world["tree"]])
    assert [(kind, name) for kind, name, _ in plan] == [
        ("tree", "site"),
        ("zim", "book"),
        ("file", "notes.txt"),
        ("gwtar", "site.gwtar.html"),
        ("tree", "site-2"),
    ]


def test_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        plan_mounts([tmp_path / "missing"])
    with pytest.raises(UsageError, match="no gwtar, ZIM, tree or file"):
        plan_mounts([tmp_path])
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(UsageError, match="media type"):
        make_app([tmp_path / "a.txt"], gwtar_mime="text/html\r\nX-Evil: 1")
    with pytest.raises(UsageError, match="unknown configuration kind"):
        print_config("apache", [tmp_path / "a.txt"])


def test_index_page_lists_everything(base: str) -> None:
    r = get(base, "/")
    assert r.status == 200
    assert r.header("content-type") == "text/html; charset=utf-8"
    page = r.body.decode()
    port = base.rstrip("/").rsplit(":", 1)[1]
    # each archive at its own origin (formats/serve.md §5.2); the search page on the server's host
    for href in (f'href="http://site.localhost:{port}/site/"', f'href="http://book.localhost:{port}/book/"',
                 f'href="http://site-gwtar-html.localhost:{port}/site.gwtar.html"',
                 f'href="http://notes-txt.localhost:{port}/notes.txt"', 'href="/~/search/book"'):  # fmt: skip
        assert href in page, href
    assert ".hidden" not in page and "scratch" not in page


# ------------------------------------------------------------------------------------ trees


def test_tree_static_files(base: str, world: dict[str, Path]) -> None:
    assert get(base, "/site").status == 301
    assert get(base, "/site").header("location") == "/site/"
    assert get(base, "/site/docs?x=1").header("location") == "/site/docs/?x=1"
    home = get(base, "/site/")
    assert home.status == 200 and home.body == (world["tree"] / "index.html").read_bytes()
    css = get(base, "/site/_archiver/ex.com/site.css")
    assert css.header("content-type") == "text/css; charset=utf-8"
    assert get(base, "/site/docs/").status == 404  # no index.html, no listing
    assert get(base, "/site/index.html/").status == 404
    assert get(base, "/nothing-here").status == 404


def test_replaced_file_is_noticed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "index.html").write_text("first version", encoding="utf-8")
    monkeypatch.setattr(representation_module, "REVALIDATE_SECONDS", 0.0)
    with running([tree]) as url:
        first = get(url, "/t/index.html")
        assert first.body == b"first version"
        new = tree / "index.tmp"
        new.write_text("second, longer version", encoding="utf-8")
        os.replace(new, tree / "index.html")
        second = get(url, "/t/index.html")
        assert second.body == b"second, longer version"
        assert second.header("etag") != first.header("etag")


# ------------------------------------------------------------------------------------ large bodies


def test_large_ranges_and_multipart(base: str) -> None:
    data = _pattern(BIG)
    path = "/site/_archiver/ex.com/big.bin"
    whole = get(base, path)
    assert whole.status == 200 and whole.body == data
    r = get(base, path, {"Range": "bytes=500000-2600000"})
    assert r.status == 206 and r.body == data[500000:2600001]
    r = get(base, path, {"Range": "bytes=0-1199999,2000000-3000000,-10"})
    parts = parse_multipart(r)
    assert parts is not None
    assert [p[2] for p in parts] == [data[:1200000], data[2000000:3000001], data[-10:]]
    assert int(r.header("content-length") or 0) == len(r.body)
    head = get(base, path, method="HEAD")
    assert head.body == b"" and head.header("content-length") == str(BIG)


def test_pipelined_requests_and_connection_close(base: str, world: dict[str, Path]) -> None:
    """Small responses leave as one write (head and body together): pipelined answers stay in
    order, HEAD has no body, and ``Connection: close`` still delivers the whole response."""
    host, port = base.split("//")[1].rstrip("/").split(":")
    css = (world["tree"] / "_archiver/ex.com/site.css").read_bytes()
    requests = (
        b"GET /site/_archiver/ex.com/site.css HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-3\r\n\r\n"
        b"HEAD /site/_archiver/ex.com/site.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET /site/_archiver/ex.com/site.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(requests)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    first, rest = data.split(b"\r\n\r\n", 1)
    assert first.startswith(b"HTTP/1.1 206") and rest.startswith(css[:4])
    rest = rest[4:]
    second, rest = rest.split(b"\r\n\r\n", 1)
    assert second.startswith(b"HTTP/1.1 200") and f"content-length: {len(css)}".encode() in second
    third, body = rest.split(b"\r\n\r\n", 1)
    assert third.startswith(b"HTTP/1.1 200") and b"connection: close" in third.lower()
    assert body == css


def _exchange(base: str, payload: bytes) -> list[tuple[list[bytes], bytes]]:
    """Send ``payload`` (GET requests, the last with ``Connection: close``) on one connection; each
    response's (status line and header lines without Date, body), in order."""
    host, port = base.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(payload)
        received = b""
        while chunk := s.recv(1 << 20):
            received += chunk
    replies = []
    while received:
        head, received = received.split(b"\r\n\r\n", 1)
        lines = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"date:")]
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        replies.append((lines, received[:length]))
        received = received[length:]
    return replies


FAST_CASES = [
    ("/site/_archiver/ex.com/site.css", ""),
    ("/site/_archiver/ex.com/site.css", "Range: bytes=0-3\r\n"),
    ("/site/_archiver/ex.com/site.css", "Range: bytes=5-\r\n"),
    ("/site/_archiver/ex.com/big.bin", "Range: bytes=1000-66535\r\n"),
    ("/site.gwtar.html", "Range: bytes=100-4195\r\n"),
    ("/site.gwtar.html/~/_archiver/ex.com/big.bin?x=1", "Range: bytes=2000000-2004095\r\n"),
    ("/book/_archiver/ex.com/big.bin", "Range: bytes=7-4102\r\n"),
    ("/book/docs/deep.html", ""),
]


def test_fast_path_answers_as_the_asgi_path(base: str, world: dict[str, Path]) -> None:
    """The commonest GETs are answered by ``App.fast`` without ASGI; the same request with a
    validator that changes nothing (``If-Match: *``) takes the ASGI path. Both answers are the same,
    byte for byte, Date apart."""
    app = make_app([world["tree"], world["archives"]])
    try:
        for path, header in FAST_CASES:
            headers = [(b"host", b"127.0.0.1")]  # an HTTP/1.1 request without one is a 400: not fast
            headers += [(b"range", header.split(": ")[1].strip().encode())] if header else []
            assert app.fast(path.encode(), headers) is not None, (path, header)
            assert app.fast(path.encode(), [*headers, (b"if-match", b"*")]) is None
    finally:
        app.site.close()
    plain = b"".join(f"GET {p} HTTP/1.1\r\nHost: 127.0.0.1\r\n{h}\r\n".encode() for p, h in FAST_CASES)
    general = b"".join(
        f"GET {p} HTTP/1.1\r\nHost: 127.0.0.1\r\nIf-Match: *\r\n{h}\r\n".encode() for p, h in FAST_CASES
    )
    close = b"GET /site/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    fast_replies = _exchange(base, plain + close)
    asgi_replies = _exchange(base, general + close)
    assert len(fast_replies) == len(FAST_CASES) + 1
    assert fast_replies == asgi_replies
    big = _pattern(BIG)
    assert fast_replies[3][1] == big[1000:66536] and fast_replies[5][1] == big[2000000:2004096]


def test_fast_and_ordinary_answers_pipelined_in_order(base: str, world: dict[str, Path]) -> None:
    """Requests the fast path answers and requests it does not (multipart, errors, large bodies),
    pipelined on one connection, are answered in order."""
    css = (world["tree"] / "_archiver/ex.com/site.css").read_bytes()
    big = _pattern(BIG)
    cases = [
        ("/site/_archiver/ex.com/site.css", "Range: bytes=0-3\r\n"),
        ("/site/_archiver/ex.com/site.css", "Range: bytes=0-1,4-5\r\n"),
        ("/site/_archiver/ex.com/site.css", ""),
        ("/site/no-such-file", ""),
        ("/site/_archiver/ex.com/big.bin", "Range: bytes=10-\r\n"),
        ("/site/_archiver/ex.com/big.bin", "Range: bytes=10-19\r\n"),
        ("/site/_archiver/ex.com/site.css", "Range: bytes=-2\r\nConnection: close\r\n"),
    ]
    payload = b"".join(f"GET {p} HTTP/1.1\r\nHost: 127.0.0.1\r\n{h}\r\n".encode() for p, h in cases)
    replies = _exchange(base, payload)
    assert [lines[0].split(b" ")[1] for lines, _ in replies] == [
        b"206",
        b"206",
        b"200",
        b"404",
        b"206",
        b"206",
        b"206",
    ]
    bodies = [body for _, body in replies]
    assert bodies[0] == css[:4] and bodies[2] == css and bodies[3] == b"404 not found\n"
    assert b"Content-Range: bytes 4-5/" in bodies[1]
    assert bodies[4] == big[10:] and bodies[5] == big[10:20] and bodies[6] == css[-2:]


def test_idle_connections_close_and_busy_ones_do_not(world: dict[str, Path]) -> None:
    """An idle keep-alive connection is closed (here after 1 s without a request); one that keeps
    asking stays open past that, and one whose large response is still being read is not cut. (With
    0.3 s, a CI run at load 10 saw the asking connection closed: the client's 0.1 s pause plus the
    time it waited for the CPU came past 0.3 s.)"""
    big = _pattern(BIG)
    with running([world["tree"]], keep_alive=1.0) as url:
        host, port = url.split("//")[1].rstrip("/").split(":")
        request = (
            b"GET /site/_archiver/ex.com/site.css HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=0-3\r\n\r\n"
        )
        with socket.create_connection((host, int(port)), timeout=10) as s:
            for _ in range(15):  # 15 x 0.1 s: longer than the timeout, never idle that long
                s.sendall(request)
                assert s.recv(65536).endswith(b"\r\n\r\nbody")
                time.sleep(0.1)
            assert s.recv(65536) == b"", "closed once idle"
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)  # the server cannot send it all at once
            s.settimeout(10)
            s.connect((host, int(port)))
            s.sendall(request)
            assert s.recv(65536).endswith(b"\r\n\r\nbody")  # the idle timer is armed
            s.sendall(b"GET /site/_archiver/ex.com/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            received = s.recv(1 << 16)
            time.sleep(2.0)  # a slow reader, twice the timeout: the response is still being sent
            while len(received) < len(big) + 200 and (chunk := s.recv(1 << 20)):
                received += chunk
            assert received.endswith(big)


def test_large_bodies_on_one_connection(base: str) -> None:
    """Bodies over 64 KiB leave by sendfile as far as the socket takes them, the rest the ordinary
    way: back-to-back large and small responses on one connection, then ``Connection: close``."""
    host, port = base.split("//")[1].rstrip("/").split(":")
    data = _pattern(BIG)
    path = b"/site/_archiver/ex.com/big.bin"
    requests = (
        b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=100-199\r\n\r\n"
        b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: bytes=70000-\r\nConnection: close\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(requests)
        received = bytearray()
        while chunk := s.recv(1 << 20):
            received += chunk
    bodies = []
    rest = bytes(received)
    while rest:
        head, rest = rest.split(b"\r\n\r\n", 1)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        bodies.append(rest[:length])
        rest = rest[length:]
    assert bodies == [data, data[100:200], data[70000:]]


def test_client_leaving_mid_body(base: str) -> None:
    host, port = base.split("//")[1].rstrip("/").split(":")
    for _ in range(5):
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"GET /site/_archiver/ex.com/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            s.recv(1000)
    assert get(base, "/site/").status == 200


# ------------------------------------------------------------------------------------ gwtar


def test_gwtar_whole_file(base: str, world: dict[str, Path]) -> None:
    archive = (world["archives"] / "site.gwtar.html").read_bytes()
    r = get(base, "/site.gwtar.html", {"Accept-Encoding": "gzip, br"})
    assert r.status == 200 and r.body == archive
    assert r.header("content-type") == "text/html"
    assert r.header("accept-ranges") == "bytes"
    assert r.header("content-encoding") is None
    assert r.header("gwtar-members") == "1", "the loader may use member URLs without probing"
    r = get(base, "/site.gwtar.html", {"Range": "bytes=0-99", "Accept-Encoding": "gzip"})
    assert r.status == 206 and r.body == archive[:100]
    assert r.header("gwtar-members") == "1"
    assert get(base, "/site.gwtar.html/~/index.html").header("gwtar-members") is None


def test_gwtar_members(base: str, world: dict[str, Path]) -> None:
    with gwtar.open(world["archives"] / "site.gwtar.html") as g:
        members = {m.path: m for m in g.members}
    for path in ("index.html", "_archiver/ex.com/site.css", "docs/deep.html", "_archiver/ex.com/big.bin"):
        want = (world["tree"] / path).read_bytes()
        r = get(base, "/site.gwtar.html/~/" + path)
        assert r.status == 200, path
        assert r.body == want, path
        assert r.header("etag") == f'"{members[path].sha256[:40]}"'
    assert (
        get(base, "/site.gwtar.html/~/_archiver/ex.com/site.css").header("content-type")
        == "text/css; charset=utf-8"
    )
    r = get(base, "/site.gwtar.html/~/_archiver/ex.com/big.bin", {"Range": "bytes=-5"})
    assert r.status == 206 and r.body == _pattern(BIG)[-5:]
    assert r.header("content-range") == f"bytes {BIG - 5}-{BIG - 1}/{BIG}"
    assert get(base, "/site.gwtar.html/~/docs/").status == 404
    assert get(base, "/site.gwtar.html/~/nope.css").status == 404
    assert get(base, "/site.gwtar.html/~/").status == 404
    assert get(base, "/site.gwtar.html/").status == 404


def test_gwtar_mime_and_gwtar_inside_a_tree(tmp_path: Path, world: dict[str, Path]) -> None:
    tree = tmp_path / "host"
    tree.mkdir()
    (tree / "index.html").write_text("host", encoding="utf-8")
    (tree / "arch").mkdir()
    os.link(world["archives"] / "site.gwtar.html", tree / "arch" / "s.gwtar.html")
    with running([tree, world["archives"] / "site.gwtar.html"], gwtar_mime="x-gwtar") as url:
        assert get(url, "/site.gwtar.html").header("content-type") == "x-gwtar"
        inner = get(url, "/host/arch/s.gwtar.html")
        assert inner.header("content-type") == "x-gwtar"
        member = get(url, "/host/arch/s.gwtar.html/~/docs/deep.html")
        assert member.status == 200 and b"quokkatermite" in member.body
        assert get(url, "/host/arch/s.gwtar.html/~/missing").status == 404
        assert get(url, "/host/index.html/~/x").status == 404


def test_not_a_gwtar_keeps_serving_whole(tmp_path: Path) -> None:
    fake = tmp_path / "broken.gwtar.html"
    fake.write_bytes(b"<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\nthen nothing")
    with running([fake]) as url:
        whole = get(url, "/broken.gwtar.html")
        assert whole.body == fake.read_bytes()
        assert whole.header("gwtar-members") is None, "no member URLs: the loader must not use them"
        assert get(url, "/broken.gwtar.html/~/index.html").status == 404


# ------------------------------------------------------------------------------------ ZIM


def test_zim_entries(base: str, world: dict[str, Path]) -> None:
    assert get(base, "/book").header("location") == "/book/"
    home = get(base, "/book/")
    assert home.status == 200 and home.body == (world["tree"] / "index.html").read_bytes()
    assert home.header("content-type") == "text/html; charset=utf-8"
    css = get(base, "/book/_archiver/ex.com/site.css")
    assert css.header("content-type") == "text/css; charset=utf-8"
    moved = get(base, "/book/old-home/index.html")
    assert moved.status == 302 and moved.header("location") == "/book/index.html"
    r = get(base, "/book/_archiver/ex.com/big.bin", {"Range": "bytes=1048570-1048589"})
    assert r.status == 206 and r.body == _pattern(BIG)[1048570:1048590]
    whole = get(base, "/book/_archiver/ex.com/big.bin")
    assert whole.body == _pattern(BIG)
    assert get(base, "/book/missing.html").status == 404


def test_zim_main_page_in_a_folder(tmp_path: Path, world: dict[str, Path]) -> None:
    book = tmp_path / "deep.zim"
    zim.pack(world["tree"], book, main="docs/deep.html")
    with running([book]) as url:
        r = get(url, "/deep/")
        assert r.status == 302 and r.header("location") == "/deep/docs/deep.html"


def test_zim_search_page(base: str) -> None:
    r = get(base, "/~/search/book?q=quokkatermite")
    assert r.status == 200
    assert 'href="/book/docs/deep.html"' in r.body.decode()
    empty = get(base, "/~/search/book?q=nothingmatcheszzz")
    assert "No results." in empty.body.decode()
    assert get(base, "/~/search/book").status == 200
    assert get(base, "/~/search/site").status == 404
    assert get(base, "/~/other").status == 404


# ------------------------------------------------------------------------------------ the process


@pytest.mark.parametrize(("workers", "stop_signal"), [(1, signal.SIGINT), (2, signal.SIGTERM)])
def test_serve_process_prints_url_and_stops(world: dict[str, Path], workers: int, stop_signal: int) -> None:
    code = (
        "import sys; from archiver.serve import serve; "
        f"sys.exit(serve([{str(world['tree'])!r}, {str(world['archives'])!r}], port=0, quiet=True,"
        f" workers={workers}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, text=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        assert first.startswith("http://127.0.0.1:") and first.endswith("/")
        deadline = time.monotonic() + 10
        while True:
            try:
                r = get(first, "/site/")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.status == 200
        # Several connections, spread over the workers by the kernel; the archives were opened before
        # the fork and are read by every worker at once.
        data = _pattern(BIG)
        for i in range(12):
            assert get(first, "/site/index.html").status == 200
            a = 1000 + 250_000 * i
            for path in ("/book/_archiver/ex.com/big.bin", "/site.gwtar.html/~/_archiver/ex.com/big.bin"):
                r = get(first, path, {"Range": f"bytes={a}-{a + 70_000}"})
                assert r.status == 206 and r.body == data[a : a + 70_001], path
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert len(children) == workers - 1
        proc.send_signal(stop_signal)
        assert proc.wait(timeout=15) == 0
        for child in children:  # the workers are gone (or zombies of the finished parent)
            stat_file = Path(f"/proc/{child}/stat")
            assert not stat_file.exists() or stat_file.read_text().split()[2] == "Z"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------------------------ configs


@pytest.mark.interop
def test_nginx_config_serves_gwtar_uncompressed(world: dict[str, Path], tmp_path: Path) -> None:
    """The printed config passes ``nginx -t`` with every kind of mount, and with gzip switched on for
    everything at the http level the gwtar still answers Range with 206 and its own type."""
    archives = world["archives"]
    host = tmp_path / "host"
    (host / "arch").mkdir(parents=True)
    (host / "index.html").write_text("host", encoding="utf-8")
    os.link(archives / "site.gwtar.html", host / "arch" / "s.gwtar.html")
    paths = [world["tree"], archives / "site.gwtar.html", archives / "book.zim", archives / "notes.txt", host]
    extra = "    gzip on;\n    gzip_types *;\n    gzip_min_length 1;\n"
    with nginx(tmp_path, paths, gwtar_mime="x-gwtar", http_extra=extra) as url:
        archive = (archives / "site.gwtar.html").read_bytes()
        r = get(url, "/site.gwtar.html", {"Range": "bytes=10-99", "Accept-Encoding": "gzip"})
        assert r.status == 206 and r.body == archive[10:100]
        assert r.header("content-type") == "x-gwtar"
        assert r.header("content-encoding") is None
        assert r.header("cache-control") == "public, max-age=86400"
        home = get(url, "/site/")
        assert home.status == 200 and home.body == (world["tree"] / "index.html").read_bytes()
        assert get(url, "/site").status == 301
        css = get(url, "/site/_archiver/ex.com/site.css", {"Accept-Encoding": "gzip"})
        assert css.header("content-encoding") == "gzip"  # trees may be compressed
        assert get(url, "/notes.txt").body == b"plain file\n"
        inner = get(url, "/host/arch/s.gwtar.html", {"Range": "bytes=0-99", "Accept-Encoding": "gzip"})
        assert inner.status == 206 and inner.body == archive[:100]
        assert inner.header("content-type") == "x-gwtar"
        assert inner.header("content-encoding") is None


@pytest.mark.interop
def test_cli_print_config_nginx_is_what_nginx_runs(world: dict[str, Path], tmp_path: Path) -> None:
    """``archiver serve --print-config nginx`` as a user types it: its output, with only the listen
    line changed to a free loopback port, passes ``nginx -t``, and nginx serves the same URLs with
    the same bytes as ``archiver serve``."""
    archives = world["archives"]
    paths = [world["tree"], archives / "site.gwtar.html", archives / "notes.txt"]
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "serve", "--print-config", "nginx", "--gwtar-mime", "x-gwtar",
         *map(str, paths)],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = done.stdout
    assert text.startswith("# nginx configuration written by `archiver serve --print-config nginx`")
    # one server for other names (421), the bare host's, one per mount (formats/serve.md §7)
    assert text.count("    listen 80;\n") == 2 + len(paths), "the default listen line, once per server"
    port = free_port()
    block = text.replace("    listen 80;\n", f"    listen 127.0.0.1:{port};\n")
    archive = (archives / "site.gwtar.html").read_bytes()
    with nginx_block(tmp_path, block, port) as url, running(paths, gwtar_mime="x-gwtar") as ours:
        for base in (url, ours):
            r = get(base, "/site.gwtar.html", {"Range": "bytes=100-4195", "Accept-Encoding": "gzip"})
            assert (r.status, r.body) == (206, archive[100:4196]), base
            assert r.header("content-type") == "x-gwtar", base
            assert r.header("content-encoding") is None, base
            multi = get(base, "/site.gwtar.html", {"Range": "bytes=0-9,-10"})
            parts = parse_multipart(multi)
            assert multi.status == 206 and parts is not None, base
            assert [p[2] for p in parts] == [archive[:10], archive[-10:]], base
            home = get(base, "/site/")
            assert home.status == 200 and home.body == (world["tree"] / "index.html").read_bytes(), base
            assert get(base, "/site").status == 301, base
            css = get(base, "/site/_archiver/ex.com/site.css")
            assert css.body == (world["tree"] / "_archiver/ex.com/site.css").read_bytes(), base
            assert get(base, "/notes.txt").body == b"plain file\n", base
            assert get(base, "/site/no-such-file").status == 404, base
        assert get(url, "/site.gwtar.html").header("cache-control") == "public, max-age=86400"


def test_caddy_config_text(world: dict[str, Path]) -> None:
    archives = world["archives"]
    text = print_config("caddy", [world["tree"], archives / "site.gwtar.html", archives / "book.zim"],
                        gwtar_mime="x-gwtar", listen="8080")  # fmt: skip
    assert text.startswith("# Caddyfile")
    assert ":8080 {" in text
    assert "@compressible not path *.gwtar.html" in text
    assert 'header Content-Type "x-gwtar"' in text
    assert "handle_path /site/* {" in text
    assert "reverse_proxy 127.0.0.1:8081" in text
    assert "rewrite * /book{uri}" in text
    assert "kiwix-serve --address=127.0.0.1 --port=8081 --nosearchbar " in text


def test_plain_asgi_call(world: dict[str, Path]) -> None:
    """The application is plain ASGI: any server's ``send`` gets a start and a body message."""
    import asyncio

    app = make_app([world["tree"]])
    messages: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, object]) -> None:
        messages.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/site/index.html",
        "raw_path": b"/site/index.html",
        "query_string": b"",
        "headers": [(b"range", b"bytes=0-14")],
    }
    asyncio.run(app(scope, receive, send))
    assert [m["type"] for m in messages] == ["http.response.start", "http.response.body"]
    assert messages[0]["status"] == 206
    assert (
        b"content-range",
        f"bytes 0-14/{(world['tree'] / 'index.html').stat().st_size}".encode(),
    ) in messages[0]["headers"]
    assert messages[1]["body"] == (world["tree"] / "index.html").read_bytes()[:15]
    app.site.close()
