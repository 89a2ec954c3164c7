"""The crawl's scheduling: the frontier loop, scope and budget, and the page and asset stages.

A capture of seeds into ``out`` (formats/tree.md) runs these stages for each URL the crawl state
(:mod:`.crawlstate`; SQLite by default, :mod:`.state`) gives out, ordered by priority, then link
depth, then discovery:

- **page**: fetch through the transport (:mod:`.transport`: the live network of :mod:`.fetch`, or
  another source), render (:mod:`.render`; the browser's requests come back here and are answered
  from what was already fetched, or fetched once), rewrite (:mod:`.rewrite_html`, every reference
  through :class:`.linker.Linker` and :meth:`archiver.capture.policy.Scope.decide`), write at its
  tree path (:mod:`.treepaths`, :mod:`.writer`);
- **asset**: fetch (or take what the browser already fetched), rewrite stylesheets
  (:mod:`archiver.css_refs`), write at its tree path.

Each completed URL is one state transaction (its outcome, its manifest record, the references it
revealed) followed by one manifest line (:class:`archiver.tree.ManifestWriter`). Files are written
atomically (:mod:`.writer`); a page whose bytes equal an earlier page's is a hard link to it.

When the frontier is empty, :func:`.relink.relink` points every link at what the tree finally holds,
so the tree does not depend on the order the crawl met things. Then the manifest is rewritten from
the state, one record per path sorted by path; the header option ``"incomplete": true`` marks a run
that stopped with URLs still pending. The report (:mod:`.report`) is written to
``_archiver/report.json``.

Redirects: a page that redirects to a URL with another tree path leaves a small *redirect stub* at its
own path (a ``<meta http-equiv=refresh>`` page, recorded with the 3xx status) so links to it work from
disk; the target is captured as a page of its own (if in scope) and lists the redirecting URL in its
record's ``redirects``. An asset that redirects is stored at its own path.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import os
import sys
import time
import traceback
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver import urls
from archiver.capture import interrupt, rewrite_html, transport
from archiver.capture.crawlstate import CrawlState, StateFactory
from archiver.capture.fetch import AddressGuard, FetchPolicy, FetchResult, HostRule
from archiver.capture.linker import BUDGET_REASON, Linker
from archiver.capture.options import CaptureOptions
from archiver.capture.policy import Hint, Scope, redact
from archiver.capture.progress import Progress
from archiver.capture.relink import final_records, public, relink
from archiver.capture.report import CaptureReport, Item, write_report
from archiver.capture.state import NewURL, Row, State
from archiver.capture.textcodec import decode_css, decode_html
from archiver.capture.transport import Transport
from archiver.capture.treepaths import TreePaths
from archiver.capture.writer import TreeWriter, hash_file, stub_html
from archiver.css_refs import rewrite_stylesheet
from archiver.errors import CaptureError, URLError, UsageError
from archiver.tree import Header, ManifestWriter, Record, WarcRef, write_records
from archiver.urls import RESERVED_DIR

if TYPE_CHECKING:  # the renderer (and the browser behind it) is imported only by a rendering run
    from archiver.capture.render import Renderer, Reply

__all__ = ["STATE_NAME", "CaptureOptions", "CaptureReport", "Crawler", "Item", "run_capture"]

STATE_NAME = "crawl.sqlite"
REPORT_NAME = urls.REPORT_NAME
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_RAW_CACHE_BYTES = 256 << 20
_HTML_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
#: The size cap of a page (``--asset-cap`` is for assets; a larger one raises this too): an HTML
#: document this large is a runaway response, not a page to keep.
PAGE_CAP = 64 << 20


def _lock_folder(reserved: Path, out: Path) -> int:
    """An open descriptor of ``reserved`` holding its exclusive ``flock`` (closing it releases the
    lock, and so does the end of the process, however it ends); one line if another run holds it."""
    fd = os.open(reserved, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            "another capture is running in this folder; wait for it to end", subject=str(out)
        ) from None
    return fd


_stamp: tuple[int, str] = (-1, "")


def _now() -> str:
    """The current UTC time, to the second (RFC 3339); formatted once per second."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        _stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp[1]


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
        self.open_state: StateFactory = options.state or State
        self.writer = TreeWriter(out, self.tmp)
        self._check_out()
        self.state: CrawlState = self.open_state(self.reserved / STATE_NAME)
        home = self.state.get("home") or keys[0]
        self.home = home
        self.tree = TreePaths(self.state, out, home)
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
        self.fetcher: Transport | None = None
        self.renderer: Renderer | None = None
        self.manifest: ManifestWriter | None = None
        self.raw: OrderedDict[str, FetchResult] = OrderedDict()
        self.raw_bytes = 0
        self.spooled: dict[str, FetchResult] = {}
        self.fetching: dict[str, asyncio.Future[FetchResult]] = {}
        self.pages_charged = 0
        self.charged: set[str] = set()
        self.pages_done = 0
        self.assets_done = 0
        self.bytes_written = 0
        self.started = time.monotonic()
        self.inflight: dict[str, asyncio.Task[None]] = {}
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
            os.close(_lock_folder(self.reserved, out))  # never delete a capture that is running
            self._discard_previous()
        try:
            self.tmp.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot create the folder: {e.strerror}", subject=str(out)) from None

    def _discard_previous(self) -> None:
        """``resume=False`` on a folder holding a capture: delete that capture (every file its state
        recorded, its metadata, then the folders left empty) so this run starts afresh. Files the
        capture did not write are left alone."""
        old = self.open_state(self.reserved / STATE_NAME)
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
            self.writer.empty_tmp(remove=True)
        from archiver.warc.record import WARC_DIR, discard

        discard(self.reserved / WARC_DIR)
        for folder in sorted((p for p in self.out.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(OSError):
                folder.rmdir()  # only empty ones go

    def fetcher_robots(self, key: str) -> bool | None:
        return self.fetcher.robots_allows(key) if self.fetcher is not None else None

    def charge_page(self, key: str) -> bool:
        """May ``key`` join the frontier as a page under ``max_pages`` (unless the state keeps it)?"""
        limit = None if self.state.counts_pages else self.options.max_pages
        if limit is None:
            return True
        if key in self.charged or key in self.tree.paths:
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
        """Put bytes (or the file ``source``, moved) at tree path ``path`` atomically."""
        self.writer.write(path, data, source, link_from)

    async def _finish(
        self, key: str, *, record: Record | None = None, extra: list[Record] | None = None, **kwargs: Any
    ) -> None:
        with self.state.transaction():
            self.tree.flush()
            self.state.finish(key, record=record, extra_records=extra or [], **kwargs)
        if record is None or record.kind != "page":
            self.release_page(key)
        manifest = self.manifest
        if manifest is not None:
            for line in [*(extra or []), *([record] if record else [])]:
                manifest.add(public(line))

    def _key(self, url: str) -> str:
        """:func:`archiver.urls.dedup_key` with this capture's hygiene, remembered."""
        key = self._keys.get(url)
        if key is None:
            key = urls.dedup_key(url, self.scope.hygiene)
            if len(self._keys) >= 100_000:
                self._keys.clear()
            self._keys[url] = key
        return key

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
        path, _owner = self.tree.assign(key, "page")
        # a dedup key is its own dedup key (tests/test_urls_properties.py checks it)
        final = key if result.final_url == key else self._key(result.final_url)
        is_html = (result.media_type in _HTML_TYPES) or (
            result.media_type is None
            and result.read()[:512].lstrip().lower().startswith((b"<!doctype", b"<html"))
        )
        if final != key:
            final_path = self.tree.local_path(final, "page") if is_html else None
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
        if self.options.max_pages is not None and not self.state.counts_pages:
            self._charge_by_priority(text, base, row.depth)
        linker = Linker(self, path, base, row.depth, key)
        out = rewrite_html.rewrite(doc, linker, noscript="drop" if rendered else "unwrap")
        data = out.html.encode("utf-8")
        sha = hashlib.sha256(data).hexdigest()
        first = self.state.blob_path(sha)
        await self._write(path, data, link_from=first if first and first != path else None)
        self.bytes_written += len(data)
        chain = {self._key(u) for u in result.redirects}
        same = {u for u in chain | {key} if self.tree.local_path(u, "page") == path}
        record = Record(
            path=path,
            kind="page",
            media_type="text/html",
            size=len(data),
            sha256=sha,
            urls=[final, *sorted(same - {final})],
            title=out.title,
            status=result.status,
            fetched=result.fetched or _now(),
            depth=row.depth,
            referrer=row.referrer,
            redirects=sorted({k for k, p in self.state.redirected_to(final) if p != path}),
            warc=result.warc,
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
        asset_path = self.tree.second(row.key, "asset")
        record, new = await self._store_asset_bytes(row, result, asset_path)
        stub = await self._stub(page_path, asset_path, asset_path, row.key, result.status or 200, result.warc)
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

    async def _stub(
        self,
        path: str,
        target_path: str | None,
        shown: str,
        key: str,
        status: int,
        warc: WarcRef | None = None,
    ) -> Record:
        href = urls.rel(path, target_path) if target_path else shown
        data = stub_html(href, shown)
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
            warc=warc,
        )

    async def _page_redirect(
        self, row: Row, result: FetchResult, path: str, final: str, is_html: bool
    ) -> None:
        chain_status = 301
        hop = result.redirect_warcs[0] if result.redirect_warcs else None  # this URL's own 3xx
        moved_to_root = final.split("://", 1)[-1].partition("/")[2] == "" and path != "index.html"
        note = f"redirected to {redact(final)}"
        if moved_to_root:
            note += " (to the site root: the page has probably moved away)"
        new: list[NewURL] = []
        if is_html and self.scope.page_in_scope(final) and self.fetcher_robots(final) is not False:
            final_path, owner = self.tree.assign(final, "page")
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
            stub = await self._stub(path, final_path, final_path, row.key, chain_status, hop)
            target = self.state.record(final_path)
            if target is not None and row.key not in target.redirects:
                target.redirects = sorted({*target.redirects, row.key})
                self.state.put_record(target)
        elif not is_html and self.scope.want_asset(final):
            final_path, _ = self.tree.assign(final, "asset")
            new.append(NewURL(final, "asset", row.depth + 1, row.referrer, path=final_path))
            stub = await self._stub(path, final_path, final_path, row.key, chain_status, hop)
        else:
            stub = await self._stub(path, None, result.final_url, row.key, chain_status, hop)
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
            linker = Linker(self, path, result.final_url, row.depth, row.key)
            css = rewrite_stylesheet(
                text, lambda ref, role: linker(ref, "stylesheet" if role == "import" else "embed")
            )
            data = css.text.encode("utf-8")
            new = list(linker.new.values())
            links = linker.links
            await self._write(path, data)
            size, sha = len(data), hashlib.sha256(data).hexdigest()
        elif result.file is not None:
            sha, size = hash_file(result.file)
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
            fetched=result.fetched or _now(),
            depth=row.depth,
            referrer=row.referrer,
            warc=result.warc,
        )
        self._asset_links[row.key] = (path, links)
        return record, new

    async def asset(self, row: Row) -> None:
        result = await self.get(row.key, row.referrer)
        if result.outcome not in ("ok", "redirected"):
            await self._fail(row, result)
            return
        path, _ = self.tree.assign(row.key, "asset")
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
            path, owner = self.tree.assign(key, "page")
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
        self.tree.flush()
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
        """Capture until the frontier is empty; returns the report. One run at a time per folder:
        the reserved folder is locked (``flock``) while it runs, and a second run on the same folder
        is refused with one line (the lock goes with the process, also when it is killed)."""
        fd = _lock_folder(self.reserved, self.out)
        try:
            return await self._run()
        finally:
            os.close(fd)

    async def _run(self) -> CaptureReport:
        self.writer.empty_tmp()
        self._seed()
        header = self._header(incomplete=True)
        # not fsynced line by line: the state, not this log, is what a resume trusts, and the
        # manifest is rewritten from the state at the end
        self.manifest = ManifestWriter(self.out, header, durable=False)
        progress: Progress | None = None
        show = self.options.progress if self.options.progress is not None else sys.stderr.isatty()
        recorder = None
        try:
            if self.options.warc:  # every exchange kept as WARC (formats/warc.md §7)
                from archiver.warc.record import for_capture

                recorder = for_capture(self)
            factory = self.options.transport or transport.live(
                self.options.network_backend, recorder, self.state.politeness()
            )
            async with factory(self.policy, self.guard, self.tmp) as fetcher:
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
                    progress = Progress(self, sys.stderr)
                    progress.start()
                renewing = asyncio.ensure_future(self._renew())
                try:
                    await self._loop()
                finally:
                    renewing.cancel()
                    if progress is not None:
                        await progress.stop()
                    for task in self.inflight.values():
                        task.cancel()
                    await asyncio.gather(*self.inflight.values(), return_exceptions=True)
                    self.state.release()  # what is unfinished goes back to the frontier at once
                    if self.renderer is not None:
                        await self.renderer.close()
        finally:
            if recorder is not None:
                recorder.close()
            self.finalize()
        report = self.report()
        write_report(self.reserved / REPORT_NAME, report)
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
                for row in self.state.claim(kind, free, exclude=self.inflight):
                    task = asyncio.ensure_future(self._task(row))
                    task.set_name(kind)
                    self.inflight[row.key] = task
            if not self.inflight:
                wait = self.state.waiting()  # work leased to other workers, or a retry due later
                if wait is None:
                    return
                await asyncio.sleep(wait)
                continue
            done, _ = await asyncio.wait(self.inflight.values(), return_when=asyncio.FIRST_COMPLETED)
            for key in [k for k, t in self.inflight.items() if t in done]:
                task = self.inflight.pop(key)
                error = task.exception()
                if error is not None:
                    raise error

    async def _renew(self) -> None:
        """Renew the claims on the rows in flight while they are worked on (formats/crawl-state.md §2)."""
        while True:
            await asyncio.sleep(self.state.renew_every)
            self.state.renew(list(self.inflight))

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
        self.tree.flush()
        if self.manifest is not None:
            self.manifest.close()
            self.manifest = None
        complete = self.state.count("pending") == 0
        shard = self.state.shard()  # this folder's own rows (all of them, with one worker)
        if complete:
            # a transport other than the live network is an archive: what it lacks, it always lacks
            fixed = self.options.transport is not None
            relink(shard, self.out, self.scope.hygiene, self.writer, drop_candidates=fixed)
        self.state.set("complete", "1" if complete else "0")
        records = [public(record) for record in final_records(self.state, rows=shard.rows())]
        write_records(self.out, self._header(incomplete=not complete), records)
        self.writer.empty_tmp(remove=True)
        self.state.close()

    def report(self) -> CaptureReport:
        state = self.open_state(self.reserved / STATE_NAME)
        try:
            items: list[Item] = []
            counts: dict[str, int] = {}
            for r in state.shard().rows():
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


def _media_from_path(path: str) -> str:
    from archiver.media import media_type_for

    return media_type_for(path)


def run_capture(seeds: list[str], out: Path, options: CaptureOptions) -> CaptureReport:
    """Run a capture to the end (or to Ctrl-C, or a shared crawl's SIGTERM: the tree is left resumable)."""
    crawler = Crawler(seeds, Path(out), options)
    return interrupt.run(crawler.run(), terminate=options.state is not None)
