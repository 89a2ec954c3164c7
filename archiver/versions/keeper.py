"""Keeping a recorded version's bytes before the tree lets them go (formats/history.md §1, §2).

The tree is the store of its newest recorded version: recording writes a version's manifest only,
and a file's blob is stored (hard-linked or copied, then hashed) only when that file is about to
leave the tree: before a capture renames a new file over it, moves it aside (a clash) or removes it.
:func:`for_tree` builds a :class:`Keeper` from the newest recorded version (path → SHA-256 of its
records whose blob is not stored); :meth:`Keeper.keep` is the one call a writer makes first: a dict
lookup when the path has nothing pending."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

import msgspec

from archiver.errors import FormatError
from archiver.tree import own_folders
from archiver.versions import store, storefiles
from archiver.walk import makedirs

__all__ = ["KEPT_FDS", "Keeper", "TreeFolders", "for_tree", "store_blob"]

_CHUNK = 1 << 20
#: the tree folders a keeper keeps open at most
KEPT_FDS = 64


_held_decoder = msgspec.json.Decoder(store.Held)


class TreeFolders:
    """Descriptors of the tree's folders, each opened once from its parent's without following a
    symbolic link, at most :data:`KEPT_FDS` kept open."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fds: dict[str, int] = {}

    def parent(self, rel: str) -> tuple[int, str]:
        """A descriptor of the folder holding ``rel`` (kept: not to be closed) and ``rel``'s leaf."""
        folder, _, leaf = rel.rpartition("/")
        try:
            return self._fd(folder), leaf
        except OSError as e:
            raise FormatError(f"cannot be read: {e.strerror or e}", subject=rel) from None

    def _fd(self, folder: str) -> int:
        fd = self.fds.get(folder)
        if fd is not None:
            return fd
        if len(self.fds) >= KEPT_FDS:
            self.close()
        if folder:
            up, _, name = folder.rpartition("/")
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=self._fd(up))
        else:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        self.fds[folder] = fd
        return fd

    def close(self) -> None:
        fds, self.fds = self.fds, {}
        for fd in fds.values():
            os.close(fd)


def store_blob(root: Path, rel: str, sha256: str, size: int, tree: TreeFolders) -> bool:
    """Store the tree file ``rel`` as the blob ``sha256`` (not in the store yet): linked (or copied)
    to a temporary name in the blob's folder, that inode hashed, renamed to its blob name only when
    its size and SHA-256 are the record's. False (nothing stored) when the file is missing, not a
    regular file reached without a symbolic link, or no longer holds those bytes (edited in place:
    the version lost them already; ``verify`` names it)."""
    target = store.blob_path(root, sha256)
    own_folders(root, target.parent)
    makedirs(target.parent)
    tmp = os.path.join(target.parent, f"{store.TMP}{sha256}-{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)  # left by a killed process of the same id
    copied = False
    try:
        pfd, leaf = tree.parent(rel)
        os.link(leaf, tmp, src_dir_fd=pfd, follow_symlinks=False)
    except FormatError:
        return False
    except FileNotFoundError:
        return False
    except OSError:  # another file system, or no hard links there: copy
        copied = True
        try:
            fd = store.open_in_tree(root, rel)
        except FormatError:
            return False
        try:
            with open(tmp, "xb") as out:  # O_EXCL: never written through a name that exists
                while chunk := os.read(fd, _CHUNK):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
        finally:
            os.close(fd)
    st = os.lstat(tmp)
    if not stat.S_ISREG(st.st_mode) or store.hash_path(tmp) != (size, sha256):
        os.unlink(tmp)
        return False
    if copied:  # a copy is the blob's own inode: read-only, so an in-place edit fails loudly
        os.chmod(tmp, 0o444)
    os.replace(tmp, target)
    return True


class Keeper:
    """The records of the newest recorded version whose bytes only the tree holds (:attr:`pending`);
    :meth:`keep` stores one's blob before its tree file goes."""

    def __init__(self, root: Path, newest: bytes) -> None:
        self.root = root
        self._newest: bytes | None = newest  # that version's manifest, read by for_tree
        self._pending: dict[str, tuple[str, int]] | None = None
        self.kept = 0

    @property
    def pending(self) -> dict[str, tuple[str, int]]:
        """path → (SHA-256, size) of the version's records whose blob is not stored, worked out at
        the first call (an unchanged re-capture replaces no file: never; ~1,000 records decoded and
        looked for in the store at every start were most of a keeper's cost)."""
        if self._pending is None:
            assert self._newest is not None
            self._pending, self._newest = _pending(self.root, self._newest), None
        return self._pending

    def keep(self, rel: str) -> None:
        """Call before the tree file ``rel`` is replaced, moved or removed."""
        held = self.pending.pop(rel, None)
        if held is None:
            return
        if store.blob_path(self.root, held[0]).is_file():
            return  # stored already (another path with the same bytes)
        tree = TreeFolders(self.root)  # not kept open: a keeper lives as long as a capture's writer
        try:
            self.kept += store_blob(self.root, rel, held[0], held[1], tree)
        finally:
            tree.close()


def for_tree(root: Path) -> Keeper | None:
    """The keeper of the tree at ``root``: None when it has no recorded version. The newest version's
    manifest is read here (an unreadable one is an error now, not at the first file replaced)."""
    found = store.recorded(root)
    if not found:
        return None
    newest = found[-1].manifest
    return Keeper(root, storefiles.read_manifest(newest))  # a regular file, bounded: else a FormatError


def _pending(root: Path, manifest: bytes) -> dict[str, tuple[str, int]]:
    """The records of the version ``manifest`` (its bytes) whose blob is not in the store."""
    base = os.fspath(store.store_dir(root))
    pending: dict[str, tuple[str, int]] = {}
    folders: dict[str, bool] = {}  # blobs/sha256/<two hex>: there? (none there: no blob to look for)
    for line in manifest.split(b"\n")[1:-1]:  # past the header; the last: empty, or a torn line
        if not line.strip():
            continue
        try:
            r = _held_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):  # RecursionError: nested too deep (msgspec)
            continue  # verify names it
        if store.safe_path(r.path) or not store.is_sha256(r.sha256):
            continue  # a hostile version: never a tree path a capture writes
        name = store.blob_name(r.sha256)
        folder = name.rpartition("/")[0]  # blobs/sha256/<two hex>
        there = folders.get(folder)
        if there is None:
            there = folders[folder] = os.path.isdir(os.path.join(base, folder))
        if not there or not os.path.exists(os.path.join(base, name)):
            pending[r.path] = (r.sha256, r.size)
    return pending
