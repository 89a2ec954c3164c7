"""The pages ``archiver serve`` makes of a tree's history (formats/history.md §7): the calendar of
versions on the index, and the page a tree answers for a path its newest state no longer has but an
earlier version kept (a page gone from the live site, marked as such, with links to what was kept).

:func:`calendar` is pure; :class:`GonePages` reads the newest run's report (bounded,
:mod:`archiver.versions.reports`), once per report file. Nothing here touches the network."""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.serve import memento
from archiver.serve.mounts import Mount
from archiver.serve.paths import RESERVED, _href
from archiver.serve.representation import Problem

__all__ = ["Day", "GonePages", "calendar", "calendar_html"]

Origin = Callable[[Mount], str]


@dataclass(frozen=True)
class Day:
    """One version in the calendar: its label (the day, and the time when a day has several), id, date."""

    label: str
    id: str
    date: str


def calendar(versions: list[tuple[str, str]]) -> list[tuple[str, list[Day]]]:
    """``(id, ISO date)`` of versions → ``(YYYY-MM, days)`` oldest first; a day with several versions
    labels each with its time (``30 09:00``), else with the day alone (``30``)."""
    ordered = sorted(versions, key=lambda v: (v[1], v[0]))
    per_day: dict[str, int] = {}
    for _, date in ordered:
        per_day[date[:10]] = per_day.get(date[:10], 0) + 1
    months: list[tuple[str, list[Day]]] = []
    for vid, date in ordered:
        label = date[8:10] if per_day[date[:10]] == 1 else f"{date[8:10]} {date[11:16]}"
        if not months or months[-1][0] != date[:7]:
            months.append((date[:7], []))
        months[-1][1].append(Day(label, vid, date))
    return months


def calendar_html(tree: Mount, versions: list[memento.VersionMount], origin: Origin | None) -> str:
    """The index's calendar row of ``tree``: each month, each version a link to its own origin."""
    if not versions:
        return ""
    by_id = {v.version.id: v for v in versions}
    months = calendar([(v.version.id, v.version.date) for v in versions])
    parts = []
    for month, days in months:
        links = []
        for d in days:
            v = by_id[d.id]
            link = (origin(v) if origin is not None else "") + v.href
            title = html.escape(v.describe())
            links.append(f'<a href="{html.escape(link)}" title="{title}">{html.escape(d.label)}</a>')
        parts.append(f"{html.escape(month)}: " + " ".join(links))
    return (
        f'<tr><td colspan="3"><small>{html.escape(tree.name)}, {len(versions)} versions: '
        + " · ".join(parts)
        + "</small></td></tr>"
    )


class GonePages:
    """The 404 page of a tree for a path its newest state lacks and an earlier version holds."""

    def __init__(self) -> None:
        self._reports: dict[str, tuple[tuple[int, int, str], dict[str, Any]]] = {}
        self._newest: dict[str, tuple[tuple[int, ...], Any]] = {}

    def _newest_of(self, root: Path) -> Any:
        """The tree's newest :class:`~archiver.versions.store.Version` (None: none), found again only
        when its manifest or its store's folder changed: finding it reads and hashes the whole
        manifest (is the current state recorded?), which a request for a gone page must not cost
        each time (a client asking one gone path over and over made the server read all of a large
        tree's manifest for each)."""
        from archiver.tree import manifest_path
        from archiver.versions import store

        stamp: tuple[int, ...] = ()
        for p in (manifest_path(root), store.store_dir(root)):
            try:
                st = os.stat(p)
                stamp += (st.st_ino, st.st_mtime_ns, st.st_size)
            except OSError:
                stamp += (0, 0, 0)
        cached = self._newest.get(str(root))
        if cached is None or cached[0] != stamp:
            found = store.versions(root)
            if len(self._newest) >= 64:
                self._newest.pop(next(iter(self._newest)))
            cached = (stamp, found[-1] if found else None)
            self._newest[str(root)] = cached
        return cached[1]

    def _failures(self, root: Path) -> tuple[str, dict[str, Any]]:
        """(the newest state's date, URL → failure of its run), read again when the report changes."""
        from archiver.versions import reports

        newest = self._newest_of(root)
        if newest is None:
            return "", {}
        report = newest.manifest.with_name(f"{newest.id}.report.json") if newest.recorded else None
        if report is None:
            from archiver.urls import REPORT_NAME, RESERVED_DIR

            report = root / RESERVED_DIR / REPORT_NAME
        try:
            st = os.stat(report)
            stamp = (st.st_mtime_ns, st.st_size, newest.id)
        except OSError:
            stamp = (0, 0, newest.id)
        cached = self._reports.get(str(root))
        if cached is None or cached[0] != stamp:
            if len(self._reports) >= 64:
                self._reports.pop(next(iter(self._reports)))
            cached = (stamp, reports.failures(root, newest))
            self._reports[str(root)] = cached
        return newest.date, cached[1]

    def page(
        self, tree: Mount, path: str, mounts: dict[str, Mount], origin: Origin, bare: str
    ) -> Problem | None:
        """A 404 with a page saying the newest capture lacks ``path`` (and what the live site
        answered, when its run reported the URL failed), listing each version that kept it; None
        when no version has it (a plain 404)."""
        held = memento.holding(tree.name, path, mounts)
        if not held:
            return None
        from archiver.versions import reports

        newest, failing = self._failures(Path(tree.path))
        last = held[-1][1]
        url = last.urls[0] if last.urls else ""
        failure = reports.failure_of(failing, url) if url else None
        if failure is not None:
            said = (
                f"the live site answered {failure.reason or failure.status or 'nothing'} ({failure.outcome})"
            )
        else:
            said = "the page was not reached by that capture (it may have moved, or left its scope)"
        items = "".join(
            f'<li><a href="{html.escape(origin(v) + _href(v.name, *served.split("/")))}">'
            f"{html.escape(v.version.date)}</a></li>"
            for v, _r, served in reversed(held)
        )
        tail = _href(tree.name, *path.split("/")) if path else _href(tree.name) + "/"
        timemap = f"{bare}{_href(RESERVED, 'timemap')}{tail}"
        text = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gone: '
            f"{html.escape(path)}</title></head><body><h1>Not in the newest capture</h1>"
            f"<p>{html.escape(url or path)} is not in {html.escape(tree.name)}'s newest capture "
            f"({html.escape(newest)}): {html.escape(said)}.</p>"
            f"<p>Kept in {len(held)} earlier version(s):</p><ul>{items}</ul>"
            f'<p><a href="{html.escape(timemap)}">TimeMap</a></p></body></html>\n'
        )
        links = [f'<{timemap}>; rel="timemap"; type="application/link-format"']
        if url:
            links.insert(0, f'<{memento.link_uri(url)}>; rel="original"')
        extra = ((b"link", ", ".join(links).encode("ascii", "backslashreplace")),)
        return Problem(404, "gone from the newest capture", text.encode("utf-8"), extra)
