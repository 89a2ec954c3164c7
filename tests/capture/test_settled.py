"""A settle is skipped only when the state is the one the last settle left (archiver.capture.settled,
formats/crawl-state.md §1 ``settled``): a second settle of the same state computes nothing; any change
to what a settle reads (a row's depth, referrer, state, path, final URL, a row added or deleted, a
seed, a discovery), an edited or hostile ``settled`` value, or text built to make two states read
alike, makes it settle again, to what a state that never settled gets."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from archiver.capture import depths, settled
from archiver.capture.state import NewURL, State

A, B, C, D = (f"https://ex.com/{x}" for x in "abcd")


def _state(path: Path) -> State:
    """a → b → c, a → c met after c was taken at depth 2: a settle has something to do."""
    state = State(path)
    state.add_seed(A)
    state.add([NewURL(A, "page", 0, None)])
    state.finish(A, state="done", outcome="ok", new=[NewURL(B, "page", 1, A, source=A)])
    state.finish(B, state="done", outcome="ok", new=[NewURL(C, "page", 2, B, source=B)])
    state.finish(C, state="done", outcome="ok")
    state.add([NewURL(C, "page", 1, A, source=A)])
    with state.transaction():
        for key, path in ((A, "index.html"), (B, "b.html"), (C, "c.html")):
            state.db.execute("UPDATE urls SET path = ? WHERE key = ?", (path, key))
    return state


def _labels(state: State) -> list[tuple[str, int, str | None]]:
    return [(r.key, r.depth, r.referrer) for r in state.rows()]


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = depths.shortest

    def shortest(*args: object, **kwargs: object) -> dict[str, depths.Label]:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(depths, "shortest", shortest)
    return calls


def test_a_settled_state_is_not_settled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    state = _state(tmp_path / "crawl.sqlite")
    state.settle_depths()
    first = _labels(state)
    assert (C, 1, A) in first and len(calls) == 1
    state.settle_depths()
    assert _labels(state) == first and len(calls) == 1
    state.close()


EDITS: dict[str, Callable[[sqlite3.Connection], object]] = {
    "depth": lambda db: db.execute("UPDATE urls SET depth = 5 WHERE key = ?", (C,)),
    "referrer": lambda db: db.execute("UPDATE urls SET referrer = ? WHERE key = ?", (B, C)),
    "state": lambda db: db.execute("UPDATE urls SET state = 'merged', final_url = ? WHERE key = ?", (C, B)),
    "path": lambda db: db.execute("UPDATE urls SET path = 'c.html' WHERE key = ?", (B,)),
    "final_url": lambda db: db.execute("UPDATE urls SET final_url = ? WHERE key = ?", (A, B)),
    "row added": lambda db: db.execute(
        "INSERT INTO urls (key, kind, state, depth, referrer, seq) VALUES (?, 'page', 'done', 9, ?, 99)",
        (D, C),
    ),
    "row deleted": lambda db: db.execute("DELETE FROM urls WHERE key = ?", (B,)),
    "seed": lambda db: db.execute("INSERT INTO seeds (url, seq) VALUES (?, 1)", (C,)),
    "discovery": lambda db: db.execute("INSERT INTO found VALUES (?, 1, 0, ?)", (C, D)),
    "discovery edited": lambda db: db.execute("UPDATE found SET step = 0 WHERE src = ?", (B,)),
    "meta edited": lambda db: db.execute("UPDATE meta SET value = 'x' WHERE key = ?", (settled.KEY,)),
    "meta forged": lambda db: db.execute(
        "UPDATE meta SET value = ? WHERE key = ?", (settled.digest(db)[::-1], settled.KEY)
    ),
    "meta deleted": lambda db: db.execute("DELETE FROM meta WHERE key = ?", (settled.KEY,)),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_any_change_to_what_a_settle_reads_settles_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str
) -> None:
    calls = _counting(monkeypatch)
    state = _state(tmp_path / "crawl.sqlite")
    state.settle_depths()
    with state.transaction():
        EDITS[edit](state.db)
    state.close()
    # a copy of the edited state whose digest was never noted: what a settle makes of it
    with sqlite3.connect(tmp_path / "crawl.sqlite") as db:
        db.execute(f"VACUUM INTO '{tmp_path / 'copy.sqlite'}'")
    other = State(tmp_path / "copy.sqlite")
    with other.transaction():
        other.db.execute("DELETE FROM meta WHERE key = ?", (settled.KEY,))
    other.settle_depths()
    expected = _labels(other)
    other.close()
    state = State(tmp_path / "crawl.sqlite")
    before = len(calls)
    state.settle_depths()
    assert len(calls) == before + 1
    assert _labels(state) == expected
    state.close()


def test_texts_that_run_together_read_apart(tmp_path: Path) -> None:
    """Two states whose values joined with the separators would read alike: quoted, they differ."""
    digests = []
    for key, referrer in (("a',NULL,'b", None), ("a", "b',NULL,'")):
        db = sqlite3.connect(tmp_path / f"{len(digests)}.sqlite")
        db.execute("CREATE TABLE urls (key, depth, referrer, state, path, final_url)")
        db.execute("CREATE TABLE seeds (url)")
        db.execute("CREATE TABLE found (src, step, inherit, keys)")
        db.execute("INSERT INTO urls VALUES (?, 1, ?, 'done', NULL, NULL)", (key, referrer))
        digests.append(settled.digest(db))
        db.close()
    assert digests[0] != digests[1]
