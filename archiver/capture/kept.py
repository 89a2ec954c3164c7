"""A re-capture's batches on the SQLite state (:class:`.state.State`, its tables: tree.md §8;
formats/history.md §6.3): the records of a batch of rows read in one query (:func:`records_at`),
and the rows answered 304 finished with three statements for all (:func:`finish_kept`), where one
by one each cost a query, or three statements and a transaction of its own."""

from __future__ import annotations

import time

import msgspec

from archiver.capture.state import State
from archiver.tree import Record

__all__ = ["finish_kept", "records_at"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(Record)
_DONE = (
    "UPDATE urls SET state = 'done', outcome = 'ok', reason = '', status = ?, final_url = ?,"
    " attempts = attempts + 1, updated = ? WHERE key = ?"
)


#: the record at a path, set: an upsert, so the row of the previous record (a kept row's path has
#: one) is updated in place, where ``INSERT OR REPLACE`` deleted it and inserted it again (its row
#: and its primary-key index entry each time)
_RECORD = (
    "INSERT INTO records (path, record) VALUES (?, ?)"
    " ON CONFLICT (path) DO UPDATE SET record = excluded.record"
)


def records_at(state: State, paths: list[str]) -> dict[str, Record]:
    """The records stored at ``paths`` (those there are), by tree path."""
    marks = ",".join("?" * len(paths))
    found = state.db.execute(f"SELECT path, record FROM records WHERE path IN ({marks})", paths)
    return {str(path): _decoder.decode(blob) for path, blob in found}


def finish_kept(state: State, kept: list[tuple[str, int | None, str | None, Record]]) -> list[bytes]:
    """What :meth:`.state.State.finish` records for each row ``(key, status, final_url, record)``
    ended ``done`` and ``ok`` with its previous bytes (the record, and its blob's first path): such
    a row reveals no URL and hands no path on (``done`` is no handed state, :mod:`.aliases`). The
    records as encoded (JSON, as a manifest line holds them), in order."""
    at = time.time()
    rows = [(r.path, _encoder.encode(r), r.sha256) for *_, r in kept]
    with state.transaction():
        state.db.executemany(_DONE, [(status, final, at, key) for key, status, final, _ in kept])
        state.db.executemany(_RECORD, [x[:2] for x in rows])
        state.db.executemany(
            "INSERT OR IGNORE INTO blobs (sha256, path) VALUES (?, ?)", [(x[2], x[0]) for x in rows]
        )
    return [x[1] for x in rows]
