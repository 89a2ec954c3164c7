"""A tree's search index on disk, ``_archiver/search/`` (formats/search.md §4, formats/tree.md):
built from the tree's pages and written atomically (:func:`write_index`), opened for queries
(:func:`open_index`, or :func:`memory_index` for a tree without one), checked (:func:`check_index`)."""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import shutil
import stat
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from archiver import forks, markup_guard, safefs
from archiver.errors import FormatError, UsageError
from archiver.search import build, filethread, page
from archiver.search.guarded import extract
from archiver.search.text import MAX_HTML, Page
from archiver.treefolders import manifest_path, own_folders, own_parent
from archiver.urls import RESERVED_DIR, SEARCH_DIR
from archiver.walk import walk

if TYPE_CHECKING:  # the query core is imported by what opens an index, not by the build (~30 ms)
    from archiver.search.query import Index

__all__ = [
    "INDEX_DIR",
    "build_index",
    "check_index",
    "has_index",
    "memory_index",
    "open_index",
    "write_index",
]

#: Where a tree keeps its index, relative to its root.
INDEX_DIR = SEARCH_DIR
_HTML = (".html", ".htm", ".xhtml")
#: Characters of sampled pages (§2.2) kept for the build instead of being extracted again.
_KEPT = 32 << 20


def _pages(root: Path) -> list[str]:
    """The tree's pages in path order: the manifest's HTML pages, or without a manifest every
    ``.html``/``.htm`` file outside the reserved folder (symbolic links are not followed)."""
    if manifest_path(root).is_file():
        from archiver.tree import records  # msgspec: ~10 ms, for a tree with a manifest only

        found = {
            r.path
            for r in records(root)
            if r.kind == "page" and r.path.lower().endswith(_HTML) and not r.path.startswith(f"{INDEX_DIR}/")
        }
        own: set[str] = set()
        paths = sorted(found)
        for rel in paths:  # a page behind a folder that links out of the tree is someone else's
            if not own_parent(root, rel, own):  # file: its text never enters the index
                raise FormatError(
                    "is reached through a folder that is not the tree's own (a symbolic link): refused",
                    subject=str(root / rel),
                )
        return paths
    out = []
    for folder, dirs, files in walk(root):  # no recursion (archiver.walk)
        rel = Path(folder).relative_to(root).as_posix()
        dirs[:] = sorted(d for d in dirs if not (rel == "." and d == RESERVED_DIR))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for name in files:
            full = os.path.join(folder, name)
            if name.lower().endswith(_HTML) and not os.path.islink(full):
                out.append(name if rel == "." else f"{rel}/{name}")
    return sorted(out)


def _read_page(root: Path, rel: str) -> bytes:
    """A page's first :data:`MAX_HTML` bytes: a regular file only (no link followed, no FIFO
    waited on: FormatError naming it)."""
    fd = safefs.open_regular(root / rel)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_HTML)
    except OSError as e:
        raise FormatError(
            f"cannot be read: {(e.strerror or str(e)).lower()}", subject=str(root / rel)
        ) from None
    finally:
        os.close(fd)


#: A tree of at least this many pages and :data:`_PARALLEL_BYTES` of HTML is read, extracted and
#: tokenised by processes, one a CPU (at most :data:`_MAX_WORKERS`): this one and a pool of workers
#: forked from it, when it has no other thread; the builder merges their pages in path order, so the
#: bytes are those of one process. A smaller tree does not repay the pool: its forks (and their
#: copy-on-write faults), each worker's own markup-guard child (forked from it since h-idxbuild:
#: ~1 ms; an interpreter before, 25-35 ms of CPU) and the pages' round trips.
#: docutils-doc (65 pages, 2.7 MB) is above it: two workers cost more CPU (1.55 s with their guard
#: children against 1.30 s in one process, at load 4-5) but take less time on a quiet machine (wall
#: median of 7: 0.68 s against 0.87 s; Pagefind, which uses both CPUs, 0.50 s), and the time is what
#: a person waits for. The generated 301 pages (0.75 MB) are below it.
_PARALLEL_PAGES = 64
_PARALLEL_BYTES = 2 << 20
_MAX_WORKERS = 8
#: Jobs (batches of pages) done or under way ahead of the one the builder waits for, a process (the
#: pool's workers and this one, which does the next job itself while that one is not back): memory
#: stays bounded when the builder is the slower.
_AHEAD = 4
#: Jobs a pool worker has not handed back at most: the one it works on and the next (it never waits
#: for one, and the last ones are not queued behind it while this process has nothing to do).
_POOL_AHEAD = 2
#: A worker's job holds consecutive pages up to these bounds (:meth:`_Extractor._batches`).
_BATCH_PAGES = 32
_BATCH_BYTES = 256 << 10


