"""ZIMs archiver does not write, made at test time: zimwriterfs output of the mini tree, and the
tools that write the old layout and the damaged corpus (tools/zim_oldlayout.py, tools/zim_corpus.py)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"


def tool(name: str) -> ModuleType:
    """A module of tools/ by its name."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oldlayout = tool("zim_oldlayout")


def zimwriterfs(tmp_path: Path, source: Path = MINI, **metadata: str) -> Path:
    """The mini tree (or ``source``, a copy of it; without its manifest) packed by Debian's
    zimwriterfs, with ``metadata`` (zimwriterfs option → value) over defaults that follow the openZIM
    rules. No redirects: Debian's zimwriterfs 3 refuses every line of a --redirects file, or crashes
    on it."""
    if not shutil.which("zimwriterfs"):
        pytest.fail("zimwriterfs is not installed (bash tools/bootstrap installs zim-tools)")
    site = tmp_path / "site"
    shutil.copytree(source, site)
    (site / "_archiver" / "manifest.jsonl").unlink()
    (site / "ill48.png").write_bytes(oldlayout._PNG_48)
    values = {"language": "eng", "title": "Mini", "description": "d", "creator": "c", "publisher": "p",
              "name": "mini", **metadata}  # fmt: skip
    zim = tmp_path / "zw.zim"
    options = [f"--{k}={v}" for k, v in values.items()]
    subprocess.run(
        ["zimwriterfs", "--welcome=index.html", "--illustration=ill48.png", *options, str(site), str(zim)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return zim


Get = Callable[[str], tuple[int, bytes]]


@contextlib.contextmanager
def serving(
    zim: Path, preexec_fn: Callable[[], None] | None = None
) -> Iterator[tuple[Get, subprocess.Popen[bytes]]]:
    """``archiver serve ZIM`` on a free loopback port: (a GET of a path on the ZIM's own host giving
    (status, body), the server process); stopped on exit."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve", str(zim), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=preexec_fn,
    )  # fmt: skip
    host = f"{zim.stem}.localhost:{port}"

    def get(path: str) -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"Host": host})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    try:
        for _ in range(200):  # until it listens
            try:
                get("/")
                break
            except OSError:
                time.sleep(0.05)
        yield get, server
    finally:
        server.terminate()
        server.wait(timeout=30)
