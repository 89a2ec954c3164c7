"""Talking to the Redis of a shared crawl: the ``--state``/``--crawl`` checks, a client that fails
fast, what counts as "Redis did not answer", and what every other error from Redis means to the
user (formats/crawl-state.md §6.9): a bad ``redis://`` URL (exit 2), a server that is not Redis or
cannot be reached (exit 4), a crawl whose keys are damaged (exit 1); never a traceback.

:func:`inspect` looks at a crawl's keys before a worker touches its folder or ``--status`` reads
them: each fixed key of §6.1 of its type, the counters numbers, ``config`` JSON of its shape."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from archiver.errors import ArchiverError, CaptureError, EnvironmentProblem, FormatError, UsageError

__all__ = [
    "KEY_TYPES",
    "Down",
    "call",
    "check_target",
    "connect",
    "damaged",
    "down_errors",
    "inspect",
    "parse_config",
    "prefix",
    "redis_errors",
    "redis_module",
    "refusal",
    "shown",
    "shown_url",
]

#: The type of each fixed key of a crawl (formats/crawl-state.md §6.1); a key of another type is a
#: damaged crawl. Keys per URL, worker or host (``u:``, ``al:``, ``rd:``, ``wc:``, ``host:``,
#: ``robots:``) are met by the scripts, which refuse them the same way (``WRONGTYPE``).
KEY_TYPES = {
    "config": "string",
    "meta": "hash",
    "seen": "zset",
    "seq": "string",
    "token": "string",
    "q:page": "zset",
    "q:asset": "zset",
    "leases": "zset",
    "owner": "hash",
    "retry": "zset",
    "counts": "hash",
    "paths": "hash",
    "workers": "hash",
    "alive": "hash",
    "stats": "hash",
    "reaped": "set",
    "budget": "string",
    "budget:stored": "set",
    "budget:leased": "set",
}
_NUMBERS = ("seq", "token", "budget")  # strings that hold an integer
_NUMBER_HASHES = ("counts", "alive", "stats")  # hashes whose every value is an integer
_INTEGER = re.compile(r"-?[0-9]{1,18}")
_PIPELINE = re.compile(r"^Command # \d+ \(.*?\) of pipeline caused error: ", re.DOTALL)

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


def shown(text: str) -> str:
    """``text`` for an error line: as it is when printable, else escaped (a newline is ``\\n``)."""
    text = text if len(text) <= 200 else text[:200] + "…"
    return text if text.isprintable() else repr(text)


def shown_url(url: str) -> str:
    """A ``redis://`` URL for an error line: escaped, a password in it replaced by ``***``."""
    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        netloc = ""
    if "@" in netloc:
        url = url.replace(netloc, "***@" + netloc.rsplit("@", 1)[1], 1)
    return shown(url)


def check_target(url: str, crawl: str | None) -> None:
    """``--state`` must be ``redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`` (or ``rediss://``), DB a
    number, nothing after it; ``--crawl`` a plain name."""
    where = f"--state {shown_url(url)}"
    if not url.startswith(("redis://", "rediss://")):
        raise UsageError("takes redis://HOST:PORT/DB", subject=where)
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port
    except ValueError as e:
        raise UsageError(f"not a Redis URL: {e}", subject=where) from None
    if not host:
        raise UsageError("not a Redis URL: no host (redis://HOST:PORT/DB)", subject=where)
    if parts.query or parts.fragment or "?" in url or "#" in url:
        raise UsageError("not a Redis URL: nothing may follow the DB number", subject=where)
    db = parts.path.lstrip("/")
    if parts.path.count("/") > 1 or (db and not (db.isascii() and db.isdecimal())):
        raise UsageError("not a Redis URL: the DB (redis://HOST:PORT/DB) is a number", subject=where)
    if crawl is None:
        raise UsageError("--state redis:// needs --crawl NAME (the crawl the workers share)", subject=where)
    if not _NAME.fullmatch(crawl):
        raise UsageError(
            "a crawl name is 1 to 64 letters, digits, '.', '_' or '-'", subject=f"--crawl {shown(crawl)}"
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
        raise UsageError(f"not a Redis URL: {e}", subject=f"--state {shown_url(url)}") from None


def down_errors() -> tuple[type[BaseException], ...]:
    redis = redis_module()
    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)


def redis_errors() -> tuple[type[BaseException], ...]:
    """Every error a Redis command can end in (:func:`refusal` says what each means)."""
    return (redis_module().exceptions.RedisError, OSError, UnicodeDecodeError)


