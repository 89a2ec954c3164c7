"""The one network path of a capture: a polite, guarded fetcher.

Every byte a capture reads from the web comes through :meth:`Fetcher.fetch`: the crawler's own page
and asset requests, robots.txt, and every request the browser makes while rendering (the renderer
routes them here). So each rule below holds for all of them.

Politeness
    At most ``concurrency`` requests at once (12), **one at a time per host** (``host:port``), at least
    ``delay`` seconds between the end of one request to a host and the start of the next (raised to
    the host's robots.txt ``Crawl-delay``). robots.txt is read on every host before anything else is
    fetched from it (RFC 9309, :mod:`.robots`; ``obey_robots=False`` ignores it). One that cannot be
    read (5xx, 429 after backoff, network error, timeout) lets nothing of its host be fetched this run,
    and is no verdict either: those fetches end ``unconfirmed``, and :meth:`Fetcher.robots_allows`
    says "not known" (None) for the host, so links to it are kept like any other. A 429 or 503 makes
    the host wait ``Retry-After`` seconds (at most ``max_retry_after``; longer means "unconfirmed, try
    on a later run"); 5xx answers, network errors and timeouts are retried ``retries`` times with exponential
    backoff (``backoff`` · 2ⁿ seconds). Timeouts: ``connect_timeout`` (3 s) to connect,
    ``read_timeout`` (5 s) between bytes, ``total_timeout`` for the whole request and body. At most
    ``max_redirects`` (5) redirects, followed here one hop at a time, each hop checked again (scheme,
    robots, address guard); a hop back to a URL already visited is a loop. The ``User-Agent`` names
    archiver.

Size cap
    A body larger than ``size_cap`` is **skipped, never truncated**: refused on its ``Content-Length``
    before reading, or dropped as soon as the stream passes the cap. Bodies over 1 MiB are spooled to a
    temporary file in ``tmp_dir`` (the crawler moves it into place), so memory stays bounded. The
    cap counts decoded bytes as they come: every body is read as received (``aiter_raw``) and its
    content coding undone by :mod:`archiver.codings` a step (at most 1 MiB) at a time, so a
    compression bomb stops at the cap (httpx's own decoders inflate a whole chunk at once: a few
    hundred bytes of ``br`` became 512 MiB). Every request asks for ``Accept-Encoding: br, deflate,
    gzip``, exactly what that module undoes.

Address guard
    Only ``http`` and ``https``. The guard decides by **origin** (scheme, host, port), every spelling
    of an address first made canonical (:func:`guard_host`: ``0x7f000001``, ``2130706433``,
    ``127.1`` and ``[::ffff:127.0.0.1]`` are all ``127.0.0.1``). An *allowed origin* may connect to
    whatever its name resolves to: each seed's own origin (the capture puts them in ``allow_hosts``:
    the user asked for that site, on that port, by that scheme) and each ``--allow-host`` rule
    (``HOST``: every port of it; ``HOST:PORT``: that port only; :class:`HostRule`). Any other origin
    (another port of the seed's host, a redirect target, a link found on a page) must resolve only
    to globally routable addresses: loopback, private, link-local, unique-local, multicast,
    reserved, unspecified and shared addresses are refused, and an IPv4-mapped or NAT64 IPv6
    address is judged by the IPv4 address inside it. ``allow_private=True`` turns the guard off.
    The check runs inside the connection itself (the guard's network backend, told the request's
    scheme by the HTTP/1.1 pool of :mod:`.http1` that opens every connection through it): the host
    is resolved once, the addresses are checked, and the socket is opened to a checked address,
    never re-resolved, so DNS rebinding has no window; every
    redirect hop opens its connection through the same check. A refusal's reason names the guard
    and the ``--allow-host`` value that would allow it. The resolver is injectable, so tests need
    no real DNS and no packet leaves loopback.

Recording
    With a ``recorder`` (``capture --warc``, :mod:`archiver.warc.record`) every response whose head
    arrived is handed to it: the body is read as received (``aiter_raw``), kept for the WARC and
    decoded by :mod:`archiver.codings` for the caller; ``FetchResult.warc`` says where its record is.

Outcomes (:class:`FetchResult.outcome`)
    ``ok`` (2xx), ``redirected`` (2xx after redirects; the chain is kept), ``failed`` (4xx, 5xx after
    retries, network errors, redirect loops and overlong chains), ``unconfirmed`` (401, 403, 408, 429
    after backoff, timeouts, a host whose robots.txt could not be read: not proof the resource is
    gone), ``skipped`` (disallowed by a robots.txt that was read, size cap, scheme), ``refused``
    (address guard).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from archiver import urls
from archiver.capture import http1
from archiver.capture import robots as robots_mod
from archiver.capture.fetched import (
    USER_AGENT,
    FetchPolicy,
    FetchResult,
    Outcome,
    redirect_step,
    retry_after,
    target_of,
)
from archiver.capture.guard import (
    AddressGuard,
    AddressRefused,
    GuardedBackend,
    HostRule,
    Resolver,
    address_is_public,
    guard_host,
    system_resolver,
)
from archiver.capture.turns import Host, Turn
from archiver.codings import CodingError, Decoder, accept_encoding
from archiver.errors import StoreError, URLError, store_error
from archiver.media import parse_content_type

if TYPE_CHECKING:  # the WARC recorder is imported only by a recording capture
    from archiver.tree import WarcRef
    from archiver.warc.record import Exchange, Recorder

if TYPE_CHECKING:
    from archiver.capture.politeness import HostPoliteness

__all__ = [
    "USER_AGENT",
    "AddressGuard",
    "AddressRefused",
    "FetchPolicy",
    "FetchResult",
    "Fetcher",
    "HostRule",
    "Outcome",
    "Resolver",
    "address_is_public",
    "guard_host",
    "redirect_step",
    "system_resolver",
]

SPOOL_LIMIT = 1 << 20
_HAND_OVER_TURNS = 8  # turns of the event loop a waiting request gets to reach the wire
_ERROR_BODY_LIMIT = 1 << 20
_REDIRECT_BODY_LIMIT = 64 << 10  # what of a redirect's body a recording capture keeps


# Response headers worth keeping (for the browser, and for the record).
_KEPT_HEADERS = frozenset({
    "content-type", "content-language", "last-modified", "etag", "location", "retry-after",
    "access-control-allow-origin", "timing-allow-origin", "content-disposition",
})  # fmt: skip
_UNCONFIRMED_STATUS = frozenset({401, 403, 408, 429})
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})


def _after(attempt: int) -> str:
    """How a reason says that the request was retried (nothing when it was not)."""
    return f" after {attempt} {'retry' if attempt == 1 else 'retries'}" if attempt else ""


class _Skip(Exception):
    def __init__(self, outcome: Outcome, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.outcome: Outcome = outcome
        self.reason = reason
        self.status = status


class _Prefix(NamedTuple):
    """A cap that keeps the first ``size`` bytes of a larger body instead of skipping it."""

    size: int


class Fetcher:
    """Fetches URLs by the rules of the module docstring. Use as an async context manager."""

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        *,
        guard: AddressGuard | None = None,
        tmp_dir: Path | None = None,
        backend: Any = None,
        recorder: Recorder | None = None,
        politeness: HostPoliteness | None = None,
    ) -> None:
        self.policy = policy or FetchPolicy()
        #: crawl-wide host clocks and robots.txt (:mod:`.politeness`), on top of this process's own
        self.politeness = politeness
        self.guard = guard or AddressGuard()
        self.tmp_dir = tmp_dir
        self.recorder = recorder  # every exchange recorded as WARC (archiver.warc.record)
        p = self.policy
        self._backend = GuardedBackend(self.guard, backend)
        #: HTTP/1.1 connections, each opened through the address guard (:mod:`.http1`)
        self.pool = http1.Pool(self._backend.open, p.connect_timeout, p.read_timeout)
        self._global = asyncio.Semaphore(max(p.concurrency, 1))
        self._hosts: dict[str, Host] = {}
        self._active = 0  # calls of fetch() under way
        self._verdicts: dict[str, bool] = {}  # URL → robots.txt's verdict, once its host's is read
        self.requests = 0
        self.bytes = 0

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.pool.aclose()

    # ---- hosts, politeness, robots

    def _host(self, netloc: str) -> Host:
        host = self._hosts.get(netloc)
        if host is None:
            host = self._hosts[netloc] = Host()
        return host

    def _slot(self, netloc: str) -> Turn:
        """``async with self._slot(netloc) as host:`` the host's turn (:class:`.turns.Turn`)."""
        return Turn(self._host(netloc), netloc, self.policy.delay, self._global, self.politeness)

    def robots_allows(self, url: str) -> bool | None:
        """robots.txt's verdict on ``url`` if its host's robots.txt has been read, else None (not
        read yet, or it could not be read: that is no verdict)."""
        if not self.policy.obey_robots:
            return True
        known = self._verdicts.get(url)
        if known is not None:
            return known
        try:
            netloc = urls.host_of(url)
        except URLError:
            return None
        host = self._hosts.get(netloc)
        if host is None or host.robots is None or host.robots.unreachable is not None:
            return None
        rules = host.robots
        # rules that allow everything say yes without normalising the target (as in _fetch_one)
        verdict = rules.allowed(target_of(url)) if rules.rules or rules.disallow_all else True
        if len(self._verdicts) >= 100_000:
            self._verdicts.clear()
        self._verdicts[url] = verdict  # a host's robots.txt is read once per run: final
        return verdict

    async def robots_for(self, url: str) -> robots_mod.Robots:
        """The robots.txt rules of ``url``'s host, fetched once per host (concurrent callers wait)."""
        netloc = urls.host_of(url)
        host = self._host(netloc)
        if host.robots is not None:
            return host.robots
        if host.robots_task is None:
            read = functools.partial(self._read_robots, url.split("://", 1)[0], netloc)
            shared = self.politeness
            host.robots_task = asyncio.ensure_future(
                shared.robots(netloc, read) if shared is not None else read()
            )
        rules = await asyncio.shield(host.robots_task)
        host.robots = rules
        delay = rules.crawl_delay or 0.0  # a shared crawl's cached rules too: bounded here
        cap = min(self.policy.max_retry_after, robots_mod.MAX_CRAWL_DELAY)
        host.crawl_delay = min(delay, cap) if delay == delay else 0.0  # the longest wait accepted
        return rules

    async def _read_robots(self, scheme: str, netloc: str) -> robots_mod.Robots:
        url = f"{scheme}://{netloc}/robots.txt"
        cap = _Prefix(robots_mod.MAX_BYTES)  # a larger file is read in part, not skipped (§2.5)
        result = await self._fetch(url, referrer=None, cap=cap, check_robots=False, retries=1)
        if result.outcome in ("ok", "redirected") and result.status and 200 <= result.status < 300:
            text = result.read().decode("utf-8", "replace")
            result.discard()
            return robots_mod.parse(text, self.policy.robots_agent)
        result.discard()
        status = result.status
        if status is not None and 400 <= status < 500 and status != 429:
            return robots_mod.Robots.allow_everything()
        if result.outcome == "refused":
            return robots_mod.Robots.allow_everything()  # nothing will be fetched from it anyway
        if status is not None and (status >= 500 or status == 429):
            return robots_mod.Robots.disallow_everything(f"robots.txt answered {status}")
        return robots_mod.Robots.disallow_everything(
            f"robots.txt unreachable ({result.reason or result.outcome})"
        )

    # ---- fetching

    async def fetch(
        self,
        url: str,
        *,
        referrer: str | None = None,
        cap: int | Literal["default"] | None = "default",
        accept: str = "*/*",
        stop_at: Callable[[str], bool] | None = None,
        conditional: dict[str, str] | None = None,
    ) -> FetchResult:
        """Fetch ``url`` (a canonical http(s) URL) by every rule of the module docstring. Never
        raises for anything the network or the server does: the outcome says what happened. A
        redirect to a URL for which ``stop_at`` is true is not followed (``unfollowed``: the caller
        holds that answer already, so it is not fetched twice). ``conditional``: more headers (of
        :func:`.conditional.request_headers`) for the first hop only."""
        size_cap = self.policy.size_cap if cap == "default" else cap
        self._active += 1
        try:
            result = await self._fetch(url, referrer=referrer, cap=size_cap, check_robots=True,
                                       accept=accept, stop_at=stop_at, conditional=conditional)  # fmt: skip
        finally:
            self._active -= 1
        await self._hand_over()
        return result

    async def _hand_over(self) -> None:
        """Before the caller turns to CPU work (parse, rewrite, store), let a request that was
        waiting for the host this one just freed go out: the server then answers it meanwhile,
        instead of the two taking turns. A few turns of the event loop at most; none when no
        other fetch is under way."""
        before = self._backend.counter.writes
        for _ in range(_HAND_OVER_TURNS):
            if not self._active:
                return
            await asyncio.sleep(0)
            if self._backend.counter.writes != before:
                return

    async def _fetch(
        self,
        url: str,
        *,
        referrer: str | None,
        cap: int | _Prefix | None,
        check_robots: bool,
        retries: int | None = None,
        accept: str = "*/*",
        stop_at: Callable[[str], bool] | None = None,
        conditional: dict[str, str] | None = None,
    ) -> FetchResult:
        ask = {"Accept": accept}
        chain: list[str] = []
        hops: list[WarcRef | None] = []
        current = url
        seen = {url}
        while True:
            result = await self._fetch_one(
                url,
                current,
                referrer,
                cap,
                check_robots,
                self.policy.retries if retries is None else retries,
                ask if chain or not conditional else {**ask, **conditional},
            )
            result.redirects = chain
            result.redirect_warcs = hops
            if result.status not in _REDIRECT_STATUS or result.outcome != "ok":
                if chain and result.outcome == "ok":
                    result.outcome = "redirected"
                return result
            result.discard()
            step = redirect_step(url, current, result, chain, seen, self.policy.max_redirects)
            if isinstance(step, FetchResult):
                return step
            hops.append(result.warc)
            if stop_at is not None and stop_at(step):
                status = result.status
                return FetchResult(url, step, "redirected", status, redirects=chain, redirect_warcs=hops,
                                   unfollowed=True)  # fmt: skip
            current = step

    async def _fetch_one(
        self,
        url: str,
        current: str,
        referrer: str | None,
        cap: int | _Prefix | None,
        check_robots: bool,
        retries: int,
        ask: dict[str, str],
    ) -> FetchResult:
        scheme = current.split(":", 1)[0].lower()
        if scheme not in ("http", "https"):
            return FetchResult(url, current, "skipped", None, f"unsupported scheme {scheme}")
        netloc = urls.host_of(current)
        if check_robots and self.policy.obey_robots:
            known = self._hosts.get(netloc)
            rules = known.robots if known is not None else None  # read already: no await
            if rules is None:
                try:
                    rules = await self.robots_for(current)
                except AddressRefused as e:
                    return FetchResult(url, current, "refused", None, str(e))
            # rules that allow everything (no robots.txt, or one with no rule for us) are not asked:
            # their answer is yes for any target, and asking normalises the target (~15 K instructions)
            if (rules.rules or rules.disallow_all) and not rules.allowed(target_of(current)):
                if rules.unreachable is not None:
                    reason = f"{rules.unreachable}: not fetched, tried again next run"
                    return FetchResult(url, current, "unconfirmed", None, reason)
                return FetchResult(url, current, "skipped", None, "disallowed by robots.txt")
        attempt = 0
        while True:
            try:
                async with self._slot(netloc) as host:
                    result = await self._request(url, current, referrer, cap, ask)
                    status = result.status or 0
                    if status in (429, 503):
                        wait = retry_after(result.headers.get("retry-after"))
                        if wait is None:
                            wait = self.policy.backoff * 2**attempt
                        if wait > self.policy.max_retry_after:
                            result.outcome = "unconfirmed" if status == 429 else "failed"
                            result.reason = f"HTTP {status}, Retry-After {wait:.0f} s is too long; try later"
                            return result
                        host.next_time = max(host.next_time, time.monotonic() + wait)
                        backoff = 0.0
                    else:
                        backoff = self.policy.backoff * 2**attempt
            except AddressRefused as e:
                return FetchResult(url, current, "refused", None, str(e))
            except _Skip as e:
                return FetchResult(url, current, e.outcome, e.status, e.reason)
            except http1.LocalProtocolError as e:
                return FetchResult(url, current, "failed", None, f"cannot be requested: {e}")
            except TimeoutError as e:
                if attempt < retries:  # a slow moment of the server's or the network's, like a 503
                    await asyncio.sleep(self.policy.backoff * 2**attempt)
                    attempt += 1
                    continue
                reason = f"timed out ({type(e).__name__}){_after(attempt)}"
                return FetchResult(url, current, "unconfirmed", None, reason)
            except OSError as e:
                if attempt < retries:
                    await asyncio.sleep(self.policy.backoff * 2**attempt)
                    attempt += 1
                    continue
                return FetchResult(url, current, "failed", None, f"network error: {e or type(e).__name__}")
            status = result.status or 0
            if (status >= 500 or status == 429) and attempt < retries:
                result.discard()
                if backoff:
                    await asyncio.sleep(backoff)
                attempt += 1
                continue
            if status in _UNCONFIRMED_STATUS:
                result.outcome = "unconfirmed"
                result.reason = f"HTTP {status}" + (" after backoff" if status == 429 else "")
            elif status >= 400:
                result.outcome = "failed"
                result.reason = f"HTTP {status}" + _after(attempt)
            return result

    async def _request(
        self, url: str, current: str, referrer: str | None, cap: int | _Prefix | None, ask: dict[str, str]
    ) -> FetchResult:
        # every body is decoded here (archiver.codings): ask only for what can be
        headers = [("User-Agent", self.policy.user_agent), *ask.items()]
        headers.append(("Accept-Encoding", accept_encoding()))
        if referrer:
            headers.append(("Referer", referrer))
        self.requests += 1
        # the request's total timeout and each read's (http1.Deadline, on the loop's one timer)
        with http1.Deadline(self.policy.total_timeout, self.policy.read_timeout) as deadline:
            response = await self.pool.send(current, headers, deadline)
            try:
                exchange = self.recorder.begin(response) if self.recorder is not None else None
                try:
                    result = await self._response(url, current, response, cap, exchange)
                except BaseException as e:
                    if exchange is not None:
                        await exchange.end(e)
                    raise
                if exchange is not None:
                    result.warc = await exchange.end()
            except BaseException:
                response._finished = False
                await response.aclose()
                raise
            await response.aclose()
            return result

    async def _response(
        self,
        url: str,
        current: str,
        response: http1.Response,
        cap: int | _Prefix | None,
        exchange: Exchange | None,
    ) -> FetchResult:
        kept = {k: v for k, v in response.headers.items() if k in _KEPT_HEADERS}  # names lowercase
        media, charset = parse_content_type(response.headers.get("content-type"))
        status = response.status_code
        result = FetchResult(url, current, "ok", status, "", media, charset, kept)
        if status in _REDIRECT_STATUS:
            if exchange is not None:
                await exchange.drain(response.aiter_raw(), _REDIRECT_BODY_LIMIT)
            return result
        if response.bodiless and exchange is None:  # a 304 (or 204): no body to read or decode
            result.body = b""
            return result
        prefix = isinstance(cap, _Prefix)
        size_cap = cap.size if isinstance(cap, _Prefix) else cap
        limit = size_cap if 200 <= status < 300 else min(size_cap or _ERROR_BODY_LIMIT, _ERROR_BODY_LIMIT)
        length = response.headers.get("content-length")
        if not prefix and limit is not None and length and length.isdigit() and int(length) > limit:
            if 200 <= status < 300:
                raise _Skip("skipped", f"larger than the size cap ({int(length)} > {limit} bytes)", status)
            return result
        try:
            await self._read_body(response, result, limit, keep_prefix=prefix, exchange=exchange)
        except CodingError as e:
            raise _Skip(
                "failed", f"the body does not decode as its Content-Encoding says: {e}", status
            ) from None
        return result

    async def _read_body(
        self,
        response: http1.Response,
        result: FetchResult,
        limit: int | None,
        *,
        keep_prefix: bool = False,
        exchange: Exchange | None = None,
    ) -> None:
        """Read the body into memory (or a spool file past :data:`SPOOL_LIMIT`). Past ``limit`` a 2xx
        body is skipped, another one cut; with ``keep_prefix`` the first ``limit`` bytes are kept.
        With an ``exchange`` the body is read as received and decoded by it (for the WARC)."""
        buffer = bytearray()
        spool: Any = None
        size = 0
        decoding: AsyncGenerator[bytes, None] | None = None
        if exchange is not None:
            chunks = exchange.body(response.aiter_raw())
        else:
            decoder = Decoder(response.headers.get("content-encoding"))
            if decoder.identity:
                whole = response.arrived(SPOOL_LIMIT if limit is None or limit > SPOOL_LIMIT else limit)
                # arrived with the head, within the cap: what the loop below keeps of it
                if whole is not None:
                    self.bytes += len(whole)
                    result.size = len(whole)
                    result.body = whole
                    return
            else:
                decoding = decoder.stream(response.aiter_raw())
            chunks = response.aiter_raw() if decoding is None else decoding
        try:
            async for chunk in chunks:
                size += len(chunk)
                over = limit is not None and size > limit
                if over and not keep_prefix:
                    if result.status and 200 <= result.status < 300:
                        raise _Skip(
                            "skipped", f"larger than the size cap (over {limit} bytes)", result.status
                        )
                    break
                if over:
                    assert limit is not None
                    chunk = chunk[: len(chunk) - (size - limit)]
                    size = limit
                if spool is None:
                    buffer += chunk
                    if len(buffer) > SPOOL_LIMIT:
                        spool = self._spool_file()
                        _spooled(spool.write, buffer, spool.name)
                        buffer = bytearray()
                else:
                    _spooled(spool.write, chunk, spool.name)
                if over:
                    break
            if spool is not None:
                _spooled(spool.flush, None, spool.name)
        except BaseException:
            if spool is not None:
                with contextlib.suppress(OSError):  # the disk that refused the bytes may refuse the flush
                    spool.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(spool.name)
            if decoding is not None:
                await decoding.aclose()
            raise
        self.bytes += size
        result.size = min(size, limit) if limit is not None else size
        if spool is not None:
            spool.close()  # flushed above: nothing left to write
            result.file = Path(spool.name)
        else:
            result.body = bytes(buffer)

    def _spool_file(self) -> Any:
        import tempfile  # only a body over SPOOL_LIMIT needs it

        try:
            if self.tmp_dir is not None:
                self.tmp_dir.mkdir(parents=True, exist_ok=True)
            return tempfile.NamedTemporaryFile(
                dir=self.tmp_dir, prefix="fetch-", suffix=".part", delete=False
            )
        except OSError as e:
            raise _local(e, str(self.tmp_dir)) from None


def _spooled(write: Any, data: bytes | bytearray | None, name: str) -> None:
    """``write(data)`` (or ``write()``) on a spool file: a refusal is the disk's, not the network's
    (before, a full disk under a large body was retried and reported as a network error)."""
    try:
        write() if data is None else write(data)
    except OSError as e:
        raise _local(e, name) from None


def _local(e: OSError, subject: str) -> StoreError:
    what = f"cannot write a temporary file: {(e.strerror or str(e)).lower()}"
    return store_error(e, subject) or StoreError(what, subject=subject)
