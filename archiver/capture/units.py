"""Units of work of a capture's SQLite state (:class:`.state.State`), committed in batches.

A unit (``with state.transaction():``) is all or nothing; an inner one is part of the outer. With a
group above 1 the outer one is a savepoint of an open batch transaction: a unit that fails rolls back
only itself, and the batch is committed after ``group`` units, or when a unit ends and the batch is
:data:`GROUP_SECONDS` old, or by :meth:`Batch.commit` (the state's ``release`` and ``close``). A
commit writes every database page the batch changed to the WAL once; consecutive units of a crawl
change mostly the same pages (the frontier index, the last leaf of each table), so one commit for
sixty-four writes a fraction of what sixty-four commits did (and about half of what four commits of
sixteen did: the WAL's writes, a fiftieth of a no-render capture's CPU). A process killed loses the
units of the open batch: their rows are still pending, and a resumed run does them again (their
files written again, atomically). Every write of the state is a unit, except what a resumed run
goes by rather than redoes (its meta, a refresh, a requeue: formats/crawl-state.md §4): those call
:meth:`Batch.durable`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

__all__ = ["GROUP", "GROUP_SECONDS", "Batch", "Transaction"]

#: units of work committed together (``State.group``)
GROUP = 64
#: a batch at least this old (seconds) is committed when a unit ends, however few units it holds
GROUP_SECONDS = 1.0


class Batch:
    """The open batch of one connection: units open and done, and when it began."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.depth = 0  # transactions open (an inner one is part of the outer)
        self.units = 0  # units done in the open batch
        self.started = 0.0

    def commit(self) -> None:
        """Commit the open batch, if any."""
        self.units = 0
        if self.db.in_transaction:
            self.db.execute("COMMIT")

    def durable(self) -> None:
        """After a write that must not wait in the batch: outside a unit, commit the open batch now
        (with the units before it); inside one, the write is part of that unit."""
        if not self.depth:
            self.commit()


class Transaction:
    """One unit of work of ``batch``, ``group`` units a commit; ``rolled_back`` is called when it
    fails (see the module docstring)."""

    def __init__(self, batch: Batch, group: int, rolled_back: Callable[[], None]) -> None:
        self.batch = batch
        self.group = group
        self.rolled_back = rolled_back
        self.outer = False

    def __enter__(self) -> Transaction:
        b = self.batch
        self.outer = b.depth == 0
        b.depth += 1
        if self.outer:
            if not b.db.in_transaction:
                b.db.execute("BEGIN IMMEDIATE")
                b.started = time.monotonic()
            if self.group > 1:
                b.db.execute("SAVEPOINT unit")
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        b = self.batch
        b.depth -= 1
        if not self.outer:
            return
        if exc_type is None:
            if self.group > 1:
                b.db.execute("RELEASE unit")
            b.units += 1
            if b.units >= self.group or time.monotonic() - b.started >= GROUP_SECONDS:
                b.commit()
            return
        self.rolled_back()
        if self.group > 1 and b.units:  # the batch's earlier units stand
            b.db.execute("ROLLBACK TO unit")
            b.db.execute("RELEASE unit")
        else:
            b.db.execute("ROLLBACK")
            b.units = 0
