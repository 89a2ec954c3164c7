"""Isolation over HTTP (formats/serve.md §5.2–§5.3), as attacks on the wire: a Host name the server
does not know (DNS rebinding) is answered 421; a mount's origin serves only that mount (another
mount's path, the index and the server pages are 404 there); a browser on the bare host is sent to
the mount's origin; every answer, the fast path's and the ordinary path's, errors included, carries
``X-Content-Type-Options: nosniff`` and the CSP of its kind; a service worker script is refused; a
request with two Host header fields is 400 (RFC 9112 §3.2) on both paths. The same rules hold for
Debian's nginx running ``--print-config nginx``, and Debian's Caddy running ``--print-config caddy``
(a service worker script refused there too)."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver import gwtar, zim
from archiver.serve import print_config, running
from tests.serve.helpers import REPO, caddy_file, free_port, nginx_block

MINI = REPO / "testdata" / "trees" / "mini"
CSS = "/mini/_archiver/mini.example/css/base.css"
OWN_CSP = (
    "default-src 'self' data: blob: 'unsafe-inline' 'unsafe-eval'; form-action 'self'; base-uri 'self'; "
    "frame-ancestors 'self'"
)


def _raw(port: int, payload: bytes) -> list[tuple[int, dict[str, str], bytes]]:
    """Send ``payload`` (requests, the last with Connection: close); (status, headers, body) each."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    replies = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        replies.append((int(lines[0].split(" ")[1]), headers, data[:length]))
        data = data[length:]
    return replies


def _get(
    port: int, path: str, host: str, extra: str = "", method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    payload = f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n"
    return _raw(port, payload.encode("latin-1"))[0]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    top = tmp_path_factory.mktemp("isolation-http")
    shutil.copytree(MINI, top / "mini")
    gwtar.pack(MINI, top / "page.gwtar.html")
    zim.pack(MINI, top / "book.zim")
    (top / "other").mkdir()
    (top / "other" / "index.html").write_bytes(b"<title>OTHER-MOUNT</title>")
    (top / "other" / "sw.js").write_bytes(b"self.x = 1;")
    for folder in [top, *[p for p in top.rglob("*") if p.is_dir()]]:
        folder.chmod(0o755)  # nginx's workers read the files too
    for file in [p for p in top.rglob("*") if p.is_file()]:
        file.chmod(0o644)
    return {"paths": [top / "mini", top / "page.gwtar.html", top / "book.zim", top / "other"]}  # type: ignore[dict-item]


@pytest.fixture(scope="module")
def port(world: dict[str, list[Path]]) -> Iterator[int]:
    with running(world["paths"]) as base:
        yield int(base.rstrip("/").rsplit(":", 1)[1])


REBINDING = ["evil.example:{p}", "evil.example", "mini.localhost.evil.example:{p}", "127.0.0.2:{p}",
             "10.0.0.1:{p}", "mini.localhost:{q}", "localhost.:{p}x", "xn--mini.localhost:{p}"]  # fmt: skip


@pytest.mark.parametrize("host", REBINDING)
@pytest.mark.parametrize("path", ["/", CSS, "/page.gwtar.html", "/book/", "/~/search/book?q=a"])
def test_unknown_host_names_are_misdirected(port: int, host: str, path: str) -> None:
    status, headers, body = _get(port, path, host.format(p=port, q=port + 1))
    assert status == 421, (host, path, status)
    assert headers["x-content-type-options"] == "nosniff" and b"mini" not in body.lower()


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{p}", "localhost:{p}", "[::1]:{p}", "LocalHost:{p}", "127.0.0.1"]
)
def test_the_bare_host_serves_other_clients_inside_a_sandbox(port: int, host: str) -> None:
    status, headers, body = _get(port, CSS, host.format(p=port))
    assert status == 200 and body
    assert headers["content-security-policy"] == "sandbox; " + OWN_CSP
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cross-origin-resource-policy"] == "same-origin"


@pytest.mark.parametrize(
    ("path", "label"),
    [
        (CSS, "mini"),
        ("/page.gwtar.html", "page-gwtar-html"),
        ("/book/", "book"),
        ("/other/?a=%C3%A9", "other"),
    ],
)
def test_a_browser_on_the_bare_host_is_sent_to_the_mount_origin(port: int, path: str, label: str) -> None:
    status, headers, body = _get(port, path, f"127.0.0.1:{port}", "Sec-Fetch-Mode: navigate\r\n")
    assert status == 307 and headers["location"] == f"http://{label}.localhost:{port}{path}"
    assert b"OTHER-MOUNT" not in body and headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    "path",
    ["/other/", "/other/index.html", "/page.gwtar.html", "/page.gwtar.html/~/index.html", "/book/index.html",
     "/~/search/book?q=a", "/~/search/other"],
)  # fmt: skip
@pytest.mark.parametrize("extra", ["", 'If-None-Match: "x"\r\n', "Sec-Fetch-Mode: cors\r\n"])
def test_a_mount_origin_serves_nothing_of_other_mounts(port: int, path: str, extra: str) -> None:
    status, headers, body = _get(port, path, f"mini.localhost:{port}", extra)
    assert status == 404, (path, status)
    assert b"OTHER-MOUNT" not in body and b"<" not in body and headers["x-content-type-options"] == "nosniff"


