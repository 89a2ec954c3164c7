"""Capture: render pages in Chromium, fetch their assets, write the canonical tree (formats/tree.md).

The stages, one module each (data flows down):

- :mod:`.seeds` — seed URLs from the command line, a seeds file or a bookmarks export;
- :mod:`.crawl` — the scheduling: frontier loop, the run's set-up and end; :mod:`.options` its
  options, :mod:`.report` its report, :mod:`.progress` its progress line, :mod:`.interrupt` its
  event loop and the signals that stop it;
- :mod:`.page`, :mod:`.stage` — the page and asset stages (and the end of every URL),
  :mod:`.redirects` the stubs, :mod:`.budget` the page budget, :mod:`.responses` what was fetched;
  each takes a :class:`.context.Context`, never the crawl loop (tests/capture/test_seams.py);
- :mod:`.crawlstate` — the crawl state's interface (formats/crawl-state.md); :mod:`.state` its
  SQLite implementation, the resume state ``_archiver/crawl.sqlite``; the package :mod:`.redis` the
  state many workers share (the frontier in Redis, scripts in :mod:`.redis.lua`, the page budget's
  worker side in :mod:`.redis.budget`, each shard in SQLite);
  :mod:`.politeness` the hook that makes host clocks and robots.txt crawl-wide;
- :mod:`.transport` — where responses come from; :mod:`.fetch` the live network, the one network
  path: politeness, robots.txt, retries, size caps (:mod:`.fetched` what a fetch is given and gives
  back, and its pure decisions; :mod:`.turns` a host's turn); :mod:`.guard` its address guard;
- :mod:`.linker`, :mod:`.treepaths`, :mod:`.writer`, :mod:`.relink` — a document's references, tree
  paths and their clash rules, atomic writes, the end-of-crawl relinking;
- :mod:`.render` — Chromium via Playwright, every request routed through the fetcher;
- :mod:`.rewrite_html` — pure HTML rewriting (CSS through :mod:`archiver.css_refs`, srcset through
  :mod:`archiver.srcset`); :mod:`.policy` — the one reference decision (pure); :mod:`.robots`,
  :mod:`.textcodec` — pure helpers;
- :mod:`.browser` — finding and launching Chromium.

:func:`capture` is the library entry point and :func:`capture_main` its command-line shape.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from archiver.capture.crawl import run_capture
from archiver.capture.fetch import Resolver
from archiver.capture.options import CaptureOptions
from archiver.capture.report import CaptureReport, Item, report_line
from archiver.capture.transport import TransportFactory
from archiver.errors import EXIT_PARTIAL, ArchiverError, CaptureError, UsageError

if TYPE_CHECKING:
    from collections.abc import Callable

    from archiver.tree import Header, Record

__all__ = ["CaptureOptions", "CaptureReport", "Item", "capture", "capture_main", "status_main"]


def capture(
    seeds: list[str],
    out: Path,
    *,
    render: bool = True,
    depth: int = 3,
    max_pages: int | None = None,
    subdomains: bool = False,
    scope_prefix: str | None = None,
    exclude: list[str] = [],  # noqa: B006 (the lead's contract; never mutated)
    chromium: str | None = None,
    delay: float | None = None,
    timeout: float = 30,
    asset_cap: int = 25 << 20,
    resume: bool = True,
    as_json: bool = False,
    allow_hosts: list[str] = [],  # noqa: B006
    include: list[str] | None = None,
    allow_domains: list[str] | None = None,
    prefer: list[str] | None = None,
    avoid: list[str] | None = None,
    assets_any_host: bool = False,
    skip_extensions: frozenset[str] | None = None,
    ignore_robots: bool = False,
    allow_private: bool = False,
    refresh: bool = False,
    refresh_mark: str | None = None,
    rerender: bool = False,
    revalidate: bool = False,
    concurrency: int = 12,
    tabs: int = 3,
    retries: int = 3,
    backoff: float = 0.5,
    max_retry_after: float = 60.0,
    settle: float = 1.5,
    progress: bool | None = None,
    progress_every: float = 30.0,
    search_index: bool | None = None,
    resolver: Resolver | None = None,
    network_backend: Any = None,
    seed_info: dict[str, tuple[str | None, str | None]] | None = None,
    warc: bool = False,
    warc_max_size: int = 1_000_000_000,
    transport: TransportFactory | None = None,
    final_manifest: Callable[[Header, list[Record]], None] | None = None,
    state: str | None = None,
    crawl: str | None = None,
    lease: float = 30.0,
) -> CaptureReport:
    """Capture ``seeds`` into the canonical tree ``out`` and return the report.

    Scope: pages on a seed's host (``subdomains``: its registrable domain; ``allow_domains``: those
    domains and their subdomains too), under ``scope_prefix`` / any ``include`` prefix and no
    ``exclude`` prefix, at most ``depth`` links from a seed, at most ``max_pages`` pages (frontier
    ordered by ``prefer`` / ``avoid`` keywords in the path; avoid wins; with ``state``, for the
    whole crawl: formats/crawl-state.md §6.8). Assets: on a seed's
    registrable domain unless ``assets_any_host``, not on the skip list (``skip_extensions``, default
    tree.md §6.3), at most ``asset_cap`` bytes (larger ones are skipped, never truncated). Pages have a
    cap of their own, the larger of ``asset_cap`` and 64 MiB (``responses.PAGE_CAP``).

    Rendering (``render``) uses Chromium (``chromium``, else ``$ARCHIVER_CHROMIUM``, Playwright's own,
    ``/usr/bin/chromium``) with ``tabs`` pages at once and a settle of at most ``settle`` seconds;
    ``render=False`` fetches HTML only.

    Politeness: ``delay`` seconds between requests to one host (default 1; raised by robots.txt's
    Crawl-delay), ``concurrency`` requests in all, one per host; robots.txt obeyed unless
    ``ignore_robots``; ``timeout`` seconds per request; ``retries`` with ``backoff``.

    Safety: hosts that resolve to non-public addresses are refused, except the seeds' own hosts and
    ``allow_hosts`` (all of them with ``allow_private``); ``resolver`` replaces DNS and
    ``network_backend`` (a backend of httpcore's shape) the sockets, for tests that must not leave loopback.
    ``transport`` replaces the live network altogether (:mod:`.transport`; the WARC import,
    :mod:`archiver.warc.importer`, answers from records).

    An existing ``out`` holding a capture is resumed: failures are retried, finished work is not
    repeated (``refresh`` fetches everything again; ``resume=False`` deletes the previous capture's
    files and state and starts afresh, leaving files it did not write). A folder that is not empty
    and holds no capture is refused. ``warc`` records every HTTP exchange (the browser's included)
    as WARC/1.1 in ``out/_archiver/warc/``, a new file past ``warc_max_size`` bytes and on every
    run (formats/warc.md §7). ``as_json`` is accepted for the command line's sake (see
    :func:`capture_main`); ``progress`` forces the TTY progress line on or off; left None, a
    terminal gets it and a log (stderr not a terminal) a plain line every ``progress_every`` seconds
    (0: none). Raises
    :class:`archiver.errors.ArchiverError` subclasses only for fatal problems (bad arguments, no
    Chromium, an unwritable folder); every per-URL problem is an outcome in the report.

    Many workers: ``state="redis://HOST:PORT/DB"`` and ``crawl=NAME`` make this process one worker
    of the crawl NAME, its frontier shared in Redis and ``out`` its own shard
    (:mod:`archiver.capture.redis.state`); every worker must give the same seeds and scope options.
    ``lease`` is how long a claimed URL stays this worker's without being renewed; a worker stopped
    by Ctrl-C, SIGTERM or SIGHUP hands its claims back at once (:mod:`archiver.capture.interrupt`).
    """
    del as_json  # the library returns the report; capture_main prints it
    options = CaptureOptions(
        render=render,
        depth=depth,
        max_pages=max_pages,
        subdomains=subdomains,
        scope_prefix=scope_prefix,
        include=list(include or []),
        exclude=list(exclude),
        allow_domains=list(allow_domains or []),
        prefer=list(prefer or []),
        avoid=list(avoid or []),
        assets_any_host=assets_any_host,
        skip_extensions=skip_extensions,
        chromium=chromium,
        delay=delay,
        timeout=timeout,
        asset_cap=asset_cap,
        resume=resume,
        refresh=refresh,
        refresh_mark=refresh_mark,
        rerender=rerender,
        revalidate=revalidate,
        ignore_robots=ignore_robots,
        allow_private=allow_private,
        allow_hosts=list(allow_hosts),
        concurrency=concurrency,
        tabs=tabs,
        retries=retries,
        backoff=backoff,
        max_retry_after=max_retry_after,
        settle=settle,
        progress=progress,
        progress_every=progress_every,
        search_index=search_index,
        resolver=resolver,
        network_backend=network_backend,
        seed_info=dict(seed_info or {}),
        warc=warc,
        warc_max_size=warc_max_size,
        transport=transport,
        final_manifest=final_manifest,
    )
    if state is not None:
        from archiver.capture.redis.state import redis_state

        options.state = redis_state(state, crawl, list(seeds), options, lease=lease)
    elif crawl is not None:
        raise UsageError("--crawl needs --state redis://HOST:PORT/DB", subject=f"--crawl {crawl}")
    return run_capture(list(seeds), Path(out), options)


def capture_main(
    seeds: list[str],
    out: Path,
    *,
    seeds_file: Path | None = None,
    bookmarks: Path | None = None,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    **options: object,
) -> int:
    """``archiver capture``: seeds from the arguments, ``seeds_file`` and ``bookmarks`` (deduplicated),
    then :func:`capture` with ``options``. Prints the report (text, or one JSON object with
    ``as_json``) and returns the exit code: 0 when the capture ran and lost nothing it wanted (the
    site's own 404s and what the options leave out are listed, not losses); 3
    (:data:`~archiver.errors.EXIT_PARTIAL`) when it stored pages but lost in-scope URLs to
    timeouts, server errors or the network (:meth:`CaptureReport.losses`), with one line on
    stderr; 4 when it stored none (every seed refused, out of scope, an error status, unreachable),
    with one line on stderr saying why; the error's exit code for a fatal error (one line on
    stderr)."""
    from archiver.capture.seeds import collect_seeds

    out_stream = stdout or sys.stdout
    err_stream = stderr or sys.stderr
    try:
        found = collect_seeds(seeds, seeds_file=seeds_file, bookmarks=bookmarks)
        if as_json and "progress" not in options:
            options["progress"] = False
        report = capture(
            [s.url for s in found],
            out,
            seed_info={s.url: (s.folder, s.title) for s in found},
            **options,  # type: ignore[arg-type]
        )
    except ArchiverError as e:
        print(f"archiver: {e}", file=err_stream)
        return e.exit_code
    if as_json:
        print(report_line(report), file=out_stream)
    else:
        print(report.summary(), file=out_stream)
    # nothing to pack or serve: a failed capture, whatever the outcomes say (a worker of a shared
    # crawl may store no page of its own while the others do: its shard is not a failure)
    if report.pages == 0 and options.get("state") is None:
        print(f"archiver: {out}: no page stored: {report.why_no_page()}", file=err_stream)
        return CaptureError.exit_code
    # a live capture only: a URL an imported archive lacks is no loss another run would get
    lost = report.losses() if options.get("transport") is None else []
    if lost:
        kinds = ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in _count_kinds(lost))
        print(
            f"archiver: {out}: partial: {kinds} in scope lost to timeouts, server errors or the network;"
            " run the same command again to retry them",
            file=err_stream,
        )
        return EXIT_PARTIAL
    return 0


def _count_kinds(items: list[Item]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return sorted(counts.items(), key=lambda kv: (kv[0] != "page", kv[0]))


def status_main(
    state: str,
    crawl: str | None,
    *,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """``archiver capture --state redis://… --crawl NAME --status``: the whole crawl's progress
    (done, queued, leased, failed, per worker), as text or one JSON object; exit 0, or the error's
    code with one line on stderr."""
    from archiver.capture.redis.status import crawl_status, status_text

    try:
        doc = crawl_status(state, crawl)
    except ArchiverError as e:
        print(f"archiver: {e}", file=stderr or sys.stderr)
        return e.exit_code
    out = stdout or sys.stdout
    if as_json:
        import json

        print(json.dumps(doc, ensure_ascii=False), file=out)
    else:
        print(status_text(doc), file=out)
    return 0
