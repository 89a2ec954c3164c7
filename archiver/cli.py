"""The ``archiver`` command line: one thin function per command (parse, call the library, print).

Exit codes (also in README.md): 0 success; 1 an archive, tree or manifest that is invalid, damaged
or hostile, not repairable, or another archiver error; 2 a usage error, a bad URL, an unreadable file,
or no FEC data; 4 a capture failure; 5 a missing outside program; 70 a bug (with a traceback);
130 interrupted. Without ``--debug`` an error is one line on stderr: ``archiver: <input>: <what>``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn

from archiver import __version__
from archiver.errors import EXIT_BUG, ArchiverError, UsageError
from archiver.progress import bytes_meter, wanted

__all__ = ["main"]


def _print_json(doc: Any) -> None:
    print(json.dumps(doc, ensure_ascii=False, default=str))


# ---------------------------------------------------------------------------------------------- map


def _cmd_map(args: argparse.Namespace) -> int:
    from archiver import urls

    home = urls.parse_seed(args.home) if args.home else None
    for text in args.urls:
        url = urls.canonicalize(text, home) if home else urls.parse_seed(text)
        key = urls.dedup_key(url)
        kind = args.kind if args.kind != "auto" else urls.guess_kind(key)
        row = {
            "input": text,
            "canonical": url,
            "dedup_key": key,
            "kind": kind,
            "path": urls.local_path(key, kind=kind, home=home or key),
        }
        if args.json:
            _print_json(row)
        else:
            print(f"{row['path']}\t{key}")
    return 0


# --------------------------------------------------------------------------------------------- demo


def _cmd_demo(args: argparse.Namespace) -> int:
    from archiver.demo import run_demo

    return run_demo(out=args.out, serve=args.serve, as_json=args.json)


# ------------------------------------------------------------------------------------------ capture


def _cmd_capture(args: argparse.Namespace) -> int:
    from archiver.capture import capture_main, status_main

    if args.status:
        if args.state is None:
            raise UsageError(
                "--status needs --state redis://HOST:PORT/DB and --crawl NAME", subject="capture"
            )
        return status_main(args.state, args.crawl, as_json=args.json)
    if args.out is None:
        raise UsageError("the following argument is required: -o/--out", subject="capture")
    if args.from_warc:
        from archiver.warc.importer import import_main

        # ``--from-warc A.warc URL`` reads as files and a seed: a URL never names a WARC file
        files = [p for p in args.from_warc if "://" not in p]
        seeds = [p for p in args.from_warc if "://" in p] + list(args.urls)
        return import_main(
            [Path(p) for p in files],
            seeds,
            Path(args.out),
            as_json=args.json,
            seeds_file=Path(args.seeds) if args.seeds else None,
            bookmarks=Path(args.bookmarks) if args.bookmarks else None,
            **capture_options(args),
        )
    return capture_main(
        args.urls,
        Path(args.out),
        as_json=args.json,
        seeds_file=Path(args.seeds) if args.seeds else None,
        bookmarks=Path(args.bookmarks) if args.bookmarks else None,
        **capture_options(args),
    )


def capture_options(args: argparse.Namespace) -> dict[str, object]:
    """The keyword arguments of :func:`archiver.capture.capture` that ``archiver capture``'s flags set."""
    return {
        "render": not args.no_render,
        "depth": args.depth,
        "max_pages": args.max_pages,
        "subdomains": args.subdomains,
        "scope_prefix": args.scope,
        "include": args.include,
        "exclude": args.exclude,
        "allow_domains": args.allow_domain,
        "prefer": [w for group in args.prefer for w in group],
        "avoid": [w for group in args.avoid for w in group],
        "assets_any_host": args.assets_any_host,
        "skip_extensions": args.skip_ext,
        "chromium": args.chromium,
        "delay": args.delay,
        "timeout": args.timeout,
        "asset_cap": args.asset_cap,
        "resume": not args.no_resume,
        "refresh": args.refresh,
        "ignore_robots": args.ignore_robots,
        "allow_private": args.allow_private,
        "allow_hosts": args.allow_host,
        "concurrency": args.concurrency,
        "tabs": args.tabs,
        "retries": args.retries,
        "settle": args.settle,
        "warc": args.warc,
        "warc_max_size": args.warc_max_size,
        "state": args.state,
        "crawl": args.crawl,
        "lease": args.lease,
    }


