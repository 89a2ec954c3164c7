"""A crawl state found in the output folder is checked before it is trusted (formats/crawl-state.md
§1.1, archiver/capture/state_check.py), written as the attacks: a tree from elsewhere whose
``_archiver/crawl.sqlite`` holds text where a depth is, a record of garbage bytes, a row of an unknown
state, a path climbing out of the tree, a FIFO or a link under the state's name or its WAL's, or no
database at all. The old code: a traceback (exit 70) for most, a FIFO state opened as a disk I/O
error, an unknown state or kind taken silently (files removed from the folder as gone from the site),
a record stored under another path written into the version's manifest twice."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.capture.state import State
from archiver.capture.state_check import COLUMNS, problem_clause
from archiver.errors import FormatError
from archiver.fixture import FixtureConfig, FixtureServer

ROOT = Path(__file__).resolve().parents[2]

# rule → (values it takes, values it refuses)
VECTORS: dict[str, tuple[list[object], list[object]]] = {
    "text": (["", "a", "é"], [None, 1, 1.5, b"a", "a\0b"]),
    "int": ([0, 7, 1 << 40], [None, -1, 1.5, "1", b"1"]),
    "sint": ([0, -5, 1 << 40], [None, 1.5, "1"]),
    "path": (["a", "a/b.html", "_archiver/h/x.css", "a..b/c", "...", "a b/c?d.html"],
             [None, "", "/a", "a//b", "./a", "a/./b", "../a", "a/..", "a/../b", "a\0b", 1, b"a"]),
    "kind": (["page", "asset"], [None, "Page", "pages", "", 1]),
    "state": (["pending", "done", "failed", "unconfirmed", "skipped", "refused", "merged"],
              [None, "bogus", "DONE", "", 0]),
    "blob": ([b"{}", "{}"], [None, 1, 1.5]),
}  # fmt: skip


@pytest.mark.parametrize("rule", sorted(VECTORS))
def test_each_rule_takes_and_refuses_what_it_says(rule: str) -> None:
    good, bad = VECTORS[rule]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (c)")
    for optional in (False, True):
        clause = problem_clause("c", rule + ("?" if optional else ""))
        for value in [*good, *bad]:
            db.execute("DELETE FROM t")
            db.execute("INSERT INTO t VALUES (?)", (value,))
            (hit,) = db.execute(f"SELECT count(*) FROM t WHERE {clause}").fetchone()
            refused = value not in good and not (optional and value is None)
            assert bool(hit) == refused, (rule, optional, value)


def test_every_table_of_the_schema_is_checked(tmp_path: Path) -> None:
    """Every table the state's schema creates has its columns in COLUMNS (a new table or column
    is not left unchecked), but the frontier's ``updated`` time."""
    state = State(tmp_path / "crawl.sqlite")
    try:
        tables = [r[0] for r in state.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            columns = [r[1] for r in state.db.execute(f"PRAGMA table_info({table})")]
            assert [c for c, _ in COLUMNS[table]] == [c for c in columns if c != "updated"], table
    finally:
        state.close()


def _site(root: Path) -> Path:
    root.mkdir()
    (root / "index.html").write_text("<html><body><a href='b.html'>b</a><a href='c.html'>c</a></body></html>")
    (root / "b.html").write_text("<p>b</p>")
    (root / "c.html").write_text("<p>c</p>")
    return root


def _capture(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", "capture", url, "-o", str(out), "--no-render", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


FORGED = {
    "depth": ("UPDATE urls SET depth = 'x'",
              "table urls, column depth: 3 row(s) not an integer of at least 0"),
    "state": ("UPDATE urls SET state = 'bogus' WHERE key LIKE '%b.html'",
              "column state: 1 row(s) not a state"),
    "kind": ("UPDATE urls SET kind = 'zzz'", "table urls, column kind: 3 row(s) not 'page' or 'asset'"),
    "climb": ("UPDATE paths SET path = '../victim.txt' WHERE path = 'b.html'",
              "table paths, column path: 1 row(s) not a relative tree path"),
    "record": ("UPDATE records SET record = x'00ff00'", "the record of 'index.html': JSON is malformed"),
    # 5,000 nested arrays in an unknown field: msgspec raises RecursionError (the old code: exit 70)
    "nested": ("UPDATE records SET record = '{\"x\":' || replace(hex(zeroblob(5000)), '00', '[')",
               "the record of 'index.html': maximum recursion depth exceeded"),
    "moved": ("UPDATE records SET path = 'x.html' WHERE path = 'b.html'",
              "the record stored under 'x.html' names 'b.html'"),
    "found": ("UPDATE found SET step = 'a'", "table found, column step:"),
    "verified": ("INSERT INTO verified VALUES ('a.html', 'x', 'big', 0, 0, 0)",
                 "table verified, column size: 1"),
}  # fmt: skip


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A finished capture of a three-page site (the fixture server left running for the module)."""
    top = tmp_path_factory.mktemp("state-check")
    server = FixtureServer(FixtureConfig(root=_site(top / "site"), robots=None))
    server.__enter__()
    out = top / "base"
    assert _capture(server.url, out).returncode == 0
    yield out, server.url
    server.__exit__(None, None, None)


def _copy(base: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(base, to)
    return to / "_archiver" / "crawl.sqlite"


@pytest.mark.parametrize("name", sorted(FORGED))
def test_a_forged_state_is_one_line_and_exit_1(captured: tuple[Path, str], tmp_path: Path, name: str) -> None:
    base, url = captured
    sql, message = FORGED[name]
    state = _copy(base, tmp_path / "out")
    db = sqlite3.connect(state)
    assert db.execute(sql).rowcount >= 1
    db.commit()
    db.close()
    before = sorted(
        p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if "_archiver" not in p.parts
    )
    for extra in ((), ("--new-version",)):
        done = _capture(url, tmp_path / "out", *extra)
        assert done.returncode == 1, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert done.stderr.startswith(f"archiver: {state}: ") and message in done.stderr, done.stderr
    after = sorted(
        p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if "_archiver" not in p.parts
    )
    assert after == before  # nothing fetched, written or removed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["fifo", "garbage", "link", "wal-link", "wal-fifo"])
def test_a_state_that_is_no_database_of_ours_is_refused(
    captured: tuple[Path, str], tmp_path: Path, how: str
) -> None:
    base, url = captured
    state = _copy(base, tmp_path / "out")
    victim = tmp_path / "victim"
    named = state
    if how == "fifo":
        state.unlink()
        os.mkfifo(state)
        message = "is not a regular file"
    elif how == "garbage":
        state.write_bytes(b"garbage" * 1000)
        message = "unreadable crawl state: file is not a database"
    elif how == "link":
        victim.write_bytes(state.read_bytes())
        state.unlink()
        state.symlink_to(victim)
        message = "is not a regular file"
    else:
        named = state.with_name(state.name + "-wal")
        if how == "wal-link":
            named.symlink_to(victim)
        else:
            os.mkfifo(named)
        message = "is not a regular file"
    kept = victim.read_bytes() if victim.exists() else None
    done = _capture(url, tmp_path / "out", "--new-version")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.returncode == 1 and done.stderr.startswith(f"archiver: {named}: {message}"), done.stderr
    assert (victim.read_bytes() if victim.exists() else None) == kept  # nothing written through a link


def test_the_check_refuses_in_process_too(tmp_path: Path) -> None:
    path = tmp_path / "crawl.sqlite"
    State(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO seeds VALUES (x'41', 0, NULL, NULL)")  # bytes: a TEXT column keeps them
    db.commit()
    db.close()
    with pytest.raises(FormatError, match="table seeds, column url: 1 row"):
        State(path)
