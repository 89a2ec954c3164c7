"""The commands that read archives: ``archiver verify`` (trees, gwtar, ZIM, WARC and WACZ, one by
one or every archive in folders), ``ls``, ``extract`` and ``repair`` (from PAR2 recovery data)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from archiver.cli.output import _encodable, _escaped, _writing
from archiver.errors import UsageError

# ------------------------------------------------------------------------------------------- verify


def _zim_name(path: Path) -> Path | None:
    """``path`` as a ZIM to open: itself, or the base name of a split ZIM (``X.zim`` for
    ``X.zimaa``); None when it is not a ZIM."""
    from archiver.detect import kind_of
    from archiver.zim.structure import split_parts

    if path.is_file():
        try:
            return path if kind_of(path) == "zim" else None
        except UsageError:
            return None
    parts = split_parts(path)
    return path if parts and parts[0] != path else None


def _verify_targets(paths: list[Path], recursive: bool) -> tuple[list[Path], list[Path], list[Path]]:
    """(trees, ZIMs, everything else) to verify. A tree folder is verified as a tree; with
    ``recursive``, any other folder stands for every archive in it: gwtar files, ZIM files, split
    ZIMs (by their base name), trees (folders with a manifest), WARC and WACZ files (these go with
    "everything else")."""
    from archiver.tree_verify import is_tree

    trees: list[Path] = []
    zims: list[Path] = []
    others: list[Path] = []
    for path in paths:
        if path.is_dir() and (is_tree(path) or recursive):
            if is_tree(path):
                trees.append(path)
            if not recursive:
                continue
            found = sorted(x for x in path.rglob("*") if x.is_file())
            gwtars = [
                x for x in found if x.name.endswith((".gwtar.html", ".gwtar", ".warc", ".warc.gz", ".wacz"))
            ]
            bases = {x.with_name(x.name[:-2]) for x in found if x.name.endswith(".zimaa")}
            inside = sorted({*bases, *(x for x in found if x.name.endswith(".zim"))})
            nested = sorted(
                x.parent.parent for x in found if x.name == "manifest.jsonl" and x.parent.name == "_archiver"
            )
            nested = [t for t in nested if t != path]
            if not gwtars and not inside and not nested and not is_tree(path):
                raise UsageError("no tree, gwtar or ZIM files in this folder", subject=str(path))
            zims += inside
            others += gwtars
            trees += nested
        elif (zim_path := _zim_name(path)) is not None:
            zims.append(zim_path)
        else:
            others.append(path)
    return trees, zims, others


def _is_warc(path: Path) -> bool:
    from archiver.detect import kind_of, refuse_arc

    refuse_arc(path)  # an ARC file: one message from every command (formats/warc.md §1)
    if path.name.lower().endswith((".warc", ".warc.gz", ".wacz")):
        return True
    try:
        return path.is_file() and kind_of(path) in ("warc", "wacz")
    except UsageError:
        return False


def _verify_warcs(paths: list[Path], args: argparse.Namespace, docs: list[dict[str, Any]]) -> int:
    """``verify`` of WARC and WACZ files: lines printed, or the JSON reports added to ``docs``."""
    from archiver.warc.verify import verify

    code = 0
    for path in paths:
        report = verify(path)
        if args.strict:
            report.strict()
        if args.json:
            docs.append(report.to_json())
        else:
            extra = f", {report.index_lines} index lines" if report.kind == "wacz" else ""
            _print_report(path, report, f"{report.kind}, {report.records} records{extra}")
        code = max(code, 0 if report.ok else 1)
    return code


def _print_report(path: Path, report: Any, counted: str) -> None:
    """A tree's, ZIM's or WARC's report as text: a line per problem, per warning, then the verdict."""
    shown = _escaped(str(path))
    for problem in report.problems:
        print(f"{shown}: {_escaped(str(problem))}")
    for warning in report.warnings:
        print(f"{shown}: warning: {_escaped(str(warning))}")
    summary = "OK" if report.ok else "INVALID"
    if report.ok and report.warnings:
        summary += f", {len(report.warnings)} warning(s) (--strict counts them as problems)"
    print(f"{shown}: {summary} ({counted})")


def _cmd_verify(args: argparse.Namespace) -> int:
    trees, zims, others = _verify_targets([Path(p) for p in args.archives], args.recursive)
    warcs = [p for p in others if _is_warc(p)]
    others = [p for p in others if p not in warcs]
    docs: list[dict[str, Any]] = []
    code = _verify_warcs(warcs, args, docs)
    for path in [*trees, *zims]:
        if path in trees:
            from archiver.tree_verify import verify_tree

            report: Any = verify_tree(path, links=not args.no_links)
            counted = f"{report.files} files, {report.links} links"
        else:
            from archiver import zim

            report = zim.verify(path, links=not args.no_links)
            counted = f"{report.entries} entries"
        if args.strict:
            report.strict()
        if args.json:
            docs.append({"format": "zim", **report.to_json()} if path in zims else report.to_json())
        else:
            _print_report(path, report, counted)
        code = max(code, 0 if report.ok else 1)
    if others or docs:  # gwtar's verify prints the one JSON document, with the other reports in it
        from archiver import gwtar

        code = max(
            code,
            gwtar.verify_main(
                others,
                recursive=args.recursive,
                as_json=args.json,
                more=docs,
                strict=args.strict,
                links=not args.no_links,
            ),
        )
    return code


# -------------------------------------------------------------------------------------- ls, extract


def _cmd_ls(args: argparse.Namespace) -> int:
    from archiver.detect import kind_of

    path = Path(args.archive)
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
    for name, size, media_type, title in rows:
        if args.json:  # exact names; bytes that are not UTF-8 as \udcXX escapes
            doc = {"path": name, "size": size, "media_type": media_type, "title": title}
            print(json.dumps(doc, ensure_ascii=not _encodable(name, title)))
        else:
            print(f"{size:>12}  {_escaped(media_type):<28}  {_escaped(name)}")
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
