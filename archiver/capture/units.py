"""Units of work of a capture's SQLite state (:class:`.state.State`), committed in batches.

A unit (``with state.transaction():``) is all or nothing; an inner one is part of the outer. With a
group above 1 the outer one is part of an open batch transaction: a unit that fails rolls back only
itself (the batch is rolled back and what its earlier units wrote is written again, :class:`Logged`:
no savepoint a unit), and the batch is committed after ``group`` units, or when a unit ends and the
batch is :data:`GROUP_SECONDS` old, or by :meth:`Batch.commit` (the state's ``release`` and ``close``). A
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
from typing import Any

__all__ = ["GROUP", "GROUP_SECONDS", "Batch", "Logged", "Transaction"]

#: units of work committed together (``State.group``)
GROUP = 64
#: a batch at least this old (seconds) is committed when a unit ends, however few units it holds
GROUP_SECONDS = 1.0


class Batch:
    """The open batch of one connection: units open and done, when it began, and the statements
    that wrote what its units did (:class:`Logged`)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.depth = 0  # transactions open (an inner one is part of the outer)
        self.units = 0  # units done in the open batch
        self.started = 0.0
        #: the writes of the open batch's units done (and of any write between them), in order:
        #: what a unit that fails leaves standing, written again after a rollback of the batch
        self.log: list[tuple[bool, str, Any]] = []
        #: the writes of the unit open (a group above 1), None outside one
        self.unit: list[tuple[bool, str, Any]] | None = None

    def commit(self) -> None:
        """Commit the open batch, if any."""
        self.units = 0
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self.log.clear()

    def durable(self) -> None:
        """After a write that must not wait in the batch: outside a unit, commit the open batch now
        (with the units before it); inside one, the write is part of that unit."""
        if not self.depth:
            self.commit()

    def undo_unit(self) -> None:
        """Undo the unit open, and only it: the batch rolled back, then begun again with the writes
        of its units done (:attr:`log`: the same statements on the same rows give the same rows)."""
        self.unit = None
        db = self.db
        if db.in_transaction:  # (an I/O error may have made SQLite roll it back already)
            db.execute("ROLLBACK")
        if not self.log:
            self.units = 0
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            for many, sql, args in self.log:
                (db.executemany if many else db.execute)(sql, args)
        except BaseException:  # what they wrote is lost with the batch: done again when resumed
            if db.in_transaction:
                db.execute("ROLLBACK")
            self.units = 0
            self.log.clear()
            raise


class Logged:
    """The connection of a batch as the state writes through it: every statement but a ``SELECT``
    run inside a unit (or between units, in an open batch) is noted in the batch (:attr:`Batch.log`),
    so a unit that fails rolls back only itself without a savepoint per unit (a savepoint's
    journal of each page its unit changes cost ~75 K instructions a unit: 2.4 % of a no-render
    capture). Anything else is the connection's own."""

    __slots__ = ("_batch", "_db")

    def __init__(self, batch: Batch) -> None:
        self._db = batch.db
        self._batch = batch

    def execute(self, sql: str, args: Any = ()) -> sqlite3.Cursor:
        cursor = self._db.execute(sql, args)
        if not sql.startswith("SELECT"):
            self._note(False, sql, args)
        return cursor

    def executemany(self, sql: str, args: Any) -> sqlite3.Cursor:
        args = list(args)  # kept to be run again: an iterator would be spent
        cursor = self._db.executemany(sql, args)
        self._note(True, sql, args)
        return cursor

    def _note(self, many: bool, sql: str, args: Any) -> None:
        b = self._batch
        if b.unit is not None:
            b.unit.append((many, sql, args))
        elif self._db.in_transaction and b.depth == 0:
            b.log.append((many, sql, args))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


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
                b.unit = []
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        b = self.batch
        b.depth -= 1
        if not self.outer:
            return
        if exc_type is None:
            if b.unit is not None:
                b.log += b.unit
                b.unit = None
            b.units += 1
            if b.units >= self.group or time.monotonic() - b.started >= GROUP_SECONDS:
                b.commit()
            return
        self.rolled_back()
        if self.group > 1:  # the batch's earlier units stand
            b.undo_unit()
        else:
            b.db.execute("ROLLBACK")
            b.units = 0
