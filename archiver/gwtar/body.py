"""The body of a gwtar written in one pass (formats/gwtar.md §6): every member's tar header blocks,
data and padding after the planned header, each member's SHA-256 computed on the way (and checked
against what the manifest promises), and the titles of pages read late taken from the same bytes: the
batch buffers, the kernel copies of large files, and the hashing and flushing threads (see below).
"""

from __future__ import annotations

import errno
import hashlib
import os
import queue
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver import safefs, tree
from archiver.errors import FormatError
from archiver.gwtar import layout
from archiver.progress import Meter

if TYPE_CHECKING:
    from archiver.gwtar.sources import Source

__all__ = ["CHUNK", "TITLE_LIMIT", "write_all", "write_body"]

CHUNK = 1 << 20
#: A page's title is looked for in its first this many bytes (as :func:`archiver.tree.page_title`).
TITLE_LIMIT = CHUNK

# Three things overlap on two cores: the main thread reads small files into a 1 MiB batch buffer
# (their tar headers and padding in between) and writes each full buffer with one system call, and
# has the kernel copy large files (copy_file_range); a hashing thread computes every member's SHA-256
# (from the batch buffers, and by reading large files itself), and a flushing thread starts writeback
# of what is written (sync_file_range), so the final fsync waits for little. hashlib and the system
# calls release the GIL. Memory is a fixed number of buffers, whatever the archive's size.

_BUFFERS = 4  # batch buffers in flight (written, or waiting to be hashed)
# a file of at most this many bytes is hashed as it is read, by the writer: handing thousands of small
# files (a search index's) to the hashing thread cost more in passing the GIL to and fro than the hash
_INLINE_HASH = 16 << 10
_JOBS = 16  # hashing jobs queued at most
_FLUSH_STEP = 16 << 20  # start writeback every this many bytes
_SYNC_FILE_RANGE_WRITE = 2
# copy_file_range refused for these files: fall back to plain reads and writes
_NO_KERNEL_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF)


_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO swapped in: no wait
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC
_BY_FOLDER = os.open in os.supports_dir_fd  # (not on Windows)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _open(path: Path | str) -> int:
    try:
        return os.open(path, _READ_FLAGS)
    except OSError as e:
        raise FormatError(f"cannot read: {e.strerror}", subject=str(path)) from None


def _open_member(path: Path | str, size: int) -> tuple[int, os.stat_result]:
    """A read-only descriptor for a member's file, checked to be a regular file of ``size`` bytes."""
    fd = _open(path)
    try:
        return fd, _checked_stat(fd, path, size)
    except BaseException:
        os.close(fd)
        raise


def _checked_stat(fd: int, path: Path | str, size: int) -> os.stat_result:
    before = os.fstat(fd)
    if not stat.S_ISREG(before.st_mode):
        raise FormatError("not a regular file", subject=str(path))
    if before.st_size != size:
        raise FormatError(f"is {before.st_size} bytes, expected {size} (changed?)", subject=str(path))
    return before


def _read_whole(fd: int, view: memoryview, path: Path | str) -> int:
    """One read of a small file from its start into ``view`` (a byte longer than the file should be)."""
    try:
        return os.preadv(fd, [view], 0)
    except IsADirectoryError:
        raise FormatError("not a regular file", subject=str(path)) from None
    except OSError as e:
        raise FormatError(f"cannot read: {e.strerror}", subject=str(path)) from None


def _check_unchanged(fd: int, before: os.stat_result, path: Path | str) -> None:
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise FormatError("file changed while being packed", subject=str(path))


