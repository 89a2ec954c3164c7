"""The search index's files made by a thread of their own while the builder merges the next pages
(formats/search.md §5): zlib and SHA-256 let go of the GIL (~35 ms of docutils-doc's build on the
second core). The IO edge of :class:`archiver.search.build.Files` (which stays pure): the same files,
with the same rows."""

from __future__ import annotations

import queue
import threading

from archiver.search.build import Emit, Files, Job

__all__ = ["ThreadedFiles"]

#: Batches of files (a fragment group and its text files; 8 shards) queued for the thread at most:
#: beyond, the builder's thread makes the batch itself (memory stays bounded, to about 2 MiB).
FILES_AHEAD = 8


class ThreadedFiles(Files):
    """:class:`Files` made by a thread, started by the first batch; the rows are complete once
    :meth:`close` has returned, which raises the first error (``abort``: drops the batches not made,
    raises nothing).

    The builder's thread does not wait for the thread: a batch that finds the queue full is made by
    the builder's thread at once, and :meth:`close` makes the batches still queued beside the thread
    (docutils-doc's last pages left the thread ~30 ms of compression behind the builder, while the
    other CPU stood idle). A batch is made whole by one thread (a fragment group's table holds its
    text files' rows), so the files are the same, emitted in another order at times (``emit`` is
    called under a lock, by one thread at a time)."""

    def __init__(self, emit: Emit, version: int) -> None:
        lock = threading.Lock()

        def locked(name: str, data: bytes) -> None:
            with lock:
                emit(name, data)

        super().__init__(locked, version)
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
        try:
            self._queue.put_nowait(jobs)
        except queue.Full:  # the thread is behind: this one makes them rather than wait
            self._make_here(jobs)

    def _make_here(self, jobs: list[Job]) -> None:
        try:
            self._make(jobs)
        except BaseException:
            self.close(abort=True)
            raise

    def _run(self) -> None:
        while (jobs := self._queue.get()) is not None:
            if self._error is None and not self._abort:
                try:
                    self._make(jobs)
                except BaseException as e:  # handed to the builder's thread
                    self._error = e

    def close(self, abort: bool = False) -> None:
        if self._thread is not None:
            while not abort and self._error is None:  # the batches still queued, made beside the thread
                try:
                    jobs = self._queue.get_nowait()
                except queue.Empty:
                    break
                assert jobs is not None  # only close puts the end
                self._make_here(jobs)
            self._abort = abort
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None and not abort:
            raise self._error
