"""``archiver merge`` never leaves a shard (formats/tree.md §11): the attacks of issue 22, point 2.

A shard is a folder someone else may have written. A stored path that is a symlink (to a file
outside whose manifest record matches it byte for byte, or to ``/dev/zero``), a folder symlink, a
FIFO or a socket must be refused with one line naming the path, exit 1, nothing at ``-o``; so must a
malformed record or row of its crawl state. Each run is a subprocess with a timeout, so a merge that
hangs (reading a FIFO, reading ``/dev/zero`` for ever) fails its test instead of the suite.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.fixture import FixtureServer
from archiver.tree import read_records

ROOT = Path(__file__).resolve().parents[2]
HANG = 60  # seconds: a guard against a hang (a refusal takes well under a second), not a timing check


@pytest.fixture(scope="module")
def shard(site_server: FixtureServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shard") / "tree"
    capture([site_server.url], out, render=False, depth=1, delay=0, progress=False)
    return out


def _archiver(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "archiver", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=HANG,
        env=env,
        check=False,
    )


def _asset(tree: Path) -> tuple[str, bytes]:
    path = next(r.path for r in read_records(tree) if r.kind == "asset" and "/" in r.path)
    return path, (tree / path).read_bytes()


def _refused(tmp_path: Path, argv: list[object], out: Path, *words: str) -> str:
    before = sorted(p.name for p in out.parent.iterdir())
    done = _archiver(*argv)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("archiver: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr
    assert not out.exists()
    assert sorted(p.name for p in out.parent.iterdir()) == before  # no staging folder left
    return done.stderr


def _symlink_to_matching_outside_file(a: Path, outside: Path) -> str:
    path, data = _asset(a)
    (outside / "secret.bin").write_bytes(data)  # the record's size and hash match it
    (a / path).unlink()
    (a / path).symlink_to(outside / "secret.bin")
    return path


def _folder_symlink(a: Path, outside: Path) -> str:
    path, _ = _asset(a)
    folder = path.rsplit("/", 1)[0]
    shutil.copytree(a / folder, outside / "copy")
    shutil.rmtree(a / folder)
    (a / folder).symlink_to(outside / "copy", target_is_directory=True)
    return folder


def _fifo(a: Path, outside: Path) -> str:
    path, _ = _asset(a)
    (a / path).unlink()
    os.mkfifo(a / path)
    return path


def _dev_zero(a: Path, outside: Path) -> str:
    path, _ = _asset(a)
    (a / path).unlink()
    (a / path).symlink_to("/dev/zero")
    return path


def _socket(a: Path, outside: Path) -> str:
    path, _ = _asset(a)
    (a / path).unlink()
    here = os.getcwd()
    os.chdir((a / path).parent)  # a socket's path is short; bind by the name in its folder
    try:
        s = socket.socket(socket.AF_UNIX)
        s.bind(path.rsplit("/", 1)[1])
        s.close()
    finally:
        os.chdir(here)
    return path


ATTACKS: dict[str, tuple[Callable[[Path, Path], str], str]] = {
    "symlink-to-matching-outside-file": (_symlink_to_matching_outside_file, "symbolic link"),
    "folder-symlink": (_folder_symlink, "symbolic link"),
    "fifo": (_fifo, "FIFO"),
    "symlink-to-dev-zero": (_dev_zero, "symbolic link"),
    "socket": (_socket, "socket"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_stored_path_that_is_not_a_file_in_the_shard_is_refused(
    shard: Path, tmp_path: Path, attack: str
) -> None:
    make, word = ATTACKS[attack]
    a = tmp_path / "a"
    shutil.copytree(shard, a)
    outside = tmp_path / "outside"
    outside.mkdir()
    path = make(a, outside)
    err = _refused(tmp_path, ["merge", a, "-o", tmp_path / "m"], tmp_path / "m", path, word)
    if attack == "symlink-to-matching-outside-file":
        size = (outside / "secret.bin").stat().st_size
        assert f"size {size}" not in err  # never a word about the outside file


def test_pack_of_shards_does_not_leave_them_either(shard: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(shard, a)
    shutil.copytree(shard, b)
    for shard_ in (a, b):  # whichever shard's copy the merge keeps
        outside = tmp_path / f"outside-{shard_.name}"
        outside.mkdir()
        path = _symlink_to_matching_outside_file(shard_, outside)
    for fmt, name in (("gwtar", "x.gwtar.html"), ("zim", "x.zim")):
        argv: list[object] = ["pack", a, b, "--format", fmt, "-o", tmp_path / name]
        _refused(tmp_path, argv, tmp_path / name, path, "symbolic link", f"archiver: {a}: ")


def test_a_file_larger_than_its_record_is_not_read_on(shard: Path, tmp_path: Path) -> None:
    """A stored file that grew (a sparse 1 TiB file here) is refused by its size, not read."""
    a = tmp_path / "a"
    shutil.copytree(shard, a)
    path, _ = _asset(a)
    with open(a / path, "r+b") as f:
        f.truncate(1 << 40)
    _refused(tmp_path, ["merge", a, "-o", tmp_path / "m"], tmp_path / "m", "bytes differ", path)


@contextlib.contextmanager
def _db(tree: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(tree / "_archiver/crawl.sqlite")
    try:
        yield db
        db.commit()
    finally:
        db.close()


def _one_record(db: sqlite3.Connection) -> tuple[str, dict[str, object]]:
    path, blob = db.execute("SELECT path, record FROM records WHERE path LIKE '%/%' LIMIT 1").fetchone()
    return path, json.loads(blob)


def _nul_in_path(db: sqlite3.Connection) -> None:
    path, record = _one_record(db)
    record["path"] = path + "\0.html"
    db.execute("INSERT INTO records (path, record) VALUES (?, ?)", (record["path"], json.dumps(record)))


def _not_json(db: sqlite3.Connection) -> None:
    path, _ = _one_record(db)
    db.execute("UPDATE records SET record = ? WHERE path = ?", (b"\x00not json{", path))


def _wrong_shape(db: sqlite3.Connection) -> None:
    path, _ = _one_record(db)
    db.execute("UPDATE records SET record = ? WHERE path = ?", (json.dumps({"path": 5, "urls": 7}), path))


def _a_list(db: sqlite3.Connection) -> None:
    path, _ = _one_record(db)
    db.execute("UPDATE records SET record = ? WHERE path = ?", (json.dumps([path]), path))


def _record_nested_deep(db: sqlite3.Connection) -> None:
    """A record whose unknown field holds 5,000 nested arrays: msgspec raises RecursionError, which
    the old code (dab4b1c) did not catch (a traceback, exit 70)."""
    path, record = _one_record(db)
    blob = json.dumps(record)[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}"
    db.execute("UPDATE records SET record = ? WHERE path = ?", (blob, path))


def _record_is_a_number(db: sqlite3.Connection) -> None:
    path, _ = _one_record(db)
    db.execute("UPDATE records SET record = 42 WHERE path = ?", (path,))


def _private_path(db: sqlite3.Connection) -> None:
    _, record = _one_record(db)
    record["path"] = "_archiver/crawl.sqlite"
    db.execute("INSERT INTO records (path, record) VALUES (?, ?)", (record["path"], json.dumps(record)))


def _empty_segment(db: sqlite3.Connection) -> None:
    path, record = _one_record(db)
    record["path"] = path.replace("/", "//", 1)
    db.execute("INSERT INTO records (path, record) VALUES (?, ?)", (record["path"], json.dumps(record)))


def _depth_not_a_number(db: sqlite3.Connection) -> None:
    db.execute("UPDATE urls SET depth = 'deep' WHERE seq = (SELECT MAX(seq) FROM urls)")


def _found_garbage(db: sqlite3.Connection) -> None:
    db.execute("INSERT INTO found (src, step, inherit, keys) VALUES (x'00ff', 'one', 0, 7)")


def _link_garbage(db: sqlite3.Connection) -> None:
    (src,) = db.execute("SELECT src FROM links LIMIT 1").fetchone()
    db.execute("INSERT INTO links (src, key, local) VALUES (?, 3.5, 'yes')", (src,))


def _schema_garbage(db: sqlite3.Connection) -> None:
    db.execute("UPDATE meta SET value = 'two' WHERE key = 'schema'")


MALFORMED: dict[str, Callable[[sqlite3.Connection], None]] = {
    "nul-in-path": _nul_in_path,
    "record-not-json": _not_json,
    "record-wrong-shape": _wrong_shape,
    "record-a-list": _a_list,
    "record-a-number": _record_is_a_number,
    "record-nested-deep": _record_nested_deep,
    "record-at-a-private-path": _private_path,
    "record-path-with-empty-segment": _empty_segment,
    "row-depth-not-a-number": _depth_not_a_number,
    "found-garbage": _found_garbage,
    "links-garbage": _link_garbage,
    "schema-not-a-number": _schema_garbage,
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_crawl_state_is_refused(shard: Path, tmp_path: Path, case: str) -> None:
    a = tmp_path / "a"
    shutil.copytree(shard, a)
    with _db(a) as db:
        MALFORMED[case](db)
    err = _refused(tmp_path, ["merge", a, "-o", tmp_path / "m"], tmp_path / "m", str(a))
    assert "\0" not in err


def test_the_shards_metadata_is_read_from_inside_it(shard: Path, tmp_path: Path) -> None:
    """``_archiver/crawl.sqlite`` a symlink to another capture's state: refused, not read."""
    a, other = tmp_path / "a", tmp_path / "other"
    shutil.copytree(shard, a)
    shutil.copytree(shard, other)
    (a / "_archiver/crawl.sqlite").unlink()
    (a / "_archiver/crawl.sqlite").symlink_to(other / "_archiver/crawl.sqlite")
    _refused(tmp_path, ["merge", a, "-o", tmp_path / "m"], tmp_path / "m", "symbolic link")


def test_an_intact_shard_still_merges(shard: Path, tmp_path: Path) -> None:
    a = tmp_path / "a"
    shutil.copytree(shard, a)
    done = _archiver("merge", a, "-o", tmp_path / "m")
    assert done.returncode == 0, done.stderr
    for r in read_records(tmp_path / "m"):
        assert hashlib.sha256((tmp_path / "m" / r.path).read_bytes()).hexdigest() == r.sha256
        if r.kind == "asset":  # on one file system, the very files of the shard (hard links)
            assert (tmp_path / "m" / r.path).stat().st_ino == (a / r.path).stat().st_ino