class _Hasher(threading.Thread):
    """Runs hashing jobs in order. A failing job records the first error and later jobs still run
    their clean-up (buffers go back to the pool, descriptors are closed), so the writer never waits
    forever; the writer raises the error when it next looks."""

    def __init__(self, members: int) -> None:
        super().__init__(name="gwtar-hash", daemon=True)
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=_JOBS)
        self.hashes: list[str | None] = [None] * members
        self.titles: dict[int, str | None] = {}  # member → title, for pages read with want_title
        self.error: BaseException | None = None
        self.buf = bytearray(CHUNK)

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                job()
            except BaseException as e:  # handed to the writer thread
                if self.error is None:
                    self.error = e

    def hash_file(
        self, fd: int, before: os.stat_result, path: Path | str, i: int, *, want_title: bool = False
    ) -> None:
        """Queue: read and hash a whole file from ``fd`` (then close it) as member ``i``'s SHA-256
        (and its page title from the first :data:`TITLE_LIMIT` bytes when ``want_title``)."""

        def job() -> None:
            try:
                if self.error is not None:
                    return
                digest = hashlib.sha256()
                view = memoryview(self.buf)
                offset = 0
                while offset < before.st_size:
                    n = os.preadv(fd, [view[: min(CHUNK, before.st_size - offset)]], offset)
                    if n == 0:
                        raise FormatError("file shrank while being packed", subject=str(path))
                    digest.update(view[:n])
                    if want_title and offset == 0:
                        self.titles[i] = tree.title_from_html(bytes(view[: min(n, TITLE_LIMIT)]))
                    offset += n
                _check_unchanged(fd, before, path)
                self.hashes[i] = digest.hexdigest()
            finally:
                os.close(fd)

        self.jobs.put(job)

    def stop(self) -> None:
        self.jobs.put(None)
        self.join()


