"""The ``archiver`` argument parser: every command and its flags, usage errors as one line. The types
that check flag values are :mod:`archiver.cli.argtypes`; ``capture``'s many options are
:mod:`archiver.cli.capture_args`.

Each command's function is named by its module and imported when the command runs (:func:`_command`):
``archiver --help`` and a usage error import no command module. A run builds the arguments of its
own command only (:func:`command_of`): the whole parser is ~90 arguments, a few tens of ms at every
start.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import NoReturn, cast

from archiver import __version__
from archiver.cli import argtypes, capture_args
from archiver.errors import UsageError

# ------------------------------------------------------------------------------------------- parser

#: The examples at the end of each command's ``--help`` (tests/test_cli.py runs the first of each
#: command's usage shape where it can).
EXAMPLES: dict[str, list[str]] = {
    "demo": ["archiver demo                      # capture, pack and verify the bundled site in out/demo/",
             "archiver demo --serve              # then keep serving it until Ctrl-C"],
    "capture": ["archiver capture https://example.org/ -o site/",
                "archiver capture https://example.org/docs/ -o docs/ --no-render --depth 5 --max-pages 500",
                "archiver capture https://example.org/ -o site/ --warc      # also record WARC/1.1",
                "archiver capture --from-warc crawl.warc.gz -o site/       # no network: from the records",
                "archiver capture https://ex.org/ -o shard1/ --state redis://127.0.0.1:6379/0 --crawl x"],
    "pack": ["archiver pack site/ --format gwtar -o site.gwtar.html --add-fec-data",
             "archiver pack site/ --format zim -o site.zim --metadata Language=eng",
             "archiver pack site/ --format wacz -o site.wacz            # a capture made with --warc",
             "archiver pack crawl.warc.gz --format zim -o crawl.zim     # import, then pack"],
    "merge": ["archiver merge shard1/ shard2/ shard3/ -o site/"],
    "verify": ["archiver verify site.gwtar.html site.zim site/",
               "archiver verify -r archives/ --junit verify.xml    # every archive in a folder, for CI"],
    "ls": ["archiver ls site.zim", "archiver ls crawl.warc.gz --json", "archiver ls site/ --versions"],
    "extract": ["archiver extract site.gwtar.html -o copy/",
                "archiver extract site/ --version 2026-11-30 -o site-november/"],
    "diff": ["archiver diff site/", "archiver diff site/ --from 2026-11-01 --to 2026-12-01 --text"],
    "repair": ["archiver repair site.gwtar.html", "archiver repair site.gwtar.html -o repaired.gwtar.html"],
    "serve": ["archiver serve site.gwtar.html site.zim site/ --port 8000",
              "archiver serve site.zim --print-config nginx > archiver.conf"],
    "map": ["archiver map --home https://example.org/ /docs '/img/logo.png?v=3'"],
    "index": ["archiver index site/                  # writes site/_archiver/search/ (open its index.html)"],
    "search": ["archiver search site/ -q 'install guide'",
               "archiver search site/ docs/ -q '\"exact phrase\"' --json --limit 20 --offset 20"],
}  # fmt: skip


_NO_CHECK_HELP = "ZIM: skip the MD5 checksum (a read of the whole file); the structure is always checked"


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The command function ``name`` of ``archiver.cli.<module>``, imported when the command runs."""

    def run(args: argparse.Namespace) -> int:
        command: Callable[[argparse.Namespace], int] = getattr(import_module(f"archiver.cli.{module}"), name)
        return command(args)

    return run


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


def _columns() -> int:
    """The terminal's width as argparse's help formatter finds it (``shutil.get_terminal_size``: a
    positive ``COLUMNS``, else stdout's terminal, else 80), without importing shutil (and bz2 and
    lzma with it): every argument a parser is given makes a formatter, so a capture imported them."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # no stdout, closed, detached, not a terminal
            columns = 0
        columns = columns or 80
    return columns


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, with the width found by :func:`_columns`."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        width = _columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _RawFormatter(_Formatter, argparse.RawDescriptionHelpFormatter):
    """argparse's formatter that keeps a description's and an epilog's lines, as :class:`_Formatter`."""


class _Unbuilt:
    """The parser of a command the run does not run (:func:`_parser`'s ``only``): its arguments,
    groups and defaults are not built (every call is a no-op)."""

    def __getattr__(self, name: str) -> Callable[..., _Unbuilt]:
        return self._nothing

    def _nothing(self, *args: object, **kwargs: object) -> _Unbuilt:
        return self


