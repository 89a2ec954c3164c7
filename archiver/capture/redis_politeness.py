"""Crawl-wide politeness in Redis (formats/crawl-state.md §6.4): each host's clock and its robots.txt,
shared by every worker of a crawl; the :class:`archiver.capture.politeness.HostPoliteness` of
:class:`archiver.capture.state_redis.RedisState`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

from archiver.capture.redis_conn import Down
from archiver.capture.robots import Robots, _Rule

if TYPE_CHECKING:
    from archiver.capture.state_redis import RedisState

__all__ = ["RedisPoliteness", "robots_from_json", "robots_json"]


def robots_json(rules: Robots) -> str:
    return json.dumps(asdict(rules))


def robots_from_json(text: str) -> Robots:
    doc = json.loads(text)
    doc["rules"] = tuple(_Rule(r["allow"], r["path"]) for r in doc["rules"])
    doc["sitemaps"] = tuple(doc["sitemaps"])
    return Robots(**doc)


class RedisPoliteness:
    """Each host's clock (next allowed time + an in-flight lock with expiry, Redis time) and its
    robots.txt (fetched by one worker, cached in Redis), shared by every worker of the crawl."""

    def __init__(self, state: RedisState) -> None:
        self.s = state
        self._n = itertools.count()

    async def acquire(self, host: str) -> object:
        holder = f"{self.s.worker}#{next(self._n)}"
        while True:
            try:
                wait = int(self.s._script("HOST_ACQUIRE", host, holder, self.s.lock_ms))
            except Down:
                return None  # no crawl-wide clock: this process's own rules still hold
            if wait <= 0:
                self.s.held[host] = holder  # renewed with the claims while the request runs
                return holder
            await asyncio.sleep(wait / 1000)

    def release(self, host: str, holder: object, gap: float) -> None:
        if holder is None:
            return
        if self.s.held.get(host) == holder:
            del self.s.held[host]
        with contextlib.suppress(Down):
            self.s._script("HOST_RELEASE", host, holder, max(0, int(gap * 1000)))

    async def robots(self, host: str, read: Callable[[], Awaitable[Robots]]) -> Robots:
        key = self.s.prefix + "robots:" + host
        while True:
            try:
                cached = self.s._try(self.s.r.get, key)
                if cached:
                    return robots_from_json(cached)
                mine = self.s._try(
                    self.s.r.set, key + ":lock", self.s.worker, nx=True, px=self.s.robots_lock_ms
                )
            except Down:
                return await read()
            if mine:
                rules = await read()
                ttl = 600 if rules.unreachable else 86400  # RFC 9309 §2.4: cache at most 24 h
                with contextlib.suppress(Down):
                    self.s._try(self.s.r.set, key, robots_json(rules), ex=ttl)
                    self.s._try(self.s.r.delete, key + ":lock")
                return rules
            await asyncio.sleep(0.05)  # another worker is reading it
