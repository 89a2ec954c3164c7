"""The crawl: frontier, scope and budget, the page and asset stages, the tree writer, the report.

A capture of seeds into ``out`` (formats/tree.md) runs these stages for each URL of the frontier
(:mod:`.state`, ordered by priority, then link depth, then discovery):

- **page**: fetch (:mod:`.fetch`), render (:mod:`.render`; the browser's requests come back here and
  are answered from what was already fetched, or fetched once), rewrite (:mod:`.rewrite_html`, every
  reference through :meth:`archiver.capture.policy.Scope.decide`), write at its tree path;
- **asset**: fetch (or take what the browser already fetched), rewrite stylesheets
  (:mod:`archiver.css_refs`), write at its tree path.

Each completed URL is one state transaction (its outcome, its manifest record, the references it
revealed) followed by one manifest line (:class:`archiver.tree.ManifestWriter`). Files are written
atomically (temporary file in ``_archiver/tmp``, on the tree's own file system, then rename, so a
killed run leaves no partial file in the tree; the next run empties ``tmp``); a page whose bytes equal
an earlier page's is a hard link to it. Nothing is fsynced file by file: a process that is killed
loses nothing the kernel already holds, and only a power cut could lose recent files (a later run with
``--refresh`` fetches them again); the final manifest is written durably. Tree paths come from
:func:`archiver.urls.local_path`, with the §4.5 clash rules applied by :meth:`Crawler.assign`
(query-hash collisions get a longer hash; an asset file that must also be a folder gets a ``__c-`` name).

When the frontier is empty, :meth:`Crawler._relink` points every link at what the tree finally holds
(a relative link to something that was not stored becomes absolute, an absolute link to something
stored after all becomes relative), so the tree does not depend on the order the crawl met things.
Then the manifest is rewritten from the state, one record per path sorted by path; the header option
``"incomplete": true`` marks a run that stopped with URLs still pending.

Redirects: a page that redirects to a URL with another tree path leaves a small *redirect stub* at its
own path (a ``<meta http-equiv=refresh>`` page, recorded with the 3xx status) so links to it work from
disk; the target is captured as a page of its own (if in scope) and lists the redirecting URL in its
record's ``redirects``. An asset that redirects is stored at its own path.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import html
import json
import os
import re
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import unquote

from archiver import urls
from archiver.capture import rewrite_html
from archiver.capture.fetch import AddressGuard, Fetcher, FetchPolicy, FetchResult, HostRule, Resolver
from archiver.capture.policy import Decision, Hint, Scope, redact, split_fragment
from archiver.capture.state import NewURL, Row, State
from archiver.capture.textcodec import decode_css, decode_html
from archiver.css_refs import rewrite_stylesheet
from archiver.errors import CaptureError, URLError, UsageError
from archiver.tree import Header, ManifestWriter, Record, write_records
from archiver.urls import RESERVED_DIR, Kind

if TYPE_CHECKING:  # the renderer (and the browser behind it) is imported only by a rendering run
    from archiver.capture.render import Renderer, Reply

__all__ = ["STATE_NAME", "CaptureOptions", "CaptureReport", "Crawler", "Item", "run_capture"]

STATE_NAME = "crawl.sqlite"
#: Why a page was left out under ``max_pages`` (state._LIMIT_REASONS: a freed place revives it).
BUDGET_REASON = "beyond the page budget"
REPORT_NAME = urls.REPORT_NAME
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_RAW_CACHE_BYTES = 256 << 20
_HTML_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
#: The size cap of a page (``--asset-cap`` is for assets; a larger one raises this too): an HTML
#: document this large is a runaway response, not a page to keep.
PAGE_CAP = 64 << 20


@dataclass
class CaptureOptions:
    """Everything that shapes a capture (see :func:`archiver.capture.capture` for the meanings)."""

    render: bool = True
    depth: int = 3
    max_pages: int | None = None
    subdomains: bool = False
    scope_prefix: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    allow_domains: list[str] = field(default_factory=list)
    prefer: list[str] = field(default_factory=list)
    avoid: list[str] = field(default_factory=list)
    assets_any_host: bool = False
    skip_extensions: frozenset[str] | None = None
    chromium: str | None = None
    delay: float | None = None
    timeout: float = 30.0
    asset_cap: int = 25 << 20
    resume: bool = True
    refresh: bool = False
    ignore_robots: bool = False
    allow_private: bool = False
    allow_hosts: list[str] = field(default_factory=list)
    concurrency: int = 12
    tabs: int = 3
    retries: int = 3
    backoff: float = 0.5
    max_retry_after: float = 60.0
    max_attempts: int = 5
    settle: float = 1.5
    progress: bool | None = None
    resolver: Resolver | None = None
    network_backend: Any = None
    seed_info: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def manifest_options(self) -> dict[str, Any]:
        """The options recorded in the manifest header (informative; tree.md §8.1)."""
        out: dict[str, Any] = {
            "render": self.render,
            "depth": self.depth,
            "max_pages": self.max_pages,
            "subdomains": self.subdomains,
            "scope_prefix": self.scope_prefix,
            "include": sorted(self.include),
            "exclude": sorted(self.exclude),
            "allow_domains": sorted(self.allow_domains),
            "assets_any_host": self.assets_any_host,
            "asset_cap": self.asset_cap,
            "robots": not self.ignore_robots,
        }
        if self.skip_extensions is not None:
            out["skip_extensions"] = sorted(self.skip_extensions)
        folders = {redact(u): f for u, (f, _t) in sorted(self.seed_info.items()) if f}
        if folders:
            out["seed_folders"] = folders
        return out


@dataclass
class Item:
    """The outcome of one URL, as the report lists it (secret query values redacted)."""

    url: str
    kind: str
    outcome: str
    reason: str = ""
    status: int | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass
class CaptureReport:
    """What a capture did: counts by outcome, bytes written, time, and every URL's outcome."""

    out: str
    home: str
    complete: bool
    pages: int = 0
    assets: int = 0
    bytes: int = 0
    requests: int = 0
    elapsed: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    items: list[Item] = field(default_factory=list)
    #: What this run stored (a resumed run's totals above include earlier runs).
    run_pages: int = 0
    run_assets: int = 0

    def outcome(self, url: str) -> Item | None:
        """The item for ``url`` (any spelling that canonicalises to the same dedup key)."""
        try:
            key = redact(urls.dedup_key(urls.canonicalize(url)))
        except URLError:
            key = url
        return next((i for i in self.items if i.url == key), None)

    def problems(self) -> list[Item]:
        return [i for i in self.items if i.outcome not in ("ok", "redirected", "merged")]

    def why_no_page(self) -> str:
        """Why nothing was stored, in a few words, from the first page that did not end ok (the
        seeds come first): its outcome and the plainest form of its reason, so a host that is down
        reads "connection refused", not "robots.txt unreachable"."""
        item = next((i for i in self.problems() if i.kind == "page"), None)
        if item is None:
            return "no page was in scope"
        reason = _plain_reason(item.reason) or item.outcome
        status = f" [{item.status}]" if item.status else ""
        return f"{item.url}{status}: {item.outcome}: {reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "home": self.home,
            "complete": self.complete,
            "pages": self.pages,
            "assets": self.assets,
            "bytes": self.bytes,
            "requests": self.requests,
            "elapsed": round(self.elapsed, 3),
            "this_run": {"pages": self.run_pages, "assets": self.run_assets},
            "counts": dict(sorted(self.counts.items())),
            "items": [i.to_json() for i in self.items],
        }

    def summary(self, *, examples: int = 3) -> str:
        """A few human lines: totals (and this run's share when it resumed an earlier one), outcome
        counts, then the URLs that did not end ok grouped by outcome and reason, largest group
        first, with the first ``examples`` URLs of each: a site with 1,600 out-of-scope links gives
        one line for them, not 1,600 (the full list is in ``--json`` and the report file)."""
        rate = self.run_pages / self.elapsed if self.elapsed else 0.0
        resumed = (self.run_pages, self.run_assets) != (self.pages, self.assets)
        this_run = f" (this run: {self.run_pages} pages, {self.run_assets} assets)" if resumed else ""
        lines = [
            f"captured {self.pages} pages and {self.assets} assets ({_size(self.bytes)}) into {self.out}"
            f"{this_run} in {self.elapsed:.1f} s ({rate:.1f} pages/s)"
            + ("" if self.complete else "; INCOMPLETE: run again to resume"),
        ]
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        if counts:
            lines.append(f"outcomes: {counts}")
        groups: dict[tuple[str, str], list[Item]] = {}
        for item in self.problems():
            groups.setdefault((item.outcome, _reason_class(item.reason)), []).append(item)
        for (outcome, reason), members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
            if len(members) == 1:
                item = members[0]
                status = f" [{item.status}]" if item.status else ""
                lines.append(f"  {outcome:<11} {item.kind:<5} {item.url}{status}: {_with_flag(item.reason)}")
                continue
            lines.append(f"  {outcome:<11} {len(members):>5} URLs: {_with_flag(reason)}")
            for item in members[:examples]:
                status = f" [{item.status}]" if item.status else ""
                lines.append(f"      e.g. {item.kind:<5} {item.url}{status}")
            if len(members) > examples:
                lines.append(f"      … and {len(members) - examples} more")
        return "\n".join(lines)


