"""The search index's files made by a thread of their own while the builder merges the next pages
(formats/search.md §5): zlib and SHA-256 let go of the GIL (~35 ms of docutils-doc's build on the
second core). The IO edge of :class:`archiver.search.build.Files` (which stays pure): the same files,
in the same order, with the same rows."""

from __future__ import annotations

import queue
import threading

from archiver.search.build import Emit, Files, Job

__all__ = ["ThreadedFiles"]

#: Batches of files (a fragment group and its text files; 8 shards) queued for the thread at most:
#: the builder waits beyond (memory stays bounded, to about 2 MiB).
FILES_AHEAD = 8


class ThreadedFiles(Files):
    """:class:`Files` made by a thread, started by the first batch; the rows are complete once
    :meth:`close` has returned, which raises the first error (``abort``: drops the batches not made,
    raises nothing)."""

    def __init__(self, emit: Emit, version: int) -> None:
        super().__init__(emit, version)
        self._queue: queue.Queue[list[Job] | None] = queue.Queue(maxsize=FILES_AHEAD)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._abort = False

    def make(self, jobs: list[Job]) -> None:
        if self._error is not None:  # the thread's: it is ended first
            error = self._error
            self.close(abort=True)
            raise error
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="search-index-files", daemon=True)
            self._thread.start()
        self._queue.put(jobs)

    def _run(self) -> None:
        while (jobs := self._queue.get()) is not None:
            if self._error is None and not self._abort:
                try:
                    self._make(jobs)
                except BaseException as e:  # handed to the builder's thread
                    self._error = e

    def close(self, abort: bool = False) -> None:
        if self._thread is not None:
            self._abort = abort
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None and not abort:
            raise self._error