class _Failed(NamedTuple):
    """The FormatError a worker's job raised (an exception's keyword arguments do not survive
    pickling)."""

    message: str
    subject: str | None


def _extracted(root: Path, rel: str) -> Page:
    """The page at ``rel`` extracted; an error about its text names it."""
    try:
        return extract(_read_page(root, rel))
    except FormatError as e:
        e.subject = e.subject or rel
        raise


def _extract_one(root: str, rel: str) -> Page | _Failed:
    """A worker's job: the page, or the error reading it raised."""
    try:
        return _extracted(Path(root), rel)
    except FormatError as e:
        return _Failed(e.message, e.subject)


def _prepare_one(root: str, job: str | Page, skip: frozenset[str]) -> build.Prepared | _Failed:
    """A worker's job: the page at path ``job`` (or the page ``job``, already extracted) made ready
    for the builder (:func:`archiver.search.build.prepare`, ``skip``: the boilerplate blocks), or the
    error as :func:`_extract_one`."""
    try:
        page = job if isinstance(job, Page) else _extracted(Path(root), job)
    except FormatError as e:
        return _Failed(e.message, e.subject)
    return build.prepare(page, skip)


def _run_batch(work: Callable[[str, Any], Any], root: str, batch: list[Any]) -> list[Any]:
    """A worker's job: ``work`` of each of ``batch`` in turn, up to the first that failed."""
    out = []
    for job in batch:
        out.append(work(root, job))
        if isinstance(out[-1], _Failed):
            break
    return out


def workers_for(pages: int, html_bytes: int, cpus: int) -> int:
    """The processes that extract and tokenise a tree of ``pages`` pages holding ``html_bytes`` of
    HTML on ``cpus`` CPUs: 1 (this process alone) below :data:`_PARALLEL_PAGES` pages or
    :data:`_PARALLEL_BYTES`, else one a CPU (this one and a pool of the others), at most
    :data:`_MAX_WORKERS`. Pure."""
    if pages < _PARALLEL_PAGES or html_bytes < _PARALLEL_BYTES or cpus < 2:
        return 1
    return min(cpus, _MAX_WORKERS)


def _html_bytes(root: Path, rels: list[str], enough: int) -> int:
    """The pages' file sizes added up, stopping once past ``enough`` (a page that cannot be read
    counts 0: its extraction names it)."""
    total = 0
    for rel in rels:
        try:
            total += os.stat(root / rel).st_size
        except OSError:
            continue
        if total >= enough:
            break
    return total


def _start_worker() -> None:
    """A pool worker's start: the stop signals left to the parent (archiver/forks.py: a traceback
    from each worker at the pool's end or on Ctrl-C), its markup-guard child forked from it (it has
    Lexbor and the text extraction imported, and one thread: ~1 ms instead of a fresh interpreter's
    25-35 ms of CPU, on the way of its first page of many tags), and that child ended and waited
    for when the pool closes (else it outlives the worker until ``PR_SET_PDEATHSIG`` kills it, and
    its CPU is in no one's account: a fork runs no ``atexit`` function)."""
    import multiprocessing.util

    forks.leave_to_parent()
    markup_guard.fork_children()
    multiprocessing.util.Finalize(None, markup_guard.close_child, exitpriority=10)


