"""The options of one capture (:class:`CaptureOptions`), and what of them the manifest records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from archiver.capture.policy import redact

if TYPE_CHECKING:
    from collections.abc import Callable

    from archiver.capture.crawlstate import StateFactory
    from archiver.capture.fetch import Resolver
    from archiver.capture.transport import TransportFactory
    from archiver.tree import Header, Record

__all__ = ["CaptureOptions"]


class CaptureOptions(msgspec.Struct):
    """Everything that shapes a capture (see :func:`archiver.capture.capture` for the meanings). A
    :class:`msgspec.Struct`: a dataclass of this many fields had its generated methods compiled from
    source at every start of a capture."""

    render: bool = True
    depth: int = 3
    max_pages: int | None = None
    subdomains: bool = False
    scope_prefix: str | None = None
    include: list[str] = msgspec.field(default_factory=list)
    exclude: list[str] = msgspec.field(default_factory=list)
    allow_domains: list[str] = msgspec.field(default_factory=list)
    prefer: list[str] = msgspec.field(default_factory=list)
    avoid: list[str] = msgspec.field(default_factory=list)
    assets_any_host: bool = False
    skip_extensions: frozenset[str] | None = None
    chromium: str | None = None
    delay: float | None = None
    timeout: float = 30.0
    asset_cap: int = 25 << 20
    resume: bool = True
    refresh: bool = False
    #: With ``refresh``: the refresh is applied once for this mark (a re-capture's start): a run whose
    #: state was refreshed for it already (a resumed re-capture) goes on from where it stopped, and
    #: one that failed before its state was refreshed (a usage error, the tree's lock held) still
    #: refreshes when run again (formats/history.md §6).
    refresh_mark: str | None = None
    #: Ask every page again unconditionally and render it (by default a page whose conditional
    #: request is answered 304 keeps its previous file: formats/history.md §6.1).
    rerender: bool = False
    #: A re-capture (``--new-version``): before the crawl loop, every URL with previous bytes is asked
    #: conditionally in one pass, its 304s recorded in batches (:mod:`.revalidate`, history.md §6.3).
    revalidate: bool = False
    ignore_robots: bool = False
    allow_private: bool = False
    allow_hosts: list[str] = msgspec.field(default_factory=list)
    concurrency: int = 12
    tabs: int = 3
    retries: int = 3
    backoff: float = 0.5
    max_retry_after: float = 60.0
    max_attempts: int = 5
    settle: float = 1.5
    progress: bool | None = None
    #: Without a terminal (and ``progress`` None): a plain progress line every so many seconds; 0: none.
    progress_every: float = 30.0
    resolver: Resolver | None = None
    network_backend: Any = None
    seed_info: dict[str, tuple[str | None, str | None]] = msgspec.field(default_factory=dict)
    #: Where responses come from (:mod:`.transport`): None is the live network through
    #: :class:`archiver.capture.fetch.Fetcher`.
    transport: TransportFactory | None = None
    #: Record every exchange as WARC/1.1 in ``_archiver/warc/`` (formats/warc.md §7), files rotated
    #: past ``warc_max_size`` bytes.
    warc: bool = False
    warc_max_size: int = 1_000_000_000
    #: Where the crawl state lives (:mod:`.crawlstate`): None is the SQLite file
    #: ``_archiver/crawl.sqlite`` (:class:`archiver.capture.state.State`).
    state: StateFactory | None = None
    #: Build the tree's search index and page (``_archiver/search/``) when the run ends, so the
    #: pages' own search boxes lead somewhere (formats/tree.md §9.4): True, False, or None for the
    #: default, on for a rendered single-process capture (a few % of its CPU) and off without
    #: rendering (the build would nearly double its CPU) or for a worker of a shared crawl (the
    #: merged tree is indexed once: ``archiver index``).
    search_index: bool | None = None
    #: When the run finished its frontier, writes its final manifest (the header and the records the
    #: state gives, one a path) in place of :func:`archiver.tree.write_records`: a re-capture dates it
    #: and leaves out what the run did not reach (:mod:`archiver.versions.recapture`), written once.
    final_manifest: Callable[[Header, list[Record]], None] | None = None

    def wants_search_index(self) -> bool:
        if self.search_index is not None:
            return self.search_index
        return self.render and self.state is None

    def manifest_options(self) -> dict[str, Any]:
        """The options recorded in the manifest header (informative; tree.md §8.1)."""
        out: dict[str, Any] = {
            "render": self.render,
            "depth": self.depth,
            "max_pages": self.max_pages,
            "subdomains": self.subdomains,
            "scope_prefix": self.scope_prefix,
            "include": sorted(self.include),
            "exclude": sorted(self.exclude),
            "allow_domains": sorted(self.allow_domains),
            "assets_any_host": self.assets_any_host,
            "asset_cap": self.asset_cap,
            "robots": not self.ignore_robots,
        }
        if self.warc:
            out["warc"] = True
        if self.skip_extensions is not None:
            out["skip_extensions"] = sorted(self.skip_extensions)
        folders = {redact(u): f for u, (f, _t) in sorted(self.seed_info.items()) if f}
        if folders:
            out["seed_folders"] = folders
        return out
