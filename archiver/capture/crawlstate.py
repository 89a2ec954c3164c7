"""The crawl state: the interface the crawler keeps its frontier and its tree's bookkeeping behind.

The contract (what each operation guarantees under concurrency and after a crash) is written in
formats/crawl-state.md. The first implementation is :class:`archiver.capture.state.State`, one
SQLite file in the tree's reserved folder (``_archiver/crawl.sqlite``); a state shared by many
workers implements the same operations, its frontier shared and its shard part local.

The operations fall in two groups:

- the **frontier** (shared by every worker of a crawl): seeds, the rows of every URL seen with their
  outcome, adding references (seen-insert and enqueue in one step), claiming pending rows (a lease
  on each), renewing leases while the work runs, finishing a row (its final state; the claim ends),
  requeueing failures for another attempt;
- the **shard** (one per output folder): the tree paths given out, the manifest records of the
  files stored, the links every stored document holds, page-byte blobs for hard links, clash moves.

:meth:`CrawlState.finish` commits both groups for one URL as one unit where the implementation can
(SQLite: one transaction); where it cannot, the shard part is committed first, so a crash between the
two leaves a stored file whose row is still claimed: its lease expires, the URL is fetched again and
stored again at the same path (same bytes, same record), and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from archiver.capture.state import NewURL, Row
from archiver.tree import Record

if TYPE_CHECKING:
    from archiver.capture.politeness import HostPoliteness

__all__ = ["CrawlState", "StateFactory"]


class CrawlState(Protocol):
    """What the crawler needs of its state (formats/crawl-state.md gives each operation's rules)."""

    #: How often (seconds) the crawler renews the claims it holds (:meth:`renew`).
    renew_every: float
    #: True when the state keeps ``max_pages`` itself (a shared crawl's budget, counted by its
    #: claims: formats/crawl-state.md §6.8); the crawler then charges no page and writes every
    #: in-scope page link local, and the end of the crawl relinks what was not stored.
    counts_pages: bool

    # ---- meta and seeds (frontier)

    def get(self, key: str) -> str | None: ...

    def set(self, key: str, value: str) -> None: ...

    def add_seed(self, url: str, folder: str | None = None, title: str | None = None) -> None: ...

    def seeds(self) -> list[tuple[str, str | None, str | None]]: ...

    # ---- the frontier

    def row(self, key: str) -> Row | None: ...

    def add(self, items: Iterable[NewURL]) -> list[str]: ...

    def claim(
        self, kind: str, limit: int, exclude: Iterable[str] = (), busy: Collection[str] = ()
    ) -> list[Row]: ...

    def renew(self, keys: Iterable[str]) -> list[str]: ...

    def release(self) -> None:
        """Give back every claim still held (a run that stops: what it did not finish goes back to
        the frontier at once); nothing to do where a claim is only the set of keys in flight."""
        ...

    def skipped_for(self, reason: str, kind: str) -> Iterator[Row]: ...

    def count(self, state: str | None = None, kind: str | None = None) -> int: ...

    def rows(self) -> Iterator[Row]: ...

    def requeue(self, states: Iterable[str], max_attempts: int) -> int: ...

    def refresh(self) -> int: ...

    def mark(
        self, key: str, *, state: str, outcome: str, reason: str = "", final_url: str | None = None
    ) -> None: ...

    def redirected_to(self, key: str) -> list[tuple[str, str | None]]: ...

    def settle_depths(self, max_depth: int | None = None) -> list[Row]:
        """The frontier is empty: every row takes the depth and referrer of the crawl's recorded
        discoveries (formats/crawl-state.md §2); returns the page rows skipped for the depth limit
        that are now within ``max_depth`` (a shared state returns none: its shards settle when the
        crawl is complete, §6.6)."""
        ...

    def finish(
        self,
        key: str,
        *,
        state: str,
        outcome: str,
        reason: str = "",
        status: int | None = None,
        final_url: str | None = None,
        record: Record | None = None,
        blob: tuple[str, str] | None = None,
        new: Iterable[NewURL] = (),
        extra_records: Iterable[Record] = (),
        links: tuple[str, dict[str, bool]] | None = None,
    ) -> list[str]: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    # ---- working with other workers

    def waiting(self) -> float | None:
        """Called when a claim found nothing and nothing is in flight: the seconds to wait before
        claiming again (work is leased to other workers, or scheduled for a retry), or None when the
        crawl has no work left. Raises :class:`archiver.errors.CaptureError` when the state cannot
        be reached any more."""
        ...

    def politeness(self) -> HostPoliteness | None:
        """The crawl-wide host clocks and robots.txt (:mod:`.politeness`) of a shared state; None
        when the fetcher's own per-process rules are the crawl's."""
        ...

    def shard(self) -> CrawlState:
        """This worker's part seen alone: its rows are those this shard finished or decided, so the
        end of the crawl relinks the shard by what the shard holds (formats/crawl-state.md §3).
        A state with one worker is its own shard."""
        ...

    # ---- the shard: paths, records, links, blobs, moves

    def owner(self, path: str) -> str | None: ...

    def has_path_under(self, folder: str) -> bool: ...

    def claim_many(self, claims: dict[str, str]) -> None: ...

    def move(self, key: str, old: str, new: str) -> None: ...

    def moves(self) -> dict[str, str]: ...

    def set_links(self, src: str, links: dict[str, bool]) -> None: ...

    def links(self) -> Iterator[tuple[str, str, bool]]: ...

    def paths_map(self) -> dict[str, str]: ...

    def blob_path(self, sha256: str) -> str | None: ...

    def record(self, path: str) -> Record | None: ...

    def put_record(self, record: Record, *, durable: bool = False) -> None: ...

    def records(self) -> Iterator[Record]: ...

    def close(self) -> None: ...


#: ``factory(path)`` → the state of the capture whose SQLite file would be ``path``
#: (``_archiver/crawl.sqlite``; a shared state keeps its shard part there).
StateFactory = Callable[[Path], CrawlState]
