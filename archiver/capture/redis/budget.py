"""The page budget of a Redis-shared crawl (``--max-pages N`` with ``--state``; formats/crawl-state.md
§6.8): the scripts of :mod:`.lua` keep it (a page is claimed only while pages stored + pages
leased < N); this module holds what the worker and ``--status`` add to them.

- :func:`stores_page`: does a finish keep its page's budget slot (pure: what the report counts as
  a page, a page record that is not a redirect stub)?
- :func:`keep_skipped`: when the crawl is complete, the rows this shard heard of that the crawl
  skipped for the budget stay in its SQLite (skipped, with the single-process reason), so its
  report and ``archiver merge`` say what the budget left out;
- :func:`budget_status`: the budget's slots for ``--status``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from archiver.capture.budget import BUDGET_REASON
from archiver.capture.redis.conn import Down
from archiver.capture.redis.shard import crawl_fields
from archiver.tree import Record

if TYPE_CHECKING:
    from archiver.capture.redis.link import RedisLink

__all__ = ["budget_status", "keep_skipped", "stores_page"]


def stores_page(record: Record | None) -> bool:
    """A finish whose record is a page, not a redirect stub (3xx), keeps its budget slot: the pages
    the budget counts are those the report counts. A failure, a redirect (its target is a page of
    its own) or a page that was not HTML (stored as an asset) give the slot back."""
    return record is not None and record.kind == "page" and (record.status or 200) // 100 != 3


def keep_skipped(state: RedisLink) -> None:
    """The crawl is complete: the shard's pending rows that the crawl skipped for the budget become
    skipped here too (the rest of its pending rows go in :func:`.shard.settle`)."""
    if not state.counts_pages:
        return
    local = state.local
    keys = [str(k) for (k,) in local.db.execute("SELECT key FROM urls WHERE state = 'pending'")]
    try:
        skipped = [
            key
            for key, (st, reason) in crawl_fields(state, keys, "state", "reason")
            if st == "skipped" and reason == BUDGET_REASON
        ]
    except Down:
        return  # Redis gone at the very end: the shard keeps what it knew
    with local.transaction():
        for key in skipped:
            local.mark(key, state="skipped", outcome="skipped", reason=BUDGET_REASON)


def budget_status(r: Any, prefix: str) -> dict[str, int] | None:
    """``{"max_pages", "stored", "leased", "free", "skipped"}`` of the crawl's budget (slots holding
    a stored page, a leased page, free; pages skipped beyond it), None without a budget."""
    n = r.get(prefix + "budget")
    if n is None:
        return None
    stored, leased = r.scard(prefix + "budget:stored"), r.scard(prefix + "budget:leased")
    skipped = int(r.hget(prefix + "stats", "budget_skipped") or 0)
    free = max(0, int(n) - stored - leased)
    return {"max_pages": int(n), "stored": stored, "leased": leased, "free": free, "skipped": skipped}
