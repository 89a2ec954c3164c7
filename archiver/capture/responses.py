"""What a capture fetched, as fetched, for the browser and the stages: a bounded cache of answers
(in memory up to :data:`RAW_CACHE_BYTES`, the oldest dropped first; large bodies as their temporary
files), one fetch per URL however many ask for it at once, and the answers to the browser's
requests while a page renders (from the tree when the asset is stored already, else fetched once
through the transport; a refused request is a recorded outcome, never a request sent)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections import OrderedDict
from typing import TYPE_CHECKING, Literal

import msgspec

from archiver import urls
from archiver.capture.conditional import judge
from archiver.capture.linker import note_refused
from archiver.errors import URLError

if TYPE_CHECKING:
    from archiver.capture.context import Context
    from archiver.capture.fetch import FetchResult
    from archiver.capture.render import Reply

__all__ = ["PAGE_CAP", "RAW_CACHE_BYTES", "Responses"]

RAW_CACHE_BYTES = 256 << 20
#: The size cap of a page (``--asset-cap`` is for assets; a larger one raises this too): an HTML
#: document this large is a runaway response, not a page to keep.
PAGE_CAP = 64 << 20


class Responses:
    """The answers of one run over ``context`` (see the module docstring)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self.raw: OrderedDict[str, FetchResult] = OrderedDict()
        self.raw_bytes = 0
        self.spooled: dict[str, FetchResult] = {}
        self.fetching: dict[str, asyncio.Future[FetchResult]] = {}
        #: a fetch whose redirect chain waits on another's answer → that other (:meth:`_held`)
        self.waits: dict[str, str] = {}

    def remember(self, key: str, result: FetchResult) -> None:
        if result.file is not None:
            self.spooled[key] = result
            return
        old = self.raw.pop(key, None)
        if old is not None and old.body is not None:
            self.raw_bytes -= len(old.body)
        self.raw[key] = result
        self.raw_bytes += len(result.body or b"")
        while self.raw_bytes > RAW_CACHE_BYTES and len(self.raw) > 1:
            _k, dropped = self.raw.popitem(last=False)
            self.raw_bytes -= len(dropped.body or b"")

    def cached(self, key: str) -> FetchResult | None:
        hit = self.raw.get(key)
        if hit is not None:
            self.raw.move_to_end(key)
            return hit
        return self.spooled.get(key)

    async def get(
        self,
        key: str,
        referrer: str | None,
        accept: str = "*/*",
        *,
        page: bool = False,
        conditional: dict[str, str] | None = None,
    ) -> FetchResult:
        """``key``'s response: from the cache, from a fetch already under way, or fetched now
        (``page``: with the page size cap, not the asset cap; ``conditional``: the validators of
        the previous bytes, whole on disk, :mod:`.conditional`). A 304 is kept only as the answer to
        the conditional request made here (status 304, not cached); any other 304 is asked again
        unconditionally once, and a 304 to that fails."""
        hit = self.cached(key)
        if hit is not None:
            return hit
        running = self.fetching.get(key)
        if running is not None:
            return await asyncio.shield(running)
        assert self.context.fetcher is not None
        future: asyncio.Future[FetchResult] = asyncio.get_running_loop().create_future()
        self.fetching[key] = future
        try:
            cap = max(self.context.options.asset_cap, PAGE_CAP) if page else "default"
            result = await self._fetch(key, referrer, accept, cap, conditional)
            if result.status == 304:  # trusted (_fetch): the caller keeps its previous bytes
                future.set_result(result)
                return result
            if result.unfollowed:  # the chain led to an answer this run holds or is fetching
                joined = await self._joined(key, result)
                if joined is None:  # that answer is a spooled file, or gone: follow the chain after all
                    joined = await self.context.fetcher.fetch(key, referrer=referrer, accept=accept, cap=cap)
                result = joined
            self.remember(key, result)
            if result.final_url != key and result.outcome in ("ok", "redirected"):
                with contextlib.suppress(URLError):
                    final_key = urls.dedup_key(result.final_url, self.context.scope.hygiene)
                    if final_key not in self.raw and result.file is None:
                        self.remember(final_key, msgspec.structs.replace(result, url=final_key, redirects=[]))
            future.set_result(result)
            return result
        except BaseException as e:
            future.set_exception(e)
            future.exception()  # mark retrieved
            raise
        finally:
            self.fetching.pop(key, None)

    async def _fetch(
        self,
        key: str,
        referrer: str | None,
        accept: str,
        cap: int | Literal["default"],
        conditional: dict[str, str] | None,
    ) -> FetchResult:
        """One fetch of ``key``, conditional when ``conditional`` has validators; a 304 that does
        not answer them is not trusted (:func:`.conditional.judge`)."""
        fetcher = self.context.fetcher
        assert fetcher is not None
        held = functools.partial(self._held, key)
        more = {"conditional": conditional} if conditional else {}  # a replay transport takes none
        result = await fetcher.fetch(key, referrer=referrer, accept=accept, cap=cap, stop_at=held, **more)
        retried = False
        while True:
            verdict = judge(result.status, conditional=bool(conditional) and not retried,
                            redirected=bool(result.redirects), retried=retried)  # fmt: skip
            if verdict in ("keep", "new"):
                return result
            result.discard()
            if verdict == "fail":
                why = "answered 304 Not Modified to a request that was not conditional"
                return msgspec.structs.replace(result, outcome="failed", reason=why, body=None)
            retried = True
            result = await fetcher.fetch(key, referrer=referrer, accept=accept, cap=cap, stop_at=held)

    def _held(self, key: str, url: str) -> bool:
        """Whether the redirect chain of ``key`` may stop at ``url``: its answer is in the cache
        (in memory: a spooled one is moved into the tree by its own stage and may be gone), or
        being fetched by a task that does not wait, through other chains, on ``key`` itself (two
        chains into each other would wait forever). The wait is noted in ``waits``."""
        try:
            target = urls.dedup_key(url, self.context.scope.hygiene)
        except URLError:
            return False
        hit = self.raw.get(target)
        if hit is not None:
            return hit.outcome == "ok" and not hit.redirects
        if target not in self.fetching:
            return False
        seen, t = {key}, target
        while t is not None:
            if t in seen:
                return False
            seen.add(t)
            t = self.waits.get(t)
        self.waits[key] = target
        return True

    async def _joined(self, key: str, result: FetchResult) -> FetchResult | None:
        """An unfollowed redirect chain joined to the answer of its target (waited for when it is
        being fetched): what following it to the end would have given, one request fewer. None
        when that answer is not in memory (a spooled file belongs to its own stage)."""
        target_key = urls.dedup_key(result.final_url, self.context.scope.hygiene)
        try:
            running = self.fetching.get(target_key)
            target = await asyncio.shield(running) if running is not None else self.raw.get(target_key)
        finally:
            self.waits.pop(key, None)
        if target is None or target.file is not None:
            return None
        return msgspec.structs.replace(
            target,
            url=result.url,
            outcome="redirected" if target.outcome == "ok" else target.outcome,
            redirects=result.redirects + target.redirects,
            redirect_warcs=result.redirect_warcs + target.redirect_warcs,
            unfollowed=False,
        )

    async def answer(
        self, url: str, resource_type: str, referrer: str | None, source: str | None = None
    ) -> Reply | None:
        """The renderer's routing callback: every browser request (of the page of key ``source``)
        is answered from here."""
        from archiver.capture.render import Reply

        try:
            key = urls.dedup_key(urls.canonicalize(url), self.context.scope.hygiene)
        except URLError:
            return None
        row = self.context.state.row(key)
        if (
            row is not None
            and row.state == "done"
            and row.path
            and not row.stylesheet
            and row.kind == "asset"
        ):
            record = self.context.state.record(row.path)
            file = self.context.out / row.path
            if record is not None and record.media_type != "text/css" and file.is_file():
                return Reply(200, {"content-type": record.media_type}, path=file)
        if urls.ext(key) in self.context.scope.skip_extensions:
            return None  # large media the tree leaves on the live web: the page renders without it
        result = await self.get(key, referrer, page=resource_type == "document")
        if result.status == 304 and result.outcome == "ok":  # a stage's conditional fetch: its kept file
            record = self.context.state.record(row.path) if row is not None and row.path else None
            if record is None or not (self.context.out / record.path).is_file():
                return None
            return Reply(200, {"content-type": record.media_type}, path=self.context.out / record.path)
        if result.outcome in ("refused", "skipped"):
            if result.outcome == "refused":
                note_refused(self.context.state, key, resource_type, referrer, result.reason, source)
            return None
        if result.status is None:
            return None
        headers = dict(result.headers)
        headers.pop("location", None)
        if result.file is not None:
            return Reply(result.status, headers, path=result.file)
        return Reply(result.status, headers, body=result.body or b"")
