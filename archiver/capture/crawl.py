"""The crawl's scheduling: the frontier loop, the run's set-up and its end.

A capture of seeds into ``out`` (formats/tree.md) works on each URL the crawl state
(:mod:`.crawlstate`; SQLite by default, :mod:`.state`) gives out, ordered by priority, then link
depth, then discovery, with as many at once as there are slots (``--tabs`` pages when rendering,
else ``--concurrency``; ``--concurrency`` assets). What happens to one URL is a stage: the **page**
stage (:mod:`.page`: fetch, render, rewrite, write; a redirect or a page that is no HTML leaves a
redirect stub, :mod:`.redirects`) and the **asset** stage (:mod:`.stage`, which also ends every URL:
one state transaction, then one manifest line). The stages take a :class:`.context.Context` (the
state, the tree's paths and writer, the scope, the transport), the page budget (:mod:`.budget`) and
the responses (:mod:`.responses`), never this loop: no module of the package imports this one but
the package's entry point (tests/capture/test_seams.py).

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
import contextlib
import functools
import gc
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver import urls
from archiver.capture import interrupt, transport
from archiver.capture.budget import PageBudget
from archiver.capture.context import Context
from archiver.capture.fetch import AddressGuard, FetchPolicy, HostRule
from archiver.capture.hosts import key_host
from archiver.capture.linker import revive_within_depth
from archiver.capture.options import CaptureOptions
from archiver.capture.outfolder import check_out, lock_folder
from archiver.capture.policy import Scope, redact
from archiver.capture.relink import final_records, public, relink
from archiver.capture.report import CaptureReport, Item, write_report
from archiver.capture.responses import Responses
from archiver.capture.stage import Stage
from archiver.capture.state import NewURL, Row, State
from archiver.capture.transport import Transport
from archiver.capture.treepaths import TreePaths
from archiver.capture.writer import TreeWriter, now
from archiver.errors import CaptureError, StoreError, UsageError, store_error
from archiver.tree import Header, ManifestWriter, Record, write_records
from archiver.urls import RESERVED_DIR

if TYPE_CHECKING:  # the renderer (and the browser behind it) is imported only by a rendering run
    from archiver.capture.crawlstate import CrawlState, StateFactory
    from archiver.capture.progress import Progress
    from archiver.capture.render import Renderer

__all__ = ["STATE_NAME", "CaptureOptions", "CaptureReport", "Crawler", "Item", "run_capture"]

STATE_NAME = "crawl.sqlite"
#: a shared state's free slots are claimed again after this wait (seconds), doubled up to the most
#: while nothing ends (formats/crawl-state.md §2, *every slot busy*)
_POLL_FIRST, _POLL_MOST = 0.05, 0.4
REPORT_NAME = urls.REPORT_NAME


class Crawler:
    """One capture run over ``out`` (see the module docstring). Build it, then ``await run()``."""

    def __init__(self, seeds: list[str], out: Path, options: CaptureOptions) -> None:
        if not seeds:
            raise UsageError("no seed URL given", subject="capture")
        self.options = options
        self.out = out
        # each seed's key once, in order (a list's 'in' was quadratic: 40,000 seeds took 5 s of CPU)
        keys = list(dict.fromkeys(urls.dedup_key(urls.parse_seed(seed)) for seed in seeds))
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
        self.tree = TreePaths(self.state, out, home, keep=self.writer.keep)
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
        #: what the stages share (:mod:`.context`); they never see this loop
        self.context = Context(options, out, self.state, self.tree, self.scope, self.writer)
        self.responses = Responses(self.context)
        self.get = self.responses.get
        self.answer = self.responses.answer
        self.budget = PageBudget(self.context)
        self.stage = Stage(self.context, self.budget, self.responses)
        self.started = time.monotonic()
        self.inflight: dict[str, asyncio.Task[None]] = {}
        #: each task of ``inflight``: its key, whether it is a page's and when it started; the pages
        #: among them; the hosts they name, with how many each (kept as tasks start and end, not
        #: counted again at each turn of the loop)
        self._tasks: dict[asyncio.Task[None], tuple[str, bool, int]] = {}
        self._started = 0  # tasks started: the third item of each of ``_tasks``, their order
        self._pages_running = 0
        self._hosts_busy: dict[str, int] = {}
        #: tasks of ``inflight`` that ended since the loop last looked, and the loop's wait for one
        self._ended: list[asyncio.Task[None]] = []
        self._wake: asyncio.Future[None] | None = None
        # the frontier ran out and the depths were settled (the loop's only normal end): a run
        # stopped before, even with nothing left pending (during the settling), is not complete
        self.finished = False
        #: what finalize() read for the report: this folder's rows, the records, complete or not
        self._final: tuple[list[Row], list[Record], bool] | None = None

    def fetcher_robots(self, key: str) -> bool | None:
        return self.context.fetcher_robots(key)

    @property
    def fetcher(self) -> Transport | None:
        return self.context.fetcher

    @property
    def renderer(self) -> Renderer | None:
        return self.context.renderer

    @property
    def pages_done(self) -> int:
        return self.context.pages_done

    @property
    def assets_done(self) -> int:
        return self.context.assets_done

    @property
    def bytes_written(self) -> int:
        return self.context.bytes_written

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
        mark = self.options.refresh_mark
        if self.options.refresh and (mark is None or state.get("refreshed") != mark):
            state.refresh()
            if mark is not None:  # a kill before this line refreshes again when resumed: no harm
                state.set("refreshed", mark)
        state.requeue(("failed", "unconfirmed"), self.options.max_attempts)
        self.budget.start()
        state.set("complete", "0")

    async def _task(self, row: Row) -> None:
        try:
            if row.kind == "page":
                # imported by the first page that is not answered 304 (the parsers behind it: ~0.1 s
                # of CPU, a tenth of an unchanged re-capture of 1,000 pages)
                from archiver.capture.page import page

                await page(self.stage, row)
            else:
                await self.stage.asset(row)
        except StoreError:
            raise  # the tree cannot be written: the run stops, the row is done by the next run
        except (OSError, CaptureError) as e:
            stop = store_error(e, str(self.out))
            if stop is not None:
                raise stop from None
            await self.stage.finish(row.key, state="failed", outcome="failed", reason=f"cannot store: {e}")
        except Exception as e:  # a bug must not stop a long crawl; it is recorded with its trace
            stop = store_error(e, str(self.reserved / STATE_NAME))  # the state's disk full or failing
            if stop is not None:
                raise stop from None
            trace = traceback.format_exception_only(type(e), e)[-1].strip()
            await self.stage.finish(
                row.key, state="failed", outcome="failed", reason=f"internal error: {trace}"
            )
            if os.environ.get("ARCHIVER_DEBUG"):
                traceback.print_exc()

    async def run(self) -> CaptureReport:
        """Capture until the frontier is empty; returns the report. One run at a time per folder:
        the reserved folder is locked (``flock``) while it runs, and a second run on the same folder
        is refused with one line (the lock goes with the process, also when it is killed)."""
        fd = lock_folder(self.reserved, self.out)
        try:
            return await self._run()
        except Exception as e:
            stop = store_error(e, str(self.out))
            if stop is None:
                raise
            where = "" if stop.subject in (None, str(self.out)) else f"{stop.subject}: "
            raise StoreError(
                f"{where}{stop.message}; the capture stopped, keeping what it stored"
                " (run the same command again to resume)",
                subject=str(self.out),
            ) from None
        finally:
            os.close(fd)

    async def _run(self) -> CaptureReport:
        self.writer.empty_tmp()
        self._seed()
        header = self._header(incomplete=True)
        # not fsynced line by line: the state, not this log, is what a resume trusts, and the
        # manifest is rewritten from the state at the end
        self.context.manifest = ManifestWriter(self.out, header, durable=False)
        progress: Progress | None = None
        tty = sys.stderr.isatty()
        if self.options.progress is None:  # the terminal's line, or a plain line in a log
            every = 0.5 if tty else self.options.progress_every
            show = every > 0
        else:
            show, every, tty = self.options.progress, 0.5, True
        recorder = None
        failure: BaseException | None = None
        try:
            if self.options.warc:  # every exchange kept as WARC (formats/warc.md §7)
                from archiver.warc.record import for_capture

                recorder = for_capture(self)
            factory = self.options.transport or transport.live(
                self.options.network_backend, recorder, self.state.politeness()
            )
            async with factory(self.policy, self.guard, self.tmp) as fetcher:
                self.context.fetcher = fetcher
                if self.options.render:
                    from archiver.capture.render import Renderer

                    self.context.renderer = Renderer(
                        self.answer,
                        chromium=self.options.chromium,
                        tabs=self.options.tabs,
                        timeout=self.options.timeout,
                        settle=self.options.settle,
                    )
                    await self.context.renderer.start()
                if show:
                    from archiver.capture.progress import Progress

                    progress = Progress(self.context, sys.stderr, tty=tty, every=every)
                    progress.start()
                renewing = asyncio.ensure_future(self._renew())
                try:
                    if self.options.revalidate and isinstance(self.state, State):  # one process
                        from archiver.capture.kept import records_at  # only a revalidating run
                        from archiver.capture.revalidate import sweep

                        state = self.state
                        slots = self.options.concurrency
                        await sweep(
                            self.stage,
                            state.pending_after,
                            functools.partial(records_at, state),
                            slots,
                            self._task,
                        )
                    await self._loop()
                finally:
                    renewing.cancel()
                    if progress is not None:
                        await progress.stop()
                    for task in self.inflight.values():
                        task.cancel()
                    await asyncio.gather(*self.inflight.values(), return_exceptions=True)
                    try:
                        self.state.release()  # what is unfinished goes back to the frontier at once
                    except Exception as e:  # a full disk: the state keeps the rows leased to us,
                        if store_error(e, "") is None:  # which the next run takes back (§2)
                            raise
                    if self.context.renderer is not None:
                        await self.context.renderer.close()
        except BaseException as e:
            failure = e
            raise
        finally:
            self._end(recorder, failure)
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
        # a shared state frees hosts and adds rows while this worker waits: slots left free are
        # claimed again after a short wait, not only when a task of this worker ends
        shared = self.state.politeness() is not None
        poll = _POLL_FIRST
        busy = self._hosts_busy  # every slot busy: free hosts' rows first (the hosts in flight)
        while True:
            running_pages = self._pages_running
            running_assets = len(self.inflight) - running_pages
            short = False
            for kind, free in (("page", page_slots - running_pages), ("asset", asset_slots - running_assets)):
                if free <= 0:
                    continue
                rows = self.state.claim(kind, free, exclude=self.inflight, busy=busy)
                short = short or len(rows) < free
                if rows:
                    poll = _POLL_FIRST
                is_page = kind == "page"
                for row in rows:
                    host = key_host(row.key)
                    busy[host] = busy.get(host, 0) + 1
                    task = asyncio.ensure_future(self._task(row))
                    task.set_name(kind)
                    task.add_done_callback(self._ended_one)
                    self.inflight[row.key] = task
                    self._started += 1
                    self._tasks[task] = (row.key, is_page, self._started)
                    self._pages_running += is_page
            if not self.inflight:
                wait = self.state.waiting()  # work leased to other workers, or a retry due later
                if wait is None and not revive_within_depth(self.context, self.budget):
                    self.finished = True
                    return
                await asyncio.sleep(wait or 0)
                continue
            timeout = poll if shared and short else None
            if not self._ended:  # what asyncio.wait(FIRST_COMPLETED) does, without its callback on
                # every task in flight added and removed at each wait
                self._wake = wake = asyncio.get_running_loop().create_future()
                try:
                    if timeout is None:
                        await wake
                    else:
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(timeout):
                                await wake
                finally:
                    self._wake = None
            done, self._ended = self._ended, []
            if not done:  # nothing ended, and the claim found nothing new: wait longer next time
                poll = min(poll * 2, _POLL_MOST)
            if len(done) > 1:  # in the order they started (the first error raised is the earliest's)
                done.sort(key=lambda t: self._tasks[t][2])
            for task in done:
                key, is_page, _ = self._tasks.pop(task)
                del self.inflight[key]
                self._pages_running -= is_page
                host = key_host(key)
                left = busy[host] - 1
                if left:
                    busy[host] = left
                else:
                    del busy[host]
                error = task.exception()
                if error is not None:
                    raise error

    def _ended_one(self, task: asyncio.Task[None]) -> None:
        """A task of ``inflight`` ended: noted for the loop, woken if it waits."""
        self._ended.append(task)
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

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

    def _end(self, recorder: Any, failure: BaseException | None) -> None:
        """Close the WARC and finalize the tree. After a failure to write (a full disk, a folder
        linked out of the tree: :func:`store_error`) each step is tried and a further refusal to
        write passed over: the state, as last committed, is what the next run resumes from."""
        if failure is None or store_error(failure, "") is None:
            if recorder is not None:
                recorder.close()
            self.finalize()
            return
        for step in (recorder.close if recorder is not None else None, self.finalize):
            try:
                if step is not None:
                    step()
            except Exception as e:
                if store_error(e, "") is None:
                    raise
        with contextlib.suppress(Exception):  # nothing of this run left in tmp (fetch spools, writes)
            self.writer.empty_tmp(remove=True)

    def finalize(self) -> None:
        """Rewrite the manifest from the state: one record per path, sorted by path, with every
        merged URL listed and the smallest known depth and referrer; mark the crawl (in)complete."""
        self.tree.flush()
        if self.context.manifest is not None:
            self.context.manifest.close()
            self.context.manifest = None
        complete = self.finished and self.state.count("pending") == 0
        shard = self.state.shard()  # this folder's own rows (all of them, with one worker)
        rows = list(shard.rows())  # read once: relinking changes records and links, no row
        if complete:
            # a transport other than the live network is an archive: what it lacks, it always lacks
            fixed = self.options.transport is not None
            relink(shard, self.out, self.scope.hygiene, self.writer, drop_candidates=fixed, rows=rows)
        self.state.set("complete", "1" if complete else "0")
        if self.writer.verified and isinstance(self.state, State):  # what a later run may trust
            self.state.note_verified(self.writer.verified)
        records = [public(record) for record in final_records(self.state, rows=rows)]
        header = self._header(incomplete=not complete)
        if complete and self.options.final_manifest is not None:  # a re-capture's: written once
            self.options.final_manifest(header, records)
        else:
            write_records(self.out, header, records)
        self.writer.empty_tmp(remove=True)
        self.state.close()
        if isinstance(self.state, State):  # the report's rows and records, read once (one process)
            self._final = (rows, records, complete)

    def report(self) -> CaptureReport:
        if self._final is not None:
            return self._report(*self._final)
        state = self.open_state(self.reserved / STATE_NAME)
        try:
            return self._report(state.shard().rows(), state.records(), state.get("complete") == "1")
        finally:
            state.close()

    def _report(self, rows: Iterable[Row], records: Iterable[Record], complete: bool) -> CaptureReport:
        """The report of this run from the rows of this folder and every record of the state, and
        whether finalize() found the crawl complete."""
        items: list[Item] = []
        counts: dict[str, int] = {}
        for r in rows:
            outcome = r.outcome or ("pending" if r.state == "pending" else r.state)
            counts[outcome] = counts.get(outcome, 0) + 1
            items.append(Item(redact(r.key), r.kind, outcome, r.reason or "", r.status, r.path))
        pages = assets = total = unchanged = 0
        for rec in records:  # each decoded once
            unchanged += rec.revalidated
            if rec.kind == "asset":
                assets += 1
            elif (rec.status or 200) // 100 != 3:
                pages += 1
            total += rec.size
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
            unchanged=unchanged,
            # a WARC import's transport and a Redis worker's state have things to say (the others: none)
            notes=[*getattr(self.fetcher, "notes", []), *getattr(self.state, "notes", [])],
        )


#: The collector's first threshold while a capture runs, at least (Python's default: 700
#: allocations), as the ``archiver`` command sets it for its whole process (archiver.cli.GC_THRESHOLD):
#: a capture through the library (:func:`archiver.capture.capture`) imports its page stage (selectolax,
#: tinycss2: objects that live to the end) and makes objects for every URL, and at 700 allocations the
#: collector walked them again and again for no garbage: ~13 M instructions of a no-render capture of
#: 500 pages (0.7 %). The threshold the process had is back when the last capture running ends.
GC_THRESHOLD = 50_000
_gc_lock = threading.Lock()
_gc_runs = 0  # captures running in this process (threads)
_gc_before: tuple[int, int, int] | None = None  # the thresholds they found, put back by the last


@contextlib.contextmanager
def _collector_threshold() -> Iterator[None]:
    """While the capture runs, the collector's first threshold is at least :data:`GC_THRESHOLD`
    (left as it is when it is higher, or 0: automatic collection off)."""
    global _gc_runs, _gc_before
    with _gc_lock:
        if _gc_runs == 0:
            first, second, third = gc.get_threshold()
            _gc_before = None
            if 0 < first < GC_THRESHOLD:
                _gc_before = (first, second, third)
                gc.set_threshold(GC_THRESHOLD, second, third)
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0 and _gc_before is not None:
                gc.set_threshold(*_gc_before)
                _gc_before = None


def run_capture(seeds: list[str], out: Path, options: CaptureOptions) -> CaptureReport:
    """Run a capture to the end, or to Ctrl-C, SIGTERM or SIGHUP (the tree is left resumable), the
    collector's threshold raised meanwhile (:data:`GC_THRESHOLD`)."""
    with _collector_threshold():
        crawler = Crawler(seeds, Path(out), options)
        return interrupt.run(crawler.run(), terminate=True)
