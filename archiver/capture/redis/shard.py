"""A worker's shard of a Redis-shared crawl seen alone (formats/crawl-state.md §6.6): the rows it
finished or decided, the crawl's merged aliases of its files, and the shard's SQLite settled like a
finished single-process capture's once the crawl is complete (depths and referrers included, as far
as the crawl-wide rows and the shard's own discoveries tell them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from archiver.capture.aliases import HANDED_STATES, chain_end
from archiver.capture.redis.conn import Down, shown
from archiver.capture.state import NewURL, Row, State
from archiver.errors import FormatError

if TYPE_CHECKING:
    from archiver.capture.redis.link import RedisLink

__all__ = ["Shard", "aliases", "crawl_fields", "row_of", "settle"]


_STATES = frozenset({"pending", "done", "failed", "unconfirmed", "skipped", "refused", "merged"})


def row_of(key: str, f: dict[str, str]) -> Row:
    """The row of ``key`` from its Redis hash (a missing field is None); a hash no script writes
    (a field missing or not a number, an unknown kind or state) is a :class:`FormatError`."""
    try:
        row = Row(
            key,
            f["kind"],
            f["state"],
            _number(f["depth"]),
            f.get("referrer"),
            _number(f["priority"]),
            _number(f["seq"]),
            f.get("path"),
            f.get("outcome"),
            f.get("reason"),
            _number(f["status"]) if f.get("status") else None,
            _number(f.get("attempts", "0")),
            f.get("final_url"),
            f.get("stylesheet") == "1",
        )
    except (KeyError, ValueError, TypeError):
        row = None
    if row is None or row.kind not in ("page", "asset") or row.state not in _STATES or "\0" in key:
        raise FormatError(
            "the crawl's data in Redis is damaged: not the row of a URL (formats/crawl-state.md §6.1)",
            subject=f"u:{shown(key)}",
        )
    return row


def _checked_depth(key: str, depth: str) -> int:
    try:
        return _number(depth)
    except ValueError:
        raise FormatError(
            "the crawl's data in Redis is damaged: a depth that is not a number", subject=f"u:{shown(key)}"
        ) from None


def _number(text: str) -> int:
    if not isinstance(text, str) or not text.lstrip("-").isdigit() or len(text) > 19:
        raise ValueError(text)
    return int(text)


class Shard:
    """The local SQLite seen alone: the rows this shard finished or decided (not the ones it only
    heard of, still pending here whatever another worker did with them), and the crawl's merged
    aliases of the keys it stored (tree.md §3.3: whoever met them, they name this shard's files)."""

    def __init__(self, local: State, state: RedisLink) -> None:
        self._local = local
        self._state = state

    def rows(self) -> Iterator[Row]:
        """This shard's rows, then the crawl's aliases of its files; every merged row names the key
        at the end of its chain (an alias of an alias: two workers each merged it into the key it
        met first), as a single-process capture's merged rows name the file's own key."""
        local = [r for r in self._local.rows() if r.state != "pending"]
        stored = {r.key for r in local if r.state == "done"}
        stored.update(u for record in self._local.records() for u in record.urls)  # redirect targets too
        # a key this shard failed may have handed its path to an alias the crawl then stored
        # (crawl-state.md §6.2): the crawl's merged row stands for it
        known = {r.key for r in local if r.state not in HANDED_STATES}
        extra = list(aliases(self._state, sorted(stored), known))
        replaced = {r.key for r in extra}
        local = [r for r in local if r.key not in replaced]
        final = {r.key: r.final_url for r in [*local, *extra] if r.state == "merged" and r.final_url}
        for r in [*local, *extra]:
            yield msgspec.structs.replace(r, final_url=chain_end(final, r.key)) if r.key in final else r

    def count(self, state: str | None = None, kind: str | None = None) -> int:
        return sum(
            1 for r in self.rows() if (state is None or r.state == state) and (kind is None or r.kind == kind)
        )

    def shard(self) -> Shard:
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._local, name)


def aliases(state: RedisLink, keys: list[str], known: set[str]) -> Iterator[Row]:
    """The crawl's merged rows whose file is one of ``keys``', those not in ``known``: every key
    merged into one of them, into one of those, and so on."""
    frontier = list(keys)
    visited = set(keys)
    try:
        while frontier:
            found: list[str] = []
            for start in range(0, len(frontier), 500):
                batch = frontier[start : start + 500]
                pipe = state.r.pipeline(transaction=False)
                for key in batch:
                    pipe.smembers(state.prefix + "al:" + key)
                for names in state._try(pipe.execute):
                    for name in sorted(names):
                        if name not in visited:
                            visited.add(name)
                            found.append(name)
            pipe = state.r.pipeline(transaction=False)
            for key in found:
                pipe.hgetall(state.prefix + "u:" + key)
            frontier = []
            for key, fields in zip(found, state._try(pipe.execute), strict=True):
                if fields and fields.get("state") == "merged":
                    frontier.append(key)
                    if key not in known:
                        yield row_of(key, fields)
    except Down:
        return


def settle(state: RedisLink) -> None:
    """The crawl is complete: the shard's SQLite keeps what a single-process capture's would
    (formats/crawl-state.md §6.6): the rows it only heard of (pending here) go, the crawl's
    merged aliases of its files come in."""
    merged = [r for r in Shard(state.local, state).rows() if r.state == "merged"]
    with state.local.transaction():
        state.local.db.execute("DELETE FROM urls WHERE state = 'pending'")
        state.local._settled.clear()  # it remembered rows just deleted
        state.local.add(
            NewURL(
                r.key,
                r.kind,
                r.depth,
                r.referrer,
                r.priority,
                path=r.path,
                state="merged",
                final_url=r.final_url,
            )
            for r in merged
        )
        state.local.db.executemany(  # the end of each chain, also for the rows it had already
            "UPDATE urls SET final_url = ?, state = 'merged' WHERE key = ?"
            " AND state IN ('merged', 'failed', 'unconfirmed', 'refused')",
            [(r.final_url, r.key) for r in merged],
        )
    crawl_wide_discovery(state)
    state.local.settle_depths()


def crawl_fields(state: RedisLink, keys: list[str], *fields: str) -> Iterator[tuple[str, list[Any]]]:
    """``(key, values)`` of ``fields`` in the crawl-wide row of each of ``keys``, 500 keys per round
    trip; raises :class:`.conn.Down` when Redis is away."""
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        pipe = state.r.pipeline(transaction=False)
        for key in batch:
            pipe.hmget(state.prefix + "u:" + key, *fields)
        yield from zip(batch, state._try(pipe.execute), strict=True)


def crawl_wide_discovery(state: RedisLink) -> None:
    """Give the shard's rows the depth and referrer the crawl finally knows of their keys (the Redis
    row keeps the smallest of every worker's discoveries as it met them); the shard's own recorded
    discoveries then shorten what they can (``settle_depths``), and ``archiver merge`` finds the
    shortest over every shard's (formats/crawl-state.md §6.6)."""
    keys = [str(k) for (k,) in state.local.db.execute("SELECT key FROM urls")]
    try:
        updates = [
            (_checked_depth(key, depth), referrer, key)
            for key, (depth, referrer) in crawl_fields(state, keys, "depth", "referrer")
            if depth is not None
        ]
    except Down:
        return  # Redis gone at the very end: the shard keeps what it knew
    with state.local.transaction():
        state.local.db.executemany("UPDATE urls SET depth = ?, referrer = ? WHERE key = ?", updates)
        state.local._settled.clear()
