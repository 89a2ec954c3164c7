"""A host's turn in the fetcher (:class:`.fetch.Fetcher`'s politeness, its module docstring): what
the fetcher keeps per host (:class:`Host`) and ``async with Turn(...) as host:`` around each request
to it."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from archiver.capture.politeness import HostPoliteness
    from archiver.capture.robots import Robots

__all__ = ["Host", "Turn"]


class Host:
    """What the fetcher keeps of one host: its lock (one request at a time), when its next request
    may start, its robots.txt's Crawl-delay, its rules once read and the task reading them. A plain
    class: a dataclass's generated methods were compiled from source at every start of a capture."""

    __slots__ = ("crawl_delay", "lock", "next_time", "robots", "robots_task")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.next_time = 0.0
        self.crawl_delay = 0.0
        self.robots: Robots | None = None
        self.robots_task: asyncio.Task[Robots] | None = None


class Turn:
    """A host's turn (``async with``): its lock (one request at a time), its delay since the end of
    the last request, the crawl-wide hold when the politeness is shared, and one of the fetcher's
    ``concurrency`` slots (``slots``); on leaving, the host's next time is set (``delay``, or its
    robots.txt's Crawl-delay when longer) and all are given back, innermost first, also on an error
    or a cancellation. A class, not an ``asynccontextmanager``: a generator's context manager cost
    ~4 µs more a request (a re-capture asks its thousand conditional GETs one by one)."""

    __slots__ = ("delay", "holder", "host", "netloc", "shared", "slots")

    def __init__(
        self, host: Host, netloc: str, delay: float, slots: asyncio.Semaphore, shared: HostPoliteness | None
    ) -> None:
        self.host = host
        self.netloc = netloc
        self.delay = delay
        self.slots = slots
        self.shared = shared
        self.holder: object = None

    async def __aenter__(self) -> Host:
        host, netloc, shared = self.host, self.netloc, self.shared
        await host.lock.acquire()
        try:
            wait = host.next_time - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self.holder = await shared.acquire(netloc) if shared is not None else None
            try:
                await self.slots.acquire()
            except BaseException:
                if shared is not None:
                    shared.release(netloc, self.holder, host.next_time - time.monotonic())
                raise
        except BaseException:
            host.lock.release()
            raise
        return host

    async def __aexit__(self, *exc: object) -> None:
        host = self.host
        try:
            try:
                # max() spelled out: the builtin parses its arguments at every call (~1.3 K instructions)
                gap = host.crawl_delay if host.crawl_delay > self.delay else self.delay
                due = time.monotonic() + gap
                if due > host.next_time:
                    host.next_time = due
            finally:
                self.slots.release()
        finally:
            try:
                if self.shared is not None:
                    self.shared.release(self.netloc, self.holder, host.next_time - time.monotonic())
            finally:
                host.lock.release()