class _Extractor:
    """Pages extracted (:meth:`pages`) or extracted and prepared (:meth:`prepared`) in path order,
    by this process alone or by it and a pool of workers (one pool for both: a worker keeps its
    markup-guard child); at most :data:`_AHEAD` jobs (batches of pages) a process are ahead of the
    builder. ``workers``: the processes, this one included (1: no pool; :func:`build_index` asks
    :func:`workers_for`)."""

    def __init__(self, root: Path, workers: int) -> None:
        self._root = root
        self._workers = workers
        self._pool: Any = None
        self._closed = False
        # fork: no start-up imports and no re-run of the caller's main module (forkserver and spawn
        # would run a script without a ``__main__`` guard again); only from a single-threaded
        # process, as a fork copies no other thread (and no lock one of them holds). multiprocessing
        # is imported here: a tree indexed by this process alone does without it (~10 ms).
        # This process is one of the ``workers``: its markup-guard child is forked first, while it has
        # no other thread (the pool's threads come next), and it takes a batch itself whenever the
        # next one in order is not back yet (one process fewer to fork, and its pages are not pickled).
        if self._workers > 1 and threading.active_count() == 1:
            import multiprocessing

            if "fork" in multiprocessing.get_all_start_methods():
                markup_guard.start_forked_child()
                with forks.held():
                    context = multiprocessing.get_context("fork")
                    self._pool = context.Pool(self._workers - 1, initializer=_start_worker)

    def __enter__(self) -> _Extractor:
        return self

    def close(self) -> None:
        """No more jobs: the workers, idle, each end their guard child and exit (waited for on
        leaving the ``with`` block)."""
        if self._pool is not None and not self._closed:
            self._pool.close()
            self._closed = True

    def __exit__(self, kind: object, *exc: object) -> None:
        if self._pool is not None:
            if kind is None:
                self.close()
            else:
                self._pool.terminate()
            self._pool.join()
            markup_guard.close_child()  # this process's, forked for the build

    def _batches(self, jobs: Iterable[Any]) -> Iterator[list[Any]]:
        """Consecutive jobs in batches of at most :data:`_BATCH_PAGES` pages and, past the first,
        :data:`_BATCH_BYTES` of HTML (a page's file size, or an extracted page's characters): one
        round trip to a worker for many small pages, and memory bounded as by single pages."""
        batch: list[Any] = []
        size = 0
        for job in jobs:
            if isinstance(job, Page):
                n = job.size()
            else:
                try:
                    n = os.stat(self._root / job).st_size
                except OSError:
                    n = 0  # the worker names what is wrong
            if batch and (size + n > _BATCH_BYTES or len(batch) >= _BATCH_PAGES):
                yield batch
                batch, size = [], 0
            batch.append(job)
            size += n
        if batch:
            yield batch

    def _ordered(self, work: Callable[[str, Any], Any], jobs: Iterable[Any]) -> Iterator[Any]:
        """The results of ``work`` on each of ``jobs``, in order: batches sent to the pool (each
        worker has :data:`_POOL_AHEAD` of them not back at most, so that it never waits for one and
        the last ones are not queued behind it) or done by this process (a list of results in
        ``pending``) while the next one in order is not back; :data:`_AHEAD` batches a process ahead
        of the builder at most."""
        todo = self._batches(jobs)
        root = str(self._root)
        pending: deque[Any] = deque()
        window = _AHEAD * self._workers
        sent = _POOL_AHEAD * (self._workers - 1)
        while True:
            out = sum(1 for p in pending if not isinstance(p, list) and not p.ready())
            while out < sent and len(pending) < window and (batch := next(todo, None)) is not None:
                pending.append(self._pool.apply_async(_run_batch, (work, root, batch)))
                out += 1
            if not pending or (
                not isinstance(pending[0], list) and not pending[0].ready() and len(pending) < window
            ):
                batch = next(todo, None)
                if batch is not None:
                    pending.append(_run_batch(work, root, batch))
                    continue
                if not pending:
                    return
            done = pending.popleft()
            if not isinstance(done, list):
                done = done.get()
            for result in done:
                if isinstance(result, _Failed):
                    raise FormatError(result.message, subject=result.subject)
                yield result

    def pages(self, rels: Iterable[str]) -> Iterator[Page]:
        if self._pool is None:
            for rel in rels:
                yield _extracted(self._root, rel)
            return
        yield from self._ordered(_extract_one, rels)

    def prepared(self, jobs: Iterable[str | Page], skip: frozenset[str]) -> Iterator[build.Prepared]:
        """Each job (a page's path, or a page already extracted) extracted and prepared, its blocks
        in ``skip`` left out (handed to the workers with each batch: a few boilerplate blocks)."""
        if self._pool is None:
            for job in jobs:
                page = job if isinstance(job, Page) else _extracted(self._root, job)
                yield build.prepare(page, skip)
            return
        yield from self._ordered(partial(_prepare_one, skip=skip), jobs)


