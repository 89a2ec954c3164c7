"""Whether a crawl state's depths and referrers are settled already (formats/crawl-state.md §1, the
meta key ``settled``): a digest of what :meth:`.state.State.settle_depths` reads, every row's
``key``, ``depth``, ``referrer``, ``state``, ``path`` and ``final_url``, the seeds, and the
discoveries (``found``: rows only ever inserted, never changed, so their count, last rowid and the
sums of their steps, inherit flags and source lengths), noted when a settle ends. Settling is
idempotent (its labels satisfy every discovery, so labels settled once are bounds it keeps), so a
state whose digest is the noted one would be settled to what it holds: the settle changes nothing
and is skipped.

Each table is read as one string built by SQLite, every text with its length before it and a NULL
as ``-`` (no two row sets give the same string); a table read in another order gives another
digest, and a settle then runs: a digest that differs costs a settle, never a label. A state file
edited to collide gains nothing: a settle only ever lowers the labels its rows store, which such a
file sets as it likes anyway. Why: an unchanged re-capture's settle (1,000 pages) read every row and
discovery and ran its shortest paths again for nothing (~59 M instructions, 55 K a URL of ~700 K);
the digest is ~24 M of them (a first settle, with no digest noted yet, computes it once, after)."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable

from archiver.capture import aliases, depths

__all__ = ["KEY", "digest", "settle"]

#: the meta key holding the digest of the state as the last settle left it
KEY = "settled"


def _text(column: str) -> str:
    return f"ifnull(length({column}) || ':' || {column}, '-')"


_TABLES = (
    "SELECT group_concat("
    + " || ".join((_text("key"), "' ' || depth || ' '", _text("referrer"), _text("state"), _text("path")))
    + f" || {_text('final_url')}, '') FROM urls",
    f"SELECT group_concat({_text('url')}, '') FROM seeds",
    "SELECT count(*) || ' ' || ifnull(max(rowid), '-') || ' ' || total(step) || ' ' || total(inherit)"
    " || ' ' || total(length(src)) FROM found",
)


def digest(db: sqlite3.Connection) -> str:
    """The digest of what a settle reads in ``db`` (see the module docstring)."""
    h = hashlib.sha256(b"settled 1")
    for query in _TABLES:
        (text,) = db.execute(query).fetchone()
        h.update(b"\n" + str(text or "").encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def settle(db: sqlite3.Connection, found: Callable[[], Iterable[depths.Edge]]) -> None:
    """Give every row of ``db`` the depth and referrer of the shortest path over the discoveries
    ``found`` gives (:func:`.depths.shortest`, the rows' stored labels as bounds), unless the state
    is the one the last settle left (:func:`digest`, noted under :data:`KEY` in ``meta``); inside
    the caller's transaction."""
    row = db.execute("SELECT value FROM meta WHERE key = ?", (KEY,)).fetchone()
    noted = None  # none noted (a state's first settle): settled, no digest to compare
    if row is not None:
        noted = digest(db)
        if row[0] == noted:
            return
    stored = {
        str(k): (int(d), str(r or "")) for k, d, r in db.execute("SELECT key, depth, referrer FROM urls")
    }
    seeds = [str(u) for (u,) in db.execute("SELECT url FROM seeds")]
    labels = depths.shortest(seeds, found(), stored, aliases.referrer_names(db))
    changed = [(d, r or None, k) for k, (d, r) in labels.items() if stored.get(k, (d, r)) != (d, r)]
    db.executemany("UPDATE urls SET depth = ?, referrer = ? WHERE key = ?", changed)
    db.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        (KEY, digest(db) if changed or noted is None else noted),
    )
