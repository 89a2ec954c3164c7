"""``archiver verify TREE``: a canonical tree checked against its own manifest and for its links
(formats/tree.md §8, §10).

Every manifest record must name a regular file inside the tree, not a private one and not through
a symbolic link, whose size and SHA-256 are those recorded; every local reference in every HTML
and CSS file (the one reference walker of :mod:`archiver.zim.links`) must resolve to a file of the
tree. Like a ZIM's report (formats/zim.md §7.2), findings are **problems** (exit 1: a missing,
changed or escaping file, a broken local link, a link above the root or root-absolute) or
**warnings** (exit 0 unless ``--strict``: no manifest to check against, files the manifest does not
list, absolute references a page loads from other sites, which a capture keeps on purpose for what
it did not store). Files are hashed in 1 MiB chunks and links are checked against the disk, so
memory does not grow with the tree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.errors import FormatError
from archiver.findings import Verdict
from archiver.tree import RESERVED_DIR, hash_file, is_private, manifest_path, records
from archiver.treefolders import is_tree
from archiver.urls import SEARCH_DIR
from archiver.walk import walk

__all__ = ["TreeProblem", "TreeReport", "is_tree", "verify_tree"]

_LINKED = {".html": "text/html", ".htm": "text/html", ".xhtml": "application/xhtml+xml", ".css": "text/css"}
#: Documents larger than this are hashed but not parsed for links.
_MAX_DOCUMENT = 64 << 20
_EXTERNAL = "external resource"


@dataclass(frozen=True)
class TreeProblem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass
class TreeReport(Verdict):
    """The outcome of :func:`verify_tree`; ``ok`` when there is no problem."""

    path: Path
    problems: list[TreeProblem] = field(default_factory=list)
    warnings: list[TreeProblem] = field(default_factory=list)
    files: int = 0
    documents: int = 0
    links: int = 0
    manifest: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "tree",
            "path": str(self.path),
            "ok": self.ok,
            "files": self.files,
            "documents_checked": self.documents,
            "links_checked": self.links,
            "manifest": self.manifest,
            "problems": [{"path": p.path, "message": p.message} for p in self.problems],
            "warnings": [{"path": p.path, "message": p.message} for p in self.warnings],
        }


def _regular_inside(root: Path, rel: str) -> str | None:
    """None when ``rel`` is a regular file reached from ``root`` without a symbolic link; else why not."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "its path is not a plain relative path"
    current = root
    for i, part in enumerate(parts):
        current = current / part
        try:
            st = os.lstat(current)
        except FileNotFoundError:
            return "is missing"
        except OSError as e:
            return f"cannot be read: {e.strerror}"
        if stat.S_ISLNK(st.st_mode):
            return "is reached through a symbolic link"
        last = i == len(parts) - 1
        if last and not stat.S_ISREG(st.st_mode):
            return "is not a regular file"
        if not last and not stat.S_ISDIR(st.st_mode):
            return "is missing (a parent is not a folder)"
    return None


def verify_tree(root: Path, *, links: bool = True) -> TreeReport:
    """Check the tree at ``root`` as the module docstring says and report everything found
    (``links=False``: sizes, hashes and escaping files only, not the documents' links)."""
    from archiver.zim.links import check_document

    root = Path(root)
    report = TreeReport(path=root)
    report.manifest = manifest_path(root).is_file()
    if not report.manifest:
        report.warnings.append(TreeProblem("", "has no manifest: sizes and hashes cannot be checked"))
    listed: set[str] = set()

    def exists(target: str) -> bool:
        if target == "" or target.endswith("/"):
            target += "index.html"
        return _regular_inside(root, target) is None

    try:
        for record in records(root):
            report.files += 1
            rel = record.path
            listed.add(rel)
            if is_private(rel):
                report.problems.append(TreeProblem(rel, "the manifest lists a private file"))
                continue
            why = _regular_inside(root, rel)
            if why is not None:
                report.problems.append(TreeProblem(rel, why))
                continue
            full = root / rel
            if report.manifest:
                size, sha = hash_file(full)
                if size != record.size:
                    said = f"is {size} bytes, the manifest says {record.size}"
                    report.problems.append(TreeProblem(rel, said))
                elif sha != record.sha256:
                    report.problems.append(TreeProblem(rel, "its SHA-256 does not match the manifest's"))
            media = _LINKED.get(os.path.splitext(rel)[1].lower())
            if not links or media is None or full.stat().st_size > _MAX_DOCUMENT:
                continue
            report.documents += 1
            checked, found = check_document(rel, full.read_bytes(), media, exists)
            report.links += checked
            for p in found:
                bucket = report.warnings if p.message.startswith(_EXTERNAL) else report.problems
                bucket.append(TreeProblem(rel, str(p)))
    except FormatError as e:
        report.problems.append(TreeProblem("_archiver/manifest.jsonl", e.message))
        return report
    _check_search_index(root, report)
    _check_versions(root, report)
    if report.manifest:
        unlisted = _unlisted(root, listed)
        if unlisted:
            shown = ", ".join(unlisted[:5]) + (f" and {len(unlisted) - 5} more" if len(unlisted) > 5 else "")
            report.warnings.append(TreeProblem("", f"{len(unlisted)} file(s) not in the manifest: {shown}"))
    return report


_SEARCH_DIR = f"{SEARCH_DIR}/"


def _check_versions(root: Path, report: TreeReport) -> None:
    """The version store, when the tree has one (formats/history.md §4): every version manifest
    sound, every path plain, every blob there and holding the bytes its name says."""
    from archiver.versions import store

    for where, message in store.problems(root):
        report.problems.append(TreeProblem(where, f"versions: {message}"))


def _check_search_index(root: Path, report: TreeReport) -> None:
    """The search index, when the tree has one (formats/search.md §4.6): every file the index's
    manifest lists has its size and SHA-256; a damaged or missing file is a problem naming it."""
    from archiver.search import store

    if not store.has_index(root):
        return
    for path, message in store.check_index(root):
        report.problems.append(TreeProblem(path, f"search index: {message}"))


def _unlisted(root: Path, listed: set[str]) -> list[str]:
    out = []
    for folder, dirs, files in walk(root):  # no recursion (archiver.walk)
        rel_folder = os.path.relpath(folder, root)
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            rel = name if rel_folder == "." else f"{rel_folder}/{name}".replace(os.sep, "/")
            if rel.startswith(_SEARCH_DIR) and rel not in listed:
                continue  # the search index: checked against its own manifest (_check_search_index)
            if rel not in listed and not is_private(rel) and rel != f"{RESERVED_DIR}/manifest.jsonl":
                out.append(rel)
    return out
