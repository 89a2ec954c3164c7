"""A capture's resume state: ``_archiver/crawl.sqlite`` (SQLite, WAL), written as the crawl goes.

Every completed page or asset is one unit of work: its row becomes final, its manifest record is
stored, and the references it revealed join the frontier, all or nothing. Units are committed in
batches (:attr:`State.group` of them, or fewer once the batch is a second old: :mod:`.units`); one
that fails leaves the others as they were. So a run stopped at any moment (Ctrl-C, a crash, a kill)
loses nothing it had committed and, resumed, repeats no finished work but the open batch's units
(after a ``kill -9``; Ctrl-C and SIGTERM commit it), their files written again, atomically. WAL
with ``synchronous=NORMAL``: a commit survives the process being killed; a power cut may lose the
last few commits (never the database's consistency), which a resume then simply redoes.

Schema (version 2; other tools may read it, only the capture writes it):

``meta(key TEXT PRIMARY KEY, value TEXT)``
    ``schema`` (``"2"``), ``home``, ``created`` (RFC 3339), ``complete`` (``"1"`` once a run ended with
    nothing pending, ``"0"`` while work remains), ``settled`` (optional: the digest of what the last
    settle of the depths read, :mod:`.settled`).
``urls(key TEXT PRIMARY KEY, kind, state, depth, referrer, priority, seq, path, outcome, reason,
status, attempts, final_url, stylesheet)``
    one row per dedup key ever seen. ``kind`` is ``page`` or ``asset``. ``state`` is ``pending`` (to
    do), ``done`` (stored, or a redirect recorded), ``failed``, ``unconfirmed``, ``skipped``,
    ``refused`` or ``merged`` (another key owns the same tree path: tree.md §3.3). ``outcome`` is the
    report's word (``ok``, ``redirected``, ``failed`` …) and ``reason`` its explanation. **A crawl is
    incomplete while any row has ``state = 'pending'``.**
``paths(path TEXT PRIMARY KEY, key TEXT)``
    the tree path each key was given (tree.md §4, with §4.5's clash rules applied).
``records(path TEXT PRIMARY KEY, record BLOB)``
    the manifest record of every stored file (msgspec JSON), from which the final manifest is written.
``moves(path TEXT PRIMARY KEY, key TEXT)``
    the paths a file left when a file/folder clash moved it (tree.md §4.5): links written to the
    old path before the move are pointed at the new one when the run ends.
``blobs(sha256 TEXT PRIMARY KEY, path TEXT)``
    the first file that holds each page's bytes (later identical pages are hard links to it).
``links(src TEXT, key TEXT, local INTEGER)``
    every reference of every stored document: the key it names and whether it was written as a
    relative link (1) or left absolute (0); the end of a run uses it to point links at what the
    tree finally holds.
``seeds(url TEXT PRIMARY KEY, seq INTEGER, folder TEXT, title TEXT)``
    the seeds, with a bookmark's folder and title.
``found(src TEXT, step INTEGER, inherit INTEGER, keys TEXT)`` (version 2)
    every discovery: the document of ``src`` revealed each of ``keys`` (newline-separated; a key
    never holds one), or redirected to it, ``step`` links deeper, naming ``src`` as its referrer or,
    with ``inherit``, ``src``'s own referrer. One row per unit that adds them (so a document done
    twice is there twice). The frontier's empty end gives every row the shortest depth and referrer
    over these (:mod:`.depths`). A version 1 file gains the table when opened (its rows stand for before).
``verified(path TEXT PRIMARY KEY, sha256, size, mtime_ns, ctime_ns, ino)`` (version 2, optional)
    the status of each tree file when a run knew its bytes (wrote them, or read and hashed them):
    a re-capture trusts a file whose status is unchanged without reading it (:mod:`.stage`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

import msgspec

from archiver.capture import aliases, depths, hosts, state_check
from archiver.capture.known import Known, absent
from archiver.capture.rows import ROW_COLUMNS, NewURL, Row, row_from
from archiver.capture.units import GROUP, Batch, Logged, Transaction
from archiver.errors import FormatError, store_error
from archiver.tree import Record

__all__ = [
    "DEPTH_REASON",
    "FINAL_STATES",
    "ROW_COLUMNS",
    "SCHEMA_VERSION",
    "NewURL",
    "Row",
    "State",
    "row_from",
]

SCHEMA_VERSION = 2
FINAL_STATES = frozenset({"done", "failed", "unconfirmed", "skipped", "refused", "merged"})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS urls (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    depth INTEGER NOT NULL,
    referrer TEXT,
    priority INTEGER NOT NULL DEFAULT 1,
    seq INTEGER NOT NULL,
    path TEXT,
    outcome TEXT,
    reason TEXT,
    status INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    final_url TEXT,
    stylesheet INTEGER NOT NULL DEFAULT 0,
    updated REAL
);
CREATE INDEX IF NOT EXISTS urls_frontier ON urls (state, kind, priority, depth, seq);
CREATE INDEX IF NOT EXISTS urls_final ON urls (final_url);
CREATE TABLE IF NOT EXISTS paths (path TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (path TEXT PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS moves (path TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (sha256 TEXT PRIMARY KEY, path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS links (src TEXT NOT NULL, key TEXT NOT NULL, local INTEGER NOT NULL,
                                  PRIMARY KEY (src, key));
CREATE TABLE IF NOT EXISTS seeds (url TEXT PRIMARY KEY, seq INTEGER NOT NULL, folder TEXT, title TEXT);
CREATE TABLE IF NOT EXISTS found (src TEXT NOT NULL, step INTEGER NOT NULL, inherit INTEGER NOT NULL,
                                  keys TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verified (path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
                                     mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL,
                                     ino INTEGER NOT NULL);
"""

