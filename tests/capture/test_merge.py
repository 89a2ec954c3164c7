"""``archiver merge``: shards of one crawl united into the tree a single process would have written.

The shards here are made from a real single-process capture of the fixture site, split the way
workers would have split it (each stored file in exactly one shard, every other URL's outcome known
to all), and each shard then finalised on its own as a worker does: its links to files that another
shard holds become absolute. Merging them must give back the single-process tree byte for byte.
Hostile and inconsistent shards are refused with one line and nothing at the output.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver import cli, gwtar
from archiver.capture import capture
from archiver.capture.relink import final_records, public, relink
from archiver.capture.state import State
from archiver.capture.writer import TreeWriter
from archiver.fixture import FixtureServer
from archiver.merge import merge
from archiver.tree import read_header, read_records, write_records
from archiver.urls import DEFAULT_HYGIENE


@pytest.fixture(scope="module")
def single(site_server: FixtureServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("single") / "tree"
    capture([site_server.url], out, render=False, depth=10, delay=0, progress=False)
    return out


def _files(root: Path) -> dict[str, str]:
    """Tree path → SHA-256 of every file, the private crawl state and tmp left out."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if (
            p.is_file()
            and not rel.startswith("_archiver/crawl.sqlite")
            and not rel.startswith("_archiver/report")
        ):
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _shard(tree: Path, dest: Path, keep: Callable[[str], bool]) -> Path:
    """A copy of ``tree`` that holds only the stored files ``keep`` accepts, finalised as a worker
    that stored only those would have finalised it."""
    shutil.copytree(tree, dest)
    db = sqlite3.connect(dest / "_archiver/crawl.sqlite")
    gone = []
    for (path,) in db.execute("SELECT path FROM records").fetchall():
        if not keep(path):
            gone.append(path)
    for path in gone:
        (dest / path).unlink()
        db.execute("DELETE FROM records WHERE path = ?", (path,))
        db.execute("DELETE FROM links WHERE src = ?", (path,))
        db.execute("DELETE FROM blobs WHERE path = ?", (path,))
        db.execute("DELETE FROM urls WHERE path = ? AND state = 'done'", (path,))
    db.commit()
    db.close()
    state = State(dest / "_archiver/crawl.sqlite")
    try:
        (dest / "_archiver/tmp").mkdir(exist_ok=True)
        writer = TreeWriter(dest, dest / "_archiver/tmp")
        relink(state, dest, DEFAULT_HYGIENE, writer)
        header = read_header(dest)
        assert header is not None
        write_records(dest, header, [public(r) for r in final_records(state)])
        writer.empty_tmp(remove=True)
    finally:
        state.close()
    return dest


def _split(path: str, n: int, salt: int) -> int:
    return hashlib.sha256(f"{salt}:{path}".encode()).digest()[0] % n


def test_merge_of_two_shards_is_the_single_process_tree(single: Path, tmp_path: Path) -> None:
    shards = [_shard(single, tmp_path / f"s{i}", lambda p, i=i: _split(p, 2, 7) == i) for i in range(2)]
    # each shard alone is missing files and links the other holds as absolute URLs
    assert _files(shards[0]) != _files(single)
    out = tmp_path / "merged"
    result = merge(shards, out)
    assert result.complete and result.files == len(list(read_records(single)))
    assert _files(out) == _files(single)
    assert [json.loads(x) for x in (out / "_archiver/manifest.jsonl").read_text().splitlines()] == [
        json.loads(x) for x in (single / "_archiver/manifest.jsonl").read_text().splitlines()
    ]


def _manifest(tree: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (tree / "_archiver/manifest.jsonl").read_text().splitlines()]


def _alter_states(shards: list[Path], *statements: str) -> None:
    for i, shard in enumerate(shards):
        db = sqlite3.connect(shard / "_archiver/crawl.sqlite")
        for sql in statements:
            db.execute(sql.replace("{i}", str(i + 1)))
        db.commit()
        db.close()


def test_merge_finds_depths_over_every_shards_discoveries(single: Path, tmp_path: Path) -> None:
    """Every shard's rows too deep, with another referrer (workers that met the shorter paths after
    taking the URLs): the merged records name the single process's depth and referrer all the same,
    the shortest path over the shards' recorded discoveries (tree.md §8, §11)."""
    shards = [_shard(single, tmp_path / f"s{i}", lambda p, i=i: _split(p, 2, 3) == i) for i in range(2)]
    _alter_states(shards, "UPDATE urls SET depth = depth + {i}, referrer = 'https://stale.example/{i}'")
    merge(shards, tmp_path / "merged")
    assert _manifest(tmp_path / "merged") == _manifest(single)
    db = sqlite3.connect(tmp_path / "merged/_archiver/crawl.sqlite")
    assert db.execute(
        "SELECT COUNT(*) FROM urls WHERE referrer LIKE 'https://stale.example/%'"
    ).fetchone() == (0,)
    db.close()


