"""Files are opened without a race (formats/serve.md §5): a tree folder swapped for a symlink to the
outside, again and again while requests run, never serves an outside byte and never answers 500; a
folder of archives never follows a symlink out of it; a tree's private files are refused even when
named on the command line; and walk.open_beneath, piece by piece."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.errors import UsageError
from archiver.serve import running
from archiver.serve.sources import plan_mounts
from archiver.serve.walk import open_beneath, open_root
from tests.serve.helpers import request

INSIDE = b"INSIDE-BYTES-" * 10
OUTSIDE = b"OUTSIDE-BYTES" * 10


def test_a_folder_swapped_for_a_symlink_never_serves_outside_bytes(tmp_path: Path) -> None:
    tree, outside = tmp_path / "t", tmp_path / "outside" / "sub"
    (tree / "sub").mkdir(parents=True)
    outside.mkdir(parents=True)
    (tree / "index.html").write_bytes(b"<title>t</title>")
    for i in range(40):
        (tree / "sub" / f"f{i}.txt").write_bytes(INSIDE)
        (outside / f"f{i}.txt").write_bytes(OUTSIDE)
    real, link = tree / "sub", tree / "sub.real"
    stop = threading.Event()
    swaps = 0

    def swap() -> None:  # sub is the real folder, then a symlink to the outside one, and back
        nonlocal swaps
        while not stop.is_set():
            os.rename(real, link)
            os.symlink(outside, real)
            os.unlink(real)
            os.rename(link, real)
            swaps += 1

    statuses: dict[int, int] = {}
    with running([tree]) as base:
        swapper = threading.Thread(target=swap)
        swapper.start()
        try:

            def get(n: int) -> tuple[int, bytes]:
                # every path a new lookup (the doubled slashes make distinct cache keys): a fresh walk
                reply = request(base, "GET", "/t/" + "/" * (n // 40) + f"sub/f{n % 40}.txt")
                return reply.status, reply.body

            done = 0
            with ThreadPoolExecutor(4) as pool:
                # 1,600 requests at least, more while the swapper has had few turns (a loaded machine)
                while done < 1600 or (swaps < 200 and done < 8000):
                    for status, body in pool.map(get, range(done, done + 200)):
                        statuses[status] = statuses.get(status, 0) + 1
                        assert OUTSIDE[:13] not in body
                        assert status in (200, 404), (status, body[:100])
                        assert status != 200 or body == INSIDE, body[:100]
                    done += 200
        finally:
            stop.set()
            swapper.join()
    assert swaps >= 20 and statuses.get(200), (swaps, statuses)


def test_a_folder_of_archives_never_follows_a_symlink_out(tmp_path: Path) -> None:
    folder, outside = tmp_path / "served", tmp_path / "outside"
    folder.mkdir()
    (outside / "tree").mkdir(parents=True)
    (outside / "tree" / "index.html").write_bytes(b"OUTSIDE tree")
    (outside / "secret.txt").write_bytes(OUTSIDE)
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.html").write_bytes(b"<title>g</title>")
    gwtar.pack(src, outside / "away.gwtar.html")
    (folder / "notes.txt").write_bytes(INSIDE)
    os.symlink(outside / "secret.txt", folder / "secret.txt")
    os.symlink(outside / "tree", folder / "tree")
    os.symlink(outside / "away.gwtar.html", folder / "away.gwtar.html")
    os.symlink("notes.txt", folder / "same.txt")  # stays inside: served
    assert [name for _, name, _ in plan_mounts([folder])] == ["notes.txt", "same.txt"]
    with running([folder]) as base:
        for path in ("/secret.txt", "/tree/", "/away.gwtar.html"):
            reply = request(base, "GET", path)
            assert reply.status == 404 and OUTSIDE not in reply.body, path
        assert request(base, "GET", "/same.txt").body == INSIDE


def test_private_files_are_refused_even_when_named_on_the_command_line(tmp_path: Path) -> None:
    tree = tmp_path / "t"
    (tree / "_archiver" / "tmp").mkdir(parents=True)
    (tree / "index.html").write_bytes(b"<title>t</title>")
    (tree / "_archiver" / "crawl.sqlite").write_bytes(b"STATE")
    (tree / "_archiver" / "crawl.sqlite-wal").write_bytes(b"STATE")
    (tree / "_archiver" / "tmp" / "x.gwtar.html").write_bytes(b"PART")
    os.symlink(tree / "_archiver" / "crawl.sqlite", tmp_path / "state.db")
    named = [
        tree / "_archiver" / "crawl.sqlite",
        tree / "_archiver" / "crawl.sqlite-wal",
        tree / "_archiver" / "tmp",
        tree / "_archiver" / "tmp" / "x.gwtar.html",
        tmp_path / "state.db",  # a symlink to the state
    ]
    for path in named:
        with pytest.raises(UsageError, match="private"):
            plan_mounts([path])
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "serve", str(named[0]), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "private" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


# ------------------------------------------------------------------------------------ open_beneath


@pytest.fixture
def root(tmp_path: Path) -> Path:
    top = tmp_path / "root"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "f.txt").write_bytes(b"f")
    (tmp_path / "out.txt").write_bytes(b"out")
    os.symlink("b/f.txt", top / "a" / "rel")
    os.symlink("../a/b", top / "a" / "up")
    os.symlink(top / "a" / "b" / "f.txt", top / "abs")
    os.symlink("../out.txt", top / "escape")
    os.symlink(tmp_path / "out.txt", top / "abs-escape")
    os.symlink("loop", top / "loop")
    os.symlink("a/../../out.txt", top / "dotdot")
    os.mkfifo(top / "fifo")
    return top


def _walk(root: Path, path: str) -> list[str] | None:
    fd = open_root(str(root))
    try:
        found = open_beneath(fd, (str(root),), path.split("/"))
        if found is None:
            return None
        os.close(found[0])
        return found[2]
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    ("path", "real"),
    [
        ("a/b/f.txt", ["a", "b", "f.txt"]),
        ("a/rel", ["a", "b", "f.txt"]),
        ("a/up/f.txt", ["a", "b", "f.txt"]),
        ("abs", ["a", "b", "f.txt"]),
        ("a/b", ["a", "b"]),
        ("", []),
        ("escape", None),
        ("abs-escape", None),
        ("loop", None),
        ("dotdot", None),
        ("fifo", None),
        ("a/b/f.txt/x", None),
        ("missing", None),
    ],
)
def test_open_beneath(root: Path, path: str, real: list[str] | None) -> None:
    assert _walk(root, path) == real