def _write_report(path: Path, report: CaptureReport) -> None:
    """The report as JSON in the reserved folder (a private file: never served or packed), written
    to a temporary name and renamed, so a reader never sees half of it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # private too (tree.is_private)
    try:
        tmp.write_bytes(json.dumps(report.to_json(), ensure_ascii=False, indent=1).encode() + b"\n")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


#: The flag that changes a reason's outcome, named beside it in the summary (the stored reason stays
#: as it is: resumed state matches on it).
_FLAGS = (
    ("beyond the depth limit", "--depth"),
    ("beyond the page budget", "--max-pages"),
    ("out of scope", "--scope, --include, --subdomains, --allow-domain"),
    ("skip list", "--skip-ext"),
    ("asset on another site", "--assets-any-host"),
    ("disallowed by robots.txt", "--ignore-robots"),
    ("larger than the size cap", "--asset-cap"),
)


def _with_flag(reason: str) -> str:
    """``reason`` with the flag that would change it, when it names a setting and not yet a flag."""
    if "--" in reason:
        return reason
    for start, flag in _FLAGS:
        if reason.startswith(start):
            return f"{reason} ({flag})"
    return reason


def _reason_class(reason: str) -> str:
    """A reason with what varies per URL taken out (numbers, quoted values), so that URLs skipped
    or failed for the same reason fall into one group of the summary."""
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason)
    return re.sub(r"\d+", "N", reason)


_NETWORK_ERRNO = {
    "111": "connection refused",
    "110": "connection timed out",
    "113": "no route to host",
    "101": "network unreachable",
    "-2": "host name does not resolve",
    "-3": "host name does not resolve (temporary failure)",
    "-5": "host name has no address",
}
_ROBOTS_DOWN = re.compile(r"^robots\.txt unreachable \((network error: .*)\)(: not fetched.*)?$")
_ERRNO = re.compile(r"\[Errno (-?\d+)\]")


def _plain_reason(reason: str) -> str:
    """A failure reason said plainly: when robots.txt was unreachable because the host itself did
    not answer, the network error is the reason; a known errno becomes its words."""
    down = _ROBOTS_DOWN.match(reason)
    if down:
        reason = down.group(1)
    errno = _ERRNO.search(reason)
    if reason.startswith("network error:") and errno and errno.group(1) in _NETWORK_ERRNO:
        return f"{_NETWORK_ERRNO[errno.group(1)]} ({reason.removeprefix('network error: ')})"
    return reason


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


_stamp: tuple[int, str] = (-1, "")


def _now() -> str:
    """The current UTC time, to the second (RFC 3339); formatted once per second."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        _stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp[1]


def _with_suffix(path: str, suffix: str) -> str:
    folder, _, leaf = path.rpartition("/")
    dot = leaf.rfind(".")
    leaf = leaf[:dot] + suffix + leaf[dot:] if dot > 0 else leaf + suffix
    return f"{folder}/{leaf}" if folder else leaf


def _stub_html(href: str, shown: str) -> bytes:
    quoted = html.escape(href, quote=True)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Moved</title>'
        f'<meta http-equiv="refresh" content="0; url={quoted}"></head>\n'
        f'<body><p>This page moved to <a href="{quoted}">{html.escape(shown)}</a>.</p></body></html>\n'
    ).encode()


