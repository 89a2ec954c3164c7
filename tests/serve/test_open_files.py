"""Many archives under a low limit on open files (``ulimit -n 64``, set in the child): each command
works within the limit or says so in one line naming it, never a traceback nor a partial service.

Before (dab4b1c): ``serve`` of 200 archives said ``a154.gwtar.html: cannot open as a regular file``
(exit 2); of 20 it started, then its search skipped most mounts as having "no search index", some
connections were reset and a page's answer could be cut after its head (``os.dup`` of the socket
refused in sendfile: "ASGI callable returned without completing response"); of 45, a traceback
(the table's temporary file refused, then ``AttributeError: module 'concurrent.futures' has no
attribute 'process'`` while handling it). ``search`` over 300 archives said ``cannot read: Too many
open files``. ``verify -r`` over 1,000 archives worked, and still does."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import resource
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from archiver.serve import send
from tests.disks import ROOT

MINI = ROOT / "testdata" / "trees" / "mini"
LIMIT = 64


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache)}


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """1,000 names of one small gwtar with its search index (hard links)."""
    folder = tmp_path_factory.mktemp("many")
    first = folder / "a0000.gwtar.html"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(MINI), "--format", "gwtar", "--search-index",
         "-o", str(first)],
        capture_output=True, text=True, timeout=120, env=_env(folder / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for i in range(1, 1000):
        os.link(first, folder / f"a{i:04}.gwtar.html")
    return sorted(folder.glob("*.gwtar.html"))


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=300,
        env=_env(cache), preexec_fn=_low_limit,
    )  # fmt: skip


@pytest.mark.parametrize("count", [20, 200])
def test_serve_of_more_archives_than_the_limit_allows_is_one_line(
    many: list[Path], tmp_path: Path, count: int
) -> None:
    done = _run(["serve", "--port", "0", *map(str, many[:count])], tmp_path / "cache")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
    line = done.stderr.strip()
    # 20: refused once the mounts are open; 200: the mounts cannot all be opened (the one named)
    said = f"archiver: serve: {count} archives need about " if count == 20 else "archiver: "
    assert line.startswith(said) and "(raise it with ulimit -n" in line, line
    assert f"may hold {LIMIT} " in line and ("too many open files" in line.lower() or count == 20), line


def test_serve_of_as_many_archives_as_the_limit_allows_serves_and_searches_them_all(
    many: list[Path], tmp_path: Path
) -> None:
    served = many[:10]
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve", "--port", "0", "--quiet", *map(str, served)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path / "cache"),
        preexec_fn=_low_limit,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip().rstrip("/")
        assert base.startswith("http://127.0.0.1:"), base
        port = base.rsplit(":", 1)[1]
        with urllib.request.urlopen(f"{base}/~/api/search?q=work", timeout=30) as r:
            answer = json.load(r)
        pages = 0
        for archive in served:
            host = f"{archive.name.replace('.', '-')}.localhost:{port}"
            ask = urllib.request.Request(f"{base}/{archive.name}", headers={"Host": host})
            with urllib.request.urlopen(ask, timeout=30) as r:
                pages += r.read() == archive.read_bytes()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert answer["skipped"] == [] and {r["mount"] for r in answer["results"]} == {a.name for a in served}
    assert pages == len(served)
    assert "Traceback" not in err and "archiver serve:" not in err, err


def test_search_over_more_archives_than_the_limit_allows_is_one_line(
    many: list[Path], tmp_path: Path
) -> None:
    done = _run(["search", "-q", "work", *map(str, many[:300])], tmp_path / "cache")
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr[-2000:]
    assert done.stderr.endswith(
        f": cannot read: Too many open files; the process may hold {LIMIT} open files at once"
        " (raise it with ulimit -n)\n"
    ), done.stderr


def test_verify_r_over_1000_archives_works_within_the_limit(many: list[Path], tmp_path: Path) -> None:
    done = _run(["verify", "-r", "--no-links", str(many[0].parent)], tmp_path / "cache")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count(": OK (") == 1000 and done.stderr == "", done.stderr[-2000:]


def test_sendfile_without_a_descriptor_to_spare_leaves_the_body_to_the_ordinary_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The response's head is out when sendfile needs a duplicate of the socket's descriptor: refused
    (EMFILE), nothing is sent that way and the caller streams the body (before: the OSError cut the
    answer after its head)."""

    def refused(fd: int) -> int:
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(send.os, "dup", refused)
    assert asyncio.run(send._sendfile(1, 0, 0, 100)) == (0, False)
