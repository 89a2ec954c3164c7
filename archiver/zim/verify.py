"""``verify`` a ZIM: libzim's checksum, a full read of every entry, the metadata rules, the main page,
redirects, and our link checker over every HTML and CSS entry (formats/zim.md §6).

Problems are collected, never raised: a :class:`Report` lists every one (all broken links of every
page, not the first), so ``archiver verify --json`` can print them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.errors import FormatError
from archiver.zim.links import check_document
from archiver.zim.metadata import check
from archiver.zim.read import ZimReader, open_archive

__all__ = ["Problem", "Report", "verify"]

_LINKED_TYPES = ("text/html", "application/xhtml+xml", "text/css")


@dataclass(frozen=True)
class Problem:
    """One thing wrong: ``entry`` is a content path, ``M/<key>`` for metadata, or ``""`` for the
    file as a whole."""

    entry: str
    message: str

    def __str__(self) -> str:
        return f"{self.entry}: {self.message}" if self.entry else self.message


@dataclass
class Report:
    """The outcome of :func:`verify`. ``ok`` when there is no problem."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    entries: int = 0
    redirects: int = 0
    documents: int = 0
    links: int = 0
    checksum: bool | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``--json`` output)."""
        return {
            "path": str(self.path),
            "ok": self.ok,
            "entries": self.entries,
            "redirects": self.redirects,
            "documents_checked": self.documents,
            "links_checked": self.links,
            "checksum": self.checksum,
            "problems": [{"entry": p.entry, "message": p.message} for p in self.problems],
        }


def verify(path: Path, *, links: bool = True, checksum: bool = True) -> Report:
    """Check the ZIM at ``path`` end to end and report every problem found. ``links=False`` skips
    the link checker (for ZIMs made by other tools that rewrite URLs at read time)."""
    path = Path(path)
    report = Report(path=path)
    try:
        reader = open_archive(path)
    except FormatError as e:
        report.problems.append(Problem("", e.message))
        return report
    with reader:
        if checksum:
            if not reader.has_checksum:
                report.problems.append(Problem("", "the file has no checksum"))
            else:
                report.checksum = reader.check_checksum()
                if not report.checksum:
                    report.problems.append(
                        Problem("", "the MD5 checksum does not match: the file is corrupt")
                    )
        _check_metadata(reader, report)
        _check_entries(reader, report, links)
    return report


def _check_metadata(reader: ZimReader, report: Report) -> None:
    values = reader.metadata
    for key in values:
        raw = reader.metadata_bytes(key) or b""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            report.problems.append(Problem(f"M/{key}", "is not valid UTF-8"))
    for p in check(values, illustration=reader.illustration):
        report.problems.append(Problem(f"M/{p.key}", p.message))
    main = reader.main_path
    if main is None:
        report.problems.append(Problem("W/mainPage", "there is no main page"))
    elif not reader.has(main):
        report.problems.append(Problem("W/mainPage", f"the main page {main!r} is missing"))


def _check_entries(reader: ZimReader, report: Report, links: bool) -> None:
    archive_paths = reader.has
    for i, path in enumerate(reader.entries()):
        report.entries = i + 1
        try:
            entry = reader.get(path)
        except (FormatError, RuntimeError) as e:
            report.problems.append(Problem(path, f"cannot be read: {e}"))
            continue
        if entry.is_redirect:
            report.redirects += 1
            continue
        mimetype = entry.mimetype.split(";", 1)[0].strip().lower()
        try:
            if links and mimetype in _LINKED_TYPES:
                data = entry.read()
                length = len(data)
            else:
                data = b""
                length = sum(len(chunk) for chunk in entry.chunks())
        except RuntimeError as e:  # a corrupt cluster
            report.problems.append(Problem(path, f"cannot be read: {e}"))
            continue
        if length != entry.size:
            report.problems.append(Problem(path, f"read {length} bytes, the directory says {entry.size}"))
        if length == 0:
            report.problems.append(Problem(path, "is empty (ZIM forbids empty entries)"))
        if data:
            report.documents += 1
            checked, problems = check_document(path, data, mimetype, archive_paths)
            report.links += checked
            report.problems += [Problem(path, str(p)) for p in problems]