def test_an_alias_of_an_alias_stays_in_its_files_record(single: Path, tmp_path: Path) -> None:
    """A shard may name, for an alias ``a``, another alias ``b`` that a worker met as the owner before
    the path went to a third key (a Redis crawl's kill -9 test did: the merged record of
    docs/reference/index.html lacked ``docs/reference``, merged into ``docs/reference/`` in one shard
    and ``docs/reference/`` into ``docs/reference/index.html`` in another). The merged record lists
    every URL of the file all the same, and its links to ``a`` are relative."""
    three = next(r for r in _manifest(single)[1:] if len(r["urls"]) >= 3)  # type: ignore[arg-type]
    owner, a, b = three["urls"][:3]  # type: ignore[index]
    shards = [_shard(single, tmp_path / f"s{i}", lambda p, i=i: _split(p, 2, 11) == i) for i in range(2)]
    _alter_states(shards, f"UPDATE urls SET final_url = '{b}' WHERE key = '{a}' AND state = 'merged'")
    merge(shards, tmp_path / "merged")
    assert _manifest(tmp_path / "merged") == _manifest(single)
    assert _files(tmp_path / "merged") == _files(single)
    assert owner not in (a, b)


def test_shards_older_than_the_discoveries_merge_by_their_rows(single: Path, tmp_path: Path) -> None:
    """Shards of a version 1 state (no ``found`` table): their rows' depth and referrer stand."""
    shards = [_shard(single, tmp_path / f"s{i}", lambda p, i=i: _split(p, 2, 5) == i) for i in range(2)]
    _alter_states(shards, "DROP TABLE found", "UPDATE meta SET value = '1' WHERE key = 'schema'")
    merge(shards, tmp_path / "merged")
    assert _manifest(tmp_path / "merged") == _manifest(single)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(min_value=1, max_value=4), salt=st.integers(min_value=0, max_value=10_000))
def test_merge_of_any_partition(single: Path, tmp_path: Path, n: int, salt: int) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path))  # hypothesis runs the examples in one tmp_path
    shards = [_shard(single, work / f"s{i}", lambda p, i=i: _split(p, n, salt) == i) for i in range(n)]
    merge(shards, work / "merged")
    assert _files(work / "merged") == _files(single)


def test_same_url_stored_twice_keeps_the_last_fetch(single: Path, tmp_path: Path) -> None:
    a = _shard(single, tmp_path / "a", lambda p: True)
    b = _shard(single, tmp_path / "b", lambda p: True)
    result = merge([a, b], tmp_path / "m")
    assert result.duplicates == result.files
    assert _files(tmp_path / "m") == _files(single)


def test_pack_takes_the_shards_directly(single: Path, tmp_path: Path) -> None:
    shards = [_shard(single, tmp_path / f"s{i}", lambda p, i=i: _split(p, 3, 1) == i) for i in range(3)]
    one, many = tmp_path / "one.gwtar.html", tmp_path / "many.gwtar.html"
    assert cli.main(["pack", str(single), "--format", "gwtar", "-o", str(one)]) == 0
    assert cli.main(["pack", *map(str, shards), "--format", "gwtar", "-o", str(many)]) == 0
    assert gwtar.verify(many).ok
    assert one.read_bytes() == many.read_bytes()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp folder left


# ---- refused: one line, exit code, nothing at the output


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(argv)
    err = capsys.readouterr().err
    return code, err


