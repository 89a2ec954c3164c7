"""``archiver serve`` (gwtar files, ZIM files and trees over HTTP, or a server config), ``archiver
demo`` (the bundled demo site through every stage) and ``archiver map`` (where URLs land in a tree)."""

from __future__ import annotations

import argparse
from pathlib import Path

from archiver.cli.output import _print_json


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


def _cmd_demo(args: argparse.Namespace) -> int:
    from archiver.demo import run_demo

    return run_demo(out=args.out, serve=args.serve, as_json=args.json)


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
