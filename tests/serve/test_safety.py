"""No request reaches a byte outside the served roots; errors are plain and reveal nothing.

Requests are written to the socket byte for byte (no client normalises ``..`` or escapes away), for
a tree mount, a single-file mount, a gwtar file's member URLs and a ZIM mount."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.serve import running
from tests.serve.helpers import REPO

SECRET = b"TOP-SECRET-4f1d9c"

# Each target is relative to the server root; "{t}" is the tree mount's name. Every one of them
# points (after one or more decodings) at ../outside/secret.txt or at the host's /etc/passwd.
TRAVERSALS = [
    "/{t}/../outside/secret.txt",
    "/{t}/../../outside/secret.txt",
    "/{t}/%2e%2e/outside/secret.txt",
    "/{t}/%2E%2E/outside/secret.txt",
    "/{t}/.%2e/outside/secret.txt",
    "/{t}/%2e./outside/secret.txt",
    "/{t}/..%2foutside%2fsecret.txt",
    "/{t}/..%2Foutside%2Fsecret.txt",
    "/{t}/%2e%2e%2foutside%2fsecret.txt",
    "/{t}/..\\outside\\secret.txt",
    "/{t}/..%5coutside%5csecret.txt",
    "/{t}/%2e%2e%5Coutside%5Csecret.txt",
    "/{t}/%252e%252e/outside/secret.txt",
    "/{t}/%c0%ae%c0%ae/outside/secret.txt",
    "/{t}/./../outside/secret.txt",
    "/{t}/docs/../../outside/secret.txt",
    "/{t}//../outside/secret.txt",
    "/{t}/secret-link",
    "/{t}/dir-link/secret.txt",
    "/{t}/%00/../outside/secret.txt",
    "/{t}/index.html%00/../../outside/secret.txt",
    "/../outside/secret.txt",
    "/%2e%2e/outside/secret.txt",
    "/..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/{t}/..%2f..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
    "//etc/passwd",
    "/{t}/../../../../../../../../etc/passwd",
    "/page.gwtar.html/~/../outside/secret.txt",
    "/page.gwtar.html/~/%2e%2e/%2e%2e/outside/secret.txt",
    "/page.gwtar.html/../outside/secret.txt",
    "/book/../outside/secret.txt",
    "/book/%2e%2e/outside/secret.txt",
    "/~/search/../../outside/secret.txt",
    "/{t}/" + "a/" * 5000 + "secret.txt",
    "/{t}/" + "%2e%2e/" * 3000,
    "http://127.0.0.1/{t}/../outside/secret.txt",
]


def raw_request(base: str, target: str, method: str = "GET") -> tuple[int, bytes, bytes]:
    """Send ``METHOD target HTTP/1.1`` exactly; (status, header block, body)."""
    host, port = base.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            f"{method} ".encode()
            + target.encode("latin-1")
            + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    return status, head, body


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    from archiver import gwtar, zim

    top = tmp_path_factory.mktemp("safety")
    outside = top / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(SECRET)
    served = top / "served"
    served.mkdir()
    tree = served / "mini"
    shutil.copytree(REPO / "testdata" / "trees" / "mini", tree)
    os.symlink(outside / "secret.txt", tree / "secret-link")
    os.symlink(outside, tree / "dir-link")
    os.symlink(tree / "index.html", tree / "inside-link.html")  # a symlink that stays inside is fine
    gwtar.pack(REPO / "testdata" / "trees" / "mini", served / "page.gwtar.html", loader="/* test */")
    zim.pack(REPO / "testdata" / "trees" / "mini", served / "book.zim")
    with running([tree, served / "page.gwtar.html", served / "book.zim"]) as base:
        yield base, top


@pytest.mark.parametrize("target", TRAVERSALS, ids=[f"t{i:02d}" for i in range(len(TRAVERSALS))])
def test_traversal_never_leaks(layout: tuple[str, Path], target: str) -> None:
    base, top = layout
    status, head, body = raw_request(base, target.replace("{t}", "mini"))
    assert 400 <= status < 500, f"{target[:60]}: {status}"
    assert SECRET not in body
    assert b"root:" not in body  # /etc/passwd
    assert str(top).encode() not in head + body, "no host path in an error"
    assert b"Traceback" not in body
    assert len(body) < 200, "errors are one plain line"


def test_at_least_fifteen_encodings() -> None:
    assert len(TRAVERSALS) >= 15


def test_inside_paths_still_work(layout: tuple[str, Path]) -> None:
    base, _ = layout
    for target in (
        "/mini/",
        "/mini/index.html",
        "/mini/inside-link.html",
        "/mini/what%3F.html",
        "/mini/caf%C3%A9%20menu/",
        "/mini/_archiver/mini.example/img/hash%231.png",
        "/mini//docs//index.html",
    ):
        status, _, body = raw_request(base, target)
        assert status == 200, target
        assert SECRET not in body


def test_errors_are_plain(layout: tuple[str, Path]) -> None:
    base, _ = layout
    status, head, body = raw_request(base, "/mini/no-such-file")
    assert status == 404
    assert b"content-type: text/plain; charset=utf-8" in head.lower()
    assert body == b"404 not found\n"
    status, head, body = raw_request(base, "/mini/index.html", method="DELETE")
    assert status == 405
    assert b"allow: GET, HEAD" in head


def test_symlinked_root_is_followed_once(tmp_path: Path) -> None:
    """A root that is itself a symlink is served (its real path becomes the root)."""
    real = tmp_path / "real"
    shutil.copytree(REPO / "testdata" / "trees" / "mini", real)
    link = tmp_path / "linked"
    os.symlink(real, link)
    with running([link]) as base:
        status, _, body = raw_request(base, "/linked/index.html")
        assert status == 200
        assert b"Mini home" in body
