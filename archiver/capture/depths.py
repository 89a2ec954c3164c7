"""A crawl's final depths and referrers: shortest paths over the discoveries it recorded
(formats/tree.md §8, formats/crawl-state.md §2).

Pure: no network, no filesystem, no clock.

A **discovery** is one edge ``(source, key, step, inherit)``: the document of ``source`` revealed
``key`` (a link, an asset, a stylesheet's ``url()``, a request its rendering made), one step deeper
(``step`` 1); or ``source`` redirected to ``key``, which then stands where ``source`` stood
(``inherit``: the key takes the source's own referrer; ``step`` 0 for a page target, 1 for an asset
target). A key's **label** is ``(depth, referrer)``, ordered as ``add`` orders them: depth first, then
the referrer as a string (``""`` for none). Seeds are ``(0, "")``; every other key's label is the
smallest candidate over its discoveries, ``(depth(source) + step, referrer)`` where ``referrer`` is
``source`` itself, or the source's referrer when ``inherit``. That is a shortest path from the seeds
with the weights 0 and 1, found once at the end of the crawl (Dijkstra), so it does not depend on the
order in which the workers met the discoveries. A referrer is named by the smallest key of its
document's file (``names``: of several URLs sharing one tree path, which one was fetched depends on
timing, tree.md §3.3), so the label does not depend on it either; for the same reason a document's
discoveries are one deeper than its *file*: the smallest label of the keys sharing it, whichever of
them was fetched and recorded the edges (the keys ``names`` joins are one source).

``bounds`` are labels already known to be reachable (a row's stored depth and referrer, which ``add``
kept as the smallest of the discoveries it met): they stand for discoveries not recorded as edges (a
crawl state older than the edges, a discovery another worker recorded). Every stored label is the
label of a real path, never smaller than the shortest, so with every edge recorded the bounds change
nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

__all__ = ["ROOT", "Edge", "Label", "shortest"]

#: ``(depth, referrer)``, the referrer ``""`` when there is none (a seed, a seed's redirect target).
Label = tuple[int, str]
#: ``(source, key, step, inherit)``: the columns of the state's ``found`` table, in its order.
Edge = tuple[str, str, int, "bool | int"]
#: A seed's label.
ROOT: Label = (0, "")


def shortest(
    seeds: Iterable[str],
    edges: Iterable[Edge],
    bounds: Mapping[str, Label] | None = None,
    names: Mapping[str, str] | None = None,
) -> dict[str, Label]:
    """Every key's label (see the module docstring): the seeds at :data:`ROOT`, each key of
    ``bounds`` at most its bound, every key an edge reaches from those at its shortest. Keys that
    are neither seeds, bounded nor reachable are left out. ``names``: the name a source takes as a
    referrer when it is not its own key (the smallest alias of its file, tree.md §8), in the edges'
    labels and the bounds' alike; the keys it gives one name are one source (their edges leave
    from the smallest label of any of them). Raises ``ValueError`` on a negative step."""
    names = names or {}
    out: dict[str, list[tuple[str, int, bool]]] = {}
    for source, key, step, inherit in edges:
        if step < 0:
            raise ValueError(f"a discovery of {key!r} by {source!r} has a negative step ({step})")
        out.setdefault(names.get(source, source), []).append((key, step, bool(inherit)))
    best: dict[str, Label] = {k: (d, names.get(r, r)) for k, (d, r) in (bounds or {}).items()}
    for seed in seeds:
        best[seed] = ROOT
    heap = [(depth, referrer, key) for key, (depth, referrer) in best.items()]
    heapq.heapify(heap)
    while heap:
        depth, referrer, source = heapq.heappop(heap)
        if best[source] != (depth, referrer):
            continue  # improved since it was queued: its better label is queued too
        for key, step, inherit in out.get(names.get(source, source), ()):  # the file's edges
            candidate = (depth + step, referrer if inherit else names.get(source, source))
            have = best.get(key)
            if have is None or candidate < have:
                best[key] = candidate
                heapq.heappush(heap, (candidate[0], candidate[1], key))
    return best