def test_a_mount_origin_root_leads_to_the_mount(port: int) -> None:
    status, headers, _ = _get(port, "/", f"mini.localhost:{port}")
    assert status == 302 and headers["location"] == "/mini/"
    status, headers, _ = _get(port, "/", f"page-gwtar-html.localhost:{port}")
    assert status == 302 and headers["location"] == "/page.gwtar.html"


@pytest.mark.parametrize(
    ("host", "path"),
    [("mini", CSS), ("mini", "/mini/"), ("mini", "/mini/caf%C3%A9%20menu/"),
     ("page-gwtar-html", "/page.gwtar.html"), ("page-gwtar-html", "/page.gwtar.html/~/index.html"),
     ("book", "/book/index.html")],
)  # fmt: skip
def test_fast_and_ordinary_answers_carry_the_same_headers(port: int, host: str, path: str) -> None:
    """On a mount's origin: the fast path (a plain GET) and the ordinary path (a validator that
    changes nothing, a HEAD) answer with the same security headers (built once per representation)."""
    req = f"GET {path} HTTP/1.1\r\nHost: {host}.localhost:{port}\r\n"
    payload = (
        req
        + "\r\n"
        + req
        + "If-Match: *\r\n\r\n"
        + req.replace("GET", "HEAD", 1)
        + "Connection: close\r\n\r\n"
    )
    fast, ordinary, head = _raw(port, payload.encode())
    for status, headers, _ in (fast, ordinary, head):
        assert status == 200, (path, status)
        assert headers["content-security-policy"] == OWN_CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cross-origin-resource-policy"] == "same-origin"
        assert headers["cross-origin-opener-policy"] == "same-origin"
    assert {k: v for k, v in fast[1].items() if k != "date"} == {
        k: v for k, v in ordinary[1].items() if k != "date"
    }
    assert fast[2] == ordinary[2]


@pytest.mark.parametrize(
    ("host", "path"),
    [("mini", CSS), ("mini", "/mini/"), ("page-gwtar-html", "/page.gwtar.html/~/index.html"),
     ("page-gwtar-html", "/page.gwtar.html"), ("book", "/book/index.html"), ("127.0.0.1", CSS)],
)  # fmt: skip
def test_a_304_carries_the_security_headers_of_its_200(port: int, host: str, path: str) -> None:
    """A cache updates the stored response's headers from a 304 (RFC 9111 §4.3.4): one that said
    `default-src 'none'` (an error's policy, as it did) put a page reloaded from Chromium's cache
    under it, with no stylesheet nor image. A 304 now says what its 200 says, validators included."""
    name = host if host[0].isdigit() else f"{host}.localhost"
    status, ok, _ = _get(port, path, f"{name}:{port}")
    assert status == 200
    for extra in (f"If-None-Match: {ok['etag']}\r\n", f"If-Modified-Since: {ok['last-modified']}\r\n"):
        status, headers, body = _get(port, path, f"{name}:{port}", extra)
        assert status == 304 and body == b""
        dropped = {"content-type", "content-length", "accept-ranges", "date"}
        assert {k: v for k, v in headers.items() if k not in dropped | {"connection", "server"}} == {
            k: v for k, v in ok.items() if k not in dropped | {"connection", "server"}
        }


@pytest.mark.parametrize(
    ("path", "extra", "status"),
    [("/nowhere", "", 404), ("/mini/%2e%2e/x", "", 400), ("/mini", "", 301),
     (CSS, "Range: bytes=99999-\r\n", 416), (CSS, "If-None-Match: *\r\n", 304),
     (CSS, "If-Match: \"nope\"\r\n", 412), ("/", "", 200),
     ("/~/search/book?q=mini", "", 200)],
)  # fmt: skip
def test_every_answer_says_nosniff(port: int, path: str, extra: str, status: int) -> None:
    got, headers, _ = _get(port, path, f"127.0.0.1:{port}", extra)
    assert got == status
    assert headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in headers
    got, headers, _ = _get(port, path, f"127.0.0.1:{port}", method="POST")
    assert got == 405 and headers["x-content-type-options"] == "nosniff"


