"""The commands that read archives: ``archiver verify`` (trees, gwtar, ZIM, WARC and WACZ, one by
one or every archive in folders), ``ls``, ``extract`` and ``repair`` (from PAR2 recovery data)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from archiver.cli.output import _encodable, _escaped, _print_checked, _writing
from archiver.errors import UsageError

# ------------------------------------------------------------------------------------------- verify


def _cmd_verify(args: argparse.Namespace) -> int:
    """Every archive named (folders with ``-r``), in the order given, checked ``--jobs`` at a time
    (:mod:`archiver.verify_many`); text or one JSON document; ``--junit FILE`` too."""
    import sys
    from datetime import UTC, datetime

    from archiver import verify_many
    from archiver.progress import wanted

    started = time.monotonic()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    items = verify_many.plan([Path(p) for p in args.archives], args.recursive)
    jobs = args.jobs or verify_many.jobs_default(items)
    alone = jobs <= 1 or sum(isinstance(i, verify_many.Target) for i in items) <= 1
    meter = wanted(as_json=args.json) and alone  # a meter per archive only when they go one by one
    verdicts: list[verify_many.Verdict] = []
    checked = verify_many.run(items, strict=args.strict, links=not args.no_links, jobs=jobs, meter=meter)
    for verdict in checked:
        verdicts.append(verdict)
        for line in verdict.err:
            print(line, file=sys.stderr, flush=True)
        if not args.json:
            for line in verdict.out:
                print(line, flush=True)
    if args.json:
        docs = [v.doc for v in verdicts if v.doc is not None]
        ok = all(v.code == 0 for v in verdicts)
        print(json.dumps({"ok": ok, "files": docs}, ensure_ascii=False, indent=1))
    if args.junit:
        xml = verify_many.junit_xml(verdicts, seconds=time.monotonic() - started, timestamp=stamp)
        _writing(lambda: verify_many.write_junit(Path(args.junit), xml), Path(args.junit))
    return max((v.code for v in verdicts), default=2)


# -------------------------------------------------------------------------------------- ls, extract


def _cmd_ls(args: argparse.Namespace) -> int:
    from archiver.detect import kind_of

    path = Path(args.archive)
    if args.versions and path.is_file() and kind_of(path) == "gwtar":
        return _ls_gwtar_versions(path, args.json)
    if args.versions:
        from archiver.cli.history import ls_versions

        return ls_versions(path, args.json)
    if args.version is not None:
        return _ls_version(path, args)
    kind = kind_of(path)
    if kind in ("warc", "wacz"):
        return _ls_warc(path, args)
    if kind == "zim":
        from archiver import zim

        rows: Iterator[tuple[str, int, str, str | None]] = (
            (e.path, e.size, e.mimetype, e.title) for e in zim.ls(path, check=_zim_check(args))
        )
    elif kind == "gwtar":
        from archiver.gwtar.extract import iter_ls

        rows = ((m.path, m.size, m.media_type, m.title) for m in iter_ls(path))  # streamed: any size
    else:
        raise UsageError(f"a {kind} is not an archive: nothing to list", subject=str(path))

    def lines() -> Iterator[str]:
        for name, size, media_type, title in rows:
            if args.json:  # exact names; bytes that are not UTF-8 as \udcXX escapes
                doc = {"path": name, "size": size, "media_type": media_type, "title": title}
                yield json.dumps(doc, ensure_ascii=not _encodable(name, title))
            else:
                yield f"{size:>12}  {_escaped(media_type):<28}  {_escaped(name)}"

    if kind == "gwtar":  # its site index is checked whole before a line is printed
        _print_checked(lines())
    else:
        for line in lines():
            print(line)
    return 0


def _ls_version(path: Path, args: argparse.Namespace) -> int:
    """The files of one version of a versioned tree or ``--all-versions`` gwtar (formats/history.md):
    the version in force at ``--version``, listed as ``ls`` lists a gwtar's members."""
    from archiver.detect import kind_of

    records: Iterator[Any]
    if path.is_dir():
        from archiver.cli.history import _tree_with_versions, pick
        from archiver.versions import store

        records = store.version_records(pick(_tree_with_versions(str(path)), args.version))
    elif kind_of(path) == "gwtar":
        from archiver.gwtar.versions import ls_version

        records = ls_version(path, args.version)
    else:
        why = "--version applies to a versioned tree or an --all-versions gwtar"
        raise UsageError(why, subject=str(path))

    def lines() -> Iterator[str]:
        for r in records:
            if args.json:
                doc = {"path": r.path, "size": r.size, "media_type": r.media_type, "title": r.title,
                       "sha256": r.sha256, "status": r.status}  # fmt: skip
                yield json.dumps(doc, ensure_ascii=not _encodable(r.path, r.title))
            else:
                yield f"{r.size:>12}  {_escaped(r.media_type):<28}  {_escaped(r.path)}"

    _print_checked(lines())  # the version's manifest is read whole before a line is printed
    return 0


