"""Postings tables on disk (formats/search.md §6.5, Tables): one file per index under the user's cache
folder (``$XDG_CACHE_HOME/archiver/search-tables/``, else ``~/.cache/…``), named by its identity
(the mount's and its index's: :func:`archiver.serve.search.table_identity`), written
atomically, checked against its own SHA-256 and the identity when opened (memory-mapped, read in
place), at most :data:`DISK_BYTES` in all (the least recently used files go first). A file that does
not check is removed and built again. The IO side of :mod:`archiver.search.table`."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import tempfile
from pathlib import Path

from archiver.errors import StoreError, store_error
from archiver.search import table
from archiver.search.query import Index

__all__ = ["DISK_BYTES", "build_file", "folder", "open_table"]

#: Bytes of table files kept in the cache folder, all indexes together.
DISK_BYTES = 8 << 30


def folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "archiver" / "search-tables"


def _path(identity: str) -> Path:
    return folder() / f"{identity}.v{table.VERSION}"


def open_table(identity: str, documents: int) -> table.Table | None:
    """The table of the index ``identity`` from the cache folder, or None (none, or one that does not
    check: removed)."""
    where = _path(identity)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not os.fstat(f.fileno()).st_size:
                raise ValueError("is empty")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        got = table.Table(mapped, identity, documents)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            where.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(where)  # recently used: trimmed last
    return got


def build_file(index: Index, identity: str) -> bool:
    """Build the table of ``index`` into the cache folder (atomically), then keep the folder to its
    budget. False when the index gets none (:func:`table.build`); FormatError when it is damaged;
    :class:`StoreError` naming the cache folder when it cannot take the file (full, read-only, not
    allowed: nothing of it is left there)."""
    data = table.build(index, identity)
    if data is None:
        return False
    where = _path(identity)
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".tmp-")
    except OSError as e:
        raise _not_kept(e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, where)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise _not_kept(e) from None
        raise
    for old in where.parent.glob(f"{identity}.v*"):  # an earlier version's: never read again
        if old != where:
            with contextlib.suppress(OSError):
                old.unlink()
    _trim(where.parent, keep=where)
    return True


def _not_kept(e: OSError) -> BaseException:
    """The cache folder's refusal as a :class:`StoreError` naming the folder (else ``e`` itself); the
    limit on open files reached (a server of many archives) is one too: no table is kept."""
    stop = store_error(e, str(folder()))
    if stop is None and e.errno in (errno.EMFILE, errno.ENFILE):
        stop = StoreError("too many open files", subject=str(folder()))
    return e if stop is None else StoreError(stop.message, subject=str(folder()))


def _trim(where: Path, keep: Path) -> None:
    files = []
    for p in where.iterdir():
        with contextlib.suppress(OSError):
            st = p.stat()
            files.append((st.st_mtime_ns, st.st_size, p))
    total = sum(f[1] for f in files)
    for _, size, p in sorted(files):
        if total <= DISK_BYTES:
            break
        if p != keep:
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
