"""Tree paths of one capture: each URL's path given out once (formats/tree.md §4) with the clash
rules of §4.5 applied, and the relative links between paths, both remembered.

The path of a URL is :func:`archiver.urls.local_path` (pure). What this adds is the state: a path,
once given out, is kept (in the crawl state, written with the next transaction); a query-hash
collision lengthens the hash; an asset that must sit where a folder is needed gets a ``__c-`` name,
and an existing file in the way of a new folder moves to its ``__c-`` name.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from archiver import urls
from archiver.errors import StoreError
from archiver.tree import own_parent
from archiver.urls import Kind

if TYPE_CHECKING:
    from archiver.capture.crawlstate import CrawlState  # a Protocol: only annotations name it

__all__ = ["TreePaths", "with_suffix"]

_MEMO_LIMIT = 100_000


def with_suffix(path: str, suffix: str) -> str:
    """``path`` with ``suffix`` before its extension (``a/b.css`` + ``__c-1`` → ``a/b__c-1.css``)."""
    folder, _, leaf = path.rpartition("/")
    dot = leaf.rfind(".")
    leaf = urls.fit_name(leaf[:dot] + suffix + leaf[dot:] if dot > 0 else leaf + suffix)
    return f"{folder}/{leaf}" if folder else leaf


class TreePaths:
    """The paths of one tree at ``out``, kept in ``state``, for a capture whose home is ``home``."""

    def __init__(
        self, state: CrawlState, out: Path, home: str, keep: Callable[[str], None] | None = None
    ) -> None:
        self.state = state
        #: called with a tree file's path before it is moved aside (the writer's, formats/history.md §2)
        self.keep = keep
        self.out = out
        self.home = home
        #: key → (path, owner): paths known this run (owner: the key already holding the same file)
        self.paths: dict[str, tuple[str, str | None]] = {}
        #: path → key, given out and not yet written to the state
        self.claims: dict[str, str] = {}
        self._rels: dict[tuple[str, str], str] = {}
        self._local_paths: dict[tuple[str, str], str] = {}
        self._own: set[str] = set()  # folders found to be the tree's own (tree.own_parent)

    def local_path(self, key: str, kind: Kind) -> str:
        """:func:`archiver.urls.local_path` of ``key`` in this tree (the default hash), remembered."""
        memo = (key, kind)
        path = self._local_paths.get(memo)
        if path is None:
            path = urls.local_path(key, kind=kind, home=self.home)
            if len(self._local_paths) >= _MEMO_LIMIT:
                self._local_paths.clear()
            self._local_paths[memo] = path
        return path

    def rel(self, from_path: str, to_path: str) -> str:
        """:func:`archiver.urls.rel`, remembered (it depends only on ``from_path``'s folder)."""
        folder, _, leaf = from_path.rpartition("/")
        if leaf in ("", ".", ".."):  # not a file's path: nothing to remember it by
            return urls.rel(from_path, to_path)
        memo = (folder, to_path)
        href = self._rels.get(memo)
        if href is None:
            href = urls.rel(from_path, to_path)
            if len(self._rels) >= _MEMO_LIMIT:
                self._rels.clear()
            self._rels[memo] = href
        return href

    def assign(self, key: str, kind: Kind) -> tuple[str, str | None]:
        """The tree path of ``key``, assigned once and kept in the state. Returns ``(path, owner)``
        where ``owner`` is the key that already holds the same file (tree.md §3.3) or None."""
        known = self.paths.get(key)
        if known is not None:
            return known
        row = self.state.row(key)
        if row is not None and row.path:
            owner = row.final_url if row.state == "merged" else None
            self.paths[key] = (row.path, owner)
            return row.path, owner
        path, owner = self._fresh(key, kind)
        if owner is not None:
            self.paths[key] = (path, owner)
            return path, owner
        self.claims[path] = key
        self.paths[key] = (path, None)
        return path, None

    def alias_of(self, key: str, kind: Kind) -> str | None:
        """The key that already holds the file ``key`` would share (tree.md §3.3: ``key`` is an
        alias, never fetched as a page of its own), or None. Gives out nothing."""
        known = self.paths.get(key)
        if known is not None:
            return known[1]
        row = self.state.row(key)
        if row is not None and row.path:
            return row.final_url if row.state == "merged" else None
        path = self.local_path(key, kind)
        owner = self.owner(path)
        if owner is None or owner == key:
            return None
        full = urls.local_path(key, kind=kind, home=self.home, hash_len=64)
        return owner if full == urls.local_path(owner, kind=kind, home=self.home, hash_len=64) else None

    def second(self, key: str, kind: Kind) -> str:
        """A second path for ``key``, of ``kind``, besides the one it has: a page link that answered
        with an asset keeps a redirect stub at its page path (still the key's own path) and its bytes
        at this one (tree.md §9.1)."""
        own = self.paths.get(key)
        path, _owner = self._fresh(key, kind, merge=False)
        self.claims[path] = key
        if own is not None:  # written last, so the key's row keeps its own path
            self.claims.pop(own[0], None)
            self.claims[own[0]] = key
        return path

    def _fresh(self, key: str, kind: Kind, *, merge: bool = True) -> tuple[str, str | None]:
        """The path ``key`` gets when it has none yet, and the key already holding the same file
        (tree.md §3.3) when ``merge`` allows sharing it."""
        path = self.local_path(key, kind)
        owner = self.owner(path)
        if owner is not None and owner != key:
            same = urls.local_path(key, kind=kind, home=self.home, hash_len=64) == urls.local_path(
                owner, kind=kind, home=self.home, hash_len=64
            )
            if same and merge:
                return path, owner
            for length in range(8, 65, 2):  # a query-hash collision: lengthen the hash
                path = urls.local_path(key, kind=kind, home=self.home, hash_len=length)
                if self.owner(path) in (None, key):
                    break
        if kind == "asset":
            path = self._resolve_clash(key, path)
        return path, None

    def owner(self, path: str) -> str | None:
        """The key that holds tree path ``path`` (given out this run or earlier), or None."""
        return self.claims.get(path) or self.state.owner(path)

    def flush(self) -> None:
        """Write the paths given out since the last flush (part of the next state transaction: a path
        given out but never written down is simply given out again, the same way, after a crash)."""
        if self.claims:
            claims, self.claims = self.claims, {}
            self.state.claim_many(claims)

    @staticmethod
    def clash_suffix(key: str) -> str:
        return "__c-" + hashlib.sha256(key.encode()).hexdigest()[:6]

    def _resolve_clash(self, key: str, path: str) -> str:
        # the new file would sit where a folder is needed
        self.flush()
        if self.state.has_path_under(path):
            return with_suffix(path, self.clash_suffix(key))
        # an existing file sits where the new path needs a folder: that file moves to its __c- name
        parts = path.split("/")
        for i in range(3, len(parts)):
            folder = "/".join(parts[:i])
            other = self.state.owner(folder)
            if other is not None:
                moved = with_suffix(folder, self.clash_suffix(other))
                src = self.out / folder
                if not own_parent(self.out, folder, self._own):  # the writer would refuse it too
                    raise StoreError("is a symbolic link, not a folder of the tree: refused",
                                     subject=str(src.parent))  # fmt: skip
                if src.is_file():
                    if self.keep is not None:
                        self.keep(folder)
                    os.replace(src, self.out / moved)
                self.state.move(other, folder, moved)
                self.paths[other] = (moved, None)
        return path
