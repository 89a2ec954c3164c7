"""Crawl-wide politeness: the hook through which many workers share each host's clock and robots.txt.

:class:`archiver.capture.fetch.Fetcher` keeps, per process, one request at a time per host, the
delay between two requests to a host, and one robots.txt read per host. When several processes
crawl together (a shared crawl state, formats/crawl-state.md §6), those rules must hold across all
of them: the fetcher then asks a :class:`HostPoliteness` as well. Without one (the default) the
fetcher's own per-process rules are all there is.

What a provider promises:

- :meth:`HostPoliteness.acquire` returns when this process may send the next request to ``host``:
  nobody else holds the host, and the delay since the last request to it (whoever sent it) has
  passed. It returns a *holder* handle for :meth:`~HostPoliteness.release`.
- :meth:`HostPoliteness.release` ends that request: the host's next request, from any process,
  starts no sooner than ``gap`` seconds from now (the store's clock). A holder that never releases
  (its process died) loses the host after the provider's lock time.
- :meth:`HostPoliteness.robots` gives the robots.txt rules of ``host`` fetched once for the whole
  crawl: ``read()`` is awaited by one process only, the others wait for its result.
- A provider whose store cannot be reached degrades to "no crawl-wide rule" (the fetcher's own
  rules still hold) rather than stopping the fetch.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from archiver.capture.robots import Robots

__all__ = ["HostPoliteness"]


class HostPoliteness(Protocol):
    """Each host's clock and robots.txt, shared by every worker of a crawl (module docstring)."""

    async def acquire(self, host: str) -> object: ...

    def release(self, host: str, holder: object, gap: float) -> None: ...

    async def robots(self, host: str, read: Callable[[], Awaitable[Robots]]) -> Robots: ...
