"""The conformance table (formats/vectors/serve/ranges.json) over real HTTP on 127.0.0.1.

The same cases run against ``archiver serve`` for every kind of representation it serves (a plain
file, a file of a tree, a gwtar member, a ZIM entry) and against Debian's nginx configured by
``archiver serve --print-config nginx``. Where the RFC leaves a choice and nginx chose otherwise, the
case's ``nginx`` field says what nginx does (formats/serve.md §3 lists them)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from archiver.serve import running
from tests.serve.helpers import (
    as_nginx,
    check,
    fill,
    load_vectors,
    nginx,
    placeholders,
    request,
    resource_bytes,
    write_resource,
)

VECTORS = load_vectors()
RESOURCE = VECTORS["resource"]
CASES = VECTORS["cases"]
CONTENT = resource_bytes(RESOURCE)
NAME = RESOURCE["path"].lstrip("/")
MTIME = RESOURCE["mtime"]


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 25
    assert len({c["id"] for c in CASES}) == len(CASES)
    for case in CASES:
        if "nginx" in case:
            assert case.get("note") or case["nginx"].get("note"), f"{case['id']}: a difference needs a note"


def _tree(folder: Path) -> Path:
    tree = folder / "site"
    tree.mkdir()
    (tree / "index.html").write_text(
        "<!doctype html><html><head><title>Site</title></head>"
        f'<body><p>conformance</p><a href="{NAME}">data</a></body></html>',
        encoding="utf-8",
    )
    write_resource(tree, RESOURCE)
    return tree


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Base URL + path of the table's resource in each form ``archiver serve`` serves it."""
    from archiver import gwtar, zim

    folder = tmp_path_factory.mktemp("conformance")
    plain = write_resource(folder, RESOURCE)
    tree = _tree(folder)
    packed = folder / "site.gwtar.html"
    gwtar.pack(tree, packed, loader="/* the loader is not under test here */")
    zim_file = folder / "book.zim"
    zim.pack(tree, zim_file)
    for archive in (packed, zim_file):
        os.utime(archive, (MTIME, MTIME))
    with running([plain, tree, packed, zim_file]) as base:
        root = base.rstrip("/")
        yield {
            "file": root + RESOURCE["path"],
            "tree": f"{root}/site/{NAME}",
            "gwtar-member": f"{root}/site.gwtar.html/~/{NAME}",
            "zim-entry": f"{root}/book/{NAME}",
        }


def _run(url: str, case: dict[str, Any]) -> list[str]:
    base, _, path = url.partition("//")[2].partition("/")
    base = "http://" + base
    path = "/" + path
    head = request(base, "HEAD", path)
    assert head.status == 200, f"{url}: HEAD gave {head.status}"
    etag = head.header("etag")
    assert etag and etag.startswith('"'), "a strong ETag"
    values = placeholders(MTIME, etag)
    headers = {name: fill(value, values) for name, value in case["headers"].items()}
    reply = request(base, case["method"], path, headers)
    return check(case, reply, CONTENT, values, RESOURCE["content_type"])


@pytest.mark.parametrize("form", ["file", "tree", "gwtar-member", "zim-entry"])
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_archiver_serve(served: dict[str, str], form: str, case: dict[str, Any]) -> None:
    problems = _run(served[form], case)
    assert not problems, f"{case['id']} on {form}: {problems}"


@pytest.fixture(scope="module")
def nginx_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert shutil.which("nginx") or Path("/usr/sbin/nginx").exists(), "Debian's nginx is installed here"
    folder = tmp_path_factory.mktemp("nginx")
    plain = write_resource(folder, RESOURCE)
    with nginx(folder, [plain]) as base:
        yield base.rstrip("/") + RESOURCE["path"]


@pytest.mark.interop
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_nginx(nginx_url: str, case: dict[str, Any]) -> None:
    problems = _run(nginx_url, as_nginx(case))
    assert not problems, f"{case['id']} on nginx: {problems}"


@pytest.mark.interop
def test_same_validators_as_nginx(served: dict[str, str], nginx_url: str) -> None:
    """Both servers give the same file the same ETag and Last-Modified, so a client can switch."""

    def validators(url: str) -> tuple[str | None, str | None]:
        base, _, path = url.partition("//")[2].partition("/")
        reply = request("http://" + base, "HEAD", "/" + path)
        return reply.header("etag"), reply.header("last-modified")

    assert validators(served["file"]) == validators(nginx_url)
