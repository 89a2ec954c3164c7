"""Aliases in the SQLite crawl state: several keys that share one tree path (formats/tree.md §3.3).

The key met first owns the path and is fetched; the others are ``merged`` rows naming it
(``final_url``). Which key is met first depends on timing, so nothing the tree keeps may depend on it
(formats/crawl-state.md §2, tree.md §3.3):

- **hand-over**: an owner that ends ``failed``, ``unconfirmed`` or ``refused`` hands its path to the
  smallest key merged into it that was never tried itself (its ``outcome`` still ``merged``): that
  key goes back to pending (no attempt counted) and owns the path, the other aliases name it, and
  the old owner becomes ``merged`` into it, keeping its failure's outcome and reason (the report
  still lists it). An alias that failed as an owner is never handed the path again, so a path whose
  every alias fails ends after each was tried once.
- **referrer names**: a referrer is named by the smallest key of the referring document's file (the
  keys of its row's tree path), not by the alias that happened to be fetched.

SQL over the state's connection, and :func:`chain_end` over rows already read (a Redis shard's,
a merge's); :mod:`.state` calls it (no import back).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

__all__ = ["HANDED_STATES", "adopt", "chain_end", "hand_over", "owner_at_end", "referrer_names"]

#: final states whose key hands its tree path to an alias (tree.md §3.3)
HANDED_STATES = frozenset({"failed", "unconfirmed", "refused"})


def owner_at_end(db: sqlite3.Connection, key: str) -> str:
    """The key at the end of ``key``'s chain of merged rows (``key`` itself when it is not merged):
    an alias merged into an owner that has handed its path on names the new owner."""
    seen = {key}
    while True:
        row = db.execute("SELECT state, final_url FROM urls WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] != "merged" or not row[1] or row[1] in seen:
            return key
        key = str(row[1])
        seen.add(key)


def chain_end(final: Mapping[str, str], key: str) -> str:
    """The key at the end of ``key``'s chain in ``final`` (each merged key → the key it names):
    :func:`owner_at_end` over rows already read, where a chain can be longer than one step (an alias
    one worker merged into another alias, met as the owner before the path went on). A loop ends
    at the key that would repeat."""
    seen = {key}
    while (nxt := final.get(key)) is not None and nxt not in seen:
        key = nxt
        seen.add(key)
    return key


def hand_over(db: sqlite3.Connection, key: str) -> str | None:
    """``key`` has just ended in one of :data:`HANDED_STATES`: when it owns a tree path that aliases
    were merged into, the smallest alias never tried becomes pending and owns the path (module
    docstring). Returns that key, or None. Part of the caller's transaction."""
    row = db.execute("SELECT path FROM urls WHERE key = ?", (key,)).fetchone()
    if row is None or row[0] is None:
        return None
    path = str(row[0])
    owner = db.execute("SELECT key FROM paths WHERE path = ?", (path,)).fetchone()
    if owner is None or owner[0] != key:
        return None
    heir = db.execute(
        "SELECT key FROM urls WHERE state = 'merged' AND final_url = ? AND outcome = 'merged'"
        " ORDER BY key LIMIT 1",
        (key,),
    ).fetchone()
    if heir is None:
        return None
    new = str(heir[0])
    db.execute(
        "UPDATE urls SET state = 'pending', outcome = NULL, reason = NULL, final_url = NULL, path = ?"
        " WHERE key = ?",
        (path, new),
    )
    db.execute("UPDATE urls SET final_url = ? WHERE state = 'merged' AND final_url = ?", (new, key))
    db.execute("UPDATE urls SET state = 'merged', final_url = ? WHERE key = ?", (new, key))
    db.execute("INSERT OR REPLACE INTO paths (path, key) VALUES (?, ?)", (path, new))
    return new


def adopt(db: sqlite3.Connection, key: str, path: str | None) -> bool:
    """A shared crawl gave this worker ``key`` to fetch: a row this shard had merged into another
    key (whose owner has since handed the path on, in another worker or this one) is pending here
    again and owns its path. True when it was merged."""
    cur = db.execute(
        "UPDATE urls SET state = 'pending', outcome = NULL, reason = NULL, final_url = NULL"
        " WHERE key = ? AND state = 'merged'",
        (key,),
    )
    if not cur.rowcount:
        return False
    if path:
        db.execute("INSERT OR REPLACE INTO paths (path, key) VALUES (?, ?)", (path, key))
    return True


def referrer_names(db: sqlite3.Connection) -> dict[str, str]:
    """key → the name a referrer takes (tree.md §8): the smallest key of the file the key's document
    is stored in (the keys stored at its tree path and those merged into them), for every key whose
    file has a smaller one."""
    done: dict[str, str] = {}
    merged: list[tuple[str, str | None, str | None]] = []
    query = "SELECT key, state, path, final_url FROM urls WHERE state IN ('done', 'merged')"
    for key, state, path, final in db.execute(query):
        if state == "done":
            if path is not None:
                done[str(key)] = str(path)
        else:
            merged.append((str(key), final, path))
    file_of = dict(done)
    for key, final, path in merged:
        where = done.get(final) if final else None
        if where is None and path is not None:
            where = str(path)
        if where is not None:
            file_of[key] = where
    smallest: dict[str, str] = {}
    for key, where in file_of.items():
        if where not in smallest or key < smallest[where]:
            smallest[where] = key
    return {key: smallest[where] for key, where in file_of.items() if smallest[where] != key}
