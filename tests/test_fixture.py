"""archiver.fixture.FixtureServer (and tools/fixture_server.py) over real HTTP on 127.0.0.1."""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from archiver.fixture import (
    CHUNK_SIZE,
    FixtureConfig,
    FixtureServer,
    GeneratedFile,
    RequestRecord,
    load_generated,
    media_type,
    site_root,
)
from archiver.fixture import site as fixture_site

SITE = site_root()
REPO = Path(__file__).resolve().parents[1]
VIDEO = "/media/field-notes.mp4"
VIDEO_SIZE = 10 * 1024 * 1024
CSV = "/downloads/survey-data.csv"


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer() as running:
        yield running
        assert running.errors == []


@pytest.fixture(scope="module")
def client(server: FixtureServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as http:
        yield http


def raw_request(server: FixtureServer, target: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """Send a request target exactly as given (no client-side normalisation) and read the answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        request = f"{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        sock.sendall(request.encode("latin-1"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body


def counter_stream(seed: str, start: int, end: int) -> bytes:
    """The sha256-counter pattern, computed independently of archiver.fixture."""
    first, last = start // 32, (end - 1) // 32
    blocks = b"".join(
        hashlib.sha256(seed.encode() + i.to_bytes(8, "big")).digest() for i in range(first, last + 1)
    )
    return blocks[start - first * 32 : end - first * 32]


def site_files() -> list[Path]:
    return sorted(path for path in SITE.rglob("*") if path.is_file())


def url_path(path: Path) -> str:
    return "/" + quote(path.relative_to(SITE).as_posix())


# ------------------------------------------------------------------------------------------- files


@pytest.mark.parametrize("path", site_files(), ids=lambda p: p.relative_to(SITE).as_posix())
def test_every_file_is_served_byte_for_byte(client: httpx.Client, path: Path) -> None:
    response = client.get(url_path(path))
    assert response.status_code == 200
    assert response.content == path.read_bytes()
    assert response.headers["content-length"] == str(path.stat().st_size)
    assert response.headers["content-type"] == media_type(path.name)
    assert response.headers["last-modified"]
    assert response.headers["etag"].startswith('"')


def test_directories_serve_their_index(client: httpx.Client) -> None:
    assert client.get("/").content == (SITE / "index.html").read_bytes()
    assert client.get("/docs/").content == (SITE / "docs/index.html").read_bytes()
    assert client.get("/docs/reference/api/v1/").status_code == 404  # no index.html, no listing


def test_directory_without_slash_redirects(client: httpx.Client) -> None:
    for path, location in [
        ("/docs", "/docs/"),
        ("/docs/guide?utm_source=x", "/docs/guide/?utm_source=x"),
        ("/caf%C3%A9%20menu", "/caf%C3%A9%20menu/"),
    ]:
        response = client.get(path)
        assert response.status_code == 301
        assert response.headers["location"] == location
    final = client.get("/docs/guide", follow_redirects=True)
    assert final.url.path == "/docs/guide/"
    assert final.content == (SITE / "docs/guide/index.html").read_bytes()


@pytest.mark.parametrize(
    ("target", "file"),
    [
        ("/caf%C3%A9%20menu/", "café menu/index.html"),
        ("/caf%c3%a9%20menu/specials.html", "café menu/specials.html"),
        ("/demo/what%3F.html", "demo/what?.html"),
        ("/img/hash%231.png", "img/hash#1.png"),
        ("/img/a%20b.png", "img/a b.png"),
        ("/img/w_300%2Cc_fill/photo.jpg", "img/w_300,c_fill/photo.jpg"),
        ("/img/w_300,c_fill/photo.jpg", "img/w_300,c_fill/photo.jpg"),
        ("/img/we(ird).png", "img/we(ird).png"),
        ("/docs//guide/index.html", "docs/guide/index.html"),
    ],
)
def test_percent_encoded_names(server: FixtureServer, target: str, file: str) -> None:
    status, _, body = raw_request(server, target)
    assert status == 200
    assert body == (SITE / file).read_bytes()


def test_url_for_encodes_what_a_browser_would(server: FixtureServer, client: httpx.Client) -> None:
    assert server.url_for("/café menu/") == server.url + "caf%C3%A9%20menu/"
    assert client.get(server.url_for("/café menu/specials.html")).status_code == 200
    assert client.get(server.url_for("/img/hash%231.png")).status_code == 200


def test_query_is_ignored(client: httpx.Client) -> None:
    theme = (SITE / "css/theme.css").read_bytes()
    assert client.get("/css/theme.css?v=3").content == theme
    assert client.get("/img/logo.png?v=3&size=2").content == (SITE / "img/logo.png").read_bytes()
    assert client.get("/blog/?utm_source=x&utm_medium=y").content == (SITE / "blog/index.html").read_bytes()
    assert client.get(f"{VIDEO}?t=5", headers={"Range": "bytes=0-9"}).status_code == 206


@pytest.mark.parametrize(
    "target",
    [
        "/../pyproject.toml",
        "/../../../../etc/passwd",
        "/%2e%2e/pyproject.toml",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/..%2f..%2fetc/passwd",
        "/docs/%2E%2E/%2E%2E/pyproject.toml",
        "/docs/./../../pyproject.toml",
        "/..\\pyproject.toml",
        "/docs\\..\\..\\pyproject.toml",
        "/img/..%5c..%5cpyproject.toml",
        "/index.html%00.png",
        "/%00",
        "/%c0%ae%c0%ae/pyproject.toml",
        "//etc/passwd",
        "/etc/passwd",
    ],
)
def test_path_traversal_never_leaves_the_root(server: FixtureServer, target: str) -> None:
    status, _, body = raw_request(server, target)
    assert status in (400, 404)
    assert b"[project]" not in body and b"root:" not in body


def test_absolute_form_request_target(server: FixtureServer) -> None:
    status, _, body = raw_request(server, f"{server.url}docs/")
    assert status == 200 and body == (SITE / "docs/index.html").read_bytes()


def test_symlinks_out_of_the_root_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    root = tmp_path / "root"
    root.mkdir()
    (root / "index.html").write_text("<!DOCTYPE html><title>t</title>")
    (root / "inside.txt").write_text("INSIDE")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside, target_is_directory=True)
    (root / "alias.txt").symlink_to(root / "inside.txt")
    with (
        FixtureServer(FixtureConfig(root=root)) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        assert http.get("/leak.txt").status_code == 404
        assert http.get("/leakdir/secret.txt").status_code == 404
        assert http.get("/leakdir/").status_code == 404
        assert http.get("/alias.txt").text == "INSIDE"
        assert http.get("/robots.txt").status_code == 404  # this root has none
        assert srv.errors == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("a.html", "text/html; charset=utf-8"),
        ("a.css", "text/css; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"),
        ("a.mjs", "text/javascript; charset=utf-8"),
        ("a.json", "application/json; charset=utf-8"),
        ("a.xml", "application/xml; charset=utf-8"),
        ("a.txt", "text/plain; charset=utf-8"),
        ("a.svg", "image/svg+xml; charset=utf-8"),
        ("a.png", "image/png"),
        ("a.jpg", "image/jpeg"),
        ("a.gif", "image/gif"),
        ("A.GIF", "image/gif"),
        ("a.ico", "image/x-icon"),
        ("a.webp", "image/webp"),
        ("a.avif", "image/avif"),
        ("a.woff2", "font/woff2"),
        ("a.woff", "font/woff"),
        ("a.ttf", "font/ttf"),
        ("a.mp4", "video/mp4"),
        ("a.webm", "video/webm"),
        ("a.pdf", "application/pdf"),
        ("what?.html", "text/html; charset=utf-8"),
        ("noext", "application/octet-stream"),
    ],
)
def test_media_types(name: str, expected: str) -> None:
    assert media_type(name) == expected


def test_head_has_headers_and_no_body(client: httpx.Client) -> None:
    get = client.get("/index.html")
    head = client.head("/index.html")
    assert head.status_code == 200 and head.content == b""
    for name in ("content-type", "content-length", "etag", "last-modified", "accept-ranges"):
        assert head.headers[name] == get.headers[name]
    assert client.head(VIDEO).headers["content-length"] == str(VIDEO_SIZE)
    assert client.head("/nope.html").status_code == 404


def test_conditional_requests(client: httpx.Client) -> None:
    first = client.get("/css/main.css")
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    again = client.get("/css/main.css", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert client.get("/css/main.css", headers={"If-Modified-Since": modified}).status_code == 304
    assert client.get("/css/main.css", headers={"If-None-Match": '"other"'}).status_code == 200
    video = client.head(VIDEO)
    assert client.get(VIDEO, headers={"If-None-Match": video.headers["etag"]}).status_code == 304


def test_only_get_and_head(client: httpx.Client) -> None:
    response = client.post("/index.html", content=b"x")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD"


# ---------------------------------------------------------------------------------------- switches


def test_latency() -> None:
    with (
        FixtureServer(FixtureConfig(latency=0.2)) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        for path in ("/", "/nope", "/_fixture/status/500"):
            started = time.monotonic()
            http.get(path)
            assert time.monotonic() - started >= 0.2


@pytest.mark.parametrize("code", [404, 410, 500, 502, 503])
def test_status_route(client: httpx.Client, code: int) -> None:
    response = client.get(f"/_fixture/status/{code}")
    assert response.status_code == code
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert str(code).encode() in response.content
    assert "retry-after" not in response.headers


def test_status_route_429_and_503_retry_after(client: httpx.Client) -> None:
    response = client.get("/_fixture/status/429")
    assert response.status_code == 429 and response.headers["retry-after"] == "1"
    assert client.get("/_fixture/status/429?retry-after=7").headers["retry-after"] == "7"
    response = client.get("/_fixture/status/503?retry-after=5")
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert client.head("/_fixture/status/503?retry-after=2").headers["retry-after"] == "2"


def test_status_route_rejects_nonsense(client: httpx.Client) -> None:
    assert client.get("/_fixture/status/200").status_code == 400
    assert client.get("/_fixture/status/429?retry-after=soon").status_code == 400
    assert client.get("/_fixture/unknown").status_code == 404


def test_forced_status_from_config() -> None:
    config = FixtureConfig(status={"/docs/": 500, "/blog/": 429, "/about.html": 302, "/robots.txt": 503})
    with (
        FixtureServer(config) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        assert http.get("/docs/").status_code == 500
        blog = http.get("/blog/?utm_source=x")
        assert blog.status_code == 429 and blog.headers["retry-after"] == "1"
        about = http.get("/about.html")
        assert about.status_code == 302 and about.headers["location"] == "/"
        assert http.get("/robots.txt").status_code == 503
        assert http.get("/docs/faq.html").status_code == 200  # only the exact path
        assert http.get("/").status_code == 200


def test_forced_status_matches_encoded_and_decoded_paths() -> None:
    config = FixtureConfig(status={"/café menu/": 404, "/demo/what%3F.html": 500})
    with (
        FixtureServer(config) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        assert http.get("/caf%C3%A9%20menu/").status_code == 404
        assert http.get("/demo/what%3F.html").status_code == 500


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        FixtureConfig(status={"docs/": 500})
    with pytest.raises(ValueError):
        FixtureConfig(status={"/docs/": 99})
    with pytest.raises(ValueError):
        FixtureConfig(latency=-1)
    assert FixtureConfig().robots == (SITE / "robots.txt").read_text(encoding="utf-8")
    assert FixtureConfig().root == SITE


def test_redirect_chain(server: FixtureServer, client: httpx.Client) -> None:
    response = client.get("/_fixture/redirect/chain/3", follow_redirects=True)
    assert len(response.history) == 4
    assert [r.status_code for r in response.history] == [302] * 4
    assert str(response.url) == server.url
    assert response.content == (SITE / "index.html").read_bytes()


def test_redirect_chain_target_and_code(server: FixtureServer, client: httpx.Client) -> None:
    response = client.get("/_fixture/redirect/chain/2?to=/docs/faq.html&code=301", follow_redirects=True)
    assert len(response.history) == 3
    assert [r.status_code for r in response.history] == [301] * 3
    assert str(response.url) == server.url + "docs/faq.html"
    first = client.get("/_fixture/redirect/chain/1?code=308")
    assert first.status_code == 308
    assert first.headers["location"] == "/_fixture/redirect/chain/0?code=308"
    assert client.get("/_fixture/redirect/chain/0").headers["location"] == "/"
    assert client.get("/_fixture/redirect/chain/1?code=200").status_code == 400
    assert client.get("/_fixture/redirect/chain/0?to=/x%0d%0aSet-Cookie:a=1").status_code == 400


def test_redirect_loop(client: httpx.Client) -> None:
    assert client.get("/_fixture/redirect/loop").headers["location"] == "/_fixture/redirect/loop-b"
    assert client.get("/_fixture/redirect/loop-b").headers["location"] == "/_fixture/redirect/loop"
    with pytest.raises(httpx.TooManyRedirects):
        client.get("/_fixture/redirect/loop", follow_redirects=True)


def test_slow_route(client: httpx.Client) -> None:
    started = time.monotonic()
    response = client.get("/_fixture/slow?ms=300")
    assert time.monotonic() - started >= 0.3
    assert response.status_code == 200 and b"300 ms" in response.content
    assert client.get("/_fixture/slow?ms=fast").status_code == 400


def test_robots_default(client: httpx.Client) -> None:
    response = client.get("/robots.txt")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.content == (SITE / "robots.txt").read_bytes()
    assert "Disallow: /private/" in response.text


def test_robots_custom_and_off() -> None:
    custom = "User-agent: *\nDisallow: /\n"
    with (
        FixtureServer(FixtureConfig(robots=custom)) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        assert http.get("/robots.txt").text == custom
    with (
        FixtureServer(FixtureConfig(robots=None)) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        assert http.get("/robots.txt").status_code == 404
        assert http.get("/").status_code == 200


# ------------------------------------------------------------------------------------------- Range


def test_range_closed(client: httpx.Client) -> None:
    data = (SITE / "css/theme.css").read_bytes()
    response = client.get("/css/theme.css", headers={"Range": "bytes=10-19"})
    assert response.status_code == 206
    assert response.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert response.headers["content-length"] == "10"
    assert response.content == data[10:20]
    assert client.get("/css/theme.css").headers["accept-ranges"] == "bytes"


def test_range_open_and_suffix(client: httpx.Client) -> None:
    data = (SITE / "img/logo.png").read_bytes()
    size = len(data)
    response = client.get("/img/logo.png", headers={"Range": "bytes=100-"})
    assert response.status_code == 206 and response.content == data[100:]
    assert response.headers["content-range"] == f"bytes 100-{size - 1}/{size}"
    response = client.get("/img/logo.png", headers={"Range": "bytes=-50"})
    assert response.status_code == 206 and response.content == data[-50:]
    assert response.headers["content-range"] == f"bytes {size - 50}-{size - 1}/{size}"
    whole = client.get("/img/logo.png", headers={"Range": f"bytes=-{size * 2}"})
    assert whole.status_code == 206 and whole.content == data
    clamped = client.get("/img/logo.png", headers={"Range": f"bytes=10-{size * 2}"})
    assert clamped.status_code == 206 and clamped.content == data[10:]


def test_range_unsatisfiable(client: httpx.Client) -> None:
    size = (SITE / "img/logo.png").stat().st_size
    for header in (f"bytes={size}-", f"bytes={size + 10}-{size + 20}", "bytes=-0"):
        response = client.get("/img/logo.png", headers={"Range": header})
        assert response.status_code == 416, header
        assert response.headers["content-range"] == f"bytes */{size}"


def test_range_multi_and_malformed_give_the_full_body(client: httpx.Client) -> None:
    data = (SITE / "img/logo.png").read_bytes()
    for header in ("bytes=0-1,5-6", "bytes=5-2", "items=0-1", "bytes=x-y"):
        response = client.get("/img/logo.png", headers={"Range": header})
        assert response.status_code == 200, header
        assert response.content == data


def test_if_range(client: httpx.Client) -> None:
    etag = client.head("/img/logo.png").headers["etag"]
    partial = client.get("/img/logo.png", headers={"Range": "bytes=0-3", "If-Range": etag})
    assert partial.status_code == 206 and partial.content == b"\x89PNG"
    stale = client.get("/img/logo.png", headers={"Range": "bytes=0-3", "If-Range": '"stale"'})
    assert stale.status_code == 200


def test_range_off() -> None:
    data = (SITE / "img/logo.png").read_bytes()
    with (
        FixtureServer(FixtureConfig(range=False)) as srv,
        httpx.Client(base_url=srv.url, trust_env=False) as http,
    ):
        response = http.get("/img/logo.png", headers={"Range": "bytes=0-9"})
        assert response.status_code == 200
        assert "accept-ranges" not in response.headers
        assert response.content == data
        video = http.get(VIDEO, headers={"Range": "bytes=-10"})
        assert video.status_code == 200 and len(video.content) == VIDEO_SIZE


# --------------------------------------------------------------------------------- generated files


def test_generated_index() -> None:
    generated = load_generated(SITE)
    video = generated[VIDEO]
    assert (video.size, video.media_type, video.pattern) == (VIDEO_SIZE, "video/mp4", "sha256-counter")
    assert generated[CSV].pattern == "repeat"
    assert load_generated(SITE / "img") == {}


def test_generated_video_full_body(client: httpx.Client) -> None:
    video = load_generated(SITE)[VIDEO]
    expected = hashlib.sha256(counter_stream(video.seed, 0, VIDEO_SIZE)).hexdigest()
    digest, total = hashlib.sha256(), 0
    with client.stream("GET", VIDEO) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "video/mp4"
        assert response.headers["content-length"] == str(VIDEO_SIZE)
        for chunk in response.iter_raw():
            digest.update(chunk)
            total += len(chunk)
    assert total == VIDEO_SIZE
    assert digest.hexdigest() == expected


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=0-31", 0, 32),
        ("bytes=5-70", 5, 71),
        ("bytes=65530-131080", 65530, 131081),
        ("bytes=5000000-5000099", 5_000_000, 5_000_100),
        ("bytes=-100", VIDEO_SIZE - 100, VIDEO_SIZE),
        (f"bytes={VIDEO_SIZE - 7}-", VIDEO_SIZE - 7, VIDEO_SIZE),
    ],
)
def test_generated_video_ranges(client: httpx.Client, header: str, start: int, end: int) -> None:
    seed = load_generated(SITE)[VIDEO].seed
    response = client.get(VIDEO, headers={"Range": header})
    assert response.status_code == 206
    assert response.headers["content-range"] == f"bytes {start}-{end - 1}/{VIDEO_SIZE}"
    assert response.content == counter_stream(seed, start, end)


def test_generated_video_unsatisfiable(client: httpx.Client) -> None:
    response = client.get(VIDEO, headers={"Range": f"bytes={VIDEO_SIZE}-"})
    assert response.status_code == 416
    assert response.headers["content-range"] == f"bytes */{VIDEO_SIZE}"


def test_generated_repeat_pattern(client: httpx.Client) -> None:
    csv = load_generated(SITE)[CSV]
    seed = csv.seed.encode()
    expected = (seed * (csv.size // len(seed) + 1))[: csv.size]
    response = client.get(CSV)
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.content == expected
    partial = client.get(CSV, headers={"Range": "bytes=100000-100099"})
    assert partial.content == expected[100_000:100_100]


def test_generated_file_slices_and_chunks() -> None:
    counter = GeneratedFile(
        path="/x.bin", size=200_001, media_type="application/octet-stream", pattern="sha256-counter", seed="s"
    )
    for start, end in [(0, 0), (0, 1), (31, 33), (1000, 70_000), (199_990, 200_001)]:
        assert counter.read(start, end) == (counter_stream("s", start, end) if end > start else b"")
    chunks = list(counter.chunks())
    assert all(len(chunk) <= CHUNK_SIZE for chunk in chunks) and len(chunks) > 1
    assert b"".join(chunks) == counter_stream("s", 0, 200_001)
    repeat = GeneratedFile(path="/y.txt", size=10, media_type="text/plain", pattern="repeat", seed="abc")
    assert repeat.read() == b"abcabcabca"
    assert repeat.read(4, 8) == b"bcab"
    with pytest.raises(ValueError):
        GeneratedFile(path="/z", size=1, media_type="text/plain", pattern="random", seed="")


# ------------------------------------------------------------------------------------ request log


def test_request_log(server: FixtureServer, client: httpx.Client) -> None:
    server.clear_requests()
    client.get("/css/theme.css?v=3", headers={"User-Agent": "fixture-test/1", "Referer": server.url})
    client.get(VIDEO, headers={"Range": "bytes=0-99"})
    client.head("/caf%C3%A9%20menu/")
    client.get("/missing.png")
    log = server.requests
    assert [(r.method, r.path, r.status) for r in log] == [
        ("GET", "/css/theme.css", 200),
        ("GET", VIDEO, 206),
        ("HEAD", "/caf%C3%A9%20menu/", 200),
        ("GET", "/missing.png", 404),
    ]
    first = log[0]
    assert isinstance(first, RequestRecord)
    assert first.query == "v=3" and first.target == "/css/theme.css?v=3"
    assert first.headers["user-agent"] == "fixture-test/1"
    assert first.headers["referer"] == server.url
    assert log[1].headers["range"] == "bytes=0-99"
    assert log[2].decoded_path == "/café menu/"
    log.clear()  # a snapshot: clearing it leaves the server's log alone
    assert len(server.requests) == 4


def test_request_log_is_thread_safe(server: FixtureServer) -> None:
    server.clear_requests()
    paths = [f"/img/logo.png?n={i}" for i in range(40)]

    with (
        httpx.Client(base_url=server.url, trust_env=False) as http,
        concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool,
    ):
        assert set(pool.map(lambda path: http.get(path).status_code, paths)) == {200}
    assert sorted(r.query for r in server.requests) == sorted(p.split("?")[1] for p in paths)


# ------------------------------------------------------------------------------------- life cycle


def test_life_cycle() -> None:
    srv = FixtureServer()
    with pytest.raises(RuntimeError):
        _ = srv.url
    assert srv.start() is srv
    assert srv.start() is srv  # idempotent
    url, port = srv.url, srv.port
    assert url == f"http://127.0.0.1:{port}/"
    assert httpx.get(url, trust_env=False).status_code == 200
    with httpx.Client(trust_env=False) as http:
        assert http.get(url).status_code == 200  # leaves a keep-alive connection open
        srv.stop()
        srv.stop()
        with pytest.raises(httpx.TransportError):
            http.get(url)  # the kept-alive connection was closed too
    with pytest.raises(httpx.ConnectError):
        httpx.get(url, trust_env=False)


def test_site_root_is_the_checkout_site() -> None:
    assert (SITE / "index.html").is_file()
    assert SITE in (REPO / "testdata" / "site", REPO / "archiver" / "_bundled" / "site")


def test_site_root_finds_the_wheel_site(tmp_path: Path) -> None:
    """In a wheel the site is archiver/_bundled/site, beside the archiver/fixture/ package; without it, the
    checkout's testdata/site beside archiver/."""
    package = tmp_path.resolve() / "archiver"
    copy = package / "fixture" / "site.py"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(fixture_site.__file__, copy)
    spec = importlib.util.spec_from_file_location("archiver_fixture_site_copy", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.site_root() == tmp_path.resolve() / "testdata" / "site"
    (package / "_bundled" / "site").mkdir(parents=True)
    assert module.site_root() == package / "_bundled" / "site"


# -------------------------------------------------------------------------------------------- CLI


def test_cli(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /docs/\n")
    command = [
        sys.executable,
        str(REPO / "tools" / "fixture_server.py"),
        "--port",
        "0",
        "--latency",
        "1",
        "--robots",
        str(robots),
        "--status",
        "/docs/=500",
        "/blog/=429",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:") and url.endswith("/")
            with httpx.Client(base_url=url, trust_env=False) as http:
                assert http.get("/").status_code == 200
                assert http.get("/docs/").status_code == 500
                assert http.get("/blog/").headers["retry-after"] == "1"
                assert http.get("/robots.txt").text == robots.read_text()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
            assert proc.stderr is not None and proc.stderr.read() == ""
        finally:
            if proc.poll() is None:
                proc.kill()


def test_cli_range_off_and_robots_off() -> None:
    command = [sys.executable, str(REPO / "tools" / "fixture_server.py"), "--no-range", "--robots", "off"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            with httpx.Client(base_url=url, trust_env=False) as http:
                assert http.get("/robots.txt").status_code == 404
                response = http.get("/img/logo.png", headers={"Range": "bytes=0-3"})
                assert response.status_code == 200 and "accept-ranges" not in response.headers
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
