"""A tree's folders on disk, without its manifest's reader (formats/tree.md §8): what a command that
only walks a tree needs (``archiver index``: ~10 ms of its start was the import of msgspec, which
:mod:`archiver.tree` decodes the manifest with). Re-exported by :mod:`archiver.tree` and
:mod:`archiver.tree_verify`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from archiver.errors import FormatError
from archiver.urls import RESERVED_DIR

__all__ = ["MANIFEST_NAME", "is_tree", "manifest_path", "own_folders", "own_parent"]

MANIFEST_NAME = "manifest.jsonl"


def manifest_path(root: Path) -> Path:
    return root / RESERVED_DIR / MANIFEST_NAME


def is_tree(path: Path) -> bool:
    """A folder with a manifest, or with an ``index.html`` or a reserved folder (serve.md §1)."""
    return path.is_dir() and ((path / RESERVED_DIR).is_dir() or (path / "index.html").is_file())


def own_folders(root: Path, *folders: Path) -> None:
    """Each of ``folders`` (below ``root``) is, as far as it exists, a real folder down from
    ``root``: no part of its path below ``root`` a symbolic link or anything but a folder. A
    ``FormatError`` names the first that is not. A tree's reserved folders followed out of it had
    archiver's files written and deleted there: a re-capture emptied the folder a tree's
    ``_archiver/tmp`` linked to (formats/tree.md §8)."""
    for folder in folders:
        here = root
        for part in folder.relative_to(root).parts:
            here = here / part
            try:
                st = os.lstat(here)
            except FileNotFoundError:
                break
            if not stat.S_ISDIR(st.st_mode):
                what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
                raise FormatError(f"is {what}, not a folder of the tree: refused", subject=str(here))


def own_parent(root: Path, rel: str, known: set[str]) -> bool:
    """Whether the folder holding the tree path ``rel`` is the tree's own (:func:`own_folders`), the
    folders found so remembered in ``known``. For a caller about to remove, move or read a tree file
    by its recorded path: behind a folder linked out of the tree is someone else's file
    (``--no-resume`` and a re-capture deleted it there, ``archiver index`` read it)."""
    parent = rel.rpartition("/")[0]
    if not parent or parent in known:
        return True
    try:
        own_folders(root, root / parent)
    except FormatError:
        return False
    known.add(parent)
    return True
