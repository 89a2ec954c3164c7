"""The resume state and the writer's tree-path rules (tree.md §3.3, §4.5)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from archiver import urls
from archiver.capture import units
from archiver.capture.crawl import CaptureOptions, Crawler
from archiver.capture.state import NewURL, State
from archiver.errors import UsageError
from archiver.tree import Record

HOME = "https://ex.com/"


def _crawler(tmp_path: Path) -> Crawler:
    return Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False))


def test_same_file_urls_merge_into_one_path(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    assert c.tree.assign("https://ex.com/docs/", "page") == ("docs/index.html", None)
    assert c.tree.assign("https://ex.com/docs", "page") == ("docs/index.html", "https://ex.com/docs/")
    assert c.tree.assign("http://ex.com/docs/index.html", "page") == (
        "docs/index.html",
        "https://ex.com/docs/",
    )


def test_query_hash_collision_gets_a_longer_hash(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    taken = urls.local_path("https://ex.com/s?q=1", kind="page", home=HOME)
    c.state.claim_many(
        {taken: "https://ex.com/s?q=other"}
    )  # pretend another query hashed to the same 6 digits
    path, owner = c.tree.assign("https://ex.com/s?q=1", "page")
    assert owner is None and path == urls.local_path(
        "https://ex.com/s?q=1", kind="page", home=HOME, hash_len=8
    )


def test_file_folder_clash_moves_the_file(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    first, _ = c.tree.assign("https://ex.com/avatar", "asset")
    assert first == "_archiver/ex.com/avatar"
    (c.out / first).parent.mkdir(parents=True)
    (c.out / first).write_bytes(b"file")
    second, _ = c.tree.assign("https://ex.com/avatar/small.png", "asset")
    assert second == "_archiver/ex.com/avatar/small.png"
    moved, _ = c.tree.assign("https://ex.com/avatar", "asset")
    assert moved.startswith("_archiver/ex.com/avatar__c-") and (c.out / moved).read_bytes() == b"file"
    # the other way round: the folder exists first, so the file takes the __c- name at once
    c.tree.assign("https://ex.com/a/b.png", "asset")
    path, _ = c.tree.assign("https://ex.com/a", "asset")
    assert path.startswith("_archiver/ex.com/a__c-")


def test_finish_is_one_transaction(tmp_path: Path) -> None:
    state = State(tmp_path / "crawl.sqlite")
    state.add([NewURL("https://ex.com/", "page", 0, None)])
    record = Record(path="index.html", kind="page", media_type="text/html", size=1, sha256="0" * 64)
    good = NewURL("https://ex.com/a", "page", 1, "https://ex.com/")
    with pytest.raises(AttributeError):  # a failure half-way through: nothing of it may stay
        state.finish("https://ex.com/", state="done", outcome="ok", record=record, new=[good, None])  # type: ignore[list-item]
    assert state.row("https://ex.com/a") is None
    row = state.row("https://ex.com/")
    assert row is not None and row.state == "pending" and state.record("index.html") is None
    state.finish("https://ex.com/", state="done", outcome="ok", record=record)
    assert state.row("https://ex.com/").state == "done"  # type: ignore[union-attr]
    state.close()


def _committed(path: Path) -> set[str]:
    """The done keys another connection sees (what a process killed now would leave)."""
    db = sqlite3.connect(path)
    try:
        return {str(k) for (k,) in db.execute("SELECT key FROM urls WHERE state = 'done'")}
    finally:
        db.close()


def _finish(state: State, key: str, fail: bool = False) -> None:
    record = Record(path=key.rsplit("/", 1)[-1] or "index.html", kind="page", media_type="text/html",
                    size=1, sha256="0" * 64)  # fmt: skip
    found = [NewURL(key + "x", "page", 1, key, source=key)]
    state.finish(key, state="done", outcome="ok", record=record, new=[*found, None] if fail else found)  # type: ignore[list-item]


def test_units_are_committed_in_batches(tmp_path: Path) -> None:
    db = tmp_path / "crawl.sqlite"
    state = State(db)
    state.group = 4
    keys = [f"https://ex.com/{i}" for i in range(6)]
    state.add([NewURL(k, "page", 0, None) for k in keys])  # one unit
    for k in keys[:2]:
        _finish(state, k)
    assert _committed(db) == set()  # three units of four: a kill -9 now loses them (re-fetched)
    _finish(state, keys[2])
    assert _committed(db) == set(keys[:3])  # the fourth unit commits the batch
    _finish(state, keys[3])
    with pytest.raises(AttributeError):  # a unit failing half-way rolls back itself, not the batch
        _finish(state, keys[4], fail=True)
    assert state.row(keys[4]).state == "pending" and state.row(keys[4] + "x") is None  # type: ignore[union-attr]
    assert state.row(keys[3]).state == "done" and state.row(keys[3] + "x") is not None  # type: ignore[union-attr]
    state.release()  # the end of a run (also Ctrl-C, SIGTERM) commits the open batch
    assert _committed(db) == set(keys[:4])
    _finish(state, keys[5])
    state.close()
    assert _committed(db) == set(keys[:4]) | {keys[5]}


def test_a_unit_that_fails_leaves_the_earlier_writes_of_its_batch_as_they_were(tmp_path: Path) -> None:
    """A unit is no savepoint: one that fails rolls the batch back and writes again what the units
    before it wrote (units.Logged), the rows of an executemany given an iterator included."""
    db = tmp_path / "crawl.sqlite"
    state = State(db)
    state.group = 8
    keys = [f"https://ex.com/{i}" for i in range(3)]
    state.add([NewURL(k, "page", 0, None) for k in keys])
    state.set_links("a.html", {keys[0]: True, keys[1]: False})
    with state.transaction():
        rows = iter([("b.html", keys[2], 1)])
        state.db.executemany("INSERT INTO links (src, key, local) VALUES (?, ?, ?)", rows)
    _finish(state, keys[0])
    with pytest.raises(RuntimeError), state.transaction():
        state.db.execute("UPDATE urls SET state = 'skipped' WHERE key = ?", (keys[1],))
        state.db.execute("DELETE FROM links")
        raise RuntimeError("a unit failing half-way")
    links = {("a.html", keys[0], True), ("a.html", keys[1], False), ("b.html", keys[2], True)}
    assert set(state.links()) == links
    assert [state.row(k).state for k in keys] == ["done", "pending", "pending"]  # type: ignore[union-attr]
    assert state.row(keys[0] + "x") is not None  # what the finished unit found
    assert _committed(db) == set()  # still one batch, open
    _finish(state, keys[2])
    state.close()
    assert _committed(db) == {keys[0], keys[2]}
    other = sqlite3.connect(db)
    try:
        assert len(other.execute("SELECT * FROM links").fetchall()) == 3
    finally:
        other.close()


def test_a_batch_a_second_old_is_committed_by_its_next_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(units, "GROUP_SECONDS", 0.0)
    db = tmp_path / "crawl.sqlite"
    state = State(db)
    state.add([NewURL("https://ex.com/", "page", 0, None)])
    _finish(state, "https://ex.com/")
    assert _committed(db) == {"https://ex.com/"}
    state.close()


def test_a_runs_own_decisions_are_never_left_in_an_open_batch(tmp_path: Path) -> None:
    """refresh, requeue and meta are what a resumed run goes by (a re-capture resumed after kill -9
    does not refresh again): each commits the open batch at once, with the units before it."""
    db = tmp_path / "crawl.sqlite"
    state = State(db)
    state.group = 4
    keys = [f"https://ex.com/{i}" for i in range(3)]
    state.add([NewURL(k, "page", 0, None) for k in keys])
    for k in keys:
        _finish(state, k)
    state.release()
    assert state.refresh() == 3
    other = sqlite3.connect(db)
    assert {s for (s,) in other.execute("SELECT state FROM urls")} == {"pending"}
    state.finish(keys[0], state="failed", outcome="failed")  # a unit: waits in the batch
    assert state.requeue(("failed",), max_attempts=5) == 1
    state.set("complete", "0")
    assert other.execute("SELECT value FROM meta WHERE key = 'complete'").fetchone() == ("0",)
    other.close()
    state.close()


def test_requeue_and_depth_improvement(tmp_path: Path) -> None:
    state = State(tmp_path / "crawl.sqlite")
    state.add(
        [
            NewURL(
                "https://ex.com/x",
                "page",
                4,
                "https://ex.com/deep",
                state="skipped",
                reason="beyond the depth limit",
            )
        ]
    )
    state.add([NewURL("https://ex.com/x", "page", 2, "https://ex.com/b")])
    row = state.row("https://ex.com/x")
    assert row is not None and (row.state, row.depth, row.referrer) == ("pending", 2, "https://ex.com/b")
    state.finish("https://ex.com/x", state="unconfirmed", outcome="unconfirmed")
    assert state.requeue(("failed", "unconfirmed"), max_attempts=1) == 0  # tried once already
    assert state.requeue(("failed", "unconfirmed"), max_attempts=5) == 1
    state.close()


def test_a_non_empty_folder_without_a_capture_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "mine.txt").write_text("x")
    with pytest.raises(UsageError, match="holds no capture"):
        _crawler(tmp_path)


def test_no_resume_discards_the_previous_capture_only(tmp_path: Path) -> None:
    c = Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False))
    path, _ = c.tree.assign("https://ex.com/a.css", "asset")
    c.tree.flush()
    (c.out / path).parent.mkdir(parents=True)
    (c.out / path).write_text("old")
    (c.out / "notes.txt").write_text("the user's own file")
    c.state.close()
    fresh = Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False, resume=False))
    assert not (fresh.out / path).exists() and not (fresh.out / "_archiver/ex.com").exists()
    assert (fresh.out / "notes.txt").read_text() == "the user's own file"
    assert fresh.state.count() == 0
    fresh.state.close()


def _essentials(state: State) -> list[tuple[object, ...]]:
    return [(r.key, r.kind, r.state, r.depth, r.referrer, r.stylesheet, r.reason) for r in state.rows()]


def test_repeated_references_cost_no_statement_and_change_nothing(tmp_path: Path) -> None:
    """A reference that improves nothing (depth, referrer, stylesheet) is answered from memory; the
    rows end exactly as when every reference runs its statements."""
    import random

    rng = random.Random(7)
    keys = [f"https://ex.com/{i}" for i in range(6)]
    reasons = ["", "beyond the depth limit", "beyond the page budget", "out of scope"]
    fast = State(tmp_path / "fast.sqlite")
    slow = State(tmp_path / "slow.sqlite")
    for _ in range(400):
        batch = []
        for _ in range(rng.randint(1, 4)):
            skipped = rng.random() < 0.3
            batch.append(
                NewURL(
                    rng.choice(keys),
                    rng.choice(["page", "asset"]),
                    rng.randint(0, 4),
                    rng.choice([None, "https://ex.com/a", "https://ex.com/b"]),
                    stylesheet=rng.random() < 0.2,
                    state="skipped" if skipped else "pending",
                    reason=rng.choice(reasons) if skipped else "",
                )
            )
        if rng.random() < 0.1:
            key = rng.choice(keys)
            for s in (fast, slow):
                if s.row(key) is not None:
                    s.finish(key, state="done", outcome="ok")
        slow._settled.clear()
        assert fast.add(batch) == slow.add(batch)
        slow._settled.clear()
        assert _essentials(fast) == _essentials(slow)

    statements: list[str] = []
    fast.db.set_trace_callback(statements.append)
    row = fast.row(keys[0])
    assert row is not None
    fast.add([NewURL(row.key, row.kind, row.depth + 1, "~", stylesheet=row.stylesheet)])
    assert [s for s in statements if "urls" in s and not s.startswith("SELECT")] == []
    fast.close()
    slow.close()


def test_a_rollback_forgets_what_the_state_remembered(tmp_path: Path) -> None:
    state = State(tmp_path / "crawl.sqlite")
    with pytest.raises(RuntimeError), state.transaction():
        state.add([NewURL("https://ex.com/a", "page", 1, None)])
        raise RuntimeError("stop")
    assert state.row("https://ex.com/a") is None
    assert state.add([NewURL("https://ex.com/a", "page", 1, None)]) == ["https://ex.com/a"]
    state.close()


def _lookups(state: State, keys: list[str], paths: list[str], shas: list[str]) -> list[object]:
    return [
        *(state.row(k) for k in keys),
        *(sorted(state.redirected_to(k)) for k in keys),
        *(state.owner(p) for p in paths),
        *(state.record(p) for p in paths),
        *(state.blob_path(s) for s in shas),
        sorted(state.links()),
    ]


def test_what_the_state_knows_absent_answers_as_sqlite_does(tmp_path: Path) -> None:
    """A first capture's lookups of what its tables cannot hold yet are answered without SQL
    (:mod:`archiver.capture.known`); after any sequence of writes through the State, rolled-back
    units among them, every lookup answers as the database does (the same State told to ask SQLite
    for everything is the reference)."""
    import random

    from archiver.capture.kept import finish_kept

    rng = random.Random(11)
    keys = [f"https://ex.com/{i}" for i in range(8)]
    paths = [f"ex.com/{i}.html" for i in range(8)] + ["ex.com/moved.html"]
    shas = [f"{i:064x}" for i in range(6)]
    fast = State(tmp_path / "fast.sqlite")
    slow = State(tmp_path / "slow.sqlite")
    slow.known.forget()
    assert fast.known.keys == set() and fast.known.records == set()

    def record(path: str) -> Record:
        return Record(path=path, kind="page", media_type="text/html", size=1, sha256=rng.choice(shas),
                      urls=[rng.choice(keys)], etag='"e"')  # fmt: skip

    for _ in range(300):
        op = rng.randrange(8)
        key, path, to, depth = rng.choice(keys), rng.choice(paths), rng.choice(keys), rng.randint(0, 3)
        rec, outcome, linked = record(path), rng.choice(["ok", "redirected"]), rng.choice(keys)
        fail = rng.random() < 0.15
        for s in (fast, slow):
            try:
                with s.transaction():
                    if op == 0:
                        s.add([NewURL(key, "page", depth, None, path=path)])
                    elif op == 1:
                        s.finish(key, state="done", outcome=outcome, final_url=to, record=rec,
                                 blob=(rec.sha256, path), links=(path, {linked: True}))  # fmt: skip
                    elif op == 2:
                        s.claim_many({path: key})
                    elif op == 3:
                        s.move(key, path, "ex.com/moved.html")
                    elif op == 4:
                        s.put_record(rec)
                    elif op == 5:
                        s.mark(key, state="done", outcome="redirected", final_url=to)
                    elif op == 6:
                        s.adopt(key, path)
                    elif s.record(path) is not None:  # what a re-capture's 304 writes directly
                        finish_kept(s, [(key, 304, None, s.record(path))])  # type: ignore[list-item]
                    if fail:
                        raise RuntimeError("undo")
            except RuntimeError:
                pass
        assert _lookups(fast, keys, paths, shas) == _lookups(slow, keys, paths, shas)
    fast.close()
    slow.close()


def test_a_first_capture_looks_up_nothing_it_has_not_written(tmp_path: Path) -> None:
    """The lookups of a new URL, its path, its previous record, a page's bytes and the rows redirected
    to it cost no statement in a new state; a state opened with rows asks SQLite, as does one whose
    rows were written behind its back (``archiver merge``: :meth:`Known.forget`)."""
    state = State(tmp_path / "crawl.sqlite")
    statements: list[str] = []
    state.db.set_trace_callback(statements.append)

    def ask() -> None:
        assert state.row("https://ex.com/new") is None
        assert state.owner("ex.com/new.html") is None
        assert state.record("ex.com/new.html") is None
        assert state.blob_path("0" * 64) is None
        assert state.redirected_to("https://ex.com/new") == []

    ask()
    assert statements == []
    state.known.forget()
    state.db.execute("INSERT INTO paths (path, key) VALUES ('ex.com/new.html', 'https://ex.com/x')")
    assert state.owner("ex.com/new.html") == "https://ex.com/x"
    state.close()
    again = State(tmp_path / "crawl.sqlite")
    assert again.known.paths is None and again.owner("ex.com/new.html") == "https://ex.com/x"
    again.close()


def test_row_from_makes_the_row_the_constructor_makes() -> None:
    """rows.row_from makes the Row that Row(*values) makes (stylesheet a bool): equal, hashable,
    frozen, changed by msgspec.structs.replace."""
    import msgspec

    from archiver.capture.rows import ROW_COLUMNS, Row, row_from

    names = [c.strip() for c in ROW_COLUMNS.split(",")]
    assert names == [f.name for f in msgspec.structs.fields(Row)]
    values = ("http://a.test/p?q=1", "page", "done", 2, None, 1, 7, "p.html", "ok", "", 200, 1, None, 0)
    made = row_from(values)
    built = Row(*values[:13], False)  # type: ignore[arg-type]
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert made.stylesheet is False and row_from((*values[:13], 1)).stylesheet is True
    assert msgspec.structs.replace(made, depth=0).depth == 0
    with pytest.raises(AttributeError):
        made.depth = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        row_from(values[:13])


def test_a_path_given_out_before_its_row_costs_no_update(tmp_path: Path) -> None:
    """claim_many updates the path of the rows that exist (a path moved to an existing key is written
    to its row) and issues no UPDATE for a key whose row is not added yet (its row is added with its
    path); a rolled-back add and a state that asks SQLite for everything still update."""
    state = State(tmp_path / "crawl.sqlite")
    statements: list[str] = []
    state.db.set_trace_callback(statements.append)
    old, new = "https://ex.com/old", "https://ex.com/new"
    state.add([NewURL(old, "page", 1, None, path="ex.com/a.html")])
    statements.clear()
    with state.transaction():
        state.claim_many({"ex.com/b.html": old, "ex.com/new.html": new})
        state.add([NewURL(new, "page", 1, None, path="ex.com/new.html")])
    updates = [s for s in statements if s.startswith("UPDATE urls SET path")]
    assert updates == ["UPDATE urls SET path = 'ex.com/b.html' WHERE key = 'https://ex.com/old'"]
    assert state.row(old).path == "ex.com/b.html"  # type: ignore[union-attr]
    assert state.row(new).path == "ex.com/new.html"  # type: ignore[union-attr]
    with pytest.raises(RuntimeError), state.transaction():  # the key stays known: a superset
        state.add([NewURL("https://ex.com/gone", "page", 1, None)])
        raise RuntimeError("undo")
    state.claim_many({"ex.com/gone.html": "https://ex.com/gone"})
    assert state.row("https://ex.com/gone") is None
    state.known.forget()
    statements.clear()
    state.claim_many({"ex.com/c.html": old, "ex.com/d.html": "https://ex.com/none"})
    assert len([s for s in statements if s.startswith("UPDATE urls SET path")]) == 2
    assert state.row(old).path == "ex.com/c.html"  # type: ignore[union-attr]
    state.close()
