"""Crawl-wide politeness in Redis (formats/crawl-state.md §6.4): each host's clock and its robots.txt,
shared by every worker of a crawl; the :class:`archiver.capture.politeness.HostPoliteness` of
:class:`archiver.capture.redis.state.RedisState`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from archiver.capture.redis.conn import Down
from archiver.capture.robots import Robots, _Rule
from archiver.errors import FormatError

if TYPE_CHECKING:
    from archiver.capture.redis.link import RedisLink

__all__ = ["RedisPoliteness", "robots_from_json", "robots_json"]


def robots_json(rules: Robots) -> str:
    """The rules as one JSON object: their fields in order, each rule ``{"allow": …, "path": …}`` (what
    ``dataclasses.asdict`` made of them when :class:`Robots` was a dataclass)."""
    return json.dumps(
        {
            "rules": [{"allow": r.allow, "path": r.path} for r in rules.rules],
            "crawl_delay": rules.crawl_delay,
            "disallow_all": rules.disallow_all,
            "sitemaps": list(rules.sitemaps),
            "unreachable": rules.unreachable,
        }
    )


def robots_from_json(text: str) -> Robots:
    """The rules :func:`robots_json` wrote; ValueError for anything else (a damaged cache entry)."""
    try:
        doc = json.loads(text)
    except RecursionError:  # arrays or objects nested past the decoder's stack
        raise ValueError("JSON nested too deep") from None
    if not isinstance(doc, dict) or set(doc) - _FIELDS:
        raise ValueError("not the JSON of robots.txt rules")
    rules, sitemaps = doc.get("rules", []), doc.get("sitemaps", [])
    delay, unreachable = doc.get("crawl_delay"), doc.get("unreachable")
    if (
        not isinstance(rules, list)
        or not all(
            isinstance(r, dict) and isinstance(r.get("allow"), bool) and isinstance(r.get("path"), str)
            for r in rules
        )
        or not isinstance(sitemaps, list)
        or not all(isinstance(u, str) for u in sitemaps)
        or not isinstance(doc.get("disallow_all", False), bool)
        or not (unreachable is None or isinstance(unreachable, str))
        or not (delay is None or (type(delay) in (int, float) and math.isfinite(delay) and delay >= 0))
    ):
        raise ValueError("not the JSON of robots.txt rules")
    return Robots(
        rules=tuple(_Rule(r["allow"], r["path"]) for r in rules),
        crawl_delay=None if delay is None else float(delay),
        disallow_all=doc.get("disallow_all", False),
        sitemaps=tuple(sitemaps),
        unreachable=unreachable,
    )


_FIELDS = frozenset({"rules", "crawl_delay", "disallow_all", "sitemaps", "unreachable"})


class RedisPoliteness:
    """Each host's clock (next allowed time + an in-flight lock with expiry, Redis time) and its
    robots.txt (fetched by one worker, cached in Redis), shared by every worker of the crawl."""

    def __init__(self, state: RedisLink) -> None:
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
        started = time.monotonic()
        while True:
            try:
                cached = self._cached(key)
                if cached is not None:
                    return cached
                mine = self.s._try(
                    self.s.r.set, key + ":lock", self.s.worker, nx=True, px=self.s.robots_lock_ms
                )
                # a lock without an expiry no worker set (a damaged key), or one that outlives its
                # own, is not waited for
                stale = not mine and self.s._try(self.s.r.pttl, key + ":lock") == -1
            except Down:
                return await read()
            if mine or stale or time.monotonic() - started > self.s.robots_lock_ms / 1000:
                rules = await read()
                ttl = 600 if rules.unreachable else 86400  # RFC 9309 §2.4: cache at most 24 h
                with contextlib.suppress(Down, FormatError):
                    self.s._try(self.s.r.set, key, robots_json(rules), ex=ttl)  # replaces any damage
                    if mine:
                        self.s._try(self.s.r.delete, key + ":lock")
                return rules
            await asyncio.sleep(0.05)  # another worker is reading it

    def _cached(self, key: str) -> Robots | None:
        """The cached rules of a host; None when there are none, or when the entry is damaged (of
        another type, not UTF-8, not the rules' JSON: formats/crawl-state.md §6.9), which is then
        read from the host again and replaced. Raises :class:`Down`."""
        damage = self.s.damage
        try:
            text = self.s._try(self.s.r.get, key)
            return robots_from_json(text) if text else None
        except (FormatError, ValueError):
            self.s.damage = damage  # repaired here: not a damage that stops the worker
            return None
