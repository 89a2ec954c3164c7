"""Talking to the Redis of a shared crawl: the ``--state``/``--crawl`` checks, a client that fails
fast, and what counts as "Redis did not answer" (formats/crawl-state.md §6)."""

from __future__ import annotations

import re
from typing import Any

from archiver.errors import EnvironmentProblem, UsageError

__all__ = ["Down", "check_target", "connect", "down_errors", "prefix", "redis_module"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def prefix(crawl: str) -> str:
    """The prefix of every key of the crawl ``crawl`` (its hash tag keeps them in one slot)."""
    return f"archiver:{{{crawl}}}:"


class Down(Exception):
    """Redis did not answer (the caller falls back or keeps the write for later)."""


def redis_module() -> Any:
    try:
        import redis
    except ImportError:
        raise EnvironmentProblem(
            "the redis Python package is not installed (pip install 'redis[hiredis]')", subject="--state"
        ) from None
    return redis


def check_target(url: str, crawl: str | None) -> None:
    """``--state`` must be ``redis://HOST:PORT/DB`` (or ``rediss://``) and ``--crawl`` a plain name."""
    if not url.startswith(("redis://", "rediss://")):
        raise UsageError("takes redis://HOST:PORT/DB", subject=f"--state {url}")
    if crawl is None:
        raise UsageError("--state redis:// needs --crawl NAME (the crawl the workers share)", subject=url)
    if not _NAME.fullmatch(crawl):
        raise UsageError(
            "a crawl name is 1 to 64 letters, digits, '.', '_' or '-'", subject=f"--crawl {crawl}"
        )


def connect(url: str) -> Any:
    """A client of ``url`` that fails fast (no retries of its own: this module decides)."""
    redis = redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    try:
        return redis.Redis.from_url(
            url,
            socket_timeout=2.0,
            socket_connect_timeout=1.0,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )
    except ValueError as e:
        raise UsageError(f"not a Redis URL: {e}", subject=f"--state {url}") from None


def down_errors() -> tuple[type[BaseException], ...]:
    redis = redis_module()
    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