def build_index(
    root: Path,
    emit: build.Emit,
    progress: Callable[[int], None] | None = None,
    *,
    workers: int | None = None,
) -> tuple[dict, int]:
    """Build the index of the tree at ``root`` through ``emit``; returns (manifest, pages).
    ``workers``: processes extracting and tokenising pages (default: :func:`workers_for` the tree).
    The sampled pages (§2.2) are extracted first; the boilerplate blocks they give are handed to
    the same workers, which then prepare every page (a sampled one kept is not extracted again, up to
    :data:`_KEPT` characters)."""
    paths = _pages(root)
    if workers is None:
        workers = workers_for(len(paths), _html_bytes(root, paths, _PARALLEL_BYTES), forks.cpus())
    kept: dict[str, Page] = {}
    size = 0
    with _Extractor(root, workers) as extractor:

        def sample() -> Iterator[Page]:
            nonlocal size
            for p, page in zip(paths, extractor.pages(paths[: build.BOILERPLATE_SAMPLE]), strict=False):
                if size + page.size() <= _KEPT:
                    kept[p] = page
                    size += page.size()
                yield page

        sampled = sample()
        skip = build.boilerplate(sampled)
        sampled.close()
        # the files compressed, hashed and emitted by a thread of the builder's (after the fork)
        builder = build.Builder(emit, skip=skip, files=filethread.ThreadedFiles(emit, build.VERSION))
        try:
            jobs = (kept.pop(rel, None) or rel for rel in paths)
            for i, (rel, prepared) in enumerate(zip(paths, extractor.prepared(jobs, skip), strict=True)):
                builder.add_prepared(rel, prepared)
                if progress is not None:
                    progress(i + 1)
            extractor.close()  # the workers end while the builder finishes
            manifest = builder.finish()
        except BaseException:
            builder.abort()
            raise
    emit("manifest", build.manifest_bytes(manifest))
    return manifest, len(paths)


def _refuse_foreign(root: Path) -> None:
    """``_archiver/search`` must be ours: not a link, not a host's asset folder in the manifest."""
    target = root / INDEX_DIR
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise FormatError("is not a folder (a file or a symbolic link is in the way)", subject=str(target))
    if manifest_path(root).is_file():
        from archiver.tree import records

        for r in records(root):
            if r.path.startswith(f"{INDEX_DIR}/"):
                raise FormatError(
                    "holds files of the capture (a host named 'search'); the index cannot be written there",
                    subject=str(target),
                )


#: Files handed to :class:`_Writer`'s thread together (one wake-up of it for many files: at most
#: this many, and past the first this many bytes), and the batches queued for it at most (the builder
#: waits beyond: memory stays bounded, to about 16 MiB). The builder did wait with 4 batches: creating
#: a file cost 0.2-1.5 ms of the kernel's CPU in the bench's /tmp at times (its inode allocation), and
#: the builder's merge of docutils-doc's last pages stood 20-100 ms behind its 336 files.
_WRITE_BATCH = 16
_WRITE_BATCH_BYTES = 512 << 10
_WRITE_AHEAD = 32


