"""What changed and what died between two versions of a tree (formats/history.md §5).
Pure: no network, no filesystem, no clock. The records, the newer run's failures and a way to read
a page's text come in; entries come out.

Classes: ``added``, ``removed``, ``gone`` (with an outcome: ``failed`` or ``unconfirmed``, and for
an unconfirmed page the date of its next check), ``redirected`` (``soft-404`` when the target is the
home page), ``changed`` (with a unified diff of the reader's text), ``volatile`` (unchanged but for
volatile spans, :mod:`archiver.versions.volatile`), ``markup`` (bytes differ, text does not) and
``unchanged``."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

from archiver.versions.volatile import RULES, same_but_volatile

__all__ = [
    "CLASSES",
    "MAX_DIFF_LINES",
    "RETRY_DAYS",
    "Entry",
    "compare",
    "outcome",
    "retry_after",
]

CLASSES = ("added", "removed", "gone", "redirected", "changed", "volatile", "markup", "unchanged")
#: Days after a page's first failure at which an unconfirmed page is checked again (the seed
#: articles' link patrol); after the last it stays unconfirmed and is not retried automatically.
RETRY_DAYS = (1, 3, 7, 30)
#: Lines of text diff kept per changed page.
MAX_DIFF_LINES = 200
#: Lines before times lines after, once their common first and last lines are set aside, past which
#: a page's diff is one hunk (every old line out, every new line in) instead of difflib's: difflib's
#: time grows with that product for some pages (a line added after each of 8,000: 5.4 s of CPU; of
#: 100,000, a quarter of an hour), at this bound about 0.2 s.
MAX_DIFF_WORK = 4_000_000


class Rec(Protocol):
    """What a manifest record gives the comparison (``archiver.tree.Record`` has it)."""

    path: str
    kind: str
    sha256: str
    urls: list[str]
    title: str | None
    status: int | None
    redirects: list[str]


class Failure(Protocol):
    """One URL the newer run did not store (a report item, tree.md §9.3)."""

    url: str
    outcome: str
    status: int | None
    reason: str


@dataclass
class Entry:
    cls: str
    path: str
    url: str = ""
    title: str = ""
    outcome: str = ""
    reason: str = ""
    retry_after: datetime | None = None
    target: str = ""
    diff: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"class": self.cls, "path": self.path}
        for key in ("url", "title", "outcome", "reason", "target"):
            if getattr(self, key):
                doc[key] = getattr(self, key)
        if self.retry_after is not None:
            doc["retry_after"] = self.retry_after.strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.diff:
            doc["diff"] = self.diff
        return doc


_UNCONFIRMED_STATUS = frozenset({401, 403, 408, 429})
_UNCONFIRMED_REASON = re.compile(
    r"timed out|timeout|refused|reset|temporar|try again|ssl|tls|certificate|robots\.txt could not|"
    r"EAI_AGAIN|server misbehaving|unreachable",
    re.IGNORECASE,
)
_NO_NAME = re.compile(r"name or service not known|nodename nor servname|no address associated|NXDOMAIN|"
                      r"does not resolve|no such host", re.IGNORECASE)  # fmt: skip


def outcome(status: int | None, reason: str, recorded: str = "") -> str:
    """The link patrol's verdict on a URL the run could not store: ``failed`` when the server or DNS
    said it is not there (404, 410, another 4xx but 401/403/408/429, 5xx, a name that does not
    resolve), ``unconfirmed`` when nothing can be concluded yet (401, 403, 408, 429, a timeout, a
    refused or reset connection, a TLS failure, a temporary DNS failure). ``recorded`` is the
    capture's own outcome, used when neither the status nor the reason says more."""
    if status is not None and status >= 400:
        return "unconfirmed" if status in _UNCONFIRMED_STATUS else "failed"
    if _NO_NAME.search(reason):
        return "failed"
    if _UNCONFIRMED_REASON.search(reason):
        return "unconfirmed"
    return "unconfirmed" if recorded == "unconfirmed" else "failed"


def retry_after(first_failure: datetime, last_check: datetime) -> datetime | None:
    """When an unconfirmed page is checked next: the first of ``first_failure`` + 1, 3, 7 and 30 days
    that is after ``last_check``; None once the 30-day check is past."""
    for days in RETRY_DAYS:
        when = first_failure + timedelta(days=days)
        if when > last_check:
            return when
    return None


def _is_stub(r: Rec) -> bool:
    return r.status is not None and 300 <= r.status < 400


def _home_like(path: str, url: str) -> bool:
    return path in ("index.html", "") or (bool(url) and urlsplit(url).path in ("", "/"))


