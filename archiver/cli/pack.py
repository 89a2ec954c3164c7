"""``archiver pack``: a tree, gwtar, ZIM or SingleFile page, the shard folders of one crawl, or WARC
and WACZ files (imported first) into a gwtar or ZIM file; WARC files into a WACZ."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from archiver.cli.output import _print_json, _warn, _writing
from archiver.errors import ArchiverError, UsageError
from archiver.progress import bytes_meter, wanted

T = TypeVar("T")
_VERSION_INPUT = "--version applies to one versioned tree or --all-versions gwtar"


def _is_warc(path: Path) -> bool:
    from archiver.detect import kind_of, refuse_arc

    refuse_arc(path)  # an ARC file: one message from every command (formats/warc.md §1)
    if path.name.lower().endswith((".warc", ".warc.gz", ".wacz")):
        return True
    try:
        return path.is_file() and kind_of(path) in ("warc", "wacz")
    except UsageError:
        return False


def _search_index(args: argparse.Namespace, src: Path) -> bool:
    """Whether the pack carries a search index: ``--search-index`` builds one when the tree has
    none, ``--no-search-index`` leaves it out, and by default a tree's own index (``archiver
    index``) goes in and none is built (building costs about 25 ms of CPU a page: pack would be
    tens of times slower; formats/search.md)."""
    if args.no_search_index:
        return False
    if args.search_index:
        return True
    from archiver.search import store

    return src.is_dir() and store.has_index(src)


def _cmd_pack(args: argparse.Namespace) -> int:
    if args.format == "wacz":
        return _pack_wacz(args)
    if args.format == "gwtar" and (args.metadata or args.allow_incomplete):
        raise UsageError("ZIM metadata options and --allow-incomplete apply to --format zim", subject="pack")
    if args.format == "zim" and args.single_page:
        raise UsageError("--single-page applies to --format gwtar", subject="pack")
    if args.format == "zim" and args.all_versions:
        raise UsageError("--all-versions applies to --format gwtar (a ZIM is a snapshot)", subject="pack")
    if args.version is not None and args.all_versions:
        raise UsageError("--version picks one version; --all-versions packs them all", subject="pack")
    paths = [Path(p) for p in args.path]
    if all(p.is_file() and _is_warc(p) for p in paths):
        from archiver.warc.importer import imported_tree

        with imported_tree(paths, Path(args.out), render=not args.no_render, chromium=args.chromium,
                           progress=False if args.json else None) as tree:  # fmt: skip
            return _pack_one(args, tree)
    if args.no_render or args.chromium:
        raise UsageError("--no-render and --chromium apply to WARC and WACZ input", subject="pack")
    if len(paths) > 1 and all(p.is_dir() for p in paths):  # the shard folders of one crawl
        from archiver import safefs
        from archiver.merge import merge

        with safefs.temp_dir(Path(args.out)) as work:
            merge(paths, work / "tree")
            return _pack_one(args, work / "tree")
    if args.version is not None:
        if len(paths) != 1:
            raise UsageError(_VERSION_INPUT, subject="pack")
        with _version_tree(args, paths[0]) as (tree, vid):
            return _pack_one(args, tree, version=vid)
    if len(paths) != 1:
        raise UsageError("--format gwtar and zim pack one tree, gwtar, ZIM or HTML file, the shard"
                         " folders of one crawl, or WARC and WACZ files (several WARC files to a WACZ:"
                         " --format wacz)", subject="pack")  # fmt: skip
    return _pack_one(args, paths[0])


@contextlib.contextmanager
def _version_tree(args: argparse.Namespace, root: Path) -> Iterator[tuple[Path, str]]:
    """The tree of the version in force at ``--version`` (formats/history.md §3): the tree itself
    when that is the newest state, else the version written as a plain tree (hard links to its
    blobs, checked whole first) in a private folder beside the output, removed afterwards. A ZIM's
    Date is the version's day unless ``--metadata Date=`` says otherwise."""
    from archiver import safefs
    from archiver.cli.history import _tree_with_versions, pick
    from archiver.detect import kind_of
    from archiver.versions import store

    if root.is_file() and kind_of(root) == "gwtar":
        from archiver.gwtar.versions import extract_version

        with safefs.temp_dir(Path(args.out)) as work:
            e, _ = extract_version(root, args.version, work / "tree")
            _date_the_zim(args, e.date)
            yield work / "tree", e.id
        return
    if not root.is_dir():
        raise UsageError(_VERSION_INPUT, subject=str(root))
    v = pick(_tree_with_versions(str(root)), args.version)
    _date_the_zim(args, v.date)
    if not v.recorded:
        yield root, v.id
        return
    if not args.no_search_index and not args.search_index:
        from archiver.search.store import has_index

        # the tree's index is of its newest state: an earlier version gets an index of its own
        args.search_index = has_index(root)
    with safefs.temp_dir(Path(args.out)) as work:
        store.extract(root, v, work / "tree")
        yield work / "tree", v.id


def _date_the_zim(args: argparse.Namespace, date: str) -> None:
    if args.format == "zim" and not any(k == "Date" for k, _ in (args.metadata or [])):
        args.metadata = [*(args.metadata or []), ("Date", date[:10])]


