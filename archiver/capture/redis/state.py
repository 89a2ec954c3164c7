"""The crawl state shared by many workers: the frontier in Redis, each worker's shard in its own SQLite.

``archiver capture URL... -o DIR --state redis://HOST:PORT/DB --crawl NAME``, run on any number of
processes and machines, is one crawl (formats/crawl-state.md §6 is the contract; every key and
script is listed there):

- the **frontier** (seen keys, the rows and their outcomes, the frontier ordered by priority, depth
  and discovery, leases with a deadline and a fencing token, attempts, the retry schedule, the
  crawl's seeds and scope options) is in Redis under ``archiver:{NAME}:``; every operation that
  changes it is one Lua script (:mod:`.lua`), so it is atomic; host clocks and robots.txt
  are :mod:`.politeness`, ``--status`` is :mod:`.status`, the client :mod:`.conn`,
  the shard seen alone :mod:`.shard`, the page budget (``--max-pages``, kept by the claim
  script) :mod:`.budget`;
- the **shard** (tree paths, manifest records, links, blobs, moves, meta) is the worker's own
  ``DIR/_archiver/crawl.sqlite`` (:class:`archiver.capture.state.State`), which also mirrors the
  rows this worker saw, so a shard reads like a single-process capture's state.

``finish`` commits the shard part first and sends the frontier part when that commit is done: a
crash between the two costs one repeated fetch (the lease expires), never a lost file. Writes that
cannot reach Redis wait in a backlog, sent in order when it answers again; a ``finish`` whose lease
was lost meanwhile is refused by Redis (its fencing token is stale).

A worker that stops (Ctrl-C, SIGTERM: :mod:`.interrupt`) gives back every claim it holds at once
(:meth:`RedisState.release`). Reads fall back to the local mirror while Redis is unreachable. A
worker that cannot reach Redis for longer than its lease stops claiming and says so on stderr; after
three leases it stops (:class:`~archiver.errors.CaptureError`), with what it stored intact in its
folder.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import socket
import time
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from archiver import urls
from archiver.capture.redis.budget import keep_skipped, stores_page
from archiver.capture.redis.config import CONFIG_VERSION, check_same, crawl_config
from archiver.capture.redis.conn import (
    Down,
    check_target,
    connect,
    inspect,
    shown_url,
)
from archiver.capture.redis.link import RedisLink
from archiver.capture.redis.politeness import RedisPoliteness
from archiver.capture.redis.shard import Shard, row_of, settle
from archiver.capture.state import NewURL, Row
from archiver.errors import CaptureError, UsageError
from archiver.tree import Record

if TYPE_CHECKING:
    from archiver.capture.crawlstate import CrawlState, StateFactory
    from archiver.capture.options import CaptureOptions

__all__ = ["CONFIG_VERSION", "RedisState", "crawl_config", "redis_state"]

_LIMIT_REASONS = ("beyond the depth limit", "beyond the page budget")
_RETRY_BACKOFF_MS = 1000  # an expired lease's row waits 1 s · 2^(attempts-1) (at most 60 s)


def redis_state(
    url: str, crawl: str | None, seeds: list[str], options: CaptureOptions, *, lease: float = 30.0
) -> StateFactory:
    """The factory of ``CaptureOptions.state`` for ``--state url --crawl crawl`` (one worker)."""
    check_target(url, crawl)
    assert crawl is not None
    if lease < 1:
        raise UsageError("the lease is at least 1 second", subject=f"--lease {lease}")
    keys = [urls.dedup_key(urls.parse_seed(s)) for s in seeds]
    config = crawl_config(keys, options)
    client = connect(url)
    # before the worker touches its folder: a refused worker leaves it exactly as it found it
    registered = inspect(client, url, crawl)
    if registered is not None:
        check_same(registered, config, url, crawl)
    worker = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"

    def factory(path: Path) -> CrawlState:
        return RedisState(
            path,
            client=client,
            url=url,
            crawl=crawl,
            config=config,
            worker=worker,
            lease=lease,
            max_attempts=options.max_attempts,
            lock_seconds=options.timeout + 10,
        )

    return factory


def _item(n: NewURL) -> list[Any]:
    return [
        n.key,
        n.kind,
        n.depth,
        n.referrer,
        n.priority,
        int(n.stylesheet),
        n.path,
        n.state,
        n.final_url,
        n.reason,
    ]


class RedisState(RedisLink):
    """One worker's view of a crawl shared in Redis (module docstring; formats/crawl-state.md §6)."""

    # ---- meta and seeds (home and created are the crawl's; the rest is the shard's)

    def get(self, key: str) -> str | None:
        if key in ("home", "created"):
            with contextlib.suppress(Down):
                value = self._try(self.r.hget, self.prefix + "meta", key)
                if value is not None:
                    return str(value)
        return self.local.get(key)

    def set(self, key: str, value: str) -> None:
        if key == "complete" and value == "1":
            keep_skipped(self)
            settle(self)
        self.local.set(key, value)
        if key in ("home", "created"):
            with contextlib.suppress(Down):
                self._try(self.r.hsetnx, self.prefix + "meta", key, value)

    def add_seed(self, url: str, folder: str | None = None, title: str | None = None) -> None:
        self.local.add_seed(url, folder, title)

    def seeds(self) -> list[tuple[str, str | None, str | None]]:
        return self.local.seeds()

    # ---- the frontier

    def _know_path(self, row: Row) -> None:
        # a path another worker gave out: this shard's relinking must be able to read it back
        if row.path and row.path not in self._local_paths:
            self._local_paths.add(row.path)
            if self.local.owner(row.path) is None:
                self.local.claim_many({row.path: row.key})

    def row(self, key: str) -> Row | None:
        try:
            fields = self._try(self.r.hgetall, self.prefix + "u:" + key)
        except Down:
            return self.local.row(key)
        if not fields:
            return None
        row = row_of(key, fields)
        self._know_path(row)
        return row

    def _unchanged(self, n: NewURL) -> bool:
        s = self._settled.get(n.key)
        return s is not None and (n.depth, n.referrer or "") >= s[:2] and (s[2] or not n.stylesheet)

    def _to_send(self, items: list[NewURL]) -> list[list[Any]]:
        out = []
        for n in items:
            if self._unchanged(n):
                continue  # Redis would change nothing (every page names the same menu again)
            out.append(_item(n))
            if n.state == "pending":  # the row is now no worse than n, and not skipped for a limit
                if len(self._settled) >= 100_000:
                    self._settled.clear()
                was = self._settled.get(n.key, (0, "", False))[2]
                self._settled[n.key] = (n.depth, n.referrer or "", n.stylesheet or was)
        return out

    def add(self, items: Iterable[NewURL]) -> list[str]:
        """§2 ``add``; returns the keys new to the crawl when sent at once (none when it is part of
        an open unit: it is sent when that commits)."""
        items = list(items)
        inner = self._depth > 0
        with self.transaction():
            self.local.add(items)
            send = self._to_send(items)
            if send:
                self._op("ADD", [json.dumps(send)])
        return [] if inner or not send else list(self._last or [])

    def claim(
        self, kind: str, limit: int, exclude: Iterable[str] = (), busy: Collection[str] = ()
    ) -> list[Row]:
        """§2 ``claim``: the ``CLAIM`` script takes up to ``limit`` rows of hosts free crawl-wide
        (not in ``busy``, the hosts this worker has rows of in flight, and no worker holding the
        host's lock); the slots left filled with rows of busy hosts only when this worker has
        nothing in flight (``exclude`` empty; formats/crawl-state.md §2)."""
        if self.damage is not None:
            raise self.damage
        idle = not any(True for _ in exclude)
        try:
            self._drain()
            found = self._script(
                "CLAIM",
                kind,
                limit,
                self.worker,
                int(self.lease * 1000),
                self.max_attempts,
                _RETRY_BACKOFF_MS,
                "1" if idle else "0",
                *sorted(busy),
            )
        except Down:
            return []
        rows = []
        for key, token, flat in found:
            row = row_of(key, dict(zip(flat[::2], flat[1::2], strict=True)))
            self._tokens[key] = int(token)
            rows.append(row)
        if rows:  # the local mirror knows every row this worker works on
            self.local.add(
                NewURL(r.key, r.kind, r.depth, r.referrer, r.priority, r.stylesheet, r.path) for r in rows
            )
            with self.local.transaction():
                for r in rows:
                    # an alias this shard merged, given the path since (formats/crawl-state.md §6.2)
                    if self.local.adopt(r.key, r.path):
                        self.local._settled.pop(r.key, None)
                    self._know_path(r)
        return rows

    def renew(self, keys: Iterable[str]) -> list[str]:
        pairs = [(k, self._tokens[k]) for k in keys if k in self._tokens]
        hosts = list(self.held.items())
        try:
            self._drain()
            lost = self._script(
                "RENEW",
                self.worker,
                int(self.lease * 1000),
                len(pairs),
                *itertools.chain(*pairs),
                *itertools.chain(*hosts),
            )
        except Down:
            return []
        return [str(k) for k in lost]

    def waiting(self) -> float | None:
        try:
            self._drain()
            queued, leased, scheduled, due = self._script("PROBE", self.max_attempts, _RETRY_BACKOFF_MS)
        except Down:
            assert self._down_since is not None
            gone = time.monotonic() - self._down_since
            if gone > self.give_up:
                raise CaptureError(
                    f"no answer from Redis for {gone:.0f} s: this worker stops; what it stored is"
                    " intact in its folder (run it again to rejoin the crawl)",
                    subject=shown_url(self.url),
                ) from None
            return 0.5
        if queued:
            return 0.0
        if leased or scheduled:
            return min(0.25, due / 1000) if due >= 0 and not leased else 0.25
        return None

    def skipped_for(self, reason: str, kind: str) -> Iterator[Row]:
        for r in self.rows():
            if r.state == "skipped" and r.kind == kind and r.reason == reason:
                yield r

    def count(self, state: str | None = None, kind: str | None = None) -> int:
        try:
            counts = self._try(self.r.hgetall, self.prefix + "counts")
        except Down:
            return self.local.count(state, kind)
        total = 0
        for field, n in counts.items():
            s, _, k = field.partition(":")
            if (state is None or s == state) and (kind is None or k == kind):
                total += int(n)
        return total

    def rows(self) -> Iterator[Row]:
        """Every row of the crawl, in discovery order (the local mirror while Redis is down)."""
        try:
            start = 0
            while True:
                keys = self._try(self.r.zrange, self.prefix + "seen", start, start + 499)
                if not keys:
                    return
                pipe = self.r.pipeline(transaction=False)
                for key in keys:
                    pipe.hgetall(self.prefix + "u:" + key)
                for key, fields in zip(keys, self._try(pipe.execute), strict=True):
                    if fields:
                        yield row_of(key, fields)
                start += len(keys)
        except Down:
            yield from self.local.rows()

    def requeue(self, states: Iterable[str], max_attempts: int) -> int:
        try:
            return int(self._script("REQUEUE", "requeue", max_attempts, *states))
        except Down:
            return 0

    def refresh(self) -> int:
        try:
            return int(self._script("REQUEUE", "refresh", 0, "done", "failed", "unconfirmed"))
        except Down:
            return 0

    def mark(
        self, key: str, *, state: str, outcome: str, reason: str = "", final_url: str | None = None
    ) -> None:
        self._settled.pop(key, None)
        with self.transaction():
            self.local.mark(key, state=state, outcome=outcome, reason=reason, final_url=final_url)
            self._op("MARK", [key, state, outcome, reason, final_url or ""])

    def redirected_to(self, key: str) -> list[tuple[str, str | None]]:
        try:
            keys = sorted(self._try(self.r.smembers, self.prefix + "rd:" + key))
            return [(k, self._try(self.r.hget, self.prefix + "u:" + k, "path")) for k in keys]
        except Down:
            return self.local.redirected_to(key)

    def settle_depths(self, max_depth: int | None = None) -> list[Row]:
        """None here: the discoveries are in every worker's shard, which settles its own rows when
        the crawl is complete (:func:`.shard.settle`)."""
        return []

    @property
    def notes(self) -> list[str]:
        """What this worker's report says of its shared state: the finishes Redis refused (each
        URL's files stay in this shard; another worker fetches it again, and merge keeps the record
        fetched last, formats/tree.md §11)."""
        if not self.refused:
            return []
        n = self.refused
        return [
            f"{n} URL{'s' if n > 1 else ''} finished here {'were' if n > 1 else 'was'} refused by Redis:"
            " this worker's lease had run out and another worker took "
            f"{'them' if n > 1 else 'it'} over"
        ]

    def _finished(self, result: Any) -> None:
        if not result or int(result[0]) == 0:
            self.refused += 1

    def finish(
        self,
        key: str,
        *,
        state: str,
        outcome: str,
        reason: str = "",
        status: int | None = None,
        final_url: str | None = None,
        record: Record | None = None,
        blob: tuple[str, str] | None = None,
        new: Iterable[NewURL] = (),
        extra_records: Iterable[Record] = (),
        links: tuple[str, dict[str, bool]] | None = None,
    ) -> list[str]:
        """The shard part now (local SQLite), the frontier part when the outermost unit commits;
        refused by Redis if this worker's claim on ``key`` was lost."""
        new = list(new)
        with self.transaction():
            self.local.finish(
                key,
                state=state,
                outcome=outcome,
                reason=reason,
                status=status,
                final_url=final_url,
                record=record,
                blob=blob,
                new=new,
                extra_records=extra_records,
                links=links,
            )
            token = self._tokens.pop(key, None)
            args = [key, self.worker, "" if token is None else str(token), state, outcome, reason]
            args += ["" if status is None else str(status), final_url or "", json.dumps(self._to_send(new))]
            args.append("1" if stores_page(record) else "0")
            self._op("FINISH", args, self._finished)
        return []

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """The shard's unit (local SQLite); the Redis writes it queued are sent after it commits
        (and dropped if it rolls back)."""
        outer = self._depth == 0
        before = len(self._backlog)
        self._depth += 1
        try:
            with self.local.transaction():
                yield
        except BaseException:
            if outer:
                self._settled.clear()  # what it believed sent was not
                del self._backlog[before:]
            raise
        finally:
            self._depth -= 1
        if outer:
            self._last = None
            with contextlib.suppress(Down):
                self._last = self._drain()

    # ---- working with other workers

    def politeness(self) -> RedisPoliteness:
        return RedisPoliteness(self)

    def shard(self) -> CrawlState:
        return cast("CrawlState", Shard(self.local, self))

    # ---- the shard: paths, records, links, blobs, moves (all local)

    def owner(self, path: str) -> str | None:
        return self.local.owner(path)

    def has_path_under(self, folder: str) -> bool:
        return self.local.has_path_under(folder)

    def claim_many(self, claims: dict[str, str]) -> None:
        self.local.claim_many(claims)

    def move(self, key: str, old: str, new: str) -> None:
        self.local.move(key, old, new)

    def moves(self) -> dict[str, str]:
        return self.local.moves()

    def set_links(self, src: str, links: dict[str, bool]) -> None:
        self.local.set_links(src, links)

    def links(self) -> Iterator[tuple[str, str, bool]]:
        return self.local.links()

    def paths_map(self) -> dict[str, str]:
        return self.local.paths_map()

    def blob_path(self, sha256: str) -> str | None:
        return self.local.blob_path(sha256)

    def record(self, path: str) -> Record | None:
        return self.local.record(path)

    def put_record(self, record: Record, *, durable: bool = False) -> None:
        self.local.put_record(record, durable=durable)

    def records(self) -> Iterator[Record]:
        return self.local.records()

    def release(self) -> None:
        """Send what waits, then give back the claims still held at once (a stopped run's URLs go
        to the others now, not after their lease; a page's budget slot with it)."""
        with contextlib.suppress(Down):
            self._drain()
            if self._tokens:
                self._script("RELEASE", self.worker, *itertools.chain(*self._tokens.items()))
                self._tokens.clear()

    def close(self) -> None:
        """:meth:`release`, then close the shard."""
        self.release()
        self.local.close()
