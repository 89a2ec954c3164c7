"""Serve the fixture site (testdata/site) over HTTP, for trying things by hand or from outside pytest.

    python tools/fixture_server.py [--host 127.0.0.1] [--port 0] [--root DIR] [--latency MS] [--no-range]
                                   [--robots FILE|off] [--status PATH=CODE ...]

The first line of stdout is the base URL (``http://127.0.0.1:PORT/``); then it serves until Ctrl-C or
SIGTERM and exits 0. A thin command line over :mod:`archiver.fixture`, whose docstring lists the routes
(``/_fixture/status/<code>``, ``/_fixture/redirect/chain/<n>``, ``/_fixture/redirect/loop``,
``/_fixture/slow?ms=N``) and the switches.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from pathlib import Path
from types import FrameType, ModuleType


def _fixture_module() -> ModuleType:
    try:
        return importlib.import_module("archiver.fixture")
    except ImportError:  # run from a checkout that was never installed
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        return importlib.import_module("archiver.fixture")


def _status_pair(text: str) -> tuple[str, int]:
    path, sep, code = text.rpartition("=")
    if not sep or not path.startswith("/") or not code.isdigit():
        raise argparse.ArgumentTypeError(f"expected PATH=CODE (e.g. /docs/=500), not {text!r}")
    return path, int(code)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fixture_server.py",
        description="Serve the archiver fixture site; prints the base URL on the first line of stdout.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default)")
    parser.add_argument("--root", type=Path, default=None, help="site directory (default: testdata/site)")
    parser.add_argument("--latency", type=float, default=0.0, metavar="MS", help="delay per response")
    parser.add_argument("--no-range", action="store_true", help="ignore Range headers; always answer 200")
    parser.add_argument(
        "--robots",
        default=None,
        metavar="FILE|off",
        help="serve FILE as /robots.txt, or 'off' for a 404 (default: the site's robots.txt)",
    )
    parser.add_argument(
        "--status",
        type=_status_pair,
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH=CODE",
        help="force a status code on a path, e.g. --status /docs/=500 /blog/=429",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    fixture = _fixture_module()
    options: dict[str, object] = {
        "latency": args.latency / 1000,
        "range": not args.no_range,
        "status": dict(args.status),
    }
    if args.root is not None:
        options["root"] = args.root
    if args.robots == "off":
        options["robots"] = None
    elif args.robots is not None:
        options["robots"] = Path(args.robots).read_text(encoding="utf-8")
    config = fixture.FixtureConfig(**options)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with fixture.FixtureServer(config, host=args.host, port=args.port) as server:
        print(server.url, flush=True)
        while not stop.wait(0.5):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