def _ls_gwtar_versions(path: Path, as_json: bool) -> int:
    """The versions of an ``--all-versions`` gwtar (formats/gwtar.md §13), oldest first."""
    from archiver.gwtar.read import GwtarReader
    from archiver.gwtar.versions import table

    with GwtarReader(path) as reader:
        entries = table(reader)
    for e in entries:
        if as_json:
            print(json.dumps({"version": e.id, "date": e.date, "pages": e.pages, "files": e.files}))
        else:
            print(f"{e.id}  {e.date}  {e.pages:>7} pages  {e.files:>7} files")
    return 0


def _ls_warc(path: Path, args: argparse.Namespace) -> int:
    from archiver.warc.verify import ls

    for name, rec in ls(path):
        size = rec.payload_size
        if args.json:
            doc = {"warc": name, "offset": rec.offset, "type": rec.type, "status": rec.status,
                   "mime": rec.mime, "size": size, "url": rec.uri, "date": rec.date}  # fmt: skip
            print(json.dumps(doc, ensure_ascii=not _encodable(rec.uri)))
        else:
            status = str(rec.status) if rec.status is not None else rec.type[:3]
            print(f"{status:>3}  {_escaped(rec.mime or '-'):<28}  {size:>12}  {_escaped(rec.date):<27}  "
                  f"{_escaped(rec.uri)}")  # fmt: skip
    return 0


def _zim_check(args: argparse.Namespace) -> Literal["full", "structure"]:
    return "structure" if args.no_check else "full"


def _cmd_extract(args: argparse.Namespace) -> int:
    from archiver.detect import kind_of

    path, out = Path(args.archive), Path(args.out)
    if args.version is not None and path.is_file() and kind_of(path) == "gwtar":
        from archiver.gwtar.versions import extract_version

        entry, count = _writing(lambda: extract_version(path, args.version, out), out)
        print(f"{path}: version {entry.id} ({entry.date}): {count} files extracted into {out}")
        return 0
    if args.version is not None:
        from archiver.cli.history import extract_version

        return extract_version(path, args.version, out)
    kind = kind_of(path)
    if kind == "zim":
        from archiver import zim

        if args.keep_symlinks:
            raise UsageError("--keep-symlinks applies to gwtar (a ZIM has no links)", subject=str(path))
        count = _writing(lambda: zim.extract(path, out, force=args.force, check=_zim_check(args)), out)
    elif kind == "gwtar":
        from archiver import gwtar

        count = _writing(
            lambda: gwtar.extract(path, out, force=args.force, keep_symlinks=args.keep_symlinks), out
        )
    else:
        raise UsageError(f"a {kind} is not an archive: nothing to extract", subject=str(path))
    print(f"{path}: {count} files extracted into {out}")
    return 0


# ------------------------------------------------------------------------------------------- repair


def _cmd_repair(args: argparse.Namespace) -> int:
    from archiver.par2 import repair_main

    return _writing(lambda: repair_main(args.file, args.out, as_json=args.json), Path(args.out or args.file))
