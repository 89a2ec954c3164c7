"""What the tree holds of its versions (formats/history.md §3): the tree's current manifest as
path → SHA-256, and the tree files already found to hold a SHA-256, remembered by the identity of
the file (device, inode, size, mtime, ctime) so that a file neither replaced nor edited since is not
hashed again. Bounded: the identities are an LRU of :data:`CHECKED_MAX`."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

import msgspec

from archiver.errors import FormatError
from archiver.tree import LINE_LIMIT, manifest_path, open_manifest

__all__ = ["CHECKED_MAX", "SETTLE_NS", "Held", "Identity", "TreeState", "hash_fd", "identity"]

_CHUNK = 1 << 20
#: What says a tree file is the one hashed: of its open descriptor, (st_dev, st_ino, st_size,
#: st_mtime_ns, st_ctime_ns). An edit in place changes the mtime and ctime (the ctime cannot be set
#: back but by the clock), a replaced file is another inode.
Identity = tuple[int, int, int, int, int]
#: A tree file last changed less than this before it was hashed is not remembered: an edit within the
#: file system's timestamp granularity (a clock tick; 2 s on FAT) could leave its identity unchanged.
SETTLE_NS = 2_000_000_000
#: The tree files a :class:`TreeState` remembers, at most (the least recently used go first).
CHECKED_MAX = 4096


class Held(msgspec.Struct):
    """What the store's readers and keeper need of a record."""

    path: str
    sha256: str
    size: int


_held_decoder = msgspec.json.Decoder(Held)


def hash_fd(fd: int) -> tuple[int, str]:
    """(size, SHA-256) of what ``fd`` reads from its offset on, in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    while chunk := os.read(fd, _CHUNK):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class TreeState:
    """The tree's current manifest as path → SHA-256 (later lines win), read when first asked and
    again whenever the manifest file changed (its size, mtime or inode); and the SHA-256 of each tree
    file checked (:meth:`check`) by its :func:`identity`, at most :data:`CHECKED_MAX`. One a reader
    keeps across calls (serve's version mount, extract, pack); safe to share between threads."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._key: tuple[int, int, int] | None = None
        self._table: dict[str, str] = {}
        self._checked: OrderedDict[Identity, str] = OrderedDict()
        self._lock = threading.Lock()

    def sha256(self, path: str) -> str | None:
        manifest = manifest_path(self.root)
        try:
            st = os.stat(manifest)
        except OSError:
            return None
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        if key != self._key:
            table: dict[str, str] = {}
            try:  # a regular file only (a FIFO there held the caller: serve's memento answers)
                f = open_manifest(manifest)
            except FormatError:
                return None
            with f:
                f.readline(LINE_LIMIT)  # the header
                while line := f.readline(LINE_LIMIT + 1):
                    if not line.endswith(b"\n") or not line.strip():
                        continue
                    with contextlib.suppress(msgspec.DecodeError, RecursionError):
                        h = _held_decoder.decode(line)
                        table[h.path] = h.sha256
            self._key, self._table = key, table
        return self._table.get(path)

    def known(self, ident: Identity) -> str | None:
        """The SHA-256 a tree file of that identity was found to hold, or None."""
        with self._lock:
            sha = self._checked.get(ident)
            if sha is not None:
                self._checked.move_to_end(ident)
            return sha

    def check(self, fd: int) -> tuple[os.stat_result, str] | None:
        """(its stat, its SHA-256) of the tree file open at ``fd``: the one remembered for its
        identity, else hashed from its start, and remembered when the file did not change while
        hashed and was last changed :data:`SETTLE_NS` before. None when it changed while hashed."""
        st = os.fstat(fd)
        ident = identity(st)
        sha = self.known(ident)
        if sha is not None:
            return st, sha
        started = time.time_ns()
        os.lseek(fd, 0, os.SEEK_SET)
        size, sha = hash_fd(fd)
        if size != st.st_size or identity(os.fstat(fd)) != ident:
            return None
        if max(st.st_mtime_ns, st.st_ctime_ns) <= started - SETTLE_NS:
            with self._lock:
                self._checked[ident] = sha
                self._checked.move_to_end(ident)
                while len(self._checked) > CHECKED_MAX:
                    self._checked.popitem(last=False)
        return st, sha