def test_invalid_requests_and_server_pages_say_nosniff(port: int) -> None:
    ((status, headers, _),) = _raw(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
    assert status == 400 and headers["x-content-type-options"] == "nosniff"
    _, headers, _ = _get(port, "/", f"127.0.0.1:{port}")
    assert "script-src" not in headers["content-security-policy"]
    assert headers["content-security-policy"].startswith("default-src 'none'")


def test_a_service_worker_is_never_installed(port: int) -> None:
    status, headers, _ = _get(port, "/other/sw.js", f"other.localhost:{port}", "Service-Worker: script\r\n")
    assert status == 403 and headers["x-content-type-options"] == "nosniff"
    assert "service-worker-allowed" not in headers


@pytest.mark.parametrize(
    ("path", "extra", "method"),
    [(CSS, "", "GET"), (CSS, "", "HEAD"), (CSS, "If-None-Match: *\r\n", "GET"), ("/other/sw.js", "", "GET"),
     ("/page.gwtar.html/~/index.html", "", "GET"), ("/book/index.html", "Range: bytes=0-9\r\n", "GET")],
)  # fmt: skip
@pytest.mark.parametrize("second", ["{h}", "evil.example", "{h}:1"])
def test_two_host_header_fields_are_400_on_both_paths(
    port: int, path: str, extra: str, method: str, second: str
) -> None:
    """RFC 9112 §3.2: a server MUST answer 400 to a request with more than one Host field line. The
    fast path (a plain small GET) took the last Host and the ordinary path the last too: a request
    could name one origin to a proxy in front (which reads the first) and another to us."""
    for first in ("127.0.0.1", "mini.localhost"):
        h = f"{first}:{port}"
        status, headers, body = _get(port, path, h, f"Host: {second.format(h=h)}\r\n{extra}", method)
        assert status == 400, (path, first, second, status)
        assert headers["x-content-type-options"] == "nosniff" and b"mini" not in body.lower()
    assert _get(port, CSS, f"mini.localhost:{port}")[0] == 200  # one Host: as before


@pytest.mark.parametrize("path", [CSS, "/", "/page.gwtar.html/~/index.html"])
def test_an_http_11_request_without_host_is_400(port: int, path: str) -> None:
    """RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request that lacks a Host field (before:
    it was served as the bare host); HTTP/1.0 has no Host and is served as before."""
    ((status, headers, body),) = _raw(port, f"GET {path} HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
    assert status == 400 and headers["x-content-type-options"] == "nosniff" and b"mini" not in body.lower()
    ((status, _, _),) = _raw(port, f"GET {path} HTTP/1.0\r\n\r\n".encode())
    assert status != 400


def test_allow_live_lifts_only_the_fetch_limits(world: dict[str, list[Path]]) -> None:
    with running(world["paths"], allow_live=True) as base:
        p = int(base.rstrip("/").rsplit(":", 1)[1])
        _, headers, _ = _get(p, CSS, f"mini.localhost:{p}")
        assert headers["content-security-policy"] == "frame-ancestors 'self'"
        assert headers["x-content-type-options"] == "nosniff"
        assert _get(p, "/other/", f"mini.localhost:{p}")[0] == 404  # the origins still keep mounts apart
        assert _get(p, "/", f"evil.example:{p}")[0] == 421


# ------------------------------------------------------------------------------------ nginx


@pytest.mark.interop
def test_nginx_with_the_printed_config_isolates_the_same_way(
    world: dict[str, list[Path]], tmp_path: Path
) -> None:
    paths = [p for p in world["paths"] if p.suffix != ".zim"]  # no kiwix-serve behind it here
    nport = free_port()
    block = print_config("nginx", paths, listen=f"127.0.0.1:{nport}")
    with nginx_block(tmp_path, block, nport):
        assert _get(nport, CSS, f"evil.example:{nport}")[0] == 421
        status, headers, body = _get(nport, CSS, f"mini.localhost:{nport}")
        assert status == 200 and headers["content-security-policy"] == OWN_CSP
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["cross-origin-resource-policy"] == "same-origin"
        for path in ("/other/", "/page.gwtar.html", "/"):
            status, headers, body = _get(nport, path, f"mini.localhost:{nport}")
            assert b"OTHER-MOUNT" not in body and status in (302, 404), (path, status)
        status, headers, _ = _get(nport, "/page.gwtar.html", f"page-gwtar-html.localhost:{nport}")
        assert status == 200 and headers["content-security-policy"] == OWN_CSP
        status, headers, _ = _get(nport, CSS, f"127.0.0.1:{nport}", "Sec-Fetch-Mode: navigate\r\n")
        assert status == 307 and headers["location"] == f"http://mini.localhost:{nport}{CSS}"
        status, headers, _ = _get(nport, CSS, f"127.0.0.1:{nport}")
        assert status == 200 and headers["content-security-policy"] == "sandbox; " + OWN_CSP
        status, headers, _ = _get(nport, "/mini/nowhere", f"mini.localhost:{nport}")
        assert status == 404 and headers["x-content-type-options"] == "nosniff"
        big = f"GET {CSS} HTTP/1.1\r\nHost: mini.localhost:{nport}\r\nX-Big: {'a' * (70 << 10)}\r\n\r\n"
        status = _raw_status(nport, big.encode())
        assert status in (400, 431, 494), status  # nginx: 400 "Request Header Or Cookie Too Large"


def _raw_status(port: int, payload: bytes) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        head = s.recv(100)
    return int(head.split(b" ")[1])


def test_printed_configs_carry_the_headers_and_limits(world: dict[str, list[Path]]) -> None:
    text = print_config("nginx", world["paths"], listen="127.0.0.1:8080")
    assert "server_name mini.localhost;" in text and "server_name page-gwtar-html.localhost;" in text
    assert "client_header_timeout 30000ms;" in text and "keepalive_timeout 75000ms;" in text
    assert "large_client_header_buffers 4 16k;" in text and "send_timeout 60000ms;" in text
    assert text.count("add_header X-Content-Type-Options") == text.count("add_header Content-Security-Policy")
    assert "return 421;" in text and "proxy_hide_header Content-Security-Policy;" in text
    caddy = print_config("caddy", world["paths"], listen="8080")
    assert "http://mini.localhost:8080 {" in caddy and "respond 421" in caddy
    assert "read_header 30000ms" in caddy and "idle 75000ms" in caddy and "max_header_size 64KB" in caddy
    assert "redir @to_mini http://mini.localhost:8080{uri} 307" in caddy
    assert caddy.count("x-content-type-options nosniff") == 1 + len(world["paths"])


_SERVICE_WORKER = "Service-Worker: script\r\nSec-Fetch-Mode: same-origin\r\n"


def _refuses_service_workers_as_archiver_serve(port: int) -> None:
    """What ``archiver serve`` answers a service worker script request, checked on another server:
    403 on a mount's origin and on the bare host, before any redirect; the same paths without the
    header still answer as before (200, 301, 302)."""
    for host, path, plain in (
        ("mini.localhost", CSS, 200),
        ("other.localhost", "/other/sw.js", 200),
        ("127.0.0.1", CSS, 200),
        ("localhost", "/other", 301),  # the slash redirect
        ("other.localhost", "/", 302),  # the origin's root
    ):
        status, headers, _ = _get(port, path, f"{host}:{port}", _SERVICE_WORKER)
        assert status == 403 and "service-worker-allowed" not in headers, (host, path, status)
        assert _get(port, path, f"{host}:{port}")[0] == plain, (host, path)
    assert _get(port, CSS, f"evil.example:{port}", _SERVICE_WORKER)[0] == 421


def test_archiver_serve_refuses_a_service_worker_before_any_redirect(port: int) -> None:
    _refuses_service_workers_as_archiver_serve(port)


@pytest.mark.interop
def test_nginx_with_the_printed_config_refuses_a_service_worker(
    world: dict[str, list[Path]], tmp_path: Path
) -> None:
    paths = [p for p in world["paths"] if p.suffix != ".zim"]  # no kiwix-serve behind it here
    nport = free_port()
    with nginx_block(tmp_path, print_config("nginx", paths, listen=f"127.0.0.1:{nport}"), nport):
        _refuses_service_workers_as_archiver_serve(nport)
        two = f"GET {CSS} HTTP/1.1\r\nHost: mini.localhost:{nport}\r\nHost: x\r\nConnection: close\r\n\r\n"
        assert _raw_status(nport, two.encode()) == 400


@pytest.mark.interop
def test_caddy_with_the_printed_config_isolates_and_refuses_a_service_worker(
    world: dict[str, list[Path]], tmp_path: Path
) -> None:
    paths = [p for p in world["paths"] if p.suffix != ".zim"]  # no kiwix-serve behind it here
    cport = free_port()
    with caddy_file(tmp_path, print_config("caddy", paths, listen=str(cport)), cport):
        _refuses_service_workers_as_archiver_serve(cport)
        status, headers, _ = _get(cport, CSS, f"mini.localhost:{cport}")
        assert status == 200 and headers["content-security-policy"] == OWN_CSP
        assert headers["x-content-type-options"] == "nosniff"
        status, headers, _ = _get(cport, CSS, f"127.0.0.1:{cport}", "Sec-Fetch-Mode: navigate\r\n")
        assert status == 307 and headers["location"] == f"http://mini.localhost:{cport}{CSS}"
        two = f"GET {CSS} HTTP/1.1\r\nHost: mini.localhost:{cport}\r\nHost: x\r\nConnection: close\r\n\r\n"
        assert _raw_status(cport, two.encode()) == 400
