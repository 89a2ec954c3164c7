"""Version ids and the dates that pick a version (formats/history.md §1, §3).
Pure: no network, no filesystem, no clock."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

__all__ = ["id_date", "id_order", "in_force", "next_id", "parse", "version_id"]

_ID = re.compile(r"^(\d{8}T\d{6}Z)(?:-(\d+))?$")


def version_id(created: str) -> str:
    """The id of a version whose capture started at ``created`` (RFC 3339): ``YYYYMMDDTHHMMSSZ``."""
    when = _rfc3339(created)
    if when is None:
        raise ValueError(f"not an RFC 3339 time: {created!r}")
    # not strftime: its %Y is "1", not "0001", for year 1 on glibc (an id id_date then refuses)
    return f"{when.year:04d}{when.month:02d}{when.day:02d}T{when.hour:02d}{when.minute:02d}{when.second:02d}Z"


def next_id(base: str, taken: set[str]) -> str:
    """``base``, or ``base-2``, ``base-3``… whichever is not ``taken``."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def id_date(version: str) -> datetime:
    """The date of a version id (its suffix ignored); ValueError for anything else."""
    m = _ID.match(version)
    if not m:
        raise ValueError(f"not a version id: {version!r}")
    t = m.group(1)  # YYYYMMDDTHHMMSSZ: fixed widths (strptime's import and patterns cost ~3 ms)
    return datetime(
        int(t[:4]), int(t[4:6]), int(t[6:8]), int(t[9:11]), int(t[11:13]), int(t[13:15]), tzinfo=UTC
    )


def id_order(version: str) -> tuple[datetime, int]:
    m = _ID.match(version)
    if not m:
        raise ValueError(f"not a version id: {version!r}")
    return id_date(version), int(m.group(2) or 1)


def _rfc3339(text: str) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return when.astimezone(UTC).replace(microsecond=0)
    except OverflowError:  # 9999-12-31T23:59-01:00, 0001-01-01T00:00+01:00: outside datetime's range
        return None


def parse(text: str) -> datetime:
    """A ``--version DATE`` (formats/history.md §3) as the UTC instant it stands for: a version id,
    ``YYYY-MM-DD`` (the end of that day), ``YYYY-MM-DDTHH:MM[:SS][Z|±hh:mm]`` or ``YYYYMMDDhhmmss``.
    ValueError, naming the text (at most 64 characters of it), for anything else, a date out of
    datetime's range (year 1 to 9999, after its zone) included."""
    try:
        return _parse(text)
    except (ValueError, OverflowError):
        shown = repr(text) if len(text) <= 64 else repr(text[:64]) + f"… ({len(text)} characters)"
        raise ValueError(
            f"not a date: {shown} (a version id, YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS]Z or YYYYMMDDhhmmss,"
            " years 1 to 9999)"
        ) from None


def _parse(text: str) -> datetime:
    t = text.strip()
    if _ID.match(t):
        return id_date(t)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", t):
        day = datetime.strptime(t, "%Y-%m-%d").replace(tzinfo=UTC)
        return day + (timedelta(days=1) - timedelta(seconds=1))  # 9999-12-31 is 23:59:59 of it
    if re.fullmatch(r"\d{14}", t):
        return datetime.strptime(t, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:\d{2})?", t):
        when = _rfc3339(t.replace(" ", "T"))
        if when is not None:
            return when
    raise ValueError(text)


def in_force(versions: Sequence[str], when: datetime) -> str | None:
    """The newest of ``versions`` (ids) whose date is at or before ``when``; None before the first."""
    ordered = sorted(versions, key=id_order)
    dates = [id_date(v) for v in ordered]
    i = bisect.bisect_right(dates, when)
    return ordered[i - 1] if i else None
