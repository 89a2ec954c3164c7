"""What the stages of one capture run share, and nothing more: the seam between the crawl loop
(:mod:`.crawl`, which builds it) and the modules that store a URL (:mod:`.stage`, :mod:`.page`,
:mod:`.redirects`), decide its links (:mod:`.linker`, :mod:`.budget`), answer the browser
(:mod:`.responses`) and report progress (:mod:`.progress`).

A :class:`Context` holds the crawl state, the tree's paths and writer, the scope, the transport (once
the run has opened it), the renderer (a rendering run), the manifest log and the run's counters.
None of those modules imports the crawl loop: each takes this context, or less."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archiver import urls
from archiver.capture.options import CaptureOptions
from archiver.capture.policy import Scope
from archiver.capture.treepaths import TreePaths
from archiver.capture.writer import TreeWriter

if TYPE_CHECKING:
    from archiver.capture.crawlstate import CrawlState
    from archiver.capture.render import Renderer
    from archiver.capture.transport import Transport
    from archiver.tree import ManifestWriter

__all__ = ["Context"]

_KEY_MEMO = 100_000


class Context:
    """The shared parts of one capture run into ``out`` (see the module docstring)."""

    def __init__(
        self,
        options: CaptureOptions,
        out: Path,
        state: CrawlState,
        tree: TreePaths,
        scope: Scope,
        writer: TreeWriter,
    ) -> None:
        self.options = options
        self.out = out
        self.state = state
        self.tree = tree
        self.scope = scope
        self.writer = writer
        #: the transport, set while the run has it open (:meth:`fetcher_robots` is None before)
        self.fetcher: Transport | None = None
        self.renderer: Renderer | None = None
        #: the manifest log of this run (a line per completed URL), open while the run is
        self.manifest: ManifestWriter | None = None
        self.pages_done = 0
        self.assets_done = 0
        self.bytes_written = 0
        self._keys: dict[str, str] = {}

    def fetcher_robots(self, key: str) -> bool | None:
        """Whether robots.txt allows ``key`` as far as the transport knows already (None: not known)."""
        return self.fetcher.robots_allows(key) if self.fetcher is not None else None

    def key(self, url: str) -> str:
        """:func:`archiver.urls.dedup_key` with this capture's hygiene, remembered."""
        key = self._keys.get(url)
        if key is None:
            key = urls.dedup_key(url, self.scope.hygiene)
            if len(self._keys) >= _KEY_MEMO:
                self._keys.clear()
            self._keys[url] = key
        return key