def damaged(crawl: str, what: str) -> FormatError:
    """The crawl's keys hold what no worker writes: exit 1."""
    return FormatError(
        f"the crawl's data in Redis is damaged: {what} (formats/crawl-state.md §6.1)",
        subject=f"--crawl {shown(crawl)}",
    )


def refusal(e: BaseException, url: str, crawl: str) -> ArchiverError | None:
    """What an error from Redis means: None when Redis did not answer (the caller waits or falls
    back), else the one-line error to stop with."""
    ex = redis_module().exceptions
    text = _PIPELINE.sub("", str(e).strip())  # "Command # 1 (…) of pipeline caused error: " told nothing
    msg = shown(text.splitlines()[0] if text else type(e).__name__)
    where = f"--state {shown_url(url)}"
    if isinstance(e, UnicodeDecodeError):
        return damaged(crawl, "a value that is not UTF-8")
    if isinstance(e, ex.AuthenticationError) or (
        isinstance(e, ex.ResponseError) and text.startswith(("NOAUTH", "WRONGPASS"))
    ):
        return UsageError(f"Redis refused the credentials: {msg}", subject=where)
    if isinstance(e, (*down_errors(),)):
        return None
    if isinstance(e, ex.ResponseError):
        if "DB index" in text:
            return UsageError(f"Redis has no such DB: {msg}", subject=where)
        if "WRONGTYPE" in text or "script" in text:
            return damaged(crawl, msg)
        return CaptureError(f"Redis refused: {msg}", subject=shown_url(url))
    return CaptureError(f"not a Redis server, or it answered garbage: {msg}", subject=shown_url(url))


def call(url: str, crawl: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(...)`` against Redis; every error is its one line (Redis down: exit 4)."""
    try:
        return fn(*args, **kwargs)
    except redis_errors() as e:
        problem = refusal(e, url, crawl)
        if problem is None:
            problem = CaptureError(f"cannot reach Redis: {shown(str(e))}", subject=shown_url(url))
        raise problem from None


def parse_config(text: str, crawl: str) -> dict[str, Any]:
    """The crawl's ``config`` (§6.1): JSON ``{"version": N, "seeds": [...], "options": {...}}``."""
    try:
        doc = json.loads(text)
    except ValueError:
        raise damaged(crawl, "its config is not JSON") from None
    except RecursionError:  # arrays or objects nested past the decoder's stack
        raise damaged(crawl, "its config is JSON nested too deep") from None
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("version"), int)
        or not isinstance(doc.get("seeds"), list)
        or not all(isinstance(s, str) for s in doc["seeds"])
        or not isinstance(doc.get("options"), dict)
    ):
        raise damaged(crawl, "its config is not of the shape of a crawl's")
    return doc


def inspect(client: Any, url: str, crawl: str) -> dict[str, Any] | None:
    """The crawl's registered config (None: no crawl of this name yet), once its fixed keys are
    checked: each of its type, the counters integers, every worker's entry a JSON object. Reads
    only; raises the one-line error of what it finds (:func:`refusal`; Redis down: exit 4)."""
    p = prefix(crawl)
    names = list(KEY_TYPES)
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.type(p + name)
    for name, kind in zip(names, call(url, crawl, pipe.execute), strict=True):
        if kind not in ("none", KEY_TYPES[name]):
            raise damaged(crawl, f"the key {p}{name} is a {kind}, not a {KEY_TYPES[name]}")
    pipe = client.pipeline(transaction=False)
    for name in _NUMBERS:
        pipe.get(p + name)
    for name in _NUMBER_HASHES:
        pipe.hvals(p + name)
    pipe.hvals(p + "workers")
    pipe.get(p + "config")
    *numbers, workers, config = call(url, crawl, pipe.execute)
    for name, value in zip(_NUMBERS, numbers[: len(_NUMBERS)], strict=True):
        if value is not None and not _INTEGER.fullmatch(value):
            raise damaged(crawl, f"{p}{name} is not a number")
    for name, values in zip(_NUMBER_HASHES, numbers[len(_NUMBERS) :], strict=True):
        if not all(_INTEGER.fullmatch(v) for v in values):
            raise damaged(crawl, f"a value of {p}{name} is not a number")
    for value in workers:
        try:
            ok = isinstance(json.loads(value), dict)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            ok = False
        if not ok:
            raise damaged(crawl, f"an entry of {p}workers is not a JSON object")
    return None if config is None else parse_config(config, crawl)
