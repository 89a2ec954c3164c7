"""The crawl's scheduling: the frontier loop, scope and budget, and the page and asset stages.

A capture of seeds into ``out`` (formats/tree.md) runs these stages for each URL the crawl state
(:mod:`.crawlstate`; SQLite by default, :mod:`.state`) gives out, ordered by priority, then link
depth, then discovery:

- **page**: fetch through the transport (:mod:`.transport`: the live network of :mod:`.fetch`, or
  another source), render (:mod:`.render`; the browser's requests come back here and are answered
  from what was already fetched, or fetched once), rewrite (:mod:`.rewrite_html`, every reference
  through :class:`.linker.Linker` and :meth:`archiver.capture.policy.Scope.decide`), write at its
  tree path (:mod:`.treepaths`, :mod:`.writer`); a page that redirects or is no HTML leaves a
  redirect stub (:mod:`.redirects`);
- **asset**: fetch (or take what the browser already fetched, :mod:`.responses`), rewrite stylesheets
  (:mod:`archiver.css_refs`), write at its tree path.

Each completed URL is one state transaction (its outcome, its manifest record, the references it
revealed) followed by one manifest line (:class:`archiver.tree.ManifestWriter`). Files are written
atomically (:mod:`.writer`); a page whose bytes equal an earlier page's is a hard link to it.

When the frontier is empty, every row takes the shortest depth and referrer over the discoveries
(:func:`.linker.revive_within_depth`; tree.md §8) and :func:`.relink.relink` points every link at what
the tree finally holds, so the tree does not depend on the order the crawl met things. Then the
manifest is rewritten from the state, one record per path sorted by path; the header option
``"incomplete": true`` marks a run that stopped with URLs still pending. The report is
``_archiver/report.json`` (:mod:`.report`).

Redirects: a page that redirects to a URL with another tree path leaves a small *redirect stub* at its
own path (a ``<meta http-equiv=refresh>`` page, recorded with the 3xx status) so links to it work from
disk; the target is captured as a page of its own (if in scope) and lists the redirecting URL in its
record's ``redirects``. An asset that redirects is stored at its own path.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver import urls
from archiver.capture import interrupt, redirects, rewrite_html, searchbox, transport
from archiver.capture.budget import PageBudget
from archiver.capture.crawlstate import CrawlState, StateFactory
from archiver.capture.fetch import AddressGuard, FetchPolicy, FetchResult, HostRule
from archiver.capture.linker import Linker, revive_within_depth
from archiver.capture.options import CaptureOptions
from archiver.capture.outfolder import check_out, lock_folder
from archiver.capture.policy import Scope, redact
from archiver.capture.progress import Progress
from archiver.capture.relink import final_records, public, relink
from archiver.capture.report import CaptureReport, Item, write_report
from archiver.capture.responses import Responses
from archiver.capture.state import NewURL, Row, State
from archiver.capture.textcodec import decode_css, decode_html
from archiver.capture.transport import Transport
from archiver.capture.treepaths import TreePaths
from archiver.capture.writer import TreeWriter, hash_file, now
from archiver.css_refs import rewrite_stylesheet
from archiver.errors import CaptureError, UsageError
from archiver.tree import Header, ManifestWriter, Record, write_records
from archiver.urls import RESERVED_DIR

if TYPE_CHECKING:  # the renderer (and the browser behind it) is imported only by a rendering run
    from archiver.capture.render import Renderer

__all__ = ["STATE_NAME", "CaptureOptions", "CaptureReport", "Crawler", "Item", "run_capture"]

STATE_NAME = "crawl.sqlite"
REPORT_NAME = urls.REPORT_NAME
#: where the pages' own search boxes submit (archiver.search.store.INDEX_DIR, not imported here: the
#: search package costs ~80 ms to import, 5 % of a small capture, and most runs do not build an index)
SEARCH_PAGE = f"{RESERVED_DIR}/search/index.html"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_HTML_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


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
        check_out(
            out,
            self.reserved,
            self.tmp,
            STATE_NAME,
            resume=options.resume,
            open_state=self.open_state,
            writer=self.writer,
        )
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
        self.responses = Responses(self)
        self.get = self.responses.get
        self.answer = self.responses.answer
        self.budget = PageBudget(self)
        self.pages_done = 0
        self.assets_done = 0
        self.bytes_written = 0
        self.started = time.monotonic()
        self.inflight: dict[str, asyncio.Task[None]] = {}
        # the frontier ran out and the depths were settled (the loop's only normal end): a run
        # stopped before, even with nothing left pending (during the settling), is not complete
        self.finished = False
        self._keys: dict[str, str] = {}
        self._asset_links: dict[str, tuple[str, dict[str, bool]]] = {}

    def fetcher_robots(self, key: str) -> bool | None:
        return self.fetcher.robots_allows(key) if self.fetcher is not None else None

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
            self.budget.release(key)
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
                await redirects.page_redirect(self, row, result, path, final, is_html)
                return
        if not is_html:
            await redirects.not_html(self, row, result, path)
            return
        text = decode_html(result.read(), result.charset)
        rendered = False
        note = ""
        if self.renderer is not None:
            try:
                text = await self.renderer.render(result.final_url, key)
                rendered = True
            except CaptureError as e:
                note = f"{e.message}; stored as fetched, unrendered"
        doc = rewrite_html.parse(text)
        base = rewrite_html.base_url(doc, result.final_url)
        self.budget.charge_links(text, base, row.depth)
        linker = Linker(self, path, base, row.depth, key)
        search = searchbox.Target(urls.rel(path, SEARCH_PAGE), result.final_url)
        out = rewrite_html.rewrite(doc, linker, noscript="drop" if rendered else "unwrap", search=search)
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
            fetched=result.fetched or now(),
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
            self.responses.spooled.pop(row.key, None)
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
            fetched=result.fetched or now(),
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
            state.set("created", now())
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
        self.budget.start()
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
        fd = lock_folder(self.reserved, self.out)
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
        tty = sys.stderr.isatty()
        if self.options.progress is None:  # the terminal's line, or a plain line in a log
            every = 0.5 if tty else self.options.progress_every
            show = every > 0
        else:
            show, every, tty = self.options.progress, 0.5, True
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
                    progress = Progress(self, sys.stderr, tty=tty, every=every)
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
        if self.options.wants_search_index():  # the run ended (not interrupted): the boxes lead somewhere
            from archiver.search.store import write_index

            write_index(self.out)
            self.writer.empty_tmp(remove=True)
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
                if wait is None and not revive_within_depth(self):
                    self.finished = True
                    return
                await asyncio.sleep(wait or 0)
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
            home=redact(self.home), created=self.state.get("created") or now(), seeds=seeds, options=options
        )

    def finalize(self) -> None:
        """Rewrite the manifest from the state: one record per path, sorted by path, with every
        merged URL listed and the smallest known depth and referrer; mark the crawl (in)complete."""
        self.tree.flush()
        if self.manifest is not None:
            self.manifest.close()
            self.manifest = None
        complete = self.finished and self.state.count("pending") == 0
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
            total = sum(rec.size for rec in state.records())
            complete = state.get("complete") == "1"  # as finalize() found it
        finally:
            state.close()
        return CaptureReport(
            out=str(self.out),
            home=redact(self.home),
            complete=complete,
            pages=pages,
            assets=assets,
            bytes=total,
            requests=self.fetcher.requests if self.fetcher else 0,
            elapsed=time.monotonic() - self.started,
            counts=counts,
            items=items,
            run_pages=self.pages_done,
            run_assets=self.assets_done,
            run_bytes=self.bytes_written,
            notes=list(getattr(self.fetcher, "notes", [])),
        )


def _media_from_path(path: str) -> str:
    from archiver.media import media_type_for

    return media_type_for(path)


def run_capture(seeds: list[str], out: Path, options: CaptureOptions) -> CaptureReport:
    """Run a capture to the end, or to Ctrl-C, SIGTERM or SIGHUP (the tree is left resumable)."""
    crawler = Crawler(seeds, Path(out), options)
    return interrupt.run(crawler.run(), terminate=True)
