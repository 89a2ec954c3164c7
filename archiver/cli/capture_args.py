"""The arguments of ``archiver capture`` (its seeds, scope, politeness, rendering, output and shared-crawl
options), added to its parser by :func:`archiver.cli.parser`'s ``_parser`` when the command is built."""

from __future__ import annotations

import argparse

from archiver.cli import argtypes

__all__ = ["add_arguments"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``archiver capture``'s arguments and groups to ``p``."""
    p.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    p.add_argument("-o", "--out", metavar="DIR", help="the tree's folder (required; resumed if it exists)")
    p.add_argument("--json", action="store_true", help="no progress; print the report as JSON")
    p.add_argument(
        "--progress-every",
        type=argtypes.seconds,
        default=30.0,
        metavar="SECONDS",
        help="when stderr is not a terminal (a log), print a plain progress line this often (30; 0: never)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--search-index",
        action="store_true",
        help="build the tree's search index and page at the end (default: on when rendering, off with "
        "--no-render or --state; archiver index TREE builds it later)",
    )
    g.add_argument(
        "--no-search-index",
        action="store_true",
        help="do not build the tree's search index and page at the end",
    )
    g = p.add_argument_group("seeds")
    g.add_argument("--seeds", metavar="FILE", help="a file of seed URLs, one per line")
    g.add_argument("--bookmarks", metavar="FILE", help="a browser bookmarks export (HTML) to take seeds from")
    g = p.add_argument_group("scope (which pages are followed)")
    g.add_argument("--depth", type=argtypes.count(0), default=3, help="link depth from the seeds (default 3)")
    g.add_argument(
        "--max-pages",
        type=argtypes.count(1),
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
        type=argtypes.words,
        action="append",
        default=[],
        metavar="WORDS",
        help="comma-separated path words whose pages go first under --max-pages (e.g. contact,about)",
    )
    g.add_argument(
        "--avoid",
        type=argtypes.words,
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
        type=argtypes.extensions,
        metavar="EXTS",
        help="comma-separated extensions never stored, replacing the default list of media and archives "
        '(formats/tree.md 6.3); "" stores every type',
    )
    g.add_argument(
        "--asset-cap",
        type=argtypes.count(0),
        default=25 << 20,
        metavar="BYTES",
        help="skip larger assets (25 MiB)",
    )
    g = p.add_argument_group("politeness and safety")
    g.add_argument(
        "--delay",
        type=argtypes.seconds,
        metavar="SECONDS",
        help="between requests to one host (default 1; a robots.txt Crawl-delay raises it)",
    )
    g.add_argument(
        "--concurrency",
        type=argtypes.count(1),
        default=12,
        metavar="N",
        help="requests at once, one a host (12)",
    )
    g.add_argument(
        "--timeout", type=argtypes.seconds, default=30, metavar="SECONDS", help="per request (default 30)"
    )
    g.add_argument(
        "--retries",
        type=argtypes.count(0),
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
        type=argtypes.allow_host,
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="allow this private host, on every port or on PORT only (the seeds' own origins always are)",
    )
    g = p.add_argument_group("rendering")
    g.add_argument("--no-render", action="store_true", help="fetch HTML without a browser (fast)")
    g.add_argument("--chromium", metavar="PATH", help="the Chromium executable (default: see README)")
    g.add_argument(
        "--tabs", type=argtypes.count(1), default=3, metavar="N", help="pages rendered at once (3)"
    )
    g.add_argument(
        "--settle",
        type=argtypes.seconds,
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
        type=argtypes.size,
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
    g.add_argument(
        "--new-version",
        action="store_true",
        help="capture the site again as a new version of the tree: the current state is kept as a "
        "version, pages gone from the site leave the folder (archiver diff, formats/history.md)",
    )
    g.add_argument(
        "--rerender",
        action="store_true",
        help="with --new-version or --refresh: fetch and render every page again, unchanged ones too "
        "(by default a page the server answers 304 Not Modified keeps its previous file)",
    )
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
        type=argtypes.seconds,
        default=30.0,
        metavar="SECONDS",
        help="a URL goes back to the others if this worker stops renewing it for this long (30)",
    )
    g.add_argument(
        "--status",
        action="store_true",
        help="print the whole crawl's progress (with --state, --crawl) and exit",
    )
