"""``archiver capture URL -o TREE --new-version`` around the capture itself (formats/history.md §6):
:func:`begin` records the tree's current state as a version (if it is not yet) and marks a new one
as pending; the capture then fetches everything again into the tree; :func:`finish`, once the run
has finished its frontier, takes out of the tree what the run did not reach again (its bytes stay in
the earlier version), dates the manifest with the run's start and records the new version. An
interrupted re-capture is resumed by running the same command again (the pending mark keeps its
start); until it finishes, the earlier versions stay whole and no partial version is recorded."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from archiver.atomicfile import write_atomic
from archiver.errors import FormatError, UsageError
from archiver.tree import Header, Record, own_parent, read_header, write_manifest, write_records
from archiver.urls import REPORT_NAME, RESERVED_DIR
from archiver.versions import store, storefiles
from archiver.versions.keeper import for_tree

__all__ = ["PENDING", "FinalManifest", "Pending", "begin", "finish"]

PENDING = store.PENDING


class Pending(NamedTuple):
    started: datetime  # kept by the pending mark: an interrupted or failed re-capture goes on

    @property
    def mark(self) -> str:
        """The capture's ``refresh_mark``: the crawl state is refreshed once for this re-capture, so a
        resumed one goes on where it stopped and one that failed before refreshing refreshes."""
        return _stamp(self.started)


def _pending_path(root: Path) -> Path:
    return store.store_dir(root) / PENDING


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def begin(root: Path, now: datetime | None = None) -> Pending:
    """Before the capture: the tree must be a capture's; its current state is recorded; a pending
    mark with the run's start is written (or read back, when a re-capture was interrupted)."""
    if read_header(root) is None:
        raise UsageError(
            "--new-version needs a tree a capture wrote (it has no manifest): capture it first",
            subject=str(root),
        )
    mark = _pending_path(root)
    text = storefiles.pending_started(mark)  # bounded, a regular file: else a FormatError naming it
    if text is not None:
        try:
            started = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise FormatError(f"its started time {text!r} is not RFC 3339", subject=str(mark)) from None
        return Pending(started)
    store.record(root)
    started = (now or datetime.now(UTC)).replace(microsecond=0)
    tmp = mark.with_name(f".tmp-{PENDING}-{os.getpid()}")  # a link planted there is not followed
    write_atomic(mark, (json.dumps({"started": _stamp(started)}) + "\n").encode(), tmp=tmp, durable=False)
    return Pending(started)


class _Complete(msgspec.Struct):
    """Of a run's report, only its ``complete`` (every other member is skipped, not built)."""

    complete: Any = None


_complete_decoder = msgspec.json.Decoder(_Complete)


def _complete(root: Path) -> bool:
    """Whether the run's report says ``"complete": true``. Read by msgspec into :class:`_Complete`:
    ``json.loads`` built every item of the report (a thousand on a thousand-page site, ~20 K
    instructions a URL of an unchanged re-capture) to read one member; a report that is no JSON
    object, or no UTF-8 JSON, is not complete, as before."""
    from archiver import safefs
    from archiver.versions.reports import MAX_REPORT_BYTES

    try:  # bounded, a regular file, no symbolic link followed; RecursionError: nested too deep (msgspec)
        data = safefs.read_regular(root / RESERVED_DIR / REPORT_NAME, MAX_REPORT_BYTES)
        doc = _complete_decoder.decode(data)
    except (FormatError, msgspec.DecodeError, RecursionError):
        return False
    return doc.complete is True


