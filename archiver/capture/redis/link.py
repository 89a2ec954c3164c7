"""One worker's link to a crawl shared in Redis (formats/crawl-state.md §6): the client, the crawl's key
prefix, the worker's name, its lease and host-lock times, the registration of the crawl's config, the
worker's local SQLite (its shard), and the calls to Redis: :meth:`RedisLink._try` (one attempt, or
:class:`.conn.Down` while Redis is away, saying so once past a lease), :meth:`RedisLink._script` (a
script of :mod:`.lua`) and the backlog of writes sent in order (:meth:`RedisLink._op`).

The crawl state itself is :class:`.state.RedisState`, built on this; the page budget (:mod:`.budget`),
the host clocks (:mod:`.politeness`) and the shard seen alone (:mod:`.shard`) take a link, not the
state, so none of them imports the state back."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from archiver.capture.redis import lua
from archiver.capture.redis.config import check_same
from archiver.capture.redis.conn import Down, parse_config, prefix, redis_errors, refusal, shown, shown_url
from archiver.capture.state import State
from archiver.errors import ArchiverError, CaptureError

__all__ = ["RedisLink"]

_SCRIPTS = (
    "ADD",
    "CLAIM",
    "RENEW",
    "FINISH",
    "MARK",
    "REQUEUE",
    "PROBE",
    "RELEASE",
    "HOST_ACQUIRE",
    "HOST_RELEASE",
)


class RedisLink:
    """A worker's connection to the crawl ``crawl`` (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        client: Any,
        url: str,
        crawl: str,
        config: dict[str, Any],
        worker: str,
        lease: float = 30.0,
        max_attempts: int = 5,
        lock_seconds: float = 40.0,
        stderr: TextIO | None = None,
    ) -> None:
        self.r = client
        self.url = url
        self.crawl = crawl
        self.prefix = prefix(crawl)
        self.worker = worker
        self.lease = lease
        self.renew_every = max(lease / 4, 0.25)
        self.give_up = 3 * lease
        self.max_attempts = max_attempts
        #: a host lock lives a lease at most (renewed with the claims while its request runs), so a
        #: worker that dies holding one frees the host soon; robots.txt's read lock is not renewed
        self.lock_ms = int(min(lock_seconds, lease) * 1000)
        self.robots_lock_ms = int(lock_seconds * 2000)
        self.held: dict[str, str] = {}  # host → the holder of its lock (RedisPoliteness)
        self.stderr = stderr
        self.refused = 0  # finishes Redis refused (the lease had been lost)
        self._errors = redis_errors()
        self._scripts = {name: client.register_script(getattr(lua, name)) for name in _SCRIPTS}
        self._tokens: dict[str, int] = {}
        self._depth = 0
        self._backlog: list[tuple[str, list[Any], Callable[[Any], None] | None]] = []
        self._settled: dict[str, tuple[int, str, bool]] = {}
        self._local_paths: set[str] = set()
        self._down_since: float | None = None
        self._retry_at = 0.0
        self._said = False
        #: the first damage met (formats/crawl-state.md §6.9): the next claim stops the worker with
        #: it, also when it was met inside a URL's work (a host's clock), which records that URL failed
        self.damage: ArchiverError | None = None
        self._last: Any = None  # what the last write sent by a transaction answered
        #: the page budget is the crawl's, kept by the scripts (formats/crawl-state.md §6.8)
        self.counts_pages = config["options"].get("max_pages") is not None
        self._register(config, path)
        self.local = State(path)
        self.local.hands_over = False  # the FINISH script hands a failed owner's path on, crawl-wide
        self.local.group = 1  # each unit committed before its writes go to Redis (crawl-state.md §6)

    # ---- talking to Redis

    def _say(self, text: str) -> None:
        print(
            f"archiver: {shown_url(self.url)} (crawl {self.crawl}): {text}",
            file=self.stderr or sys.stderr,
            flush=True,
        )

    def _try(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(...)`` against Redis, or :class:`Down` (at most one attempt per 0.5 s while down)."""
        now = time.monotonic()
        if self._down_since is not None and now < self._retry_at:
            raise Down
        try:
            result = fn(*args, **kwargs)
        except self._errors as e:
            problem = refusal(e, self.url, self.crawl)  # damaged keys, not Redis: one line
            if problem is not None:
                self.damage = self.damage or problem
                raise problem from None
            if self._down_since is None:
                self._down_since = now
            self._retry_at = now + 0.5
            if not self._said and now - self._down_since > self.lease:
                self._said = True
                self._say(
                    f"no answer from Redis for more than the {self.lease:g} s lease: claiming stopped"
                    " (the URLs this worker holds go back to the others)"
                )
            raise Down from None
        if self._down_since is not None:
            if self._said:
                self._say("Redis answers again: claiming resumed")
            self._down_since, self._said = None, False
        return result

    def _script(self, name: str, *args: Any) -> Any:
        return self._try(self._scripts[name], keys=[], args=[self.prefix, *args])

    def _op(self, name: str, args: list[Any], done: Callable[[Any], None] | None = None) -> Any:
        """Queue a write; sent now unless a transaction is open (then when it commits)."""
        self._backlog.append((name, args, done))
        if self._depth == 0:
            with contextlib.suppress(Down):
                return self._drain()
        return None

    def _drain(self) -> Any:
        """Send the writes waiting, in order; the last one's result. Raises :class:`Down`."""
        result = None
        while self._backlog:
            name, args, done = self._backlog[0]
            result = self._script(name, *args)
            self._backlog.pop(0)
            if done is not None:
                done(result)
        return result

    def _register(self, config: dict[str, Any], path: Path) -> None:
        doc = json.dumps(config, sort_keys=True)
        key = self.prefix + "config"
        try:
            if not self.r.set(key, doc, nx=True):
                check_same(parse_config(self.r.get(key) or "{}", self.crawl), config, self.url, self.crawl)
            if self.counts_pages:
                self.r.set(self.prefix + "budget", int(config["options"]["max_pages"]))
            info = {"host": socket.gethostname(), "pid": os.getpid(), "out": str(path.parent.parent)}
            self.r.hset(self.prefix + "workers", self.worker, json.dumps(info))
        except self._errors as e:
            problem = refusal(e, self.url, self.crawl)
            if problem is not None:
                raise problem from None
            raise CaptureError(f"cannot reach Redis: {shown(str(e))}", subject=shown_url(self.url)) from None
