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
from archiver.serve.sources import plan_mounts
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


def raw_request(
    base: str, target: str, method: str = "GET", host_header: str | None = None
) -> tuple[int, bytes, bytes]:
    """Send ``METHOD target HTTP/1.1`` exactly (Host: the bare host unless given); (status, header
    block, body)."""
    netloc = base.split("//", 1)[1].rstrip("/")
    host, port = netloc.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(
            f"{method} ".encode()
            + target.encode("latin-1")
            + f" HTTP/1.1\r\nHost: {host_header or netloc}\r\nConnection: close\r\n\r\n".encode("latin-1")
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
    _add_private_files(tree, served / "page.gwtar.html")
    with running([tree, served / "page.gwtar.html", served / "book.zim"]) as base:
        yield base, top


def _add_private_files(tree: Path, packed: Path) -> None:
    """The capture's private files (formats/serve.md §5.1) in the tree, symlinks into them, and the
    public files next to them."""
    reserved = tree / "_archiver"
    for name in ("crawl.sqlite", "crawl.sqlite-wal", "crawl.sqlite-shm", "crawl.sqlite-journal"):
        (reserved / name).write_bytes(PRIVATE + name.encode())
    (reserved / "tmp").mkdir()
    (reserved / "tmp" / "write-1.tmp").write_bytes(PRIVATE + b" tmp")
    (reserved / "tmp" / "index.html").write_bytes(PRIVATE + b" tmp index")
    shutil.copyfile(packed, reserved / "tmp" / "p.gwtar.html")
    shutil.copyfile(packed, tree / "inner.gwtar.html")  # a public gwtar inside the tree
    (reserved / "zim-edits.jsonl").write_bytes(b'{"public": true}\n')
    (reserved / "127.0.0.1" / "img").mkdir(parents=True)
    (reserved / "127.0.0.1" / "img" / "a.png").write_bytes(b"PUBLIC-ASSET")
    os.symlink("_archiver", tree / "state")
    os.symlink("_archiver/crawl.sqlite", tree / "s.db")
    os.symlink("_archiver/tmp", tree / "tmp-link")
    os.symlink(reserved / "tmp" / "write-1.tmp", tree / "docs" / "w.txt")


PRIVATE = b"PRIVATE-STATE-8c2e71"

# Every spelling of a private tree file (tree.is_private) that a request could use.
PRIVATE_TARGETS = [
    "/mini/_archiver/crawl.sqlite",
    "/mini/_archiver/crawl.sqlite-wal",
    "/mini/_archiver/crawl.sqlite-shm",
    "/mini/_archiver/crawl.sqlite-journal",
    "/mini/_archiver/tmp/write-1.tmp",
    "/mini/_archiver/tmp/index.html",
    "/mini/_archiver/tmp/",
    "/mini/_archiver/tmp",
    "/mini/_archiver/tmp/p.gwtar.html",
    "/mini/_archiver/tmp/p.gwtar.html/~/index.html",
    "/mini/%5Farchiver/crawl.sqlite",
    "/mini/%5farchiver/crawl%2Esqlite",
    "/mini/_archiver%2Fcrawl.sqlite",
    "/mini/%5F%61rchiver%2F%74mp%2Fwrite-1.tmp",
    "/mini/_archiver//crawl.sqlite",
    "/mini//_archiver/tmp//write-1.tmp",
    "/mini/_archiver/crawl.sqlite?download=1",
    "/mini/state/crawl.sqlite",
    "/mini/state/crawl.sqlite-wal",
    "/mini/state/tmp/write-1.tmp",
    "/mini/state/tmp/",
    "/mini/s.db",
    "/mini/tmp-link/write-1.tmp",
    "/mini/tmp-link/",
    "/mini/docs/w.txt",
]


@pytest.mark.parametrize("target", PRIVATE_TARGETS, ids=[f"p{i:02d}" for i in range(len(PRIVATE_TARGETS))])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_private_files_are_not_found(layout: tuple[str, Path], target: str, method: str) -> None:
    base, _ = layout
    status, head, body = raw_request(base, target, method=method)
    assert status == 404, f"{method} {target}: {status}"
    assert body == (b"404 not found\n" if method == "GET" else b""), "the same answer as any miss"
    assert b"location:" not in head.lower()


def test_private_files_answer_exactly_like_a_miss(layout: tuple[str, Path]) -> None:
    base, _ = layout
    _, miss_head, miss_body = raw_request(base, "/mini/_archiver/no-such-file")
    _, head, body = raw_request(base, "/mini/_archiver/crawl.sqlite")
    assert (_without_date(head), body) == (_without_date(miss_head), miss_body)


def _without_date(head: bytes) -> list[bytes]:
    return [line for line in head.split(b"\r\n") if not line.lower().startswith(b"date:")]


def test_public_reserved_files_are_still_served(layout: tuple[str, Path]) -> None:
    base, _ = layout
    for target, expected in (
        ("/mini/_archiver/manifest.jsonl", b'"format":"archiver-tree"'),
        ("/mini/_archiver/zim-edits.jsonl", b'{"public": true}'),
        ("/mini/_archiver/127.0.0.1/img/a.png", b"PUBLIC-ASSET"),
        ("/mini/state/127.0.0.1/img/a.png", b"PUBLIC-ASSET"),
        ("/mini/inner.gwtar.html", b"Gwtar self-extracting"),
        ("/mini/inner.gwtar.html/~/index.html", b"Mini home"),
        ("/page.gwtar.html/~/index.html", b"Mini home"),
        ("/book/index.html", b"Mini home"),
    ):
        status, _, body = raw_request(base, target)
        assert status == 200, target
        assert expected in body, target
        assert PRIVATE not in body


def test_a_served_reserved_folder_lists_no_private_file(tmp_path: Path) -> None:
    """``archiver serve tree/_archiver``: the folder's files become mounts, the private ones never."""
    tree = tmp_path / "t"
    shutil.copytree(REPO / "testdata" / "trees" / "mini", tree)
    _add_private_files(tree, REPO / "testdata" / "trees" / "mini" / "index.html")
    names = [name for _, name, _ in plan_mounts([tree / "_archiver"])]
    assert "manifest.jsonl" in names and "zim-edits.jsonl" in names
    assert not [n for n in names if n.startswith("crawl.sqlite") or n == "tmp"], names
    with running([tree / "_archiver"]) as base:
        status, _, index = raw_request(base, "/")
        assert status == 200 and b"manifest.jsonl" in index
        assert b"crawl.sqlite" not in index
        assert raw_request(base, "/crawl.sqlite")[0] == 404


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