def _fetched_at(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


#: the form a capture writes ``fetched`` in (:func:`_stamp`'s): compared as text, in time order
_STAMPED = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _before(text: str | None, started: datetime, stamp: str | None) -> bool:
    """Whether a record's ``fetched`` is before the run's start (``stamp``: ``started`` as
    :func:`_stamp` writes it, None if not in :data:`_STAMPED`'s form); a missing or unreadable one
    is not."""
    if stamp is not None and text and _STAMPED.fullmatch(text):  # no parse (a thousand a version)
        return text < stamp
    when = _fetched_at(text)
    return when is not None and when < started


class Finished(NamedTuple):
    recorded: store.Recorded | None  # None: the run did not finish its frontier; the version waits
    removed: int  # files the run did not reach again, taken out of the tree


def _settle(
    root: Path, pending: Pending, header: Header, records: list[Record]
) -> tuple[Header, list[Record], int]:
    """The manifest a finished re-capture leaves (its header dated with the run's start, the records
    the run fetched again) and how many files left the tree: every record the run did not fetch again
    (fetched before ``pending.started``) is taken out of the tree, its bytes kept first."""
    kept, gone = [], []
    stamp: str | None = _stamp(pending.started)
    stamp = stamp if _STAMPED.fullmatch(stamp) else None
    for r in records:
        (gone if _before(r.fetched, pending.started, stamp) else kept).append(r)
    keeper = for_tree(root) if gone else None
    own: set[str] = set()
    for r in gone:
        if not own_parent(root, r.path, own):  # behind a folder linked out of the tree: not the tree's
            continue
        if keeper is not None:
            keeper.keep(r.path)  # a recorded version holding it only in the tree keeps it first
        try:
            (root / r.path).unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            raise FormatError(f"cannot be removed: {e.strerror}", subject=str(root / r.path)) from None
    options = dict(header.options)
    options.pop("version", None)
    new_header = Header(home=header.home, created=_stamp(pending.started), tool=header.tool,
                        seeds=header.seeds, options=options)  # fmt: skip
    return new_header, kept, len(gone)


class FinalManifest:
    """The capture's ``final_manifest`` for a re-capture: when the run finished its frontier, the
    manifest :func:`finish` would make of the one the capture writes is written in its place, once
    (one encoding, one fsync; :func:`finish` records those bytes as the version). An error taking a
    file out leaves the capture's own manifest, as before, and is raised by :func:`finish`."""

    def __init__(self, root: Path, pending: Pending) -> None:
        self.root = root
        self.pending = pending
        self.written: tuple[Header, list[Record], bytes] | None = None
        self.removed = 0
        self.error: Exception | None = None
        self.ran = False  # the capture finished its frontier in this process and called it

    def __call__(self, header: Header, records: list[Record]) -> None:
        self.ran = True
        try:
            new_header, kept, self.removed = _settle(self.root, self.pending, header, records)
        except Exception as e:  # raised after the run's report, as when finish took the files out
            self.error = e
            write_records(self.root, header, records)
            return
        self.written = (new_header, kept, write_manifest(self.root, new_header, kept))


def finish(root: Path, pending: Pending, final: FinalManifest | None = None) -> Finished:
    """After the capture: when its run finished the frontier, every record the run did not fetch
    again (fetched before ``pending.started``) leaves the tree and the manifest, the manifest is
    dated with the run's start, and the state is recorded as a new version; else nothing changes.
    ``final``: the capture's ``final_manifest``; when it wrote the manifest, that is recorded as it
    is (nothing read back, nothing encoded again)."""
    if final is not None and final.error is not None:
        raise final.error
    if final is not None and final.written is not None:
        header, kept, data = final.written
        done = store.record(root, (header, kept), data)
        _pending_path(root).unlink(missing_ok=True)
        return Finished(done, final.removed)
    if final is not None and not final.ran:
        # the capture did not finish its frontier in this run: it stopped, or never started (a usage
        # error, the tree's lock held by another capture), and the report there is an earlier run's
        # (read as finished, it once took every file out of the tree)
        return Finished(None, 0)
    if not _complete(root):
        return Finished(None, 0)
    header = read_header(root)
    assert header is not None
    new_header, kept, removed = _settle(
        root, pending, header, store.manifest_records(root)
    )  # one decode a line
    write_records(root, new_header, kept)
    done = store.record(root, (new_header, kept))  # what was just written: not read back
    _pending_path(root).unlink(missing_ok=True)
    return Finished(done, removed)