class _Writer:
    """The index's files written into ``folder`` by a thread of their own while the builder goes on:
    creating a file cost the kernel 20-500 µs of CPU on the ext4 disk of the machine measured (the
    more, the busier the disk; docutils-doc's index is 336 files), which the thread spends beside
    the builder's Python (the GIL is free in the calls). Started by the first file, so after the
    build's worker pool has forked (a fork copies no other thread). :meth:`close` waits for every
    file and raises the first error; with ``abort`` it drops the files not written yet, and returns
    once the thread has ended (nothing more is created in ``folder``, which the caller can then
    remove)."""

    def __init__(self, folder: Path) -> None:
        self._folder = str(folder)
        self._queue: queue.Queue[list[tuple[str, bytes]] | None] = queue.Queue(maxsize=_WRITE_AHEAD)
        self._batch: list[tuple[str, bytes]] = []
        self._batch_bytes = 0
        self._made: set[str] = set()
        self._error: BaseException | None = None
        self._abort = False
        self._thread: threading.Thread | None = None
        self.written = 0

    def put(self, name: str, data: bytes, start: bool = True) -> None:
        """Write file ``name`` (a path relative to the folder, ``/`` between its parts); with
        ``start`` false, only with the next batch (the thread is not started by this call)."""
        if self._error is not None:
            raise self._error
        self._batch.append((name, data))
        self._batch_bytes += len(data)
        self.written += len(data)
        if start and (len(self._batch) >= _WRITE_BATCH or self._batch_bytes >= _WRITE_BATCH_BYTES):
            self._hand_over()

    def _hand_over(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="search-index-writer", daemon=True)
            self._thread.start()
        self._queue.put(self._batch)
        self._batch, self._batch_bytes = [], 0

    def _run(self) -> None:
        while (batch := self._queue.get()) is not None:
            for name, data in batch:
                if self._error is not None or self._abort:
                    break
                try:
                    self._write(name, data)
                except BaseException as e:  # handed to the builder's thread
                    self._error = e

    def _write(self, name: str, data: bytes) -> None:
        parent = name.rpartition("/")[0]
        if parent and parent not in self._made:
            os.makedirs(os.path.join(self._folder, parent), exist_ok=True)
            self._made.add(parent)
        fd = os.open(
            os.path.join(self._folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def close(self, abort: bool = False) -> None:
        if self._batch and not abort:
            self._hand_over()
        self._batch, self._batch_bytes = [], 0
        if self._thread is None:
            if self._error is not None and not abort:
                raise self._error
            return
        self._abort = abort
        self._queue.put(None)
        self._thread.join()
        self._thread = None
        if self._error is not None and not abort:
            raise self._error


def write_index(root: Path) -> tuple[dict, int, int]:
    """Build the index and the search page of the tree at ``root`` into a temporary folder inside
    the tree, then put it in place of ``_archiver/search/`` with a rename; returns
    (manifest, pages, bytes written). Idempotent: the same tree gives the same bytes."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError("is not a folder", subject=str(root))
    _refuse_foreign(root)
    tmp_parent = root / RESERVED_DIR / "tmp"
    own_folders(root, tmp_parent)  # the index is made there: not in a folder a link points to
    made = not tmp_parent.is_dir()  # removed again at the end if this run made it (nothing left)
    tmp_parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="search-", dir=tmp_parent))
    writer = _Writer(work)
    try:
        for name, data in page.files().items():  # first: the writer's queue drains last of all
            writer.put(name, data, start=False)  # its thread is started after the pool's fork
        manifest, pages = build_index(root, lambda name, data: writer.put(f"{name}.js", data))
        writer.close()
        target = root / INDEX_DIR
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix="search-old-", dir=tmp_parent))
            os.rename(target, old / "search")
        os.rename(work, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        writer.close(abort=True)
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        if made:
            with contextlib.suppress(OSError):
                tmp_parent.rmdir()  # only when empty
    return manifest, pages, writer.written


def has_index(root: Path) -> bool:
    return (Path(root) / INDEX_DIR / "manifest.js").is_file()


#: An index file (the manifest included) of more than this many bytes is damaged: none is read
#: further (formats/search.md §4.1). The largest real one is a manifest: ~23 KB for Python's docs.
MAX_FILE = 128 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = 1 << 16  # bytes a read call asks for (an index file is a few KiB: one call and the EOF)


def read_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of an index file in a folder (a tree's, or an archive's sidecar). OSError when it
    cannot be had: FileNotFoundError or NotADirectoryError when there is none, else one naming what
    is wrong: a symbolic link, not a regular file (a FIFO is never waited on), more than
    :data:`MAX_FILE` bytes (not read past them)."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK):
            raise OSError(e.errno, "is a symbolic link, not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "is not a regular file")
        if st.st_size > MAX_FILE:
            raise OSError(errno.EFBIG, f"is larger than {MAX_FILE} bytes")
        # os.read, not a buffered file object: an answer of serve reads ten or more small files
        chunks = []
        size = 0
        while got := os.read(fd, _READ):
            chunks.append(got)
            size += len(got)
            if size > MAX_FILE:
                raise OSError(errno.EFBIG, f"is larger than {MAX_FILE} bytes")
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)  # one chunk: no copy
    finally:
        os.close(fd)


def read_in_tree(root: str, parts: Sequence[str], checked: set[str]) -> bytes:
    """:func:`read_file` of the tree file ``root/parts…``, its folders below ``root`` the tree's own
    (:func:`own_folders`; those found so remembered in ``checked``): a tree whose
    ``_archiver/search`` linked to another tree's index was searched, served and verified as if that
    index were its own (the other archive's snippets shown). OSError naming the folder otherwise."""
    folder = os.path.join(root, *parts[:-1])
    if folder not in checked:
        try:
            own_folders(Path(root), Path(folder))
        except FormatError as e:  # named below the tree (serve's answers never show a host path)
            where = os.path.relpath(e.subject or folder, root)
            raise OSError(errno.ELOOP, f"its folder {where} is a symbolic link out of the tree") from None
        checked.add(folder)
    return read_file(os.path.join(folder, parts[-1]))


def _loader(root: Path) -> Callable[[str], bytes]:
    base, checked = str(root), set[str]()
    prefix = INDEX_DIR.split("/")

    def load(name: str) -> bytes:
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise OSError(f"bad name {name!r}")
        return read_in_tree(base, [*prefix, *parts[:-1], parts[-1] + ".js"], checked)

    return load


def open_index(root: Path, label: str | None = None) -> Index:
    """The index of the tree at ``root`` (FormatError when it is damaged)."""
    from archiver.search.query import Index

    folder = Path(root) / INDEX_DIR
    return Index(_loader(Path(root)), label if label is not None else str(folder))


def memory_index(root: Path, label: str | None = None) -> Index:
    """An index of the tree at ``root`` built in memory (for a tree that has none)."""
    from archiver.search.query import Index

    files: dict[str, bytes] = {}
    build_index(Path(root), files.__setitem__)

    def load(name: str) -> bytes:
        try:
            return files[name]
        except KeyError:
            raise OSError(f"no file {name}") from None

    return Index(load, label if label is not None else f"{root} (built in memory)")


def check_index(root: Path) -> Iterator[tuple[str, str]]:
    """(path, problem) for every damaged or missing file of the tree's index (empty when intact)."""
    folder = Path(root) / INDEX_DIR
    try:
        index = open_index(root, str(INDEX_DIR))
    except FormatError as e:
        yield (e.subject or INDEX_DIR, e.message)
        return
    yield from file_problems(index, str(INDEX_DIR))
    for name in page.files():
        if not (folder / name).is_file():
            yield (f"{INDEX_DIR}/{name}", "is missing")


#: Problems of an index's files reported one by one (formats/search.md §4.6); past them, one line
#: counts the rest (a forged manifest listing a million missing shards gave a million lines).
MAX_FILE_PROBLEMS = 100


def file_problems(index: Index, where: str) -> Iterator[tuple[str, str]]:
    """(path, problem) for every shard, fragment group and text chunk of an opened ``index`` that
    does not load or match the manifest (``where``: the path named when an error names none), the
    first :data:`MAX_FILE_PROBLEMS` of them, then one counting the others; the tree's check and a
    packed archive's share it."""
    found = 0
    for problem in _file_problems(index, where):
        found += 1
        if found <= MAX_FILE_PROBLEMS:
            yield problem
    if found > MAX_FILE_PROBLEMS:
        yield (where, f"and {found - MAX_FILE_PROBLEMS} more damaged or missing files")


def _file_problems(index: Index, where: str) -> Iterator[tuple[str, str]]:
    for i in range(len(index.shards)):
        try:
            index.shard(i)
        except FormatError as e:
            yield (e.subject or where, e.message)
    for first, _last, _size, _sha in index.groups:
        try:
            index.fragment(first)
        except FormatError as e:
            yield (e.subject or where, e.message)
    for i in range(index.text_files):
        try:
            (doc, k), _last, _size, _sha = index.text_file(i)
            index.chunk(doc, k)
        except FormatError as e:
            yield (e.subject or where, e.message)
