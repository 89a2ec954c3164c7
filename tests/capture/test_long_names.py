"""A site whose URLs are too long for a file system, written as the attack (tree.md §4.7): a page
named by 120 Chinese characters (360 bytes: a common article title), a folder of 300 characters, an
image of 300, and a page 20 folders of 240 characters deep (a 4,826-byte URL). Before, the capture
failed each ("cannot store: [Errno 36] File name too long"), at every run ("run the same command
again to retry them"). Now each is stored under a name that fits, the links to it are rewritten to
that name, and the tree verifies, packs and extracts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from archiver.walk import files_below
from tests.httpd import serving

ROOT = Path(__file__).resolve().parents[2]
CJK = quote("中" * 120) + ".html"
FOLDER = "b" * 300 + "/x.html"
IMAGE = "d" * 300 + ".png"
DEEP = "/".join(["c" * 240] * 20) + "/x.html"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            self.end_headers()
            return
        if self.path.endswith(".png"):
            body, kind = PNG, "image/png"
        else:
            links = "".join(f"<a href='/{p}'>{i}</a> " for i, p in enumerate([CJK, FOLDER, DEEP]))
            body = (
                f"<html><head><title>t</title></head><body>{links}<img src='/{IMAGE}'></body></html>".encode()
            )
            kind = "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serving(_Site) as base:
        yield base


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.fixture(scope="module")
def tree(site: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("long") / "tree"
    done = _cli("capture", site, "-o", str(out), "--no-render", "--delay", "0")
    assert done.returncode == 0, done.stdout + done.stderr  # before: partial, 3 pages and the image failed
    return out


def test_every_long_url_is_stored_under_a_name_that_fits(tree: Path) -> None:
    report = json.loads((tree / "_archiver" / "report.json").read_text())
    assert {i["outcome"] for i in report["items"]} == {"ok"}, [i.get("reason") for i in report["items"]]
    assert len(report["items"]) == 5  # the home, three pages, the image
    for path in files_below(tree):
        rel = os.path.relpath(path, tree)
        assert len(rel.encode()) <= 3072 and all(len(p.encode()) <= 255 for p in rel.split("/"))


def test_links_reach_the_shortened_files(tree: Path) -> None:
    hrefs = re.findall(r"href=[\"']([^\"']*)", (tree / "index.html").read_text())
    assert len(hrefs) >= 3
    for href in hrefs[:3]:
        assert (tree / unquote(href)).is_file(), href
    assert _cli("verify", str(tree)).returncode == 0


def test_the_tree_packs_and_extracts(tree: Path, tmp_path: Path) -> None:
    packed = tmp_path / "long.gwtar.html"
    assert _cli("pack", str(tree), "-o", str(packed), "--format", "gwtar").returncode == 0
    done = _cli("extract", str(packed), "-o", str(tmp_path / "x"))
    assert done.returncode == 0, done.stderr
    names = {os.path.relpath(p, tmp_path / "x") for p in files_below(tmp_path / "x")}
    assert {os.path.relpath(p, tree) for p in files_below(tree) if "/_archiver/" not in p} <= names