class _Linker:
    """The change callback of one document: every reference goes through ``Scope.decide``, then gets
    its tree path (local) and joins the list of URLs to enqueue."""

    def __init__(self, crawler: Crawler, from_path: str, base: str, depth: int, referrer: str) -> None:
        self.crawler = crawler
        self.from_path = from_path
        self.base = base
        self.depth = depth
        self.referrer = referrer
        self.new: dict[str, NewURL] = {}
        self.links: dict[str, bool] = {}  # key → written as a local link (True) or absolute (False)

    def decide(self, ref: str, hint: Hint) -> Decision:
        c = self.crawler
        decision = c.scope.decide(ref, self.base, hint, self.depth, c.fetcher_robots)
        if decision.action == "local" and decision.kind == "page" and not c.charge_page(decision.url or ""):
            return Decision(
                "absolute",
                None if "://" in ref else decision.url,
                None,
                decision.fragment,
                BUDGET_REASON,
            )
        return decision

    def __call__(self, ref: str, hint: Hint) -> str | None:
        if hint == "link" and not ref.strip(" \t\n\r\f"):
            # an empty link names the document itself (or its <base>): written as the relative link
            # to the file like every other in-scope link, so no checker takes it for a broken one
            return self(self.base, hint) if "://" in self.base else None
        decision = self.decide(ref, hint)
        c = self.crawler
        if decision.action == "keep":
            return None
        if decision.action == "absolute":
            self._note_skip(ref, hint, decision)
            return decision.url
        key = decision.url
        assert key is not None and decision.kind is not None
        self.links[key] = True
        path, merged_into = c.assign(key, decision.kind)
        if key not in self.new:
            depth = self.depth + 1
            self.new[key] = NewURL(
                key,
                decision.kind,
                depth,
                self.referrer,
                c.scope.priority(key) if decision.kind == "page" else 1,
                stylesheet=hint == "stylesheet",
                path=path,
                state="merged" if merged_into else "pending",
                final_url=merged_into,
            )
        elif hint == "stylesheet" and not self.new[key].stylesheet:
            old = self.new[key]
            self.new[key] = NewURL(**{**old.__dict__, "stylesheet": True})
        return c.rel(self.from_path, path) + decision.fragment

    def _note_skip(self, ref: str, hint: Hint, decision: Decision) -> None:
        if decision.reason in ("not fetched", ""):
            return
        try:
            key = urls.dedup_key(urls.canonicalize(ref.strip(), self.base), self.crawler.scope.hygiene)
        except URLError:
            return
        self.links.setdefault(key, False)
        if key in self.new:
            return
        kind: Kind = urls.guess_kind(key) if hint == "link" else "asset"
        self.new[key] = NewURL(
            key, kind, self.depth + 1, self.referrer, 1, state="skipped", reason=decision.reason
        )


class _Progress:
    def __init__(self, crawler: Crawler, stream: TextIO) -> None:
        self.crawler = crawler
        self.stream = stream
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.draw()

    def draw(self, final: bool = False) -> None:
        c = self.crawler
        elapsed = max(time.monotonic() - c.started, 1e-6)
        pages = c.pages_done
        queued = c.state.count("pending", "page")
        rate = pages / elapsed
        eta = f"{int(queued / rate) // 60}:{int(queued / rate) % 60:02d}" if rate > 0 and queued else "-"
        line = (
            f"pages {pages} done, {queued} queued · assets {c.assets_done} · {_size(c.bytes_written)}"
            f" · {rate:.1f} pages/s · ETA {eta}"
        )
        self.stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
        self.stream.flush()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.draw(final=True)


