"""Trees made by hand for the history tests: files and a manifest, as a capture would leave them."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from archiver.tree import Header, Record, write_records
from archiver.versions import held

HOME = "http://site.localhost/"


def page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title></head>"
        f"<body><nav>Home · Docs</nav><main><h1>{title}</h1>{body}</main></body></html>\n"
    )


def write_tree(
    root: Path,
    files: dict[str, str | bytes],
    created: str,
    *,
    statuses: dict[str, int] | None = None,
    redirects: dict[str, list[str]] | None = None,
) -> None:
    """Write ``files`` (tree path → content) atomically (a new file renamed over the old, as a
    capture does; a file whose bytes are the same is left as it is, as a 304 leaves it), remove the
    files of the tree's manifest that ``files`` lacks, and write the manifest (header ``created``).
    A recorded version's file is kept in the store before it is replaced or removed (history.md §2.1)."""
    from archiver.versions.keeper import for_tree

    statuses = statuses or {}
    redirects = redirects or {}
    # a capture keeps a recorded version's file in the store before it lets it go (history.md §2)
    keeper = for_tree(root) if (root / "_archiver" / ".versions").is_dir() else None
    keep = keeper.keep if keeper is not None else (lambda _path: None)
    records = []
    tmp = root / "_archiver" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not (target.is_file() and target.read_bytes() == data):  # an unchanged file stays (a 304)
            t = tmp / "w"
            t.write_bytes(data)
            keep(path)
            os.replace(t, target)
        kind = "page" if path.endswith(".html") else "asset"
        url = HOME + ("" if path == "index.html" else path)
        records.append(
            Record(
                path=path,
                kind=kind,
                media_type="text/html" if kind == "page" else "text/css",
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                urls=[url],
                title=path if kind == "page" else None,
                status=statuses.get(path, 200),
                fetched=created,
                redirects=redirects.get(path, []),
            )
        )
    manifest = root / "_archiver" / "manifest.jsonl"
    if manifest.exists():
        from archiver.tree import read_records

        for old in read_records(root):
            if old.path not in files and (root / old.path).exists():
                keep(old.path)
                (root / old.path).unlink()
    tmp.rmdir()
    write_records(root, Header(home=HOME, created=created, seeds=[HOME]), records)


_PRIVATE = (".versions", "search", "report.json", "manifest.jsonl", "tmp", "warc")


def tree_files(root: Path) -> dict[str, bytes]:
    """The tree's pages and assets (not its manifest, index, state or store): what a version holds."""
    out = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if not p.is_file():
            continue
        if rel.parts[0] == "_archiver" and (
            rel.parts[1] in _PRIVATE or rel.parts[1].startswith("crawl.sqlite")
        ):
            continue
        out[rel.as_posix()] = p.read_bytes()
    return out


def settle(root: Path) -> None:
    """Wait until every file of the tree was last changed ``held.SETTLE_NS`` ago: one changed since
    is hashed at every use, never remembered (formats/history.md §3)."""
    newest = max(p.stat().st_ctime_ns for p in root.rglob("*") if p.is_file())
    time.sleep(max(0.0, (newest + held.SETTLE_NS - time.time_ns()) / 1e9) + 0.05)


def two_versions(root: Path, first: dict[str, str | bytes], second: dict[str, str | bytes]) -> Path:
    """A tree at ``root`` with two recorded versions: ``first`` at 2026-11-30 09:00, ``second`` at
    2026-12-01 09:00 (their files: as :func:`write_tree` takes them)."""
    from archiver.versions import store

    write_tree(root, first, "2026-11-30T09:00:00Z")
    store.record(root)
    write_tree(root, second, "2026-12-01T09:00:00Z")
    store.record(root)
    return root
