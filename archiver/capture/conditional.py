"""Conditional re-fetch (formats/history.md §6.1), pure: which validators of a response are kept
(:func:`validator`), the request headers a re-capture sends for a URL whose previous bytes it holds
(:func:`request_headers`), and what an answer means (:func:`judge`). No IO: the caller checks that
the previous bytes are present and hash to their record before asking conditionally.

Validators are hostile input: a server's ``ETag`` or ``Last-Modified`` is echoed into our next
request to it, so only a bounded run of visible ASCII is kept (:data:`MAX_VALIDATOR` bytes; no
CR, LF, NUL, control or non-ASCII character, no leading or trailing space); anything else is not kept,
and a URL without a kept validator is fetched unconditionally."""

from __future__ import annotations

from typing import Literal

__all__ = ["MAX_VALIDATOR", "Verdict", "judge", "request_headers", "validator"]

#: the longest validator kept, in bytes (an ETag is a quoted hash, a Last-Modified 29 characters)
MAX_VALIDATOR = 256

#: ``keep``: a trusted 304, the previous bytes stand; ``refetch``: an untrusted 304, ask again
#: unconditionally (once); ``fail``: a 304 to an unconditional request; ``new``: any other answer
Verdict = Literal["keep", "refetch", "fail", "new"]


def validator(value: str | None) -> str | None:
    """``value`` as kept: visible ASCII (and inner spaces) of at most :data:`MAX_VALIDATOR` bytes,
    else None."""
    if not value or len(value) > MAX_VALIDATOR or value != value.strip(" "):
        return None
    # visible ASCII and the space (" " to "~"), as the pattern [ -~]* tells it: two C loops, no regex
    # (four validators a URL in a re-capture)
    return value if value.isascii() and value.isprintable() else None


def request_headers(etag: str | None, last_modified: str | None) -> dict[str, str]:
    """The conditional headers for a previous response with these validators (each checked again:
    a record is read from a file that may have been edited)."""
    headers: dict[str, str] = {}
    tag = validator(etag)
    date = validator(last_modified)
    if tag is not None:
        headers["If-None-Match"] = tag
    if date is not None:
        headers["If-Modified-Since"] = date
    return headers


def judge(status: int | None, *, conditional: bool, redirected: bool, retried: bool) -> Verdict:
    """What an answer with ``status`` means for a re-capture. ``conditional``: the request carried
    validators (sent only when the previous bytes were present and whole); ``redirected``: the
    answer ended a redirect chain (validators go on the first hop only, so a 304 further on answers
    a request we did not make conditional); ``retried``: this is already the unconditional retry."""
    if status != 304:
        return "new"
    if conditional and not redirected:
        return "keep"
    return "fail" if retried else "refetch"
