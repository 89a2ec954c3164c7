"""Writing files into a capture's tree: atomically, through ``_archiver/tmp``.

A file is written to a temporary name in ``_archiver/tmp`` (on the tree's own file system, not next
to the target) and renamed into place, so a run killed mid-write leaves nothing inside the tree and
the next run empties ``tmp``. A page whose bytes equal an earlier page's is a hard link to it. In a
tree with recorded versions, a file a version still needs from the tree is first kept in the version
store (:mod:`archiver.versions.keeper`, formats/history.md §2) before a new file replaces it. Nothing
is fsynced file by file: a killed process loses nothing the kernel already holds; only a power cut
could lose recent files, which a later run with ``--refresh`` fetches again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from archiver import tree
from archiver.errors import FormatError, StoreError, store_error
from archiver.urls import RESERVED_DIR, VERSIONS_NAME
from archiver.walk import makedirs, rmtree

if TYPE_CHECKING:
    from archiver.versions.keeper import Keeper

__all__ = ["TreeWriter", "Verified", "hash_file", "now", "stub_html", "verified_as"]

#: what a tree file was found to be: (SHA-256, size, mtime_ns, ctime_ns, inode) of its status when
#: its bytes were known to hash to that SHA-256 (written by this run, or read and hashed)
Verified = tuple[str, int, int, int, int]


def verified_as(sha256: str, st: os.stat_result) -> Verified:
    """The :data:`Verified` of a file whose status is ``st`` and whose bytes hash to ``sha256``."""
    return (sha256, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


class TreeWriter:
    """Writes into the tree at ``out`` through the temporary folder ``tmp``."""

    def __init__(self, out: Path, tmp: Path) -> None:
        self.out = out
        self.tmp = tmp
        self._out_str = str(out)
        self._tmp_str = str(tmp)
        self._pid = os.getpid()
        self._count = 0
        self._folders: set[str] = set()  # folders this run made or met: never removed while it runs
        self.keeper: Keeper | None = None
        #: tree path → :data:`Verified` of the files this run wrote with known bytes, or read and
        #: hashed (the state keeps them when the run ends: formats/crawl-state.md §1, ``verified``)
        self.verified: dict[str, Verified] = {}
        if os.path.isdir(os.path.join(self._out_str, RESERVED_DIR, VERSIONS_NAME)):
            from archiver.versions.keeper import for_tree

            self.keeper = for_tree(out)

    def keep(self, path: str) -> None:
        """Call before the tree file ``path`` is replaced, moved or removed: a recorded version that
        holds it only in the tree gets its blob first (a dict lookup when none does)."""
        if self.keeper is not None:
            self.keeper.keep(path)

    def write(
        self,
        path: str,
        data: bytes | None = None,
        source: Path | None = None,
        link_from: str | None = None,
        sha256: str | None = None,
    ) -> None:
        """Put ``data`` (or the file ``source``, moved; or a hard link to the tree file ``link_from``)
        at tree path ``path`` atomically. Called in the event loop: with no fsync a write is a
        page-cache copy and a rename, cheaper than a thread hop. ``sha256``: the SHA-256 of the bytes
        put there (``data`` or ``source``), when the caller knows it: the file's status once in
        place is noted in :attr:`verified` (a later run trusts a file whose status has not changed
        since); a hard link is not noted (it holds another file's bytes as they are now)."""
        target = os.path.join(self._out_str, path)
        folder = os.path.dirname(target)
        if folder not in self._folders:  # its folders the tree's own (no link out of it), then made
            try:
                tree.own_folders(self.out, Path(folder))
            except FormatError as e:  # the tree's doing, not this URL's: the capture stops
                raise StoreError(e.message, subject=e.subject) from None
            makedirs(folder)
            self._folders.add(folder)
        self._count += 1
        tmp = os.path.join(self._tmp_str, f"write-{self._pid}-{self._count}.tmp")
        try:
            if link_from is not None and os.path.isfile(os.path.join(self._out_str, link_from)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                os.link(os.path.join(self._out_str, link_from), tmp)
                sha256 = None  # another file's bytes, as they are now: not known here to be these
            elif source is not None:
                os.replace(source, tmp)
            else:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
                try:
                    view = memoryview(data or b"")
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    os.close(fd)
            if self.keeper is not None:
                self.keeper.keep(path)
            os.replace(tmp, target)
        except BaseException as e:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            stop = store_error(e, target) if isinstance(e, OSError) else None
            if stop is not None:  # the disk's refusal, named by the file being written, not tmp's name
                raise StoreError(stop.message, subject=target) from None
            raise
        self.verified.pop(path, None)
        if sha256 is not None:  # in place: a later link, rename or write changes its ctime, not this
            with contextlib.suppress(OSError):  # gone already: nothing to note
                self.verified[path] = verified_as(sha256, os.stat(target))

    def empty_tmp(self, remove: bool = False) -> None:
        """Delete what a previous (killed) run or this one left in ``tmp`` (and ``tmp`` itself): only
        the tree's own ``tmp`` (a link to a folder elsewhere is refused: its files were deleted)."""
        tree.own_folders(self.out, self.tmp)
        for leftover in self.tmp.glob("*"):
            if leftover.is_dir() and not leftover.is_symlink():  # a search index build killed midway
                rmtree(leftover, ignore_errors=True)
                continue
            with contextlib.suppress(OSError):
                leftover.unlink()
        if remove:
            with contextlib.suppress(OSError):
                self.tmp.rmdir()


def stub_html(href: str, shown: str) -> bytes:
    """A redirect stub: a page that moves the browser on to ``href`` (shown as ``shown``)."""
    import html  # with its entity table (~2 ms to import): only a run that writes a stub needs it

    quoted = html.escape(href, quote=True)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Moved</title>'
        f'<meta http-equiv="refresh" content="0; url={quoted}"></head>\n'
        f'<body><p>This page moved to <a href="{quoted}">{html.escape(shown)}</a>.</p></body></html>\n'
    ).encode()


def hash_file(path: Path) -> tuple[str, int]:
    """SHA-256 (hex) and size of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


_stamp: tuple[int, str] = (-1, "")


def now() -> str:
    """The current UTC time, to the second (RFC 3339); formatted once per second."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        _stamp = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _stamp[1]