def _pack_one(args: argparse.Namespace, src: Path, *, version: str | None = None) -> int:
    """``pack`` of one tree, gwtar, ZIM or HTML file to gwtar or ZIM (``version``: the version id
    of a versioned tree that ``src`` holds, said in the output)."""
    out = Path(args.out)
    if args.format == "gwtar":
        from archiver import gwtar

        fec = args.fec_redundancy / 100 if args.add_fec_data else None
        with bytes_meter(f"pack {out.name}", show=wanted(as_json=args.json)) as meter:
            result = _writing(
                lambda: gwtar.pack(
                    src,
                    out,
                    main=args.main,
                    single_page=args.single_page,
                    fec=fec,
                    progress=meter,
                    search_index=_search_index(args, src),
                    all_versions=args.all_versions,
                ),
                out,
            )
        doc: dict[str, Any] = {
            "format": "gwtar",
            "path": str(result.path),
            "size": result.size,
            "members": result.members,
            "pages": result.pages,
            "main": result.main,
        }
        if args.add_fec_data:
            doc["fec"] = {"redundancy_percent": args.fec_redundancy}
    else:
        with contextlib.ExitStack() as stack:
            doc = _pack_zim(args, src, out, stack)
    if version is not None:
        doc["version"] = version
    if args.json:
        _print_json(doc)
    else:
        extra = f", FEC {args.fec_redundancy:g} %" if args.add_fec_data else ""
        extra += f", version {version}" if version is not None else ""
        print(f"{doc['path']}: {doc['size']} bytes ({args.format}{extra}), main page {doc['main']}")
    return 0


def _pack_wacz(args: argparse.Namespace) -> int:
    from archiver.warc import wacz

    if (args.metadata or args.allow_incomplete or args.single_page or args.add_fec_data or args.main
            or args.all_versions or args.version is not None
            or args.no_render or args.chromium or args.no_search_index or args.search_index):  # fmt: skip
        raise UsageError("--format wacz takes only WARC files (or capture folders) and -o", subject="pack")
    out = Path(args.out)
    result = _writing(lambda: wacz.pack([Path(p) for p in args.path], out), out)
    if args.json:
        _print_json({"format": "wacz", "path": str(result.path), "size": result.size, "warcs": result.warcs,
                     "records": result.records, "pages": result.pages, "index": result.index,
                     "main": result.main})  # fmt: skip
    else:
        print(f"{result.path}: {result.size} bytes (wacz, {result.warcs} WARC, {result.records} records, "
              f"{result.pages} pages, {result.index}), main page {result.main}")  # fmt: skip
    return 0


def _pack_zim(args: argparse.Namespace, src: Path, out: Path, stack: contextlib.ExitStack) -> dict[str, Any]:
    """``pack --format zim``; with ``--add-fec-data`` the ZIM and its PAR2 sidecars are made in a
    private folder beside ``out`` and put in place together once all are written (sidecars of an
    earlier ZIM there that the new set does not replace are removed then). Before, the ZIM replaced
    ``out`` first and a sidecar the disk refused ended in a traceback (exit 70), leaving the new ZIM
    beside part of its sidecars (and the older ZIM's others)."""
    from archiver import safefs, zim

    target = out
    if args.add_fec_data:
        work = _writing(lambda: stack.enter_context(safefs.temp_dir(out)), out)
        target = work / out.name
    with bytes_meter(f"pack {out.name}", show=wanted(as_json=args.json)) as meter:
        result_zim = _writing(
            lambda: _as_out(
                target,
                out,
                lambda: zim.pack(
                    src,
                    target,
                    metadata=dict(args.metadata or []),
                    allow_incomplete=args.allow_incomplete,
                    main=args.main,
                    progress=meter,
                    search_index=_search_index(args, src),
                ),
            ),
            out,
        )
    doc: dict[str, Any] = {
        "format": "zim",
        "path": str(out),
        "size": result_zim.size,
        "entries": result_zim.entries,
        "redirects": result_zim.redirects,
        "main": result_zim.main,
        "warnings": result_zim.warnings,
        "skipped": [{"path": p, "reason": r} for p, r in result_zim.skipped],
    }
    for path, reason in result_zim.skipped:
        _warn(str(out), f"left out {path}: {reason}")
    if not args.json:
        for line in result_zim.warnings:
            _warn(str(out), line)
    if args.add_fec_data:
        from archiver import par2

        _writing(
            lambda: _as_out(target, out, lambda: _with_sidecars(target, out, args.fec_redundancy / 100)), out
        )
        doc["fec_sidecars"] = [str(p) for p in par2.sidecar_files(out)]
    return doc


def _as_out(staged: Path, out: Path, run: Callable[[], T]) -> T:
    """``run()``, its errors that name the staged file naming ``out`` instead (the folder is removed)."""
    try:
        return run()
    except ArchiverError as e:
        if staged == out or e.subject != str(staged):
            raise
        e.subject = str(out)
        raise


def _with_sidecars(staged: Path, out: Path, redundancy: float) -> None:
    """PAR2 sidecars for ``staged`` (named for ``out``: same name), then both put in place."""
    from archiver import par2

    old = par2.sidecar_files(out)
    par2.add_sidecar(staged, redundancy=redundancy)
    new = par2.sidecar_files(staged)
    os.replace(staged, out)
    for p in new:
        os.replace(p, out.with_name(p.name))
    names = {p.name for p in new}
    for stale in old:
        if stale.name not in names:
            with contextlib.suppress(OSError):
                stale.unlink()