#: Reasons a row is skipped that a later reference can undo (a shorter path, a resumed budget).
DEPTH_REASON = "beyond the depth limit"
_LIMIT_REASONS = (DEPTH_REASON, "beyond the page budget")

_record_encoder = msgspec.json.Encoder()
_record_decoder = msgspec.json.Decoder(Record)


class State:
    """The open state database of one capture."""

    renew_every = 60.0  # nothing to renew: one process owns the file
    counts_pages = False  # the crawler keeps max_pages
    #: a failing owner hands its path to an alias (:mod:`.aliases`); not a shared crawl's mirror
    hands_over = True
    #: units of work (:meth:`transaction`) committed together (:mod:`.units`): a kill -9 loses at
    #: most the open batch's units (done again when resumed); a shared crawl's local mirror commits
    #: each unit (1), as the shared state does
    group = GROUP

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        found = state_check.refuse_special(path)  # a state of an earlier run, perhaps from elsewhere
        try:
            self._batch = Batch(sqlite3.connect(path, isolation_level=None, check_same_thread=False))
            self.db: sqlite3.Connection = Logged(self._batch)  # type: ignore[assignment]  # (.units)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=10000")
            self.db.execute("PRAGMA temp_store=MEMORY")  # a statement's journal in memory
            # Checkpoint (WAL into the database, an fsync: it stalls the loop) every 8192 pages, not 1000
            self.db.execute("PRAGMA wal_autocheckpoint=8192")
            self.db.executescript(_SCHEMA)
            version = self.get("schema")
            state_check.check_schema(version, SCHEMA_VERSION, path)
            if version != str(SCHEMA_VERSION):  # new, or version 1 given the found table above
                self.set("schema", str(SCHEMA_VERSION))
            if found:
                state_check.check(self.db, path)
            (self._seq,) = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()
        except sqlite3.Error as e:  # a damaged or foreign file under the state's name
            if (stop := store_error(e, str(path))) is not None:  # or a disk full, read-only, failing
                raise stop from None
            raise FormatError(f"unreadable crawl state: {e}", subject=str(path)) from None
        # key → (depth, referrer, stylesheet) a row not back to the frontier (not skipped for a limit) is at
        # least as good as: a reference improving none changes nothing, no statement. Cleared on a rollback.
        self._settled: dict[str, tuple[int, str, bool]] = {}
        #: every host a row names (a superset after a rollback), read on the first claim (hosts.pick)
        self._hosts: set[str] | None = None
        self._served = hosts.Served()
        #: what the tables are known not to hold: lookups a first capture makes answered without SQL
        self.known = Known(self.db)

    def close(self) -> None:
        self._batch.commit()
        self.db.close()

    # ---- meta and seeds

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        self._batch.durable()  # a resumed run goes by its meta (.units)

    def add_seed(self, url: str, folder: str | None = None, title: str | None = None) -> None:
        with self.transaction():  # a unit: a resumed run adds its seeds again
            (n,) = self.db.execute("SELECT COUNT(*) FROM seeds").fetchone()
            self.db.execute(
                "INSERT OR IGNORE INTO seeds (url, seq, folder, title) VALUES (?, ?, ?, ?)",
                (url, n, folder, title),
            )

    def seeds(self) -> list[tuple[str, str | None, str | None]]:
        return list(self.db.execute("SELECT url, folder, title FROM seeds ORDER BY seq"))

    # ---- the frontier

    def row(self, key: str) -> Row | None:
        if absent(self.known.keys, key):
            return None
        values = self.db.execute(f"SELECT {ROW_COLUMNS} FROM urls WHERE key = ?", (key,)).fetchone()
        return None if values is None else row_from(values)

    def _add(self, new: NewURL) -> bool:
        """Insert ``new`` if its key is unknown (True). A known key keeps the smallest (depth,
        referrer); one skipped earlier for being beyond the depth limit or the page budget becomes
        pending if ``new`` is."""
        settled = self._settled.get(new.key)
        if (
            settled is not None
            and (new.depth, new.referrer or "") >= settled[:2]
            and (settled[2] or not new.stylesheet)
        ):
            return False  # nothing to improve: the statements below would change nothing
        self._seq += 1
        outcome = new.state if new.state in ("skipped", "merged") else None
        final_url = new.final_url
        if new.state == "merged" and final_url:  # its owner may have handed the path on since
            final_url = aliases.owner_at_end(self.db, final_url)
        cur = self.db.execute(
            "INSERT OR IGNORE INTO urls (key, kind, state, depth, referrer, priority, seq, stylesheet, path,"
            " final_url, outcome, reason, updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                new.key,
                new.kind,
                new.state,
                new.depth,
                new.referrer,
                new.priority,
                self._seq,
                int(new.stylesheet),
                new.path,
                final_url,
                outcome,
                new.reason or None,
                time.time(),
            ),
        )
        if cur.rowcount:
            if self.known.keys is not None:
                self.known.keys.add(new.key)
            if self._hosts is not None:
                self._hosts.add(hosts.key_host(new.key))
            if not (new.state == "skipped" and new.reason in _LIMIT_REASONS):
                self._settled[new.key] = (new.depth, new.referrer or "", new.stylesheet)
            return True
        self.db.execute(
            "UPDATE urls SET depth = ?, referrer = ? WHERE key = ? AND"
            " (depth > ? OR (depth = ? AND COALESCE(referrer, '') > COALESCE(?, '')))",
            (new.depth, new.referrer, new.key, new.depth, new.depth, new.referrer),
        )
        if new.stylesheet:
            self.db.execute("UPDATE urls SET stylesheet = 1 WHERE key = ?", (new.key,))
        if new.state == "pending":
            cur = self.db.execute(
                "UPDATE urls SET state = 'pending', kind = ?, outcome = NULL, reason = NULL,"
                " path = COALESCE(?, path) WHERE key = ? AND state = 'skipped'"
                " AND reason IN (?, ?)",
                (new.kind, new.path, new.key, *_LIMIT_REASONS),
            )
            # the row now is no worse than ``new`` and not skipped for a limit
            was = settled[2] if settled is not None else False
            self._settled[new.key] = (new.depth, new.referrer or "", new.stylesheet or was)
            return bool(cur.rowcount)
        if settled is not None:  # still not skipped for a limit, and now no worse than ``new``
            self._settled[new.key] = (new.depth, new.referrer or "", new.stylesheet or settled[2])
        return False

    def _found(self, items: list[NewURL]) -> None:
        """Record the discoveries among ``items`` (every one, also those that improve no row), one
        row per document and kind of step: a statement per unit, not per reference."""
        groups: dict[tuple[str, int, int], list[str]] = {}
        for n in items:
            if n.source is not None:
                groups.setdefault((n.source, n.step, int(n.inherit)), []).append(n.key)
        if groups:
            self.db.executemany(
                "INSERT INTO found (src, step, inherit, keys) VALUES (?, ?, ?, ?)",
                [(*group, "\n".join(keys)) for group, keys in groups.items()],
            )

    def found(self) -> Iterator[depths.Edge]:
        """Every recorded discovery, ``(source, key, step, inherit)``."""
        for src, step, inherit, keys in self.db.execute("SELECT src, step, inherit, keys FROM found"):
            for key in str(keys).split("\n"):
                yield str(src), key, int(step), bool(inherit)

    def add(self, items: Iterable[NewURL]) -> list[str]:
        """Add references to the frontier in one transaction; returns the keys that were new."""
        items = list(items)
        with self.transaction():
            self._found(items)
            return [item.key for item in items if self._add(item)]

    def settle_depths(self, max_depth: int | None = None) -> list[Row]:
        """Give every row the depth and referrer of the shortest path over the recorded discoveries
        from the seeds, its stored ones standing for discoveries not recorded (:func:`.depths.shortest`),
        in one transaction; the end of a crawl's frontier does it (formats/crawl-state.md §2).
        Returns the page rows skipped for the depth limit that are now within ``max_depth``. A state
        whose inputs are those the last settle left (:mod:`.settled`) is settled already."""
        from archiver.capture import settled  # a settle's own helper, at a crawl's end

        with self.transaction():
            settled.settle(self.db, self.found)
            if max_depth is None:
                return []
            query = (
                f"SELECT {ROW_COLUMNS} FROM urls WHERE state = 'skipped' AND kind = 'page'"
                " AND reason = ? AND depth <= ? ORDER BY seq"
            )
            return [row_from(v) for v in self.db.execute(query, (DEPTH_REASON, max_depth))]

    def skipped_for(self, reason: str, kind: str) -> Iterator[Row]:
        """The rows of ``kind`` skipped for ``reason`` (a limit of _LIMIT_REASONS), in discovery order."""
        query = (
            f"SELECT {ROW_COLUMNS} FROM urls WHERE state = 'skipped' AND kind = ? AND reason = ? ORDER BY seq"
        )
        for values in self.db.execute(query, (kind, reason)).fetchall():
            yield row_from(values)

    def pending_after(self, kind: str, after: tuple[int, int, int] | None, limit: int) -> list[Row]:
        """Up to ``limit`` pending rows of ``kind`` in frontier order after the position ``after``
        (priority, depth, seq): a page of the frontier read by its index."""
        where = " AND (priority, depth, seq) > (?, ?, ?)" if after is not None else ""
        query = f"SELECT {ROW_COLUMNS} FROM urls WHERE state = 'pending' AND kind = ?{where}"
        args = (kind, *(after or ()), limit)
        return [row_from(v) for v in self.db.execute(query + " ORDER BY priority, depth, seq LIMIT ?", args)]

    def claim(
        self, kind: str, limit: int, exclude: Iterable[str] = (), busy: Collection[str] = ()
    ) -> list[Row]:
        """Claim up to ``limit`` pending rows of ``kind`` for work (formats/crawl-state.md §2, §3), rows
        of free hosts first, served longest ago first (:func:`.hosts.pick`). One process owns this
        file, so a claim is the rows in flight (``exclude``) and needs no lease."""
        skip = set(exclude)
        query = "SELECT key FROM urls WHERE state = 'pending' AND kind = ? ORDER BY priority, depth, seq"
        candidates = (k for (k,) in self.db.execute(query, (kind,)) if k not in skip)
        if self._hosts is None:
            self._hosts = {hosts.key_host(k) for (k,) in self.db.execute("SELECT key FROM urls")}
        chosen = hosts.pick(candidates, limit, busy, str, known=self._hosts, served=self._served)
        if not chosen:
            return []
        self._served.note(chosen)
        marks = ",".join("?" * len(chosen))
        found = {
            v[0]: v for v in self.db.execute(f"SELECT {ROW_COLUMNS} FROM urls WHERE key IN ({marks})", chosen)
        }
        return [row_from(found[k]) for k in chosen]

    def renew(self, keys: Iterable[str]) -> list[str]:
        """Renew the claims on ``keys``; returns those that were lost (none here: nobody else can
        take a row of this file)."""
        return []

    def release(self) -> None:
        """Nothing to give back (a claim is the set of keys in flight); the open batch is committed."""
        self._batch.commit()

    def waiting(self) -> float | None:
        """Nothing is ever leased to another worker: no claim means no work left."""
        return None

    def politeness(self) -> None:
        """The fetcher's own per-process rules are the crawl's."""
        return None

    def shard(self) -> State:
        return self

    def count(self, state: str | None = None, kind: str | None = None) -> int:
        sql = "SELECT COUNT(*) FROM urls WHERE 1=1"
        args: list[str] = []
        if state is not None:
            sql += " AND state = ?"
            args.append(state)
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        (n,) = self.db.execute(sql, args).fetchone()
        return int(n)

    def rows(self) -> Iterator[Row]:
        for values in self.db.execute(f"SELECT {ROW_COLUMNS} FROM urls ORDER BY seq"):
            yield row_from(values)

    def requeue(self, states: Iterable[str], max_attempts: int) -> int:
        """Put rows in ``states`` back in the frontier when they have been tried fewer than
        ``max_attempts`` times (a resumed run retries exactly its failures). Returns how many."""
        marks = ",".join("?" for _ in states)
        with self.transaction():
            cur = self.db.execute(
                f"UPDATE urls SET state = 'pending' WHERE state IN ({marks}) AND attempts < ?",
                (*states, max_attempts),
            )
        self._batch.durable()
        return int(cur.rowcount)

    def refresh(self) -> int:
        """Put every finished row back in the frontier (``--refresh``)."""
        with self.transaction():
            cur = self.db.execute(
                "UPDATE urls SET state = 'pending', attempts = 0"
                " WHERE state IN ('done', 'failed', 'unconfirmed')"
            )
        self._batch.durable()
        return int(cur.rowcount)

    # ---- paths

    def owner(self, path: str) -> str | None:
        if absent(self.known.paths, path):
            return None
        row = self.db.execute("SELECT key FROM paths WHERE path = ?", (path,)).fetchone()
        return None if row is None else str(row[0])

    def has_path_under(self, folder: str) -> bool:
        """Is any assigned path inside ``folder`` (a tree path used as a folder)?"""
        row = self.db.execute(
            "SELECT 1 FROM paths WHERE path > ? AND path < ? LIMIT 1", (folder + "/", folder + "0")
        ).fetchone()
        return row is not None

    def claim_many(self, claims: dict[str, str]) -> None:
        """Record tree paths given out (``path → key``)."""
        if self.known.paths is not None:
            self.known.paths.update(claims)
        # a key with no row yet gets its path with the row (a link's path is given out just before
        # its row is added): its update would change nothing
        keys = self.known.keys
        rows = [(p, k) for p, k in claims.items() if keys is None or k in keys]
        with self.transaction():
            self.db.executemany(
                "INSERT OR REPLACE INTO paths (path, key) VALUES (?, ?)", list(claims.items())
            )
            if rows:
                self.db.executemany("UPDATE urls SET path = ? WHERE key = ?", rows)

    def move(self, key: str, old: str, new: str) -> None:
        """Give ``key`` the path ``new`` instead of ``old`` (a §4.5 file/folder clash)."""
        if self.known.paths is not None:
            self.known.paths.add(new)
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO moves (path, key) VALUES (?, ?)", (old, key))
            self.db.execute("DELETE FROM paths WHERE path = ?", (old,))
            self.db.execute("INSERT OR REPLACE INTO paths (path, key) VALUES (?, ?)", (new, key))
            self.db.execute("UPDATE urls SET path = ? WHERE key = ?", (new, key))
            blob = self.db.execute("SELECT record FROM records WHERE path = ?", (old,)).fetchone()
            if blob is not None:
                record = _record_decoder.decode(blob[0])
                record.path = new
                self.known.stored(record)
                self.db.execute("DELETE FROM records WHERE path = ?", (old,))
                self.db.execute(
                    "INSERT OR REPLACE INTO records (path, record) VALUES (?, ?)",
                    (new, _record_encoder.encode(record)),
                )

    def adopt(self, key: str, path: str | None) -> bool:
        """:func:`.aliases.adopt` (a shared crawl gave this worker ``key``, merged here)."""
        if path and self.known.paths is not None:
            self.known.paths.add(path)
        return aliases.adopt(self.db, key, path)

    def moves(self) -> dict[str, str]:
        """``old path → key`` of every file a clash moved."""
        return {str(p): str(k) for p, k in self.db.execute("SELECT path, key FROM moves")}

    # ---- completing work

    def transaction(self) -> Transaction:
        """One unit of work, all or nothing (an inner one is part of the outer), committed with the
        batch it ends (:attr:`group`)."""
        return Transaction(self._batch, self.group, self._settled.clear)  # what it knew may be undone

    def finish(
        self,
        key: str,
        *,
        state: str,
        outcome: str,
        reason: str = "",
        status: int | None = None,
        final_url: str | None = None,
        record: Record | None = None,
        blob: tuple[str, str] | None = None,
        new: Iterable[NewURL] = (),
        extra_records: Iterable[Record] = (),
        links: tuple[str, dict[str, bool]] | None = None,
    ) -> list[str]:
        """Complete ``key`` in one transaction: its final state, its record (and any extra one, such
        as a redirect stub), the page-bytes entry for hard links, and the references it revealed.
        Returns the keys that were new to the frontier."""
        new = list(new)
        self.known.outcome(outcome, final_url)
        with self.transaction():
            self.db.execute(
                "UPDATE urls SET state = ?, outcome = ?, reason = ?, status = ?, final_url = ?,"
                " attempts = attempts + 1, updated = ? WHERE key = ?",
                (state, outcome, reason, status, final_url, time.time(), key),
            )
            for rec in [record, *extra_records] if record is not None else list(extra_records):
                self.known.stored(rec)
                self.db.execute(
                    "INSERT OR REPLACE INTO records (path, record) VALUES (?, ?)",
                    (rec.path, _record_encoder.encode(rec)),
                )
            if blob is not None:
                if self.known.blobs is not None:
                    self.known.blobs.add(blob[0])
                self.db.execute("INSERT OR IGNORE INTO blobs (sha256, path) VALUES (?, ?)", blob)
            if links is not None:
                self.set_links(*links)
            if state in aliases.HANDED_STATES and self.hands_over:
                heir = aliases.hand_over(self.db, key)
                if heir is not None:
                    self._settled.pop(heir, None)
                    self._settled.pop(key, None)
            self._found(new)
            return [item.key for item in new if self._add(item)]

    def set_links(self, src: str, links: dict[str, bool]) -> None:
        """Replace the links recorded for the document at tree path ``src`` (key → written local)."""
        with self.transaction():
            if not absent(self.known.linked, src):
                self.db.execute("DELETE FROM links WHERE src = ?", (src,))
            elif links and self.known.linked is not None:
                self.known.linked.add(src)
            self.db.executemany(
                "INSERT INTO links (src, key, local) VALUES (?, ?, ?)",
                [(src, key, int(local)) for key, local in links.items()],
            )

    def links(self) -> Iterator[tuple[str, str, bool]]:
        for src, key, local in self.db.execute("SELECT src, key, local FROM links ORDER BY src"):
            yield str(src), str(key), bool(local)

    def paths_map(self) -> dict[str, str]:
        return {str(p): str(k) for p, k in self.db.execute("SELECT path, key FROM paths")}

    def mark(
        self, key: str, *, state: str, outcome: str, reason: str = "", final_url: str | None = None
    ) -> None:
        """Set a row's state without counting an attempt (merged aliases, skips decided up front)."""
        self._settled.pop(key, None)
        self.known.outcome(outcome, final_url)
        with self.transaction():
            if state == "merged" and final_url:
                final_url = aliases.owner_at_end(self.db, final_url)
            self.db.execute(
                "UPDATE urls SET state = ?, outcome = ?, reason = ?, final_url = ?, updated = ?"
                " WHERE key = ?",
                (state, outcome, reason, final_url, time.time(), key),
            )

    def redirected_to(self, key: str) -> list[tuple[str, str | None]]:
        """``(key, path)`` of every row recorded as redirecting to ``key``."""
        if absent(self.known.redirected, key):
            return []
        return list(
            self.db.execute(
                "SELECT key, path FROM urls WHERE final_url = ? AND outcome = 'redirected'", (key,)
            )
        )

    def blob_path(self, sha256: str) -> str | None:
        if absent(self.known.blobs, sha256):
            return None
        row = self.db.execute("SELECT path FROM blobs WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else str(row[0])

    def record(self, path: str) -> Record | None:
        if absent(self.known.records, path):
            return None
        row = self.db.execute("SELECT record FROM records WHERE path = ?", (path,)).fetchone()
        return None if row is None else _record_decoder.decode(row[0])

    def put_record(self, record: Record, *, durable: bool = False) -> None:
        """Set the record at ``record.path``; ``durable``: committed now, not with the batch."""
        self.known.stored(record)
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO records (path, record) VALUES (?, ?)",
                (record.path, _record_encoder.encode(record)),
            )
        if durable:
            self._batch.durable()

    def verified(self) -> dict[str, tuple[str, int, int, int, int]]:
        """``verified``: tree path → (sha256, size, mtime_ns, ctime_ns, inode) (crawl-state.md §1)."""
        return {str(r[0]): r[1:] for r in self.db.execute("SELECT * FROM verified")}

    def note_verified(self, files: dict[str, tuple[str, int, int, int, int]]) -> None:
        """Note what a run found the tree files ``files`` (path → as :meth:`verified`) to be."""
        rows = [(p, *v) for p, v in files.items()]
        with self.transaction():
            self.db.executemany("INSERT OR REPLACE INTO verified VALUES (?, ?, ?, ?, ?, ?)", rows)

    def records(self) -> Iterator[Record]:
        """Every stored record, sorted by path."""
        for (blob,) in self.db.execute("SELECT record FROM records ORDER BY path"):
            yield _record_decoder.decode(blob)
