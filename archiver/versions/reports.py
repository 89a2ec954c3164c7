"""What each run of a versioned tree reported (tree.md §9.3; formats/history.md §5): the URLs a
version's capture reported as failed, unconfirmed or refused, keyed as the URL mapping core keys
them, and since when they failed. Read by ``archiver diff`` and by ``serve``'s gone pages. A report
that is missing, unreadable, no regular file (a symbolic link included) or over
:data:`MAX_REPORT_BYTES` counts as one that reported nothing."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["MAX_REPORT_BYTES", "Failure", "failure_of", "failures", "first_failures", "report_items"]

#: A report larger than this is not read (a hostile or broken store must not take the memory).
MAX_REPORT_BYTES = 256 << 20

_FAILED = ("failed", "unconfirmed", "refused")


def report_items(root: Path, v: Any) -> list[dict[str, Any]]:
    """The items of the report of version ``v`` (the tree's own report for its current state)."""
    from archiver.urls import REPORT_NAME, RESERVED_DIR

    path = v.manifest.with_name(f"{v.id}.report.json") if v.recorded else root / RESERVED_DIR / REPORT_NAME
    from archiver import safefs
    from archiver.errors import FormatError

    try:
        # not blocking, a regular file only: a FIFO under a report's name held diff (and serve's gone
        # page) forever on open, before 2026-12; a symbolic link is not followed (its target, outside
        # the tree, was read as the run's report; the store never copies one: store._report_bytes)
        data = safefs.read_regular(path, MAX_REPORT_BYTES)
        doc = json.loads(data)
    except (FormatError, ValueError, RecursionError):
        return []
    items = doc.get("items") if isinstance(doc, dict) else None
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


class Failure:
    """One URL a run could not fetch: its outcome (the seed articles' classes), status and reason."""

    def __init__(self, item: dict[str, Any]) -> None:
        self.url = str(item.get("url", ""))
        self.outcome = str(item.get("outcome", ""))
        status = item.get("status")
        self.status = status if isinstance(status, int) else None
        self.reason = str(item.get("reason", ""))


def failures(root: Path, v: Any) -> dict[str, Failure]:
    """URL → failure for every URL version ``v``'s run reported failed, unconfirmed or refused; each
    under its dedup key and as written."""
    from archiver import urls

    out: dict[str, Failure] = {}
    for item in report_items(root, v):
        if item.get("outcome") in _FAILED:
            f = Failure(item)
            try:
                out[urls.dedup_key(urls.canonicalize(f.url))] = f
            except Exception:  # a report of another archiver: keep the URL as written
                out[f.url] = f
            out.setdefault(f.url, f)
    return out


def first_failures(root: Path, found: list[Any], to: Any) -> dict[str, datetime]:
    """url → the date of the first of the consecutive versions up to ``to`` whose run failed it."""
    first: dict[str, datetime] = {}
    for v in found[: found.index(to) + 1]:
        failing = failures(root, v)
        when = datetime.fromisoformat(v.date.replace("Z", "+00:00"))
        first = {u: first.get(u, when) for u in failing}
    return first


def failure_of(found: dict[str, Failure], url: str) -> Failure | None:
    """The failure reported for ``url`` (looked up by its dedup key, then as written)."""
    from archiver import urls

    try:
        key = urls.dedup_key(urls.canonicalize(url))
    except Exception:
        key = url
    return found.get(key) or found.get(url)