def test_a_damaged_file_refuses_the_merge(
    single: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _shard(single, tmp_path / "a", lambda p: _split(p, 2, 3) == 0)
    b = _shard(single, tmp_path / "b", lambda p: _split(p, 2, 3) == 1)
    victim = next(r.path for r in read_records(b) if r.kind == "asset")
    (b / victim).write_bytes(b"tampered")
    code, err = _run(["merge", str(a), str(b), "-o", str(tmp_path / "m")], capsys)
    assert code == 1 and err.count("\n") == 1 and "bytes differ from the manifest record" in err
    assert not (tmp_path / "m").exists()
    assert {p.name for p in tmp_path.iterdir()} == {"a", "b"}


def test_two_urls_at_one_path_refuse(
    single: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _shard(single, tmp_path / "a", lambda p: True)
    b = _shard(single, tmp_path / "b", lambda p: True)
    db = sqlite3.connect(b / "_archiver/crawl.sqlite")
    path, blob = db.execute("SELECT path, record FROM records LIMIT 1").fetchone()
    record = json.loads(blob)
    record["urls"] = ["http://other.example/x"]
    db.execute("UPDATE records SET record = ? WHERE path = ?", (json.dumps(record), path))
    db.commit()
    db.close()
    code, err = _run(["merge", str(a), str(b), "-o", str(tmp_path / "m")], capsys)
    assert code == 1 and "shards disagree on" in err and err.count("\n") == 1
    assert not (tmp_path / "m").exists()


def test_a_record_path_that_escapes_is_refused(
    single: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _shard(single, tmp_path / "a", lambda p: True)
    db = sqlite3.connect(a / "_archiver/crawl.sqlite")
    (blob,) = db.execute("SELECT record FROM records LIMIT 1").fetchone()
    record = json.loads(blob)
    record["path"] = "../../outside.html"
    db.execute("INSERT INTO records (path, record) VALUES (?, ?)", (record["path"], json.dumps(record)))
    db.commit()
    db.close()
    code, err = _run(["merge", str(a), "-o", str(tmp_path / "m")], capsys)
    assert code == 1 and "unsafe path" in err
    assert not (tmp_path / "outside.html").exists() and not (tmp_path / "m").exists()


def test_shards_of_different_crawls_refuse(
    single: Path, site_server: FixtureServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    capture([site_server.url], other, render=False, depth=1, delay=0, progress=False)
    code, err = _run(["merge", str(single), str(other), "-o", str(tmp_path / "m")], capsys)
    assert code == 2 and "scope options differ" in err and "depth" in err
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("case", ["not-empty", "inside", "twice", "not-capture"])
def test_usage_errors(single: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    a = _shard(single, tmp_path / "a", lambda p: True)
    out = tmp_path / "m"
    argv = ["merge", str(a), "-o", str(out)]
    if case == "not-empty":
        out.mkdir()
        (out / "x").write_text("x")
    elif case == "inside":
        argv = ["merge", str(a), "-o", str(a / "sub")]
    elif case == "twice":
        argv = ["merge", str(a), str(a), "-o", str(out)]
    else:
        (tmp_path / "plain").mkdir()
        argv = ["merge", str(tmp_path / "plain"), "-o", str(out)]
    code, err = _run(argv, capsys)
    assert code == 2 and err.startswith("archiver: ") and err.count("\n") == 1


def test_a_page_lists_every_url_that_redirected_to_it(tmp_path: Path) -> None:
    """A redirect stub finished while its target page was being stored (or by another worker, whose
    shard holds no record of the target) still ends in the target's ``redirects`` (tree.md §9.1):
    the end of the crawl takes them from the rows, not from the moment the stub was written."""
    from archiver.capture.relink import final_records
    from archiver.capture.state import NewURL, State
    from archiver.tree import Record

    base = "http://127.0.0.1:9/"
    state = State(tmp_path / "crawl.sqlite")
    try:
        state.add([NewURL(base + "a/", "page", 0, None, path="a/index.html"),
                   NewURL(base + "a", "page", 1, base + "a/", path="a.html"),
                   NewURL(base + "b", "page", 1, base + "a/", path="b.html")])  # fmt: skip
        page = Record(path="a/index.html", kind="page", media_type="text/html", size=1, sha256="0" * 64,
                      urls=[base + "a/"], status=200)  # fmt: skip
        state.finish(base + "a/", state="done", outcome="ok", status=200, record=page)
        for key, path in ((base + "a", "a.html"), (base + "b", "b.html")):  # both after the page
            stub = Record(path=path, kind="page", media_type="text/html", size=1, sha256="1" * 64,
                          urls=[key], status=301, title="Moved")  # fmt: skip
            moved = {"state": "done", "outcome": "redirected", "status": 301, "final_url": base + "a/"}
            state.finish(key, record=stub, **moved)
        records = {r.path: r for r in final_records(state)}
    finally:
        state.close()
    assert records["a/index.html"].redirects == [base + "a", base + "b"]
    assert records["a.html"].redirects == [] and records["b.html"].redirects == []