def _words(text: str) -> list[str]:
    """``contact,about`` → ``["contact", "about"]`` (blank items dropped)."""
    return [w.strip() for w in text.split(",") if w.strip()]


def _extensions(text: str) -> frozenset[str]:
    """``mp4,.ZIP`` → ``{".mp4", ".zip"}``; an empty text is the empty list (store every asset)."""
    out = set()
    for word in _words(text):
        ext = "." + word.lower().lstrip(".")
        if ext == "." or "/" in ext:
            raise argparse.ArgumentTypeError(f"not a file extension: {word!r}")
        out.add(ext)
    return frozenset(out)


def _allow_host(text: str) -> str:
    """``--allow-host HOST`` or ``HOST:PORT``, checked (any spelling of an address is allowed)."""
    from archiver.capture.fetch import HostRule
    from archiver.errors import URLError

    try:
        HostRule.parse(text)
    except URLError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _count(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        return value

    return parse


_SIZE_UNITS = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 1 << 10,
    "mi": 1 << 20,
    "gi": 1 << 30,
}


def _size(text: str) -> int:
    """An argparse type: a size in bytes, ``1G``/``1GB`` (10⁹), ``500M``, ``64MiB`` (2²⁰ units), ``4096``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", text.lower())
    if m is None or (m.group(2) or "") not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 1G, 500M or 4096, got {text!r}")
    value = int(float(m.group(1)) * _SIZE_UNITS[m.group(2) or ""])
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: the system picks a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, zero or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


# --------------------------------------------------------------------------------------------- pack


def _cmd_pack(args: argparse.Namespace) -> int:
    if args.format == "wacz":
        return _pack_wacz(args)
    if args.format == "gwtar" and (args.metadata or args.allow_incomplete):
        raise UsageError("ZIM metadata options and --allow-incomplete apply to --format zim", subject="pack")
    if args.format == "zim" and args.single_page:
        raise UsageError("--single-page applies to --format gwtar", subject="pack")
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
    if len(paths) != 1:
        raise UsageError("--format gwtar and zim pack one tree, gwtar, ZIM or HTML file, the shard"
                         " folders of one crawl, or WARC and WACZ files (several WARC files to a WACZ:"
                         " --format wacz)", subject="pack")  # fmt: skip
    return _pack_one(args, paths[0])


def _pack_one(args: argparse.Namespace, src: Path) -> int:
    """``pack`` of one tree, gwtar, ZIM or HTML file to gwtar or ZIM."""
    out = Path(args.out)
    if args.format == "gwtar":
        from archiver import gwtar

        fec = args.fec_redundancy / 100 if args.add_fec_data else None
        with bytes_meter(f"pack {out.name}", show=wanted(as_json=args.json)) as meter:
            result = _writing(
                lambda: gwtar.pack(
                    src, out, main=args.main, single_page=args.single_page, fec=fec, progress=meter
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
        from archiver import zim

        with bytes_meter(f"pack {out.name}", show=wanted(as_json=args.json)) as meter:
            result_zim = _writing(
                lambda: zim.pack(
                    src,
                    out,
                    metadata=dict(args.metadata or []),
                    allow_incomplete=args.allow_incomplete,
                    main=args.main,
                    progress=meter,
                ),
                out,
            )
        doc = {
            "format": "zim",
            "path": str(result_zim.path),
            "size": result_zim.size,
            "entries": result_zim.entries,
            "redirects": result_zim.redirects,
            "main": result_zim.main,
            "warnings": result_zim.warnings,
            "skipped": [{"path": p, "reason": r} for p, r in result_zim.skipped],
        }
        for path, reason in result_zim.skipped:
            print(f"archiver: {out}: left out {path}: {reason}", file=sys.stderr)
        if not args.json:
            for line in result_zim.warnings:
                print(f"archiver: {out}: {line}", file=sys.stderr)
        if args.add_fec_data:
            from archiver import par2

            par2.add_sidecar(result_zim.path, redundancy=args.fec_redundancy / 100)
            doc["fec_sidecars"] = [str(p) for p in par2.sidecar_files(result_zim.path)]
    if args.json:
        _print_json(doc)
    else:
        extra = f", FEC {args.fec_redundancy:g} %" if args.add_fec_data else ""
        print(f"{doc['path']}: {doc['size']} bytes ({args.format}{extra}), main page {doc['main']}")
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from archiver.merge import merge

    out = Path(args.out)
    result = _writing(lambda: merge([Path(p) for p in args.shards], out), out)
    doc = {
        "path": str(result.path),
        "shards": result.shards,
        "pages": result.pages,
        "assets": result.assets,
        "files": result.files,
        "duplicates": result.duplicates,
        "relinked": result.relinked,
        "complete": result.complete,
    }
    if args.json:
        _print_json(doc)
    else:
        dup = f", {result.duplicates} stored twice (the last fetch kept)" if result.duplicates else ""
        print(
            f"{result.path}: merged {result.shards} shards: {result.pages} pages, {result.assets} assets"
            f" ({result.files} files{dup}); {result.relinked} documents relinked"
            + ("" if result.complete else "; INCOMPLETE: some shard has work pending")
        )
    return 0


def _pack_wacz(args: argparse.Namespace) -> int:
    from archiver.warc import wacz

    if (args.metadata or args.allow_incomplete or args.single_page or args.add_fec_data or args.main
            or args.no_render or args.chromium):  # fmt: skip
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


def _metadata_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


# ------------------------------------------------------------------------------ verify, ls, extract


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
    from archiver.detect import kind_of

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


_NO_CHECK_HELP = "ZIM: skip the MD5 checksum (a read of the whole file); the structure is always checked"


def _zim_check(args: argparse.Namespace) -> Literal["full", "structure"]:
    return "structure" if args.no_check else "full"


def _encodable(*texts: str | None) -> bool:
    try:
        for text in texts:
            (text or "").encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_UNPRINTABLE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(text: str) -> str:
    """``text`` on one line: control characters, backslashes and bytes that are not UTF-8 as escapes."""
    return _UNPRINTABLE.sub(_escape_one, text)


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


def _writing(run: Callable[[], Any], out: Path) -> Any:
    """``run()``, with a failed write (a full disk, an I/O error) as one error line (exit 1)."""
    from archiver import safefs

    try:
        return run()
    except OSError as e:
        raise safefs.io_error(e, str(out), "while writing") from None


# ------------------------------------------------------------------------------------ repair, serve


def _cmd_repair(args: argparse.Namespace) -> int:
    from archiver.par2 import repair_main

    return _writing(lambda: repair_main(args.file, args.out, as_json=args.json), Path(args.out or args.file))


def _cmd_serve(args: argparse.Namespace) -> int:
    from archiver import serve
    from archiver.serve.policy import Limits

    limits = Limits(
        args.header_timeout, args.keep_alive_timeout, args.max_connections, send_timeout=args.send_timeout
    )
    if args.print_config:
        paths = [Path(p) for p in args.paths]
        text = serve.print_config(
            args.print_config, paths, gwtar_mime=args.gwtar_mime, domain=args.domain, limits=limits,
            allow_live=args.allow_live,
        )  # fmt: skip
        print(text)
        return 0
    return serve.serve(
        [Path(p) for p in args.paths],
        host=args.host,
        port=args.port,
        gwtar_mime=args.gwtar_mime,
        quiet=args.quiet,
        workers=args.workers,
        limits=limits,
        allow_live=args.allow_live,
        domain=args.domain,
    )


# ------------------------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse with archiver's error form: one line, ``archiver: <command> <option>: <what is
    wrong>`` and a pointer to ``--help``, exit 2 (not the usage block and ``error: argument …``)."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("archiver").strip()
        named = re.match(r"argument ([^:]+): (.*)", message, re.S)
        required = re.match(r"the following arguments are required: (.*)", message, re.S)
        if named:
            subject = f"{where} {named.group(1).split('/')[-1]}".strip()
            message = named.group(2)
        elif required:
            subject, message = where, f"missing {required.group(1)}"
        else:
            subject = where
        message = " ".join(message.split())
        hint = " ".join(["archiver", *where.split(), "--help"])
        line = f"{subject}: {message}" if subject else message
        self.exit(UsageError.exit_code, f"archiver: {line} (see {hint})\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="archiver",
        description="Turn websites into durable, self-contained archives and serve them back.",
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def command(name: str, text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")

    p = command("demo", "serve the bundled demo site on 127.0.0.1 and run every stage on it")
    p.add_argument("-o", "--out", default="out/demo", help="output folder (default: out/demo)")
    p.add_argument("--serve", action="store_true", help="keep serving the site until Ctrl-C")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=_cmd_demo)

    p = command("capture", "render a site in Chromium and write its canonical mirror tree")
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    p.add_argument("-o", "--out", help="the tree's folder (resumed if it exists; required)")
    p.add_argument("--json", action="store_true", help="no progress; print the report as JSON")
    g = p.add_argument_group("seeds")
    g.add_argument("--seeds", metavar="FILE", help="a file of seed URLs, one per line")
    g.add_argument("--bookmarks", metavar="FILE", help="a browser bookmarks export (HTML) to take seeds from")
    g = p.add_argument_group("scope (which pages are followed)")
    g.add_argument("--depth", type=_count(0), default=3, help="link depth from the seeds (default 3)")
    g.add_argument(
        "--max-pages",
        type=_count(1),
        metavar="N",
        help="store at most this many pages (with --state: for the whole crawl, all workers together)",
    )
    g.add_argument("--subdomains", action="store_true", help="follow pages on the seed's registrable domain")
    g.add_argument(
        "--allow-domain",
        action="append",
        default=[],
        metavar="DOMAIN",
        help="also follow DOMAIN, subdomains too",
    )
    g.add_argument("--include", action="append", default=[], metavar="PREFIX", help="only pages under PREFIX")
    g.add_argument("--scope", metavar="PREFIX", help="the same as one --include")
    g.add_argument("--exclude", action="append", default=[], metavar="PREFIX", help="skip pages under PREFIX")
    g.add_argument(
        "--prefer",
        type=_words,
        action="append",
        default=[],
        metavar="WORDS",
        help="comma-separated path words whose pages go first under --max-pages (e.g. contact,about)",
    )
    g.add_argument(
        "--avoid",
        type=_words,
        action="append",
        default=[],
        metavar="WORDS",
        help="comma-separated path words whose pages go last (wins over --prefer; e.g. blog,login,cart)",
    )
    g = p.add_argument_group("assets")
    g.add_argument(
        "--assets-any-host", action="store_true", help="store assets from any host (default: the seed's site)"
    )
    g.add_argument(
        "--skip-ext",
        type=_extensions,
        metavar="EXTS",
        help="comma-separated extensions never stored, replacing the default list of media and archives "
        '(formats/tree.md 6.3); "" stores every type',
    )
    g.add_argument(
        "--asset-cap",
        type=_count(0),
        default=25 << 20,
        metavar="BYTES",
        help="skip larger assets (25 MiB)",
    )
    g = p.add_argument_group("politeness and safety")
    g.add_argument(
        "--delay",
        type=_seconds,
        metavar="SECONDS",
        help="between requests to one host (default 1; a robots.txt Crawl-delay raises it)",
    )
    g.add_argument(
        "--concurrency",
        type=_count(1),
        default=12,
        metavar="N",
        help="requests at once, one a host (12)",
    )
    g.add_argument("--timeout", type=_seconds, default=30, metavar="SECONDS", help="per request (default 30)")
    g.add_argument(
        "--retries",
        type=_count(0),
        default=3,
        metavar="N",
        help="retries on 5xx, network error (3)",
    )
    g.add_argument("--ignore-robots", action="store_true", help="do not obey robots.txt")
    g.add_argument(
        "--allow-private",
        action="store_true",
        help="allow hosts on loopback, private and link-local addresses (the seeds' own origins always are)",
    )
    g.add_argument(
        "--allow-host",
        type=_allow_host,
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="allow this private host, on every port or on PORT only (the seeds' own origins always are)",
    )
    g = p.add_argument_group("rendering")
    g.add_argument("--no-render", action="store_true", help="fetch HTML without a browser (fast)")
    g.add_argument("--chromium", metavar="PATH", help="the Chromium executable (default: see README)")
    g.add_argument("--tabs", type=_count(1), default=3, metavar="N", help="pages rendered at once (3)")
    g.add_argument(
        "--settle",
        type=_seconds,
        default=1.5,
        metavar="SECONDS",
        help="settle wait at most (1.5)",
    )
    g = p.add_argument_group("WARC (formats/warc.md 7)")
    g.add_argument(
        "--warc",
        action="store_true",
        help="also record every HTTP exchange (the browser's too) as WARC/1.1 in _archiver/warc/",
    )
    g.add_argument(
        "--warc-max-size",
        type=_size,
        default=10**9,
        metavar="SIZE",
        help="start a new WARC file past this size (default 1G; 500M, 64MiB …)",
    )
    g = p.add_argument_group("import (formats/warc.md 8)")
    g.add_argument(
        "--from-warc",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE",
        help="build the tree from the records of these WARC or WACZ files, never the network; "
        "seeds: the URLs given, else the WACZ pages, else the first WARC's first HTML page",
    )
    g = p.add_argument_group("resuming")
    g.add_argument("--refresh", action="store_true", help="fetch everything again (keeps the tree)")
    g.add_argument("--no-resume", action="store_true", help="start over: remove the previous capture's files")
    g = p.add_argument_group("many workers (formats/crawl-state.md 6)")
    g.add_argument(
        "--state",
        metavar="redis://HOST:PORT/DB",
        help="share the crawl's frontier in Redis: run this on any number of machines, one -o each; "
        "Ctrl-C or SIGTERM stops a worker, its URLs going back to the others at once (exit 130)",
    )
    g.add_argument("--crawl", metavar="NAME", help="the shared crawl's name (with --state)")
    g.add_argument(
        "--lease",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="a URL goes back to the others if this worker stops renewing it for this long (30)",
    )
    g.add_argument(
        "--status",
        action="store_true",
        help="print the whole crawl's progress (with --state, --crawl) and exit",
    )
    p.set_defaults(func=_cmd_capture)

    p = command(
        "pack", "pack a tree, gwtar, ZIM or SingleFile page into a ZIM or gwtar file; WARCs into a WACZ"
    )
    p.add_argument(
        "path",
        nargs="+",
        help="a tree folder, .gwtar.html, .zim, or SingleFile .html; WARC or WACZ files (imported "
        "first: formats/warc.md 8); wacz: WARC files",
    )
    p.add_argument("--format", choices=["gwtar", "zim", "wacz"], required=True)
    p.add_argument("-o", "--out", required=True, help="the output file")
    p.add_argument("--main", help="the main page (a tree path)")
    p.add_argument("--single-page", action="store_true", help="gwtar: only the main page and its assets")
    p.add_argument("--add-fec-data", action="store_true", help="add PAR2 recovery data (formats/fec.md)")
    p.add_argument("--fec-redundancy", type=float, default=10.0, metavar="PCT", help="default 10")
    p.add_argument("--allow-incomplete", action="store_true", help="zim: pack an unfinished capture")
    p.add_argument("--no-render", action="store_true", help="WARC/WACZ input: import without Chromium")
    p.add_argument("--chromium", metavar="PATH", help="WARC/WACZ input: the Chromium that renders")
    p.add_argument(
        "--metadata",
        action="append",
        type=_metadata_pair,
        metavar="NAME=VALUE",
        help="zim metadata (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_pack)

    p = command("merge", "merge the shard folders of one crawl's workers into one capture tree")
    p.add_argument("shards", nargs="+", metavar="SHARD", help="capture folders of one crawl")
    p.add_argument("-o", "--out", required=True, help="the merged tree (a new or empty folder)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_merge)

    p = command("verify", "check archives: offsets, sizes, hashes, tar structure, links, FEC data")
    p.add_argument("archives", nargs="+", metavar="ARCHIVE")
    p.add_argument("-r", "--recursive", action="store_true", help="verify every archive in folders")
    p.add_argument(
        "--strict", action="store_true", help="count warnings (metadata style, no checksum …) as problems"
    )
    p.add_argument("--json", action="store_true", help="print the reports as JSON")
    p.add_argument(
        "--no-links",
        action="store_true",
        help="integrity only: leave out the check of internal links (trees, gwtar, ZIM)",
    )
    p.set_defaults(func=_cmd_verify)

    p = command("ls", "list the members of a gwtar, the entries of a ZIM or the records of a WARC or WACZ")
    p.add_argument("archive")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--no-check", action="store_true", help=_NO_CHECK_HELP)
    p.set_defaults(func=_cmd_ls)

    p = command("extract", "extract a gwtar or ZIM into a tree, safely")
    p.add_argument("archive")
    p.add_argument("-o", "--out", required=True, help="the folder to extract into")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder, replacing files")
    p.add_argument("--no-check", action="store_true", help=_NO_CHECK_HELP)
    p.add_argument(
        "--keep-symlinks",
        action="store_true",
        help="gwtar: extract link members too (only those that resolve inside the folder)",
    )
    p.set_defaults(func=_cmd_extract)

    p = command("repair", "repair a file from its PAR2 recovery data")
    p.add_argument("file")
    p.add_argument("-o", "--out", help="write the repaired file here instead of in place")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_cmd_repair)

    p = command("serve", "serve gwtar files, ZIM files and trees with correct HTTP Range")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--gwtar-mime", default="text/html", help="media type for gwtar files (or x-gwtar)")
    p.add_argument("--print-config", choices=["nginx", "caddy"], help="print a server config and exit")
    p.add_argument("--quiet", action="store_true", help="no access log")
    p.add_argument("--workers", type=int, default=1, help="server processes sharing the port (default 1)")
    p.add_argument("--domain", default="localhost", help="each archive at <name>.DOMAIN (default localhost)")
    p.add_argument("--allow-live", action="store_true", help="let archived pages load from the live web")
    p.add_argument("--header-timeout", type=float, default=30.0, help="seconds to send a header (30)")
    p.add_argument("--keep-alive-timeout", type=float, default=75.0, help="idle seconds allowed (75)")
    p.add_argument("--max-connections", type=int, default=1024, help="open connections at most (1024)")
    p.add_argument("--send-timeout", type=float, default=60.0, help="seconds a response may stall (60)")
    p.set_defaults(func=_cmd_serve)

    p = command("map", "show where URLs land in a tree (canonical URL, dedup key, tree path)")
    p.add_argument("urls", nargs="+", metavar="URL")
    p.add_argument("--home", help="the tree's home URL; URLs are resolved against it")
    p.add_argument("--kind", choices=["auto", "page", "asset"], default="auto")
    p.add_argument("--json", action="store_true", help="one JSON object per URL")
    p.set_defaults(func=_cmd_map)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except ArchiverError as e:
        if args.debug:
            traceback.print_exc()
        print(f"archiver: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("archiver: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception:
        traceback.print_exc()
        print(f"archiver {__version__}: internal error, a bug: please report it with the traceback above",
              file=sys.stderr)  # fmt: skip
        return EXIT_BUG