class _Flusher(threading.Thread):
    """Starts writeback of the output as it grows (``sync_file_range`` where Linux has it, else
    ``fdatasync``), so the closing fsync is short. A hint only: errors are left to that fsync."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="gwtar-flush", daemon=True)
        self.fd = fd
        self.end = 0  # bytes written so far; set by the writer
        self.wake = threading.Event()
        self.done = False
        self.sync_range = _sync_file_range()

    def grew(self, end: int) -> None:
        self.end = end
        self.wake.set()

    def run(self) -> None:
        started = 0
        while not self.done:
            self.wake.wait()
            self.wake.clear()
            end = self.end
            if end - started < _FLUSH_STEP:
                continue
            try:
                if self.sync_range is not None:
                    self.sync_range(self.fd, started, end - started, _SYNC_FILE_RANGE_WRITE)
                else:
                    os.fdatasync(self.fd)
            except OSError:
                return
            started = end

    def stop(self) -> None:
        self.done = True
        self.wake.set()
        self.join()


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        func = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func  # type: ignore[no-any-return]


class _Body:
    """The writer's side: batches small members into a buffer, kernel-copies large ones, and hands
    every byte range to be hashed to the :class:`_Hasher`."""

    def __init__(self, out: int, start: int, hasher: _Hasher, flusher: _Flusher) -> None:
        self.out = out
        self.pos = start  # bytes of the output written so far
        self.hasher = hasher
        self.flusher = flusher
        self.pool: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for _ in range(_BUFFERS):
            self.pool.put(bytearray(CHUNK))
        self.buf = self.pool.get()
        self.view = memoryview(self.buf)
        self.fill = 0
        # hashing work for the current buffer, in order: ("whole", i, start, end) is member i's every
        # byte, ("data", digest, start, end) hashes a range of a member across buffers, ("done", (i,
        # digest), 0, 0) finishes that member, ("title", i, start, end) reads a page's title
        self.pieces: list[tuple[str, Any, int, int]] = []
        self.kernel_copy = hasattr(os, "copy_file_range")

    def put(self, data: bytes) -> None:
        """Append bytes that are not hashed (tar headers, padding, the index)."""
        view = memoryview(data)
        while view:
            if self.fill == CHUNK:
                self.flush()
            n = min(len(view), CHUNK - self.fill)
            self.view[self.fill : self.fill + n] = view[:n]
            self.fill += n
            view = view[n:]

    def member(self, i: int, path: Path | str, size: int, head: bytes, *, want_title: bool = False) -> None:
        """Member ``i``: its header blocks ``head``, then the file's ``size`` bytes (a page's title is
        taken from them on the way when ``want_title``)."""
        if self.fill + len(head) <= CHUNK:
            self.view[self.fill : self.fill + len(head)] = head
            self.fill += len(head)
        else:
            self.put(head)
        before: os.stat_result | None = None
        if size >= CHUNK:
            fd, before = _open_member(path, size)
            if self.kernel_copy:
                self._copy_large(i, fd, before, path, size, want_title)
                return
        else:  # a small file is checked by the length of its one read (below), not by fstat
            fd = _open(path)
        try:
            if want_title:  # the whole page in one buffer, so its title is found in one piece
                if self.fill + size >= CHUNK:
                    self.flush()
                self.pieces.append(("title", i, self.fill, self.fill + size))
            start = self.fill
            read = 0
            # most files: one read asking for a byte more than the file should hold, so a file that
            # grew shows as it does in its size (a file of the size expected, read in one call, cannot
            # have changed while it was copied); hashed whole (one piece, no digest here)
            if start + size < CHUNK:
                read = _read_whole(fd, self.view[start : start + size + 1], path)
                if read == size:
                    self.fill += size
                    if size <= _INLINE_HASH and not want_title:
                        self.hasher.hashes[i] = hashlib.sha256(self.view[start : start + size]).hexdigest()
                    else:
                        self.pieces.append(("whole", i, start, start + size))
                    return
                if read > size:  # grew: the message names its size now, as fstat gives it
                    _checked_stat(fd, path, size)
                    raise FormatError(f"is more than {size} bytes (changed?)", subject=str(path))
            if before is None:  # a short read, or no room for it: checked and copied across buffers
                before = _checked_stat(fd, path, size)
            digest = hashlib.sha256()
            if read:  # a short read: the rest as a file across buffers
                self.pieces.append(("data", digest, start, start + read))
                self.fill += read
            self._read_in(fd, read, size, path, digest)
            _check_unchanged(fd, before, path)
            self.pieces.append(("done", (i, digest), 0, 0))
        finally:
            os.close(fd)

    def bundled(
        self,
        members: list[layout.MemberSpec],
        first: int,
        last: int,
        files: dict[str, Path | str],
        late: frozenset[str],
        meter: Meter,
    ) -> None:
        """Members ``first`` to ``last``, with no header or padding between them (a bundle's files,
        formats/gwtar.md §5.5). A bundle is thousands of small files: each is opened by its name in
        its folder (one descriptor a folder) and read with one call straight after the previous one,
        hashed there when small, with the checks of :meth:`member` (a read of a byte more than the
        file should hold: a file of another size shows in what it gives). One that is not so simple
        (large, a page whose title is wanted, a read of another length, any error) is written by
        :meth:`member`, which reads it again and says what is wrong."""
        hashes = self.hasher.hashes
        sha256 = hashlib.sha256
        folders: dict[str, int] = {}  # folder → its descriptor
        try:
            for i in range(first, last + 1):
                spec = members[i]
                size = spec.size
                path = files[spec.path]
                start = self.fill
                if start + size >= CHUNK and size < CHUNK:
                    self.flush()
                    start = 0
                read = -1
                if type(path) is str and start + size < CHUNK and spec.path not in late:
                    try:
                        if _BY_FOLDER:
                            folder, _, name = path.rpartition(os.sep)
                            dir_fd = folders.get(folder)
                            if dir_fd is None:
                                dir_fd = folders[folder] = os.open(folder or os.curdir, _DIR_FLAGS)
                            fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
                        else:
                            fd = os.open(path, _READ_FLAGS)
                        try:
                            read = os.preadv(fd, [self.view[start : start + size + 1]], 0)
                        finally:
                            os.close(fd)
                    except OSError:
                        read = -1
                if read != size:  # not read here: read again, checked and reported, by member
                    self.member(i, path, size, b"", want_title=spec.path in late)
                elif size <= _INLINE_HASH:
                    self.fill = start + size
                    hashes[i] = sha256(self.view[start : start + size]).hexdigest()
                else:
                    self.fill = start + size
                    self.pieces.append(("whole", i, start, start + size))
                meter.advance(size)
        finally:
            for fd in folders.values():
                os.close(fd)

    def _copy_large(
        self, i: int, fd: int, before: os.stat_result, path: Path | str, size: int, want_title: bool
    ) -> None:
        self.flush()
        try:
            self.hasher.hash_file(os.dup(fd), before, path, i, want_title=want_title)
            done = 0
            while done < size:
                try:
                    n = os.copy_file_range(fd, self.out, size - done, done)
                except OSError as e:
                    if e.errno not in _NO_KERNEL_COPY:
                        raise
                    self.kernel_copy = False
                    self._plain_copy(fd, done, size, path)
                    break
                if n == 0:
                    raise FormatError("file shrank while being packed", subject=str(path))
                done += n
                self.pos += n
                self.flusher.grew(self.pos)
                safefs.checkpoint()
            _check_unchanged(fd, before, path)
        finally:
            os.close(fd)

    def _plain_copy(self, fd: int, offset: int, size: int, path: Path | str) -> None:
        """The rest of a large file through the batch buffer (already being hashed by the hasher)."""
        self._read_in(fd, offset, size, path)
        self.flush()

    def _read_in(
        self, fd: int, offset: int, size: int, path: Path | str, digest: hashlib._Hash | None = None
    ) -> None:
        """Read bytes [offset, size) of ``fd`` into the batch buffers (flushing each full one), to be
        hashed into ``digest`` when given."""
        while offset < size:
            if self.fill == CHUNK:
                self.flush()
            want = min(size - offset, CHUNK - self.fill)
            n = os.preadv(fd, [self.view[self.fill : self.fill + want]], offset)
            if n == 0:
                raise FormatError("file shrank while being packed", subject=str(path))
            if digest is not None:
                self.pieces.append(("data", digest, self.fill, self.fill + n))
            self.fill += n
            offset += n

    def flush(self) -> None:
        """Queue the buffer's pieces for hashing, write it, and take the next free buffer."""
        safefs.checkpoint()
        if self.hasher.error is not None:
            raise self.hasher.error
        if not self.fill:
            return
        buf, view, fill, pieces = self.buf, self.view, self.fill, self.pieces
        hashes, titles, pool = self.hasher.hashes, self.hasher.titles, self.pool

        def job() -> None:
            try:
                for kind, what, start, end in pieces:
                    if kind == "whole":  # what: the member, all of whose bytes are here
                        hashes[what] = hashlib.sha256(view[start:end]).hexdigest()
                    elif kind == "data":  # what: the member's digest
                        what.update(view[start:end])
                    elif kind == "done":  # what: (member, digest)
                        hashes[what[0]] = what[1].hexdigest()
                    else:  # "title"; what: the member
                        titles[what] = tree.title_from_html(
                            bytes(view[start : min(end, start + TITLE_LIMIT)])
                        )
            finally:
                pool.put(buf)

        self.hasher.jobs.put(job)
        write_all(self.out, view[:fill])
        self.pos += fill
        self.flusher.grew(self.pos)
        self.buf = self.pool.get()
        self.view = memoryview(self.buf)
        self.fill = 0
        self.pieces = []


