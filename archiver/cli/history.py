"""The commands of a tree's history (formats/history.md): ``archiver ls TREE --versions``,
``archiver extract TREE --version DATE -o OUT`` and ``archiver diff TREE [--from DATE] [--to DATE]``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from archiver.cli.output import _escaped, _print_checked, _print_json, _writing
from archiver.errors import FormatError, UsageError


def _tree_with_versions(text: str) -> Path:
    from archiver.tree import read_header

    root = Path(text)
    if not root.is_dir():
        raise UsageError("is not a tree (a capture folder): only trees have versions", subject=text)
    if read_header(root) is None:
        raise UsageError("has no manifest: only a capture's tree has versions", subject=text)
    return root


def pick(root: Path, when: str | None, *, default: int = -1) -> Any:
    """The version in force at ``when`` (formats/history.md §3), else ``versions[default]``."""
    from archiver.versions import dates, store

    found = store.versions(root)
    if not found:
        raise UsageError("has no version", subject=str(root))
    if when is None:
        return found[default]
    exact = [v for v in found if v.id == when]
    if exact:
        return exact[0]
    try:
        instant = dates.parse(when)
    except ValueError as e:
        raise UsageError(str(e), subject=str(root)) from None
    vid = dates.in_force([v.id for v in found], instant)
    if vid is None:
        raise UsageError(f"no version at or before {when}: the first is {found[0].date}", subject=str(root))
    return next(v for v in found if v.id == vid)


def ls_versions(path: Path, as_json: bool) -> int:
    from archiver.versions import store

    root = _tree_with_versions(str(path))

    def lines() -> Iterator[str]:
        seen: set[str] = set()
        for v in store.versions(root):
            pages = files = size = added = 0
            for r in store.version_records(v):
                files += 1
                size += r.size
                pages += r.kind == "page" and not (r.status is not None and 300 <= r.status < 400)
                if r.sha256 not in seen:
                    seen.add(r.sha256)
                    added += r.size
            doc = {"version": v.id, "date": v.date, "recorded": v.recorded, "pages": pages, "files": files,
                   "bytes": size, "new_bytes": added}  # fmt: skip
            if as_json:
                yield json.dumps(doc)
            else:
                state = "" if v.recorded else "  (the tree now, not recorded yet)"
                yield (f"{v.id}  {v.date}  {pages:>7} pages  {files:>7} files  {size:>12} bytes  "
                       f"{added:>12} new{state}")  # fmt: skip

    _print_checked(lines())  # every version's manifest read before a line is printed
    return 0


def extract_version(path: Path, when: str, out: Path) -> int:
    from archiver.versions import store

    root = _tree_with_versions(str(path))
    v = pick(root, when)
    count = _writing(lambda: store.extract(root, v, out), out)
    print(f"{path}: version {v.id} ({v.date}): {count} files extracted into {out}")
    return 0


def _cmd_diff(args: argparse.Namespace) -> int:
    from archiver.versions import diff, reports, store

    root = _tree_with_versions(args.tree)
    found = store.versions(root)
    if len(found) < 2 and args.since is None:
        raise UsageError(f"has {len(found)} version(s): nothing to compare yet", subject=args.tree)
    to = pick(root, args.to)
    if args.since is not None:
        since = pick(root, args.since)
    else:
        earlier = [v for v in found if v.id != to.id and found.index(v) < found.index(to)]
        if not earlier:
            raise UsageError(f"no version before {to.id} to compare it with", subject=args.tree)
        since = earlier[-1]
    old = {r.path: r for r in store.version_records(since)}
    new = {r.path: r for r in store.version_records(to)}
    held = store.TreeState(root)  # the tree's manifest, read once: a version's file the tree holds
    failures = reports.failures(root, to)
    first = reports.first_failures(root, found, to)
    entries = diff.compare(
        old,
        new,
        failures,
        lambda side, p: _text(root, old if side == "old" else new, p, held),
        first_failures=first,
        checked=datetime.fromisoformat(to.date.replace("Z", "+00:00")),
        with_unchanged=args.all,
    )
    total = diff.summary(entries)
    total.update({"tree": str(root), "from": since.id, "to": to.id})
    if args.json:
        for e in entries:
            print(json.dumps(e.to_json(), ensure_ascii=False))
        _print_json(total)
        return 0
    print(f"{_escaped(str(root))}: {since.id} → {to.id}")
    for e in entries:
        extra = ""
        if e.cls == "gone":
            extra = f"  {e.outcome}: {e.reason}"
            if e.retry_after is not None:
                extra += f" (check again after {e.retry_after:%Y-%m-%d})"
        elif e.cls == "redirected":
            extra = f"  → {e.target or '?'}" + (
                "  (soft-404: to the home page)" if e.outcome == "soft-404" else ""
            )
        label = {"volatile": "unchanged, volatile", "markup": "unchanged, markup"}.get(e.cls, e.cls)
        print(f"{label:<20} {_escaped(e.path)}{_escaped(extra)}")
        if args.text and e.diff:
            for line in e.diff:
                print(f"    {_escaped(line)}")
    counts = ", ".join(f"{n} {c}" for c, n in total["counts"].items() if n)
    print(counts or "no pages")
    return 0


def _text(root: Path, records: dict[str, Any], path: str, held: Any) -> str | None:
    from archiver.search.guarded import extract
    from archiver.versions import store

    r = records.get(path)
    if r is None:
        return None
    try:
        data = store.read_blob(root, r, held)  # its blob, or the tree's file (history.md §3)
    except (OSError, FormatError):
        return None
    page = extract(data)
    lines = [page.title] + [t for _, t in page.blocks]
    return "\n".join(" ".join(x.split()) for x in lines)


def add_arguments(command: Any, func: Any) -> None:
    p = command("diff", "what changed, what moved and what died between two versions of a tree")
    p.add_argument("tree")
    p.add_argument(
        "--from", dest="since", metavar="DATE", help="the older version (default: the one before --to)"
    )
    p.add_argument("--to", metavar="DATE", help="the newer version (default: the newest)")
    p.add_argument("--all", action="store_true", help="list unchanged pages too")
    p.add_argument("--text", action="store_true", help="show the text diff of each changed page")
    p.add_argument("--json", action="store_true", help="one JSON object per page, then a summary")
    p.set_defaults(func=func)
