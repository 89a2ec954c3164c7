"""``archiver capture --state redis://… --crawl NAME --status``: the whole crawl's progress, read
from the keys of formats/crawl-state.md §6.1."""

from __future__ import annotations

import json
from typing import Any

from archiver.capture.redis.budget import budget_status
from archiver.capture.redis.conn import (
    call,
    check_target,
    connect,
    damaged,
    inspect,
    prefix,
    shown,
    shown_url,
)
from archiver.errors import UsageError

__all__ = ["crawl_status", "status_text"]


def crawl_status(url: str, crawl: str | None) -> dict[str, Any]:
    """The whole crawl's progress: row counts by state, queued/leased/scheduled, and per worker."""
    check_target(url, crawl)
    r = connect(url)
    assert crawl is not None
    p = prefix(crawl)
    config = inspect(r, url, crawl)  # the fixed keys of their types, counters numbers: else exit 1
    if config is None:
        raise UsageError(f"no crawl of this name on {shown_url(url)}", subject=f"--crawl {shown(crawl)}")
    try:
        return call(url, crawl, _read, r, p, url, crawl, config)
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # a value no worker writes
        raise damaged(
            crawl, f"a value --status cannot read ({type(e).__name__}: {shown(str(e)[:80])})"
        ) from None


def _read(r: Any, p: str, url: str, crawl: str, config: dict[str, Any]) -> dict[str, Any]:
    counts = r.hgetall(p + "counts")
    queued = r.zcard(p + "q:page") + r.zcard(p + "q:asset")
    leased, scheduled = r.zcard(p + "leases"), r.zcard(p + "retry")
    workers = r.hgetall(p + "workers")
    alive = r.hgetall(p + "alive")
    holders = [v.split(" ", 1)[0] for v in r.hvals(p + "owner")]
    seconds, micros = r.time()
    done_by = {w: r.hgetall(p + "wc:" + w) for w in workers}
    expired = int(r.hget(p + "stats", "expired") or 0)
    budget = budget_status(r, p)
    now = int(seconds) * 1000 + int(micros) // 1000
    states: dict[str, int] = {}
    kinds: dict[str, dict[str, int]] = {}
    for field, n in counts.items():
        s, _, k = field.partition(":")
        states[s] = states.get(s, 0) + int(n)
        kinds.setdefault(k, {})[s] = kinds.get(k, {}).get(s, 0) + int(n)
    per_worker = []
    for w in sorted(workers):
        info = json.loads(workers[w])
        finished = {s: int(n) for s, n in done_by[w].items()}
        per_worker.append(
            {
                "worker": w,
                "out": info.get("out"),
                "done": finished.get("done", 0),
                "failed": finished.get("failed", 0),
                "finished": sum(finished.values()),
                "leased": holders.count(w),
                "seen_ago": round((now - int(alive[w])) / 1000, 1) if w in alive else None,
            }
        )
    pending = states.get("pending", 0)
    return {
        "crawl": crawl,
        "state": shown_url(url),
        "seeds": config["seeds"],
        "complete": pending == 0,
        "done": states.get("done", 0),
        "queued": queued + scheduled,
        "leased": leased,
        "failed": states.get("failed", 0),
        "unconfirmed": states.get("unconfirmed", 0),
        "scheduled": scheduled,
        "expired_leases": expired,
        "budget": budget,
        "states": dict(sorted(states.items())),
        "kinds": {k: dict(sorted(v.items())) for k, v in sorted(kinds.items())},
        "workers": per_worker,
    }


def status_text(doc: dict[str, Any]) -> str:
    head = "complete" if doc["complete"] else "under way"
    lines = [
        f"crawl {doc['crawl']} on {doc['state']}: {head}",
        f"  done {doc['done']} · queued {doc['queued']} · leased {doc['leased']} · failed {doc['failed']}"
        f" · unconfirmed {doc['unconfirmed']} · expired leases {doc['expired_leases']}",
        "  rows by state: " + ", ".join(f"{s} {n}" for s, n in doc["states"].items()),
    ]
    budget = doc.get("budget")
    if budget is not None:
        lines.append(
            f"  page budget {budget['max_pages']} (--max-pages): {budget['stored']} stored,"
            f" {budget['leased']} leased, {budget['free']} free; {budget['skipped']} skipped beyond it"
        )
    for w in doc["workers"]:
        seen = "never" if w["seen_ago"] is None else f"{w['seen_ago']:g} s ago"
        lines.append(
            f"  worker {w['worker']}: done {w['done']}, failed {w['failed']}, leased {w['leased']},"
            f" last seen {seen}, folder {w['out']}"
        )
    return "\n".join(lines)
