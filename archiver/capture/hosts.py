"""Every slot busy (formats/crawl-state.md §2, ``claim``): which pending rows a worker with free slots
takes. Pure: no network, no filesystem, no clock.

Politeness lets one request at a time go to a host, so a slot given a row of a host that is busy
(a row of it in flight, or one taken by this claim already) waits on that host's lock while other
hosts' rows wait in the frontier. :func:`pick` takes, among the first :data:`WINDOW` candidates in
frontier order (beyond ``n``), one row per free host first, in frontier order; the slots left get the
earliest of the others, so a crawl of one host claims exactly what frontier order gives (its rows
still overlap one's rewriting with the next one's fetch)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TypeVar

__all__ = ["FAIR", "QUIET", "WINDOW", "Served", "key_host", "pick"]

T = TypeVar("T")

_HOST = re.compile(r"://([^/?#]*)")

#: how many candidates past the ``n`` wanted are looked at for a free host at most (a bounded scan
#: per claim), and how many in a row naming no host new to the scan end it earlier (:func:`pick`).
#: A site's pages enter the frontier host by host, tens to thousands at a time: a window of 128 showed
#: a claim three hosts of eight (40 pages each), and three workers of two slots kept 85 % of them busy.
WINDOW = 1024
QUIET = 128
#: how many free hosts past the ``n`` wanted a claim that knows when hosts were last served compares
FAIR = 16


@functools.lru_cache(maxsize=8192)  # a claim scans the same frontier rows again and again
def key_host(key: str) -> str:
    """The ``host[:port]`` of a dedup key (canonical already: the text between ``://`` and the path),
    as the fetcher's host locks name it (:func:`archiver.urls.host_of` of a canonical URL)."""
    m = _HOST.search(key)
    return m.group(1) if m else ""


class Served(dict[str, int]):
    """When each host was last given a row by a claim, as a growing number (:func:`pick`'s ``served``)."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0

    def note(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.clock += 1
            self[key_host(k)] = self.clock


def pick(
    candidates: Iterable[T],
    n: int,
    busy: Collection[str],
    key: Callable[[T], str],
    known: Collection[str] | None = None,
    served: Mapping[str, int] | None = None,
) -> list[T]:
    """Up to ``n`` of ``candidates`` (in frontier order): one per host neither in ``busy`` nor taken
    already, then the earliest of the rest; the result in frontier order. The scan reads at most
    ``n`` + :data:`WINDOW` candidates and stops after ``n`` + :data:`QUIET` in a row that name no host
    new to it (one busy host's thousand rows are not read to the end at every claim). ``known``: every host a
    candidate can have (when given, the scan ends as soon as none of them is free and the rest
    needed are held: the same choice, fewer candidates read). ``served``: when each host was last
    given a row (a growing number; a host never given one is absent): the free hosts taken are then
    those served longest ago among the first ``n`` + :data:`FAIR` found, so the hosts late in frontier
    order are not left waiting while the early ones are served again and again (they would all end
    together; otherwise the late hosts' rows make a tail where slots stand idle)."""
    if n <= 0:
        return []
    taken: list[tuple[int, T]] = []
    rest: list[tuple[int, T]] = []
    hosts = set(busy)
    seen: set[str] = set()
    last_new = 0
    for i, item in enumerate(candidates):
        if i >= n + WINDOW or i - last_new > n + QUIET:
            break
        host = key_host(key(item))
        if host not in seen:
            seen.add(host)
            last_new = i
        if host in hosts:
            if len(rest) < n:
                rest.append((i, item))
            if known is not None and len(rest) >= n - len(taken) and hosts.issuperset(known):
                break  # no free host is left to find, and the earliest others are held
            continue
        hosts.add(host)
        taken.append((i, item))
        if len(taken) >= (n if served is None else n + FAIR):
            break
    if served is not None and len(taken) > n:
        taken = sorted(taken, key=lambda p: (served.get(key_host(key(p[1])), -1), p[0]))[:n]
    chosen = taken + rest[: n - len(taken)]
    return [item for _, item in sorted(chosen, key=lambda pair: pair[0])]
