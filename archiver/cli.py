"""The ``archiver`` command line: one thin function per command (parse, call the library, print).

Exit codes (also in README.md): 0 success; 1 an archiver error; 2 a usage error or a bad URL;
3 a tree or archive that breaks its format; 4 a capture failure; 5 a missing outside program;
70 a bug (with a traceback); 130 interrupted. Without ``--debug`` an error is one line on stderr:
``archiver: <input>: <what is wrong>``.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable, Sequence

from archiver import __version__
from archiver.errors import EXIT_BUG, ArchiverError, UsageError

__all__ = ["main"]

# Commands of the brief that have not landed yet, and the issue that brings each.
_PENDING = {
    "capture": ("render a site in Chromium and write the canonical tree", 7),
    "pack": ("pack a tree into a ZIM or gwtar file", 3),
    "serve": ("serve archives, ZIM entries and trees with HTTP Range", 8),
    "verify": ("check an archive's offsets, sizes, hashes and FEC tail", 3),
}


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
            print(json.dumps(row, ensure_ascii=False))
        else:
            print(f"{row['path']}\t{key}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from archiver.demo import run_demo

    return run_demo(out=args.out, serve=args.serve, as_json=args.json)


def _pending(name: str) -> Callable[[argparse.Namespace], int]:
    what, issue = _PENDING[name]

    def run(args: argparse.Namespace) -> int:
        raise UsageError(f"not implemented yet (it will {what}; tracked as issue {issue})", subject=name)

    return run


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="archiver",
        description="Turn websites into durable, self-contained archives and serve them back.",
    )
    parser.add_argument("--version", action="version", version=f"archiver {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser(
        "demo",
        help="serve the bundled demo site on 127.0.0.1 and run every stage that exists on it",
        description="Serve the bundled demo site on 127.0.0.1 and run every stage that exists on it.",
    )
    demo.add_argument("-o", "--out", default="out/demo", help="output folder (default: out/demo)")
    demo.add_argument("--serve", action="store_true", help="keep serving the site until Ctrl-C")
    demo.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    demo.set_defaults(func=_cmd_demo)

    mapping = sub.add_parser(
        "map",
        help="show where URLs land in a tree (canonical URL, dedup key, tree path)",
        description="Show the canonical URL, dedup key and tree path of each URL (formats/tree.md).",
    )
    mapping.add_argument("urls", nargs="+", metavar="URL")
    mapping.add_argument("--home", help="the tree's home URL; URLs are resolved against it")
    mapping.add_argument("--kind", choices=["auto", "page", "asset"], default="auto")
    mapping.add_argument("--json", action="store_true", help="one JSON object per URL")
    mapping.set_defaults(func=_cmd_map)

    for name, (what, issue) in _PENDING.items():
        p = sub.add_parser(name, help=f"(not implemented yet, issue {issue}) {what}", add_help=False)
        p.add_argument("rest", nargs=argparse.REMAINDER)
        p.set_defaults(func=_pending(name))
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
