"""A serving process settles the collector once its mounts and search tables are prepared
(archiver/serve/server.py): what was built is frozen out of the collector's walks and the first
generation is collected every GC_THRESHOLD allocations. The figure it is for: with distinct queries
over 40 mounts, 2.4 ms of a query's 16.6 ms of CPU was the collector's, 0.36 ms after; and since the
search keeps few objects between queries (formats/search.md §6.5, The collector), no collection of
more than ~15 ms over 100 mounts."""

from __future__ import annotations

import gc

from archiver.serve import server


def test_the_collector_is_settled_before_serving() -> None:
    before = gc.get_threshold()
    kept = [[i] for i in range(1000)]  # objects made while preparing
    try:
        server._settle_gc()
        assert gc.get_threshold() == (server.GC_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