class Crawler:
    """One capture run over ``out`` (see the module docstring). Build it, then ``await run()``."""

    def __init__(self, seeds: list[str], out: Path, options: CaptureOptions) -> None:
        if not seeds:
            raise UsageError("no seed URL given", subject="capture")
        self.options = options
        self.out = out
        keys: list[str] = []
        for seed in seeds:
            key = urls.dedup_key(urls.parse_seed(seed))
            if key not in keys:
                keys.append(key)
        self.seed_keys = keys
        self.reserved = out / RESERVED_DIR
        self.tmp = self.reserved / "tmp"
        self._check_out()
        self.state = State(self.reserved / STATE_NAME)
        home = self.state.get("home") or keys[0]
        self.home = home
        include = list(options.include)
        if options.scope_prefix:
            include.append(options.scope_prefix)
        self.scope = Scope(
            home=home,
            seeds=tuple(dict.fromkeys([home, *keys])),
            max_depth=options.depth,
            subdomains=options.subdomains,
            include=tuple(include),
            exclude=tuple(options.exclude),
            allow_domains=tuple(d.lower().strip(".") for d in options.allow_domains),
            assets_any_host=options.assets_any_host,
            skip_extensions=(
                options.skip_extensions
                if options.skip_extensions is not None
                else urls.DEFAULT_SKIP_EXTENSIONS
            ),
            prefer=tuple(w.lower() for w in options.prefer),
            avoid=tuple(w.lower() for w in options.avoid),
            routes=options.render,
        )
        # the guard allows each seed's origin (scheme, host, port) and the --allow-host rules
        allow: set[str | HostRule] = {HostRule.origin(k) for k in self.scope.seeds}
        allow.update(options.allow_hosts)
        kwargs: dict[str, Any] = {}
        if options.resolver is not None:
            kwargs["resolver"] = options.resolver
        self.guard = AddressGuard(frozenset(allow), options.allow_private, **kwargs)
        self.policy = FetchPolicy(
            delay=1.0 if options.delay is None else options.delay,
            concurrency=options.concurrency,
            total_timeout=options.timeout,
            read_timeout=min(5.0, options.timeout),
            connect_timeout=min(3.0, options.timeout),
            retries=options.retries,
            backoff=options.backoff,
            max_retry_after=options.max_retry_after,
            obey_robots=not options.ignore_robots,
            size_cap=options.asset_cap,
        )
        self.fetcher: Fetcher | None = None
        self.renderer: Renderer | None = None
        self.manifest: ManifestWriter | None = None
        self.raw: OrderedDict[str, FetchResult] = OrderedDict()
        self.raw_bytes = 0
        self.spooled: dict[str, FetchResult] = {}
        self.fetching: dict[str, asyncio.Future[FetchResult]] = {}
        self.paths: dict[str, tuple[str, str | None]] = {}
        self.claims: dict[str, str] = {}  # path → key, given out and not yet in the state
        self.pages_charged = 0
        self.charged: set[str] = set()
        self.pages_done = 0
        self.assets_done = 0
        self.bytes_written = 0
        self.started = time.monotonic()
        self.inflight: dict[str, asyncio.Task[None]] = {}
        self._tmp_count = 0
        self._pid = os.getpid()
        self._out_str = str(out)
        self._tmp_str = str(self.tmp)
        self._folders: set[str] = set()
        self._rels: dict[tuple[str, str], str] = {}
        self._local_paths: dict[tuple[str, str], str] = {}
        self._keys: dict[str, str] = {}
        self._asset_links: dict[str, tuple[str, dict[str, bool]]] = {}

    # ---- set-up

    def _check_out(self) -> None:
        out = self.out
        if out.exists() and not out.is_dir():
            raise UsageError("not a folder", subject=str(out))
        has_state = (self.reserved / STATE_NAME).exists()
        if out.exists() and any(out.iterdir()) and not has_state:
            raise UsageError(
                "folder is not empty and holds no capture to resume; choose an empty or new folder",
                subject=str(out),
            )
        if has_state and not self.options.resume:
            self._discard_previous()
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create the folder: {e.strerror}", subject=str(out)) from None

    def _discard_previous(self) -> None:
        """``resume=False`` on a folder holding a capture: delete that capture (every file its state
        recorded, its metadata, then the folders left empty) so this run starts afresh. Files the
        capture did not write are left alone."""
        old = State(self.reserved / STATE_NAME)
        try:
            paths = [record.path for record in old.records()] + list(old.paths_map())
        finally:
            old.close()
        for rel in paths:
            target = self.out / rel
            if ".." not in rel.split("/") and target.is_file():
                target.unlink()
        for name in (
            STATE_NAME,
            STATE_NAME + "-wal",
            STATE_NAME + "-shm",
            "manifest.jsonl",
            "manifest.jsonl.tmp",
        ):
            with contextlib.suppress(FileNotFoundError):
                (self.reserved / name).unlink()
        if self.tmp.is_dir():
            self._empty_tmp(remove=True)
        for folder in sorted((p for p in self.out.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only empty ones go

    def _empty_tmp(self, remove: bool = False) -> None:
        """Delete what a previous (killed) run or this one left in ``_archiver/tmp``."""
        for leftover in self.tmp.glob("*"):
            with contextlib.suppress(OSError):
                leftover.unlink()
        if remove:
            with contextlib.suppress(OSError):
                self.tmp.rmdir()

    def fetcher_robots(self, key: str) -> bool | None:
        return self.fetcher.robots_allows(key) if self.fetcher is not None else None

    def charge_page(self, key: str) -> bool:
        """May ``key`` join the frontier as a page under ``max_pages``? Known keys always may."""
        limit = self.options.max_pages
        if limit is None:
            return True
        if key in self.charged or key in self.paths:
            return True
        row = self.state.row(key)
        if row is not None and row.state != "skipped":
            return True
        if self.pages_charged >= limit:
            return False
        self.pages_charged += 1
        self.charged.add(key)
        return True

    def release_page(self, key: str) -> None:
        """A page charged to ``max_pages`` ended without storing a page (an error status, a failure,
        robots, not HTML): ``max_pages`` counts stored pages, so its place goes to the best page
        waiting beyond the budget (``prefer``/``avoid`` order, then depth and discovery), whose
        links the end of the run makes local (tree.md §6)."""
        if key not in self.charged:
            return
        self.charged.discard(key)
        self.pages_charged -= 1
        waiting = list(self.state.skipped_for(BUDGET_REASON, "page"))
        if not waiting:
            return
        best = min(waiting, key=lambda r: (self.scope.priority(r.key), r.depth, r.seq))
        if self.charge_page(best.key):
            self.state.add([NewURL(best.key, "page", best.depth, best.referrer, best.priority)])

    def _charge_by_priority(self, doc_text: str, base: str, depth: int) -> None:
        """Under ``max_pages``, let the pages a document links to into the frontier in priority order
        (``prefer`` first, ``avoid`` last), not in the order they appear: the budget goes to the
        pages the user cares about."""
        found: dict[str, int] = {}

        def collect(ref: str, hint: Hint) -> str | None:
            d = self.scope.decide(ref, base, hint, depth, self.fetcher_robots)
            if d.action == "local" and d.kind == "page" and d.url is not None:
                found.setdefault(d.url, len(found))
            return None

        rewrite_html.rewrite(rewrite_html.parse(doc_text), collect)
        for key in sorted(found, key=lambda k: (self.scope.priority(k), found[k])):
            self.charge_page(key)

    # ---- tree paths (tree.md §4, §4.5)

    def local_path(self, key: str, kind: Kind) -> str:
        """:func:`archiver.urls.local_path` of ``key`` in this tree (the default hash), remembered."""
        memo = (key, kind)
        path = self._local_paths.get(memo)
        if path is None:
            path = urls.local_path(key, kind=kind, home=self.home)
            if len(self._local_paths) >= 100_000:
                self._local_paths.clear()
            self._local_paths[memo] = path
        return path

    def rel(self, from_path: str, to_path: str) -> str:
        """:func:`archiver.urls.rel`, remembered (it depends only on ``from_path``'s folder)."""
        folder, _, leaf = from_path.rpartition("/")
        if leaf in ("", ".", ".."):  # not a file's path: nothing to remember it by
            return urls.rel(from_path, to_path)
        memo = (folder, to_path)
        href = self._rels.get(memo)
        if href is None:
            href = urls.rel(from_path, to_path)
            if len(self._rels) >= 100_000:
                self._rels.clear()
            self._rels[memo] = href
        return href

    def assign(self, key: str, kind: Kind) -> tuple[str, str | None]:
        """The tree path of ``key``, assigned once and kept in the state. Returns ``(path, owner)``
        where ``owner`` is the key that already holds the same file (tree.md §3.3) or None."""
        known = self.paths.get(key)
        if known is not None:
            return known
        row = self.state.row(key)
        if row is not None and row.path:
            owner = row.final_url if row.state == "merged" else None
            self.paths[key] = (row.path, owner)
            return row.path, owner
        path = self.local_path(key, kind)
        owner = self._owner(path)
        if owner is not None and owner != key:
            same = urls.local_path(key, kind=kind, home=self.home, hash_len=64) == urls.local_path(
                owner, kind=kind, home=self.home, hash_len=64
            )
            if same:
                self.paths[key] = (path, owner)
                return path, owner
            for length in range(8, 65, 2):  # a query-hash collision: lengthen the hash
                path = urls.local_path(key, kind=kind, home=self.home, hash_len=length)
                if self._owner(path) in (None, key):
                    break
        if kind == "asset":
            path = self._resolve_clash(key, path)
        self.claims[path] = key
        self.paths[key] = (path, None)
        return path, None

    def _owner(self, path: str) -> str | None:
        return self.claims.get(path) or self.state.owner(path)

    def _flush_claims(self) -> None:
        """Write the paths given out since the last flush (part of the next state transaction: a path
        given out but never written down is simply given out again, the same way, after a crash)."""
        if self.claims:
            claims, self.claims = self.claims, {}
            self.state.claim_many(claims)

    def _clash_suffix(self, key: str) -> str:
        return "__c-" + hashlib.sha256(key.encode()).hexdigest()[:6]

    def _resolve_clash(self, key: str, path: str) -> str:
        # the new file would sit where a folder is needed
        self._flush_claims()
        if self.state.has_path_under(path):
            return _with_suffix(path, self._clash_suffix(key))
        # an existing file sits where the new path needs a folder: that file moves to its __c- name
        parts = path.split("/")
        for i in range(3, len(parts)):
            folder = "/".join(parts[:i])
            other = self.state.owner(folder)
            if other is not None:
                moved = _with_suffix(folder, self._clash_suffix(other))
                src = self.out / folder
                if src.is_file():
                    os.replace(src, self.out / moved)
                self.state.move(other, folder, moved)
                self.paths[other] = (moved, None)
        return path

    # ---- the raw cache (what was fetched, as fetched, for the browser and the stages)

    def _remember(self, key: str, result: FetchResult) -> None:
        if result.file is not None:
            self.spooled[key] = result
            return
        old = self.raw.pop(key, None)
        if old is not None and old.body is not None:
            self.raw_bytes -= len(old.body)
        self.raw[key] = result
        self.raw_bytes += len(result.body or b"")
        while self.raw_bytes > _RAW_CACHE_BYTES and len(self.raw) > 1:
            _k, dropped = self.raw.popitem(last=False)
            self.raw_bytes -= len(dropped.body or b"")

    def _cached(self, key: str) -> FetchResult | None:
        hit = self.raw.get(key)
        if hit is not None:
            self.raw.move_to_end(key)
            return hit
        return self.spooled.get(key)

    async def get(
        self, key: str, referrer: str | None, accept: str = "*/*", *, page: bool = False
    ) -> FetchResult:
        """``key``'s response: from the cache, from a fetch already under way, or fetched now
        (``page``: with the page size cap, not the asset cap)."""
        hit = self._cached(key)
        if hit is not None:
            return hit
        running = self.fetching.get(key)
        if running is not None:
            return await asyncio.shield(running)
        assert self.fetcher is not None
        future: asyncio.Future[FetchResult] = asyncio.get_running_loop().create_future()
        self.fetching[key] = future
        try:
            cap = max(self.options.asset_cap, PAGE_CAP) if page else "default"
            result = await self.fetcher.fetch(key, referrer=referrer, accept=accept, cap=cap)
            self._remember(key, result)
            if result.final_url != key and result.outcome in ("ok", "redirected"):
                with contextlib.suppress(URLError):
                    final_key = urls.dedup_key(result.final_url, self.scope.hygiene)
                    if final_key not in self.raw and result.file is None:
                        self._remember(final_key, dataclasses.replace(result, url=final_key, redirects=[]))
            future.set_result(result)
            return result
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # mark retrieved
            raise
        finally:
            self.fetching.pop(key, None)

    async def answer(self, url: str, resource_type: str, referrer: str | None) -> Reply | None:
        """The renderer's routing callback: every browser request is answered from here."""
        from archiver.capture.render import Reply

        try:
            key = urls.dedup_key(urls.canonicalize(url), self.scope.hygiene)
        except URLError:
            return None
        row = self.state.row(key)
        if (
            row is not None
            and row.state == "done"
            and row.path
            and not row.stylesheet
            and row.kind == "asset"
        ):
            record = self.state.record(row.path)
            file = self.out / row.path
            if record is not None and record.media_type != "text/css" and file.is_file():
                return Reply(200, {"content-type": record.media_type}, path=file)
        if urls.ext(key) in self.scope.skip_extensions:
            return None  # large media the tree leaves on the live web: the page renders without it
        result = await self.get(key, referrer, page=resource_type == "document")
        if result.outcome in ("refused", "skipped"):
            if result.outcome == "refused" and self.state.row(key) is None:
                self._note_refused(key, resource_type, referrer, result.reason)
            return None
        if result.status is None:
            return None
        headers = dict(result.headers)
        headers.pop("location", None)
        if result.file is not None:
            return Reply(result.status, headers, path=result.file)
        return Reply(result.status, headers, body=result.body or b"")

    def _note_refused(self, key: str, resource_type: str, referrer: str | None, reason: str) -> None:
        """A request of the browser's own (a script's ``fetch()``, a script or meta refresh moving
        the page on, a script file) that the address guard refused: in the report like any other."""
        kind = "page" if resource_type == "document" else "asset"
        with self.state.transaction():
            self.state.add([NewURL(key, kind, 0, referrer, state="refused", reason=reason)])
            self.state.finish(key, state="refused", outcome="refused", reason=reason)

    # ---- writing

    async def _write(
        self, path: str, data: bytes | None = None, source: Path | None = None, link_from: str | None = None
    ) -> None:
        """Put bytes (or the file ``source``, moved) at tree path ``path`` atomically. Done in the event
        loop: with no fsync a write is a page-cache copy and a rename, cheaper than a thread hop."""
        self._write_now(path, data, source, link_from)

    def _write_now(self, path: str, data: bytes | None, source: Path | None, link_from: str | None) -> None:
        target = os.path.join(self._out_str, path)
        folder = os.path.dirname(target)
        if folder not in self._folders:  # folders this run made or met are never removed while it runs
            os.makedirs(folder, exist_ok=True)
            self._folders.add(folder)
        # The temporary file lives in _archiver/tmp (same file system as the tree), not next to the
        # target: a run killed mid-write leaves nothing inside the tree, and the next run empties tmp.
        self._tmp_count += 1
        tmp = os.path.join(self._tmp_str, f"write-{self._pid}-{self._tmp_count}.tmp")
        try:
            if link_from is not None and os.path.isfile(os.path.join(self._out_str, link_from)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                os.link(os.path.join(self._out_str, link_from), tmp)
            elif source is not None:
                os.replace(source, tmp)
            else:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
                try:
                    view = memoryview(data or b"")
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    async def _finish(
        self, key: str, *, record: Record | None = None, extra: list[Record] | None = None, **kwargs: Any
    ) -> None:
        with self.state.transaction():
            self._flush_claims()
            self.state.finish(key, record=record, extra_records=extra or [], **kwargs)
        if record is None or record.kind != "page":
            self.release_page(key)
        manifest = self.manifest
        if manifest is not None:
            for line in [*(extra or []), *([record] if record else [])]:
                manifest.add(self._public(line))

    def _key(self, url: str) -> str:
        """:func:`archiver.urls.dedup_key` with this capture's hygiene, remembered."""
        key = self._keys.get(url)
        if key is None:
            key = urls.dedup_key(url, self.scope.hygiene)
            if len(self._keys) >= 100_000:
                self._keys.clear()
            self._keys[url] = key
        return key

    def _public(self, record: Record) -> Record:
        """The record as the manifest shows it: secret query values redacted."""
        fields = {f: getattr(record, f) for f in record.__struct_fields__}
        fields["urls"] = [redact(u) for u in record.urls]
        fields["redirects"] = [redact(u) for u in record.redirects]
        fields["referrer"] = redact(record.referrer) if record.referrer else None
        return Record(**fields)

    async def _fail(self, row: Row, result: FetchResult) -> None:
        state = (
            result.outcome if result.outcome in ("failed", "unconfirmed", "skipped", "refused") else "failed"
        )
        await self._finish(row.key, state=state, outcome=state, reason=result.reason, status=result.status)

    # ---- page stage

    async def page(self, row: Row) -> None:
        key = row.key
        result = await self.get(key, row.referrer, accept=_HTML_ACCEPT, page=True)
        if result.outcome not in ("ok", "redirected"):
            await self._fail(row, result)
            return
        path, _owner = self.assign(key, "page")
        # a dedup key is its own dedup key (tests/test_urls_properties.py checks it)
        final = key if result.final_url == key else self._key(result.final_url)
        is_html = (result.media_type in _HTML_TYPES) or (
            result.media_type is None
            and result.read()[:512].lstrip().lower().startswith((b"<!doctype", b"<html"))
        )
        if final != key:
            final_path = self.local_path(final, "page") if is_html else None
            if final_path != path:
                await self._page_redirect(row, result, path, final, is_html)
                return
        if not is_html:
            await self._page_not_html(row, result, path)
            return
        text = decode_html(result.read(), result.charset)
        rendered = False
        note = ""
        if self.renderer is not None:
            try:
                text = await self.renderer.render(result.final_url)
                rendered = True
            except CaptureError as e:
                note = f"{e.message}; stored as fetched, unrendered"
        doc = rewrite_html.parse(text)
        base = rewrite_html.base_url(doc, result.final_url)
        if self.options.max_pages is not None:
            self._charge_by_priority(text, base, row.depth)
        linker = _Linker(self, path, base, row.depth, key)
        out = rewrite_html.rewrite(doc, linker, noscript="drop" if rendered else "unwrap")
        data = out.html.encode("utf-8")
        sha = hashlib.sha256(data).hexdigest()
        first = self.state.blob_path(sha)
        await self._write(path, data, link_from=first if first and first != path else None)
        self.bytes_written += len(data)
        chain = {self._key(u) for u in result.redirects}
        same = {u for u in chain | {key} if self.local_path(u, "page") == path}
        record = Record(
            path=path,
            kind="page",
            media_type="text/html",
            size=len(data),
            sha256=sha,
            urls=[final, *sorted(same - {final})],
            title=out.title,
            status=result.status,
            fetched=_now(),
            depth=row.depth,
            referrer=row.referrer,
            redirects=sorted({k for k, p in self.state.redirected_to(final) if p != path}),
        )
        outcome = "redirected" if result.redirects else "ok"
        new = sorted(linker.new.values(), key=lambda n: (n.priority, n.key))
        await self._finish(
            key,
            state="done",
            outcome=outcome,
            reason=note,
            status=result.status,
            final_url=result.final_url,
            record=record,
            blob=(sha, path),
            new=new,
            links=(path, linker.links),
        )
        self.pages_done += 1

    async def _page_not_html(self, row: Row, result: FetchResult, page_path: str) -> None:
        """A link that looked like a page answered with something else: store it as an asset and
        leave a redirect stub at the page path."""
        asset_path, _ = self.assign(row.key, "asset")
        record, new = await self._store_asset_bytes(row, result, asset_path)
        stub = await self._stub(page_path, asset_path, asset_path, row.key, result.status or 200)
        await self._finish(
            row.key,
            state="done",
            outcome="ok",
            reason="not HTML: stored as an asset",
            status=result.status,
            final_url=result.final_url,
            record=record,
            extra=[stub],
            new=new,
            links=self._asset_links.pop(row.key, None),
        )
        self.assets_done += 1

    async def _stub(self, path: str, target_path: str | None, shown: str, key: str, status: int) -> Record:
        href = urls.rel(path, target_path) if target_path else shown
        data = _stub_html(href, shown)
        await self._write(path, data)
        self.bytes_written += len(data)
        return Record(
            path=path,
            kind="page",
            media_type="text/html",
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            urls=[key],
            title="Moved",
            status=status,
            fetched=_now(),
        )

    async def _page_redirect(
        self, row: Row, result: FetchResult, path: str, final: str, is_html: bool
    ) -> None:
        chain_status = 301
        moved_to_root = final.split("://", 1)[-1].partition("/")[2] == "" and path != "index.html"
        note = f"redirected to {redact(final)}"
        if moved_to_root:
            note += " (to the site root: the page has probably moved away)"
        new: list[NewURL] = []
        if is_html and self.scope.page_in_scope(final) and self.fetcher_robots(final) is not False:
            final_path, owner = self.assign(final, "page")
            new.append(
                NewURL(
                    final,
                    "page",
                    row.depth,
                    row.referrer,
                    self.scope.priority(final),
                    path=final_path,
                    state="merged" if owner else "pending",
                    final_url=owner,
                )
            )
            stub = await self._stub(path, final_path, final_path, row.key, chain_status)
            target = self.state.record(final_path)
            if target is not None and row.key not in target.redirects:
                target.redirects = sorted({*target.redirects, row.key})
                self.state.put_record(target)
        elif not is_html and self.scope.want_asset(final):
            final_path, _ = self.assign(final, "asset")
            new.append(NewURL(final, "asset", row.depth + 1, row.referrer, path=final_path))
            stub = await self._stub(path, final_path, final_path, row.key, chain_status)
        else:
            stub = await self._stub(path, None, result.final_url, row.key, chain_status)
            note += " (outside the capture: the stub links to the live URL)"
        await self._finish(
            row.key,
            state="done",
            outcome="redirected",
            reason=note,
            status=chain_status,
            final_url=final,
            record=stub,
            new=new,
        )

    # ---- asset stage

    async def _store_asset_bytes(
        self, row: Row, result: FetchResult, path: str
    ) -> tuple[Record, list[NewURL]]:
        """Write an asset (a stylesheet rewritten) at ``path``; its record and the URLs it revealed."""
        data: bytes | None = None
        is_css = row.stylesheet or result.media_type == "text/css" or urls.ext(row.key) == ".css"
        new: list[NewURL] = []
        links: dict[str, bool] = {}
        if is_css:
            text = decode_css(result.read(), result.charset)
            linker = _Linker(self, path, result.final_url, row.depth, row.key)
            css = rewrite_stylesheet(
                text, lambda ref, role: linker(ref, "stylesheet" if role == "import" else "embed")
            )
            data = css.text.encode("utf-8")
            new = list(linker.new.values())
            links = linker.links
            await self._write(path, data)
            size, sha = len(data), hashlib.sha256(data).hexdigest()
        elif result.file is not None:
            sha, size = _hash_file(result.file)
            await self._write(path, source=result.file)
            self.spooled.pop(row.key, None)
            result.file = self.out / path
        else:
            data = result.body or b""
            await self._write(path, data)
            size, sha = len(data), hashlib.sha256(data).hexdigest()
        self.bytes_written += size
        media = "text/css" if is_css else (result.media_type or _media_from_path(path))
        record = Record(
            path=path,
            kind="asset",
            media_type=media,
            size=size,
            sha256=sha,
            urls=[row.key],
            status=result.status,
            fetched=_now(),
            depth=row.depth,
            referrer=row.referrer,
        )
        self._asset_links[row.key] = (path, links)
        return record, new

    async def asset(self, row: Row) -> None:
        result = await self.get(row.key, row.referrer)
        if result.outcome not in ("ok", "redirected"):
            await self._fail(row, result)
            return
        path, _ = self.assign(row.key, "asset")
        record, new = await self._store_asset_bytes(row, result, path)
        outcome = "redirected" if result.redirects else "ok"
        reason = f"redirected to {redact(result.final_url)}" if result.redirects else ""
        await self._finish(
            row.key,
            state="done",
            outcome=outcome,
            reason=reason,
            status=result.status,
            final_url=result.final_url,
            record=record,
            new=new,
            links=self._asset_links.pop(row.key, None),
        )
        self.assets_done += 1

    # ---- the run

    def _seed(self) -> None:
        state = self.state
        if state.get("home") is None:
            state.set("home", self.home)
            state.set("created", _now())
        for key in self.seed_keys:
            folder, title = self.options.seed_info.get(key, (None, None))
            state.add_seed(key, folder, title)
        new = []
        for key in self.seed_keys:
            path, owner = self.assign(key, "page")
            new.append(
                NewURL(
                    key,
                    "page",
                    0,
                    None,
                    self.scope.priority(key),
                    path=path,
                    state="merged" if owner else "pending",
                    final_url=owner,
                )
            )
        self._flush_claims()
        state.add(new)
        for key in self.seed_keys:  # a seed given again is wanted again, even if a resume had skipped it
            row = state.row(key)
            if row is not None and row.state == "skipped":
                state.mark(key, state="pending", outcome="", reason="")
        if self.options.refresh:
            state.refresh()
        state.requeue(("failed", "unconfirmed"), self.options.max_attempts)
        # pages already charged to the budget: the pages stored and those still to fetch (failed
        # ones were requeued above when they get another try; the others left the budget)
        self.pages_charged = sum(1 for r in state.records() if r.kind == "page") + state.count(
            "pending", "page"
        )
        state.set("complete", "0")

    async def _task(self, row: Row) -> None:
        try:
            if row.kind == "page":
                await self.page(row)
            else:
                await self.asset(row)
        except (OSError, CaptureError) as e:
            await self._finish(row.key, state="failed", outcome="failed", reason=f"cannot store: {e}")
        except Exception as e:  # a bug must not stop a long crawl; it is recorded with its trace
            trace = traceback.format_exception_only(type(e), e)[-1].strip()
            await self._finish(row.key, state="failed", outcome="failed", reason=f"internal error: {trace}")
            if os.environ.get("ARCHIVER_DEBUG"):
                traceback.print_exc()

    async def run(self) -> CaptureReport:
        """Capture until the frontier is empty; returns the report."""
        self._empty_tmp()
        self._seed()
        header = self._header(incomplete=True)
        # not fsynced line by line: the state, not this log, is what a resume trusts, and the
        # manifest is rewritten from the state at the end
        self.manifest = ManifestWriter(self.out, header, durable=False)
        progress: _Progress | None = None
        show = self.options.progress if self.options.progress is not None else sys.stderr.isatty()
        try:
            async with Fetcher(
                self.policy, guard=self.guard, tmp_dir=self.tmp, backend=self.options.network_backend
            ) as fetcher:
                self.fetcher = fetcher
                if self.options.render:
                    from archiver.capture.render import Renderer

                    self.renderer = Renderer(
                        self.answer,
                        chromium=self.options.chromium,
                        tabs=self.options.tabs,
                        timeout=self.options.timeout,
                        settle=self.options.settle,
                    )
                    await self.renderer.start()
                if show:
                    progress = _Progress(self, sys.stderr)
                    progress.start()
                try:
                    await self._loop()
                finally:
                    if progress is not None:
                        await progress.stop()
                    for task in self.inflight.values():
                        task.cancel()
                    if self.inflight:
                        await asyncio.gather(*self.inflight.values(), return_exceptions=True)
                    if self.renderer is not None:
                        await self.renderer.close()
        finally:
            self.finalize()
        report = self.report()
        _write_report(self.reserved / REPORT_NAME, report)
        return report

    async def _loop(self) -> None:
        page_slots = self.options.tabs if self.options.render else self.options.concurrency
        asset_slots = self.options.concurrency
        while True:
            running_pages = sum(1 for k, t in self.inflight.items() if t.get_name() == "page")
            running_assets = len(self.inflight) - running_pages
            for kind, free in (("page", page_slots - running_pages), ("asset", asset_slots - running_assets)):
                if free <= 0:
                    continue
                for row in self.state.pending(kind, free, exclude=self.inflight):
                    task = asyncio.ensure_future(self._task(row))
                    task.set_name(kind)
                    self.inflight[row.key] = task
            if not self.inflight:
                return
            done, _ = await asyncio.wait(self.inflight.values(), return_when=asyncio.FIRST_COMPLETED)
            for key in [k for k, t in self.inflight.items() if t in done]:
                task = self.inflight.pop(key)
                error = task.exception()
                if error is not None:
                    raise error

    def _header(self, *, incomplete: bool) -> Header:
        options = self.options.manifest_options()
        if incomplete:
            options["incomplete"] = True
        seeds = [redact(url) for url, _f, _t in self.state.seeds()] or [redact(k) for k in self.seed_keys]
        return Header(
            home=redact(self.home), created=self.state.get("created") or _now(), seeds=seeds, options=options
        )

    def finalize(self) -> None:
        """Rewrite the manifest from the state: one record per path, sorted by path, with every
        merged URL listed and the smallest known depth and referrer; mark the crawl (in)complete."""
        self._flush_claims()
        if self.manifest is not None:
            self.manifest.close()
            self.manifest = None
        complete = self.state.count("pending") == 0
        if complete:
            self._relink()
        self.state.set("complete", "1" if complete else "0")
        rows: dict[str, Row] = {}
        merged: dict[str, list[str]] = {}
        for r in self.state.rows():
            rows[r.key] = r
            if r.state == "merged" and r.final_url:
                merged.setdefault(r.final_url, []).append(r.key)
        records = []
        for record in self.state.records():
            if record.urls:
                keys = set(record.urls)
                for k in list(keys):
                    keys.update(merged.get(k, []))
                record.urls = [record.urls[0], *sorted(keys - {record.urls[0]})]
                known = [rows[k] for k in record.urls if k in rows]
                if known and not 300 <= (record.status or 200) < 400:
                    top = min(known, key=lambda r: (r.depth, r.referrer or ""))
                    record.depth, record.referrer = top.depth, top.referrer
            records.append(self._public(record))
        write_records(self.out, self._header(incomplete=not complete), records)
        self._empty_tmp(remove=True)
        self.state.close()

    def _relink(self) -> None:
        """Point every link at what the tree finally holds: a relative link to something that was not
        stored (skipped, failed, refused …) becomes its absolute URL, so it still works from disk;
        an absolute link to something stored after all (reached by a shorter path, retried on a later
        run) becomes relative. Only documents with such links are rewritten (atomically), and their
        records updated. Runs when the frontier is empty, so the result does not depend on the order
        in which the crawl happened to meet things."""
        state = self.state
        stored: dict[str, str] = {}  # key → tree path of every stored file (stubs included)
        merged: list[Row] = []
        for r in state.rows():
            if r.state == "done" and r.path:
                stored[r.key] = r.path
            elif r.state == "merged" and r.final_url:
                merged.append(r)
        for r in merged:
            if r.final_url in stored:
                stored[r.key] = stored[r.final_url]
        moves = state.moves()  # a file moved by a §4.5 clash: links written before the move are stale
        moved = set(moves.values())
        dirty: set[str] = set()
        for src, key, local in state.links():
            if local != (key in stored) or (local and key in moved):
                dirty.add(src)
        if not dirty:
            return
        by_path = state.paths_map()
        for src in sorted(dirty):
            record = state.record(src)
            if record is None or not (self.out / src).is_file():
                continue
            self._relink_one(src, record, stored, by_path, moves)

    def _relink_one(
        self,
        src: str,
        record: Record,
        stored: dict[str, str],
        by_path: dict[str, str],
        moves: dict[str, str] | None = None,
    ) -> None:
        links: dict[str, bool] = {}

        def change(ref: str, hint: Hint) -> str | None:
            if hint == "absolute" or urls.ref_action(ref) == "keep":
                return None
            text = ref.strip()
            _head, fragment = split_fragment(text)
            if "://" in text or text.startswith("//"):
                try:
                    key = urls.dedup_key(urls.canonicalize(text), self.scope.hygiene)
                except URLError:
                    return None
                if key in stored:
                    links[key] = True
                    return urls.rel(src, stored[key]) + ("" if "#" in key else fragment)
                links[key] = False
                return None
            target = _resolve_href(src, text)
            key = by_path.get(target) if target else None
            if key is None and target and moves and target in moves:
                key = moves[target]  # written before a clash moved the file
                if key in stored:
                    links[key] = True
                    return urls.rel(src, stored[key]) + ("" if "#" in key else fragment)
            if key is None:
                return None
            if key in stored:
                links[key] = True
                return None
            links[key] = False
            return key + ("" if "#" in key else fragment)

        path = self.out / src
        if record.media_type == "text/css":
            text = path.read_text(encoding="utf-8")
            new_text = rewrite_stylesheet(
                text, lambda ref, role: change(ref, "stylesheet" if role == "import" else "embed")
            ).text
        else:
            text = path.read_text(encoding="utf-8")
            new_text = rewrite_html.rewrite(rewrite_html.parse(text), change, noscript="keep").html
        if new_text != text:
            data = new_text.encode("utf-8")
            self._write_now(src, data, None, None)
            record.size, record.sha256 = len(data), hashlib.sha256(data).hexdigest()
            self.state.put_record(record)
        self.state.set_links(src, links)

    def report(self) -> CaptureReport:
        state = State(self.reserved / STATE_NAME)
        try:
            items: list[Item] = []
            counts: dict[str, int] = {}
            for r in state.rows():
                outcome = r.outcome or ("pending" if r.state == "pending" else r.state)
                counts[outcome] = counts.get(outcome, 0) + 1
                items.append(Item(redact(r.key), r.kind, outcome, r.reason or "", r.status, r.path))
            pages = sum(
                1 for rec in state.records() if rec.kind == "page" and (rec.status or 200) // 100 != 3
            )
            assets = sum(1 for rec in state.records() if rec.kind == "asset")
            complete = state.count("pending") == 0
        finally:
            state.close()
        return CaptureReport(
            out=str(self.out),
            home=redact(self.home),
            complete=complete,
            pages=pages,
            assets=assets,
            bytes=self.bytes_written,
            requests=self.fetcher.requests if self.fetcher else 0,
            elapsed=time.monotonic() - self.started,
            counts=counts,
            items=items,
            run_pages=self.pages_done,
            run_assets=self.assets_done,
        )


def _resolve_href(src: str, href: str) -> str | None:
    """The tree path that relative ``href`` (as :func:`archiver.urls.rel` writes it) in the document
    at tree path ``src`` names; None when it leaves the tree or has a query."""
    href = href.split("#", 1)[0]
    if "?" in href or href.startswith("/"):
        return None
    parts = src.split("/")[:-1]
    for seg in href.split("/"):
        if seg == "..":
            if not parts:
                return None
            parts.pop()
        elif seg not in ("", "."):
            parts.append(unquote(seg))
    return "/".join(parts) or None


def _hash_file(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _media_from_path(path: str) -> str:
    from archiver.media import media_type_for

    return media_type_for(path)


def run_capture(seeds: list[str], out: Path, options: CaptureOptions) -> CaptureReport:
    """Run a capture to the end (or to Ctrl-C, after which the tree is left resumable)."""
    crawler = Crawler(seeds, Path(out), options)
    return asyncio.run(crawler.run())