def compare(
    old: Mapping[str, Rec],
    new: Mapping[str, Rec],
    failures: Mapping[str, Failure],
    text_of: Callable[[str, str], str | None],
    *,
    first_failures: Mapping[str, datetime] | None = None,
    checked: datetime | None = None,
    with_unchanged: bool = False,
) -> list[Entry]:
    """The pages of ``old`` and ``new`` (path → record), classified, in path order.

    ``failures``: the newer run's URLs that did not end stored (url → report item); ``text_of(side,
    path)``: the reader's text of a page of ``"old"`` or ``"new"`` (None when unreadable);
    ``first_failures``: url → date of its first failure in the versions so far (for the retry date
    of an unconfirmed page; defaults to ``checked``); ``checked``: the newer version's date."""
    target_of: dict[str, str] = {}
    for r in new.values():
        for u in r.redirects:
            target_of[u] = r.path
    entries: list[Entry] = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        ref = b if b is not None else a
        assert ref is not None
        if ref.kind != "page":
            continue
        url = ref.urls[0] if ref.urls else ""
        title = (b.title if b is not None else a.title if a is not None else None) or ""
        if a is None or _is_stub(a):
            if b is not None and not _is_stub(b):
                entries.append(Entry("added", path, url, title))
            continue
        if b is None:
            failed = next((failures[u] for u in a.urls if u in failures), None)
            if failed is None:
                entries.append(Entry("removed", path, url, a.title or ""))
                continue
            verdict = outcome(failed.status, failed.reason, failed.outcome)
            entry = Entry("gone", path, url, a.title or "", verdict, failed.reason or failed.outcome)
            if verdict == "unconfirmed" and checked is not None:
                first = (first_failures or {}).get(url, checked)
                entry.retry_after = retry_after(first, checked)
            entries.append(entry)
            continue
        if _is_stub(b):
            target = next((target_of[u] for u in b.urls if u in target_of), "")
            entry = Entry("redirected", path, url, a.title or "", target=target)
            target_rec = new.get(target)
            target_url = target_rec.urls[0] if target_rec is not None and target_rec.urls else ""
            if target and _home_like(target, target_url) and not _home_like(path, url):
                entry.outcome = "soft-404"
            entries.append(entry)
            continue
        if a.sha256 == b.sha256:
            if with_unchanged:
                entries.append(Entry("unchanged", path, url, title))
            continue
        before, after = text_of("old", path), text_of("new", path)
        if before is None or after is None or before != after:
            if before is not None and after is not None and same_but_volatile(before, after):
                entries.append(Entry("volatile", path, url, title))
                continue
            entry = Entry("changed", path, url, title)
            if before is not None and after is not None:
                entry.diff = text_diff(before, after)
            entries.append(entry)
            continue
        entries.append(Entry("markup", path, url, title))
    return entries


def _range(start: int, stop: int) -> str:
    """A unified diff hunk's range of lines ``start:stop`` (as difflib writes it)."""
    length = stop - start
    return f"{start + 1}" if length == 1 else f"{start + (1 if length else 0)},{length}"


def _one_hunk(a: list[str], b: list[str]) -> list[str] | None:
    """The diff of ``a`` and ``b`` as one hunk, with one line of context, when what differs between
    their common first and last lines is past :data:`MAX_DIFF_WORK`; None otherwise (difflib's)."""
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_end, b_end = len(a) - tail, len(b) - tail
    if (a_end - head) * (b_end - head) <= MAX_DIFF_WORK:
        return None
    start = max(head - 1, 0)
    a_stop, b_stop = min(a_end + 1, len(a)), min(b_end + 1, len(b))
    return [
        f"@@ -{_range(start, a_stop)} +{_range(start, b_stop)} @@",
        *(" " + line for line in a[start:head]),
        *("-" + line for line in a[head:a_end]),
        *("+" + line for line in b[head:b_end]),
        *(" " + line for line in a[a_end:a_stop]),
    ]


def text_diff(before: str, after: str) -> list[str]:
    """A unified diff of two reader texts (one block a line), at most :data:`MAX_DIFF_LINES` lines:
    difflib's, or one hunk when the lines that differ are too many for it (:func:`_one_hunk`)."""
    a, b = before.split("\n"), after.split("\n")
    lines = _one_hunk(a, b)
    if lines is None:
        lines = list(difflib.unified_diff(a, b, "before", "after", n=1, lineterm=""))
        lines = lines[2:]  # the file header lines say nothing here
    if len(lines) > MAX_DIFF_LINES:
        lines = [*lines[:MAX_DIFF_LINES], f"… {len(lines) - MAX_DIFF_LINES} more lines"]
    return lines


def summary(entries: Iterable[Entry]) -> dict[str, Any]:
    counts = {c: 0 for c in CLASSES}
    for e in entries:
        counts[e.cls] += 1
    return {"counts": counts, "volatile_rules": RULES}
