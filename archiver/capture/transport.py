"""The transport: where a capture's responses come from.

The crawler asks one object for every response it needs, its own fetches and every request of the
browser while it renders: a :class:`Transport`. The first implementation is the live network,
:class:`archiver.capture.fetch.Fetcher` (address guard, politeness, robots.txt, retries, size caps);
a second one, :class:`archiver.warc.replay.ReplayTransport`, answers from the records of WARC or
WACZ files instead (no network at all; formats/warc.md §8). The crawler sees no difference: the
same scope, rewriting, rendering and report code runs on top of either.

What a transport promises:

- :meth:`Transport.fetch` never raises for anything the source does (a refused address, a timeout,
  an error status, a URL the archive does not hold): the :class:`~archiver.capture.fetch.FetchResult`
  says what happened, with the outcomes of formats/tree.md §9 (``ok``, ``redirected``, ``failed``,
  ``unconfirmed``, ``skipped``, ``refused``). Redirects are followed (``redirects`` lists the chain,
  ``final_url`` is where it ended). A body larger than the spool limit is a temporary file under the
  ``tmp_dir`` it was given, which the caller moves or deletes. A redirect to a URL for which
  ``stop_at`` is true may be left unfollowed (the caller has its answer already): the result is then
  ``redirected`` with ``unfollowed`` set and no body. The live network honours it (one request
  fewer); a transport whose answers cost nothing may follow the chain to its end anyway.
- :meth:`Transport.robots_allows` is robots.txt's verdict on a URL when its host's rules are known
  (None when not known yet); a transport with no robots.txt to obey answers True.
- ``requests`` counts what the transport did to answer (HTTP requests sent, records read).
- It is an async context manager; :meth:`Transport.aclose` releases its connections or files.

:data:`TransportFactory` builds one for a crawl from that crawl's fetch rules, address guard and
temporary folder (``CaptureOptions.transport``; None means the live network).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from archiver.capture.fetch import AddressGuard, FetchPolicy, FetchResult
    from archiver.capture.politeness import HostPoliteness

__all__ = ["Transport", "TransportFactory", "live"]


@runtime_checkable
class Transport(Protocol):
    """The one source of responses of a crawl (see the module docstring for the promises)."""

    requests: int

    async def fetch(
        self,
        url: str,
        *,
        referrer: str | None = None,
        cap: int | Literal["default"] | None = "default",
        accept: str = "*/*",
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult: ...

    def robots_allows(self, url: str) -> bool | None: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc: object) -> None: ...


#: ``factory(policy, guard, tmp_dir)`` → the transport of one crawl.
TransportFactory = Callable[["FetchPolicy", "AddressGuard", Path], Transport]


def live(
    backend: Any = None, recorder: Any = None, politeness: HostPoliteness | None = None
) -> TransportFactory:
    """The live network: a :class:`~archiver.capture.fetch.Fetcher` with the crawl's rules (and an
    network ``backend`` of httpcore's shape when a test gives one, :mod:`.guard`; a ``recorder``,
    :class:`archiver.warc.record.Recorder`, when every exchange is to be kept as WARC;
    ``politeness``: the crawl-wide host clocks and robots.txt of a shared crawl state,
    :mod:`.politeness`)."""

    def factory(policy: FetchPolicy, guard: AddressGuard, tmp_dir: Path) -> Transport:
        from archiver.capture.fetch import Fetcher

        return Fetcher(
            policy, guard=guard, tmp_dir=tmp_dir, backend=backend, recorder=recorder, politeness=politeness
        )

    return factory
