"""``verify`` a ZIM: its structure (before libzim touches it), the checksum, a full read of every
entry, the main page, redirects, our link checker over every HTML and CSS entry, and the metadata
rules (formats/zim.md §6, §7).

Findings are collected, never raised, in two lists (formats/zim.md §7.2): **problems** make the file
invalid (a damaged structure, a wrong checksum, an unreadable or missing entry, a broken internal
link: exit 1); **warnings** are points of style that readers cope with (the openZIM metadata
recommendations, a missing illustration, no checksum, links into the old namespaces of a
pre-2021 ZIM): printed, exit 0 unless ``--strict``. A file that zimcheck passes is never invalid.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.errors import FormatError
from archiver.findings import Verdict
from archiver.zim.links import check_document
from archiver.zim.metadata import MANDATORY, check
from archiver.zim.read import ZimReader, open_archive, structure_problems
from archiver.zim.source import check_entry_path
from archiver.zim.structure import NOT_A_ZIM, split_parts

__all__ = ["Problem", "Report", "verify"]

_LINKED_TYPES = ("text/html", "application/xhtml+xml", "text/css")
_OLD_NAMESPACES = frozenset({"-", "A", "I", "J", "M", "W", "X"})


@dataclass(frozen=True)
class Problem:
    """One thing wrong: ``entry`` is a content path, ``M/<key>`` for metadata, or ``""`` for the
    file as a whole."""

    entry: str
    message: str

    def __str__(self) -> str:
        return f"{self.entry}: {self.message}" if self.entry else self.message


@dataclass
class Report(Verdict):
    """The outcome of :func:`verify`. ``ok`` when there is no problem."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    entries: int = 0
    redirects: int = 0
    documents: int = 0
    links: int = 0
    checksum: bool | None = None

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
            "warnings": [{"entry": p.entry, "message": p.message} for p in self.warnings],
        }


def verify(path: Path, *, links: bool = True, checksum: bool = True) -> Report:
    """Check the ZIM at ``path`` (or the parts of a split ZIM named by their base name) end to end
    and report everything found. ``links=False`` skips the link checker."""
    path = Path(path)
    report = Report(path=path)
    parts = split_parts(path)
    if not parts:
        report.problems.append(Problem("", "no such file"))
        return report
    damage = structure_problems(parts)
    if damage:  # libzim is not trusted with a file whose pointers lie
        what = "not a readable ZIM file" if damage[0].startswith(NOT_A_ZIM) else "damaged structure"
        report.problems += [Problem("", f"{what}: {p}") for p in damage]
        return report
    try:
        reader = open_archive(path, check="structure")
    except FormatError as e:
        report.problems.append(Problem("", e.message))
        return report
    with reader:
        try:
            if checksum:
                if not reader.has_checksum:
                    report.warnings.append(Problem("", "the file has no checksum"))
                else:
                    report.checksum = reader.check_checksum()
                    if not report.checksum:
                        report.problems.append(
                            Problem("", "the MD5 checksum does not match: the file is corrupt")
                        )
            _check_metadata(reader, report)
            _check_entries(reader, report, links)
            _check_search(reader, report)
        except (RuntimeError, FormatError) as e:  # libzim on a file damaged past what the structure shows
            message = e.message if isinstance(e, FormatError) else str(e)
            report.problems.append(Problem("", f"cannot be read: {message}"))
    return report


def _check_search(reader: ZimReader, report: Report) -> None:
    """The search index entries (formats/zim.md §11), each checked against the search manifest."""
    from archiver.search import archive

    for name, problem in archive.check(archive.entry_reads(reader)[0], reader.has):
        report.problems.append(Problem(name, f"search index: {problem}"))


def _check_metadata(reader: ZimReader, report: Report) -> None:
    values = reader.metadata
    for key in values:
        raw = reader.metadata_bytes(key) or b""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            report.warnings.append(Problem(f"M/{key}", "is not valid UTF-8"))
        if not raw and key not in MANDATORY:  # a mandatory one is "missing" below
            report.warnings.append(Problem(f"M/{key}", "is empty (openZIM's own test ZIMs have one)"))
    for p in check(values, illustration=reader.illustration):
        report.warnings.append(Problem(f"M/{p.key}", p.message))
    main = reader.main_path
    if main is None:
        report.problems.append(Problem("W/mainPage", "there is no main page"))
    elif not reader.has(main):
        report.problems.append(Problem("W/mainPage", f"the main page {main!r} is missing"))


def _into_old_namespace(doc: str, ref: str) -> bool:
    """Whether ``ref`` in ``doc`` of a new-layout ZIM points into a namespace of the pre-2021 layout
    (``../I/x.png``, ``-/style.css``), as ZIMs converted from the old layout keep: kiwix readers
    still map those, so such a link is a warning, not a broken link."""
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(doc), ref.split("#")[0].split("?")[0]))
    head = resolved.lstrip("./").split("/", 1)[0] if resolved.startswith("..") else ""
    return len(head) == 1 or resolved.split("/", 1)[0] in _OLD_NAMESPACES


def _check_entries(reader: ZimReader, report: Report, links: bool) -> None:
    archive_paths = reader.has
    new_scheme = bool(reader.archive.has_new_namespace_scheme)
    old_layout = not new_scheme
    for i, path in enumerate(reader.entries()):
        report.entries = i + 1
        try:
            check_entry_path(path, "")  # what extract refuses (a path that climbs out of DIR)
        except FormatError as e:
            report.problems.append(Problem(path, f"{e.message}: extract refuses it"))
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
        if length == 0 and not (old_layout and path.startswith("M/")):  # old layout: metadata, above
            report.problems.append(Problem(path, "is empty (ZIM forbids empty entries)"))
        if data:
            report.documents += 1
            checked, problems = check_document(path, data, mimetype, archive_paths)
            report.links += checked
            for p in problems:
                old = new_scheme and _into_old_namespace(path, p.ref)
                (report.warnings if old else report.problems).append(Problem(path, str(p)))