_UNBUILT = cast(argparse.ArgumentParser, _Unbuilt())


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs when nothing but ``--debug`` comes before its name, else None (no
    command, an unknown one, or ``--help``, ``--version`` or an abbreviation before it: the whole
    parser answers those, as it always did)."""
    for word in argv:
        if word != "--debug":
            return word if word in EXAMPLES else None
    return None


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """archiver's parser; ``only``: a command's name (:func:`command_of`): the other commands are
    left out, which changes nothing for a command line that runs ``only``."""
    parser = _Parser(
        prog="archiver",
        formatter_class=_Formatter,
        description="Turn websites into durable, self-contained archives and serve them back.",
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    def command(name: str, text: str, usage: str | None = None) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _UNBUILT
        return sub.add_parser(
            name,
            help=text,
            description=text[0].upper() + text[1:] + ".",
            epilog="examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name]),
            formatter_class=_RawFormatter,
            usage=usage,
        )

    p = command("demo", "serve the bundled demo site on 127.0.0.1 and run every stage on it")
    p.add_argument("-o", "--out", default="out/demo", help="output folder (default: out/demo)")
    p.add_argument("--serve", action="store_true", help="keep serving the site until Ctrl-C")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=_command("serve", "_cmd_demo"))

    p = command(
        "capture",
        "render a site in Chromium and write its canonical mirror tree",
        usage="archiver capture URL... -o DIR [options]\n"
        "       archiver capture --from-warc FILE... -o DIR [URL...] [options]\n"
        "       archiver capture --state redis://HOST:PORT/DB --crawl NAME --status",
    )
    capture_args.add_arguments(p)
    p.set_defaults(func=_command("capture", "_cmd_capture"))

    p = command(
        "pack", "pack a tree, gwtar, ZIM or SingleFile page into a ZIM or gwtar file; WARCs into a WACZ"
    )
    p.add_argument(
        "path",
        nargs="+",
        help="a tree folder, .gwtar.html, .zim, or SingleFile .html; WARC or WACZ files (imported "
        "first: formats/warc.md 8); wacz: WARC files",
    )
    p.add_argument(
        "--format",
        choices=["gwtar", "zim", "wacz"],
        required=True,
        help="gwtar: one .gwtar.html that opens in any browser from disk, every page and asset inside "
        "(formats/gwtar.md); zim: a ZIM file for Kiwix and other openZIM readers, with their full-text "
        "search (formats/zim.md); wacz: the WARC records of a --warc capture (or WARC files) as a WACZ "
        "for ReplayWeb.page and pywb (formats/warc.md)",
    )
    p.add_argument("-o", "--out", required=True, help="the output file")
    p.add_argument("--main", metavar="PATH", help="the page to open first, a tree path (default: index.html)")
    p.add_argument("--single-page", action="store_true", help="gwtar: only the main page and its assets")
    p.add_argument(
        "--all-versions",
        action="store_true",
        help="gwtar: every version of a versioned tree in one file, each file's bytes once "
        "(formats/gwtar.md §13)",
    )
    p.add_argument(
        "--version",
        metavar="DATE",
        help="gwtar, zim: pack the version of a versioned tree in force at DATE (a version id, "
        "YYYY-MM-DD, or a time; formats/history.md); a ZIM's Date is then that version's day",
    )
    p.add_argument("--add-fec-data", action="store_true", help="add PAR2 recovery data (formats/fec.md)")
    p.add_argument("--fec-redundancy", type=float, default=10.0, metavar="PCT", help="default 10")
    p.add_argument("--allow-incomplete", action="store_true", help="zim: pack an unfinished capture")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--search-index",
        action="store_true",
        help="gwtar, zim: build the search index and search page (_archiver/search/, formats/search.md) "
        "when the tree has none (about 25 ms of CPU a page); a tree indexed by `archiver index` carries "
        "its index without this flag",
    )
    g.add_argument(
        "--no-search-index",
        action="store_true",
        help="gwtar, zim: leave out the tree's search index and search page even when it has one",
    )
    p.add_argument("--no-render", action="store_true", help="WARC/WACZ input: import without Chromium")
    p.add_argument("--chromium", metavar="PATH", help="WARC/WACZ input: the Chromium that renders")
    p.add_argument(
        "--metadata",
        action="append",
        type=argtypes.metadata_pair,
        metavar="NAME=VALUE",
        help="zim metadata (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_command("pack", "_cmd_pack"))

    p = command("merge", "merge the shard folders of one crawl's workers into one capture tree")
    p.add_argument("shards", nargs="+", metavar="SHARD", help="capture folders of one crawl")
    p.add_argument("-o", "--out", required=True, help="the merged tree (a new or empty folder)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_command("capture", "_cmd_merge"))

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
    p.add_argument(
        "--junit",
        metavar="FILE",
        help="also write a JUnit XML report (one test case per archive) for CI to show",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=argtypes.count(0),
        default=0,
        metavar="N",
        help="archives checked at once (default 0: every core when they add up to 64 MiB or more, else one "
        "by one); reports stay in the order given",
    )
    p.set_defaults(func=_command("readers", "_cmd_verify"))

    p = command("ls", "list the members of a gwtar, the entries of a ZIM or the records of a WARC or WACZ")
    p.add_argument("archive")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument(
        "--versions",
        action="store_true",
        help="a tree or an --all-versions gwtar: list its versions (formats/history.md)",
    )
    p.add_argument(
        "--version",
        metavar="DATE",
        help="a tree or an --all-versions gwtar: list the files of the version in force at DATE "
        "(a version id, YYYY-MM-DD, or a time)",
    )
    p.add_argument("--no-check", action="store_true", help=_NO_CHECK_HELP)
    p.set_defaults(func=_command("readers", "_cmd_ls"))

    p = command("extract", "extract a gwtar or ZIM into a tree, safely")
    p.add_argument("archive")
    p.add_argument("-o", "--out", required=True, help="the folder to extract into")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder, replacing files")
    p.add_argument("--no-check", action="store_true", help=_NO_CHECK_HELP)
    p.add_argument(
        "--version",
        metavar="DATE",
        help="a tree or an --all-versions gwtar: write the version in force at DATE (a version id, "
        "YYYY-MM-DD, or a time) as a plain tree (formats/history.md)",
    )
    p.add_argument(
        "--keep-symlinks",
        action="store_true",
        help="gwtar: extract link members too (only those that resolve inside the folder)",
    )
    p.set_defaults(func=_command("readers", "_cmd_extract"))

    p = command("repair", "repair a file from its PAR2 recovery data")
    p.add_argument("file")
    p.add_argument("-o", "--out", help="write the repaired file here instead of in place")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_command("readers", "_cmd_repair"))

    p = command("serve", "serve gwtar files, ZIM files and trees with correct HTTP Range")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=argtypes.port, default=8000, help="port (default 8000; 0 picks a free one)")
    p.add_argument("--gwtar-mime", default="text/html", help="media type for gwtar files (or x-gwtar)")
    p.add_argument("--print-config", choices=["nginx", "caddy"], help="print a server config and exit")
    p.add_argument("--quiet", action="store_true", help="no access log")
    p.add_argument(
        "--workers",
        # below 1: serve's own error (its API's callers get it)
        type=argtypes.count(None, argtypes.MAX_WORKERS),
        default=1,
        help=f"server processes sharing the port (default 1, at most {argtypes.MAX_WORKERS})",
    )
    p.add_argument("--domain", default="localhost", help="each archive at <name>.DOMAIN (default localhost)")
    p.add_argument("--allow-live", action="store_true", help="let archived pages load from the live web")
    p.add_argument("--header-timeout", type=float, default=30.0, help="seconds to send a header (30)")
    p.add_argument("--keep-alive-timeout", type=float, default=75.0, help="idle seconds allowed (75)")
    p.add_argument("--max-connections", type=int, default=1024, help="open connections at most (1024)")
    p.add_argument("--send-timeout", type=float, default=60.0, help="seconds a response may stall (60)")
    p.set_defaults(func=_command("serve", "_cmd_serve"))

    p = command("map", "show where URLs land in a tree (canonical URL, dedup key, tree path)")
    p.add_argument("urls", nargs="+", metavar="URL")
    p.add_argument("--home", help="the tree's home URL; URLs are resolved against it")
    p.add_argument("--kind", choices=["auto", "page", "asset"], default="auto")
    p.add_argument("--json", action="store_true", help="one JSON object per URL")
    p.set_defaults(func=_command("serve", "_cmd_map"))

    # history (formats/history.md): what changed between two versions of a tree
    if only in (None, "diff"):
        from archiver.cli.history import add_arguments as add_history

        add_history(command, _command("history", "_cmd_diff"))

    # search (formats/search.md): a tree's index and the command-line query
    p = command("index", "build a tree's search index and search page (_archiver/search/)")
    p.add_argument(
        "tree",
        metavar="TREE",
        help="a canonical tree (capture folder); or a gwtar or ZIM packed without an index: its index "
        "goes beside it, ARCHIVE.search/ (the archive is not changed)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_command("search", "_cmd_index"))

    p = command(
        "search",
        "search the text of archives and rank the pages of all of them together (an archive whose "
        "index is damaged is named on stderr and left out, the others answer: exit 1)",
    )
    p.add_argument(
        "archives",
        nargs="+",
        metavar="ARCHIVE",
        help="trees (their index, or one built in memory), gwtar and ZIM files (the index packed in them)",
    )
    p.add_argument(
        "-q", "--query", required=True, help='words, "quoted phrases"; the last word is also a prefix'
    )
    p.add_argument(
        "--limit", type=argtypes.count(1), default=10, metavar="N", help="results shown (default 10)"
    )
    p.add_argument(
        "--offset", type=argtypes.count(0), default=0, metavar="N", help="results skipped first (default 0)"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=_command("search", "_cmd_search"))
    return parser