_PADDING = [bytes(n) for n in range(512)]  # a member's padding: one of these, not made each time


def write_body(
    fd: int, plan: layout.Plan, source: Source, meter: Meter
) -> tuple[list[str], dict[int, str | None]]:
    """Write every member (headers, data, padding) after the header at ``fd``'s position; return
    the members' SHA-256 values, checked against the manifest's, and the titles of the pages in
    ``source.late_titles`` (by member index)."""
    # Ctrl-C, SIGTERM and SIGHUP are held while the threads are fed and raised only between members
    # and buffers (safefs.checkpoint): a KeyboardInterrupt inside a queue's put or an event's set
    # could leave a thread unwoken, and the writer waited for it for good
    with safefs.deferred():
        hasher = _Hasher(len(plan.members))
        flusher = _Flusher(fd)
        hasher.start()
        flusher.start()
        try:
            body = _Body(fd, len(plan.header), hasher, flusher)
            padding = b""  # the previous member's padding goes out with the next header
            late = source.late_titles
            members = plan.members
            first, last = plan.bundle if plan.bundle is not None else (-1, -1)
            i = 0
            while i < len(members):
                safefs.checkpoint()
                head = padding + plan.blocks(i)
                if i == first:  # the bundle's files, one after the other after its one header
                    body.put(head)
                    body.bundled(members, first, last, source.files, late, meter)
                    padding = _PADDING[plan.padding(last)]
                    i = last + 1
                    continue
                spec = members[i]
                body.member(i, source.files[spec.path], spec.size, head, want_title=spec.path in late)
                padding = _PADDING[plan.padding(i)]
                meter.advance(spec.size)
                i += 1
            body.put(padding)
            body.flush()
        finally:
            hasher.stop()
            flusher.stop()
    if hasher.error is not None:
        raise hasher.error
    hashes: list[str] = []
    for spec, digest in zip(plan.members, hasher.hashes, strict=True):
        assert digest is not None
        promised = source.expected.get(spec.path)
        if promised is not None and promised != digest:
            raise FormatError(f"SHA-256 {digest} does not match the manifest's {promised}", subject=spec.path)
        hashes.append(digest)
    return hashes, hasher.titles
