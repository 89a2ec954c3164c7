"""What a capture's SQLite state (:class:`.state.State`) knows is absent from its tables without
asking SQLite.

Each set is a superset of what its table holds (a rolled-back unit only leaves it larger than
needed), or None when unknown: the table held rows when the file was opened, or rows were written
behind the State's back (:meth:`Known.forget`). A first capture opens empty tables, so the lookups it
makes for each new URL, path and page (its row, a path's owner, a record, a page's bytes, the rows
redirected to a page: always none there) cost no statement; a resumed or repeated capture asks
SQLite as before. Every write to these tables goes through a method of the State that notes it here
(:mod:`.kept` writes records and blobs directly: only at paths and for SHA-256s of records the State
wrote, which :meth:`Known.stored` notes).
"""

from __future__ import annotations

import sqlite3

from archiver.tree import Record

__all__ = ["Known", "absent"]


class Known:
    """The sets of one state database (see the module docstring)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        def fresh(table: str) -> set[str] | None:
            return set() if db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None else None

        #: ``urls.key``, and the final URLs of its rows whose outcome is ``redirected``
        self.keys = fresh("urls")
        self.redirected: set[str] | None = None if self.keys is None else set()
        #: ``paths.path``; ``records.path``; ``blobs.sha256`` and every stored record's SHA-256;
        #: ``links.src``
        self.paths = fresh("paths")
        self.records = fresh("records")
        self.blobs = fresh("blobs")
        self.linked = fresh("links")

    def forget(self) -> None:
        """Rows are about to be written directly: from now on every lookup asks SQLite."""
        self.keys = self.redirected = self.paths = self.records = self.blobs = self.linked = None

    def stored(self, record: Record) -> None:
        """``record`` is written to ``records``."""
        if self.records is not None:
            self.records.add(record.path)
        if self.blobs is not None:
            self.blobs.add(record.sha256)

    def outcome(self, outcome: str, final_url: str | None) -> None:
        """A row's outcome and final URL are written."""
        if outcome == "redirected" and final_url and self.redirected is not None:
            self.redirected.add(final_url)


def absent(known: set[str] | None, item: str) -> bool:
    """Whether ``item`` is known to be absent from the table ``known`` stands for."""
    return known is not None and item not in known
