"""What one fetch is given and gives back, and the pure decisions around it: the fetch policy
(:class:`FetchPolicy`), the outcome of a fetch (:class:`FetchResult`, :data:`Outcome`), one redirect
hop (:func:`redirect_step`, shared by the live fetcher of :mod:`.fetch` and the WARC replay of
:mod:`archiver.warc.replay`), and the reading of ``Retry-After`` and the
request target of a URL. No network, no clock but ``Retry-After``'s date."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

import msgspec

from archiver import __version__, urls
from archiver.capture.policy import redact
from archiver.errors import URLError

if TYPE_CHECKING:
    from archiver.tree import WarcRef

__all__ = [
    "HTML_ACCEPT",
    "ROBOTS_AGENT",
    "USER_AGENT",
    "FetchPolicy",
    "FetchResult",
    "Outcome",
    "redirect_step",
    "retry_after",
    "target_of",
]

USER_AGENT = f"archiver/{__version__} (web archiving tool; +https://pypi.org/project/archiver/)"
ROBOTS_AGENT = "archiver"
#: what a page is asked with (the page stage, and a re-capture's first pass: :mod:`.revalidate`)
HTML_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
Outcome = Literal["ok", "redirected", "failed", "unconfirmed", "skipped", "refused"]


class FetchPolicy(NamedTuple):
    """The fetcher's rules, with the defaults of :mod:`archiver.capture.fetch`'s docstring."""

    delay: float = 1.0
    concurrency: int = 12
    connect_timeout: float = 3.0
    read_timeout: float = 5.0
    total_timeout: float = 30.0
    max_redirects: int = 5
    retries: int = 3
    backoff: float = 0.5
    max_retry_after: float = 60.0
    obey_robots: bool = True
    size_cap: int | None = 25 << 20
    user_agent: str = USER_AGENT
    robots_agent: str = ROBOTS_AGENT


class FetchResult(msgspec.Struct):
    """The end of one fetch. ``body`` holds the bytes of a small answer, ``file`` the temporary file
    of a large one (the caller moves or deletes it); both are None when nothing was kept. A
    :class:`msgspec.Struct` (changed with :func:`msgspec.structs.replace`): one is made every request,
    by C code, where a dataclass's ``__init__`` ran as Python, and the class is made without the
    dataclass's generated source compiled at every start."""

    url: str
    final_url: str
    outcome: Outcome
    status: int | None = None
    reason: str = ""
    media_type: str | None = None
    charset: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    body: bytes | None = None
    file: Path | None = None
    redirects: list[str] = msgspec.field(default_factory=list)
    size: int = 0
    #: When the response was captured (RFC 3339, to the second) if not now: a replayed record's
    #: WARC-Date (formats/warc.md §8.4); the manifest's ``fetched``.
    fetched: str | None = None
    #: With a recorder: the WARC record of this response, and those of the ``redirects`` hops.
    warc: WarcRef | None = None
    redirect_warcs: list[WarcRef | None] = msgspec.field(default_factory=list)
    #: The chain reached ``final_url``, which the caller holds already (``stop_at``), and was not
    #: followed there: no body, no headers of the target; the caller takes them from its own copy.
    unfollowed: bool = False

    def read(self) -> bytes:
        """The body, from memory or from its temporary file."""
        if self.body is not None:
            return self.body
        if self.file is not None:
            return self.file.read_bytes()
        return b""

    def discard(self) -> None:
        """Delete the temporary file, if any."""
        if self.file is not None:
            with contextlib.suppress(FileNotFoundError):
                self.file.unlink()
            self.file = None


def retry_after(value: str | None) -> float | None:
    """Seconds to wait by a ``Retry-After`` value (seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    import email.utils  # only for a date (tens of milliseconds at the start of every run otherwise)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redirect_step(
    url: str, current: str, result: FetchResult, chain: list[str], seen: set[str], max_redirects: int
) -> FetchResult | str:
    """One hop of a redirect chain that began at ``url``: ``result`` is the redirect ``current``
    answered. Returns the outcome to end with (no ``Location``, a bad one, a loop back to a URL of
    the chain, more than ``max_redirects`` hops), or the URL to fetch next; ``current`` has then
    joined ``chain`` and the next URL ``seen``. The live fetcher and the WARC replay share it."""
    location = result.headers.get("location")
    if not location:
        return FetchResult(url, current, "failed", result.status, "redirect without a Location")
    try:
        target = urls.canonicalize(location, current)
    except URLError as e:
        return FetchResult(url, current, "failed", result.status, f"bad redirect: {e}")
    chain.append(current)
    if target in seen:
        reason = f"redirect loop back to {redact(target)}"
        return FetchResult(url, current, "failed", result.status, reason, redirects=chain)
    if len(chain) > max_redirects:
        reason = f"more than {max_redirects} redirects"
        return FetchResult(url, current, "failed", result.status, reason, redirects=chain)
    seen.add(target)
    return target


def target_of(url: str) -> str:
    """The request target (path and query) of an absolute URL."""
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    if slash < 0:
        return "/"
    return rest[slash:].split("#", 1)[0]
