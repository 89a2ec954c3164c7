"""A folder served by ``archiver serve`` as static files below ``/<name>/`` (:class:`_TreeMount`):
a canonical tree, or a folder named as a PATH.

Tree files are opened component by component from the root's descriptor
(:func:`archiver.serve.walk.open_beneath`: no symlink leaves the root, no race); the tree's private
files (:func:`archiver.tree.is_private`: the capture's state and ``_archiver/tmp/``) are 404 whatever
the spelling or symlink; a ``*.gwtar.html`` file inside also gets member URLs.
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from pathlib import Path

from archiver.errors import UsageError
from archiver.serve.mounts import Mount, _gwtar_whole, _Members, _plain_file
from archiver.serve.paths import RESERVED, _href, _query_suffix, is_gwtar_name
from archiver.serve.representation import _NOT_FOUND, FileSlice, Redirect, Result
from archiver.serve.walk import open_beneath, open_root
from archiver.tree import is_private

__all__: list[str] = []  # the serve package's own: sources.mounts_for makes a tree's mount


class _TreeMount(Mount):
    """A folder served as static files below ``/<name>/``: ``dir/`` serves ``dir/index.html``, a
    folder without its ``/`` is redirected (301), no listings. gwtar files inside get member URLs."""

    def __init__(self, name: str, path: Path, gwtar_mime: str) -> None:
        super().__init__(name, "tree", path)
        self.root = os.path.realpath(path)
        try:
            self.root_fd = open_root(self.root)
        except OSError as e:
            raise UsageError(f"cannot open the folder: {e.strerror or e}", subject=str(path)) from None
        # the spellings of the root an absolute symlink inside it may use
        self.roots = tuple(dict.fromkeys((self.root, os.path.abspath(path))))
        self.gwtar_mime = gwtar_mime
        self.gwtars: OrderedDict[str, tuple[tuple[int, int, int], _Members]] = OrderedDict()

    def describe(self) -> str:
        index = os.path.join(self.root, "index.html")
        return "canonical tree" if os.path.isfile(index) else "folder"

    def close(self) -> None:
        if self.root_fd >= 0:
            os.close(self.root_fd)
            self.root_fd = -1

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        # A gwtar member URL inside the tree: <...>.gwtar.html/~/<member>
        if RESERVED in rest:
            cut = rest.index(RESERVED)
            if cut > 0 and is_gwtar_name(rest[cut - 1]):
                return self._member(rest[:cut], rest[cut + 1 :], slash)
        found = self._open(rest)
        if found is None:
            return _NOT_FOUND
        fd, st, parts = found
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            if not slash and rest:
                return Redirect(301, _href(self.name, *rest) + "/" + _query_suffix(raw_query))
            found = self._open([*parts, "index.html"])  # the real folder's index, walked again
            if found is None or not stat.S_ISREG(found[1].st_mode):
                if found is not None:
                    os.close(found[0])
                return _NOT_FOUND
            fd, st, parts = found
        elif slash:
            os.close(fd)
            return _NOT_FOUND
        file = os.fdopen(fd, "rb", buffering=0)
        name = parts[-1]
        gwtar = is_gwtar_name(name)
        rep = _gwtar_whole(file, st, self.gwtar_mime) if gwtar else _plain_file(file, st, name)
        rep.path = os.path.join(self.root, *parts)
        rep.identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        return rep

    def _open(self, parts: list[str]) -> tuple[int, os.stat_result, list[str]] | None:
        """What ``parts`` name below the root (walk.open_beneath: no symlink leaves the root, no race),
        unless it is one of the tree's private files (tree.is_private, decided on the real path
        relative to the root, so no spelling and no symlink reaches them)."""
        found = open_beneath(self.root_fd, self.roots, parts)
        if found is not None and is_private("/".join(found[2])):
            os.close(found[0])
            return None
        return found

    def _member(self, archive: list[str], member: list[str], slash: bool) -> Result:
        found = self._open(archive)
        if found is None:
            return _NOT_FOUND
        fd, st, parts = found
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return _NOT_FOUND
        file = os.fdopen(fd, "rb", buffering=0)
        real = os.path.join(self.root, *parts)
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        known = self.gwtars.get(real)
        if known is not None and known[0] == identity:
            file.close()
            members = known[1]
            self.gwtars.move_to_end(real)
        else:
            members = _Members(file, Path(real), st, by_descriptor=True)
            self.gwtars[real] = (identity, members)
            while len(self.gwtars) > 64:
                self.gwtars.popitem(last=False)
        result = members.get(member, slash)
        if isinstance(result, FileSlice):
            result.path = real  # revalidated like the archive it lives in
            result.identity = identity
        return result
