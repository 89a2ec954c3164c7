"""What the PATHs given to ``archiver serve`` become: mounts (:func:`plan_mounts`, :func:`mounts_for`).

This module touches the filesystem (it looks at, and opens, what it serves) but never the network.
A served PATH becomes one or more *mounts*:

- a gwtar file (``*.gwtar.html``, or any file that starts with the gwtar magic) → ``/<file name>``,
  its members at ``/<file name>/~/<member path>``;
- a ZIM file → ``/<name without .zim>/``, the main page at that prefix, entries below it;
- a canonical tree (a folder with ``index.html`` or ``_archiver/``) → ``/<folder name>/``, served as
  static files, except its private files (:func:`archiver.tree.is_private`: the capture's state and
  ``_archiver/tmp/``), which are 404 whatever the spelling or symlink; a ``*.gwtar.html`` file
  inside a tree also gets member URLs;
- any other file → ``/<file name>``;
- any other folder → each of its entries that is one of the above becomes a mount of its own
  (a tree's private files, and symlinks that lead out of the folder, excepted).

A private file named as a PATH is refused (:class:`UsageError`). The mounts themselves are in
:mod:`archiver.serve.mounts` (files and gwtar files), :mod:`archiver.serve.tree_mount` and
:mod:`archiver.serve.zim_mount`; what they answer with in :mod:`archiver.serve.representation`;
request paths are checked by :mod:`archiver.serve.paths`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from archiver.detect import refuse_arc
from archiver.errors import UsageError
from archiver.serve.mounts import Mount, _FileMount
from archiver.serve.paths import RESERVED, is_gwtar_name
from archiver.serve.tree_mount import _TreeMount
from archiver.serve.zim_mount import _ZimMount
from archiver.tree import is_private

__all__ = ["GWTAR_MAGIC", "mounts_for", "plan_mounts"]


#: The first bytes of every gwtar file (gwtar.md §2).
GWTAR_MAGIC: Final = b"<html>\n<!-- Gwtar self-extracting HTML archive"


def _is_tree(folder: Path) -> bool:
    return (folder / "index.html").is_file() or (folder / "_archiver").is_dir()


def _sniff_gwtar(path: Path) -> bool:
    if is_gwtar_name(path.name):
        return True
    try:
        with path.open("rb") as f:
            return f.read(len(GWTAR_MAGIC)) == GWTAR_MAGIC
    except OSError:
        return False


def _classify(path: Path) -> str | None:
    if path.is_dir():
        return "tree" if _is_tree(path) else "folder"
    if path.is_file():
        if path.suffix.lower() == ".zim":
            return "zim"
        return "gwtar" if _sniff_gwtar(path) else "file"
    if path.suffix.lower() == ".zim" and path.with_name(f"{path.name}aa").is_file():
        return "zim"  # a split ZIM named by its base name, as kiwix-serve takes it
    return None


def _in_private_place(path: Path) -> bool:
    """Whether a path's real location is a tree's private file or inside one (some ``_archiver``
    folder on the way holds it as tree.is_private says): such a child of a served folder is no mount."""
    parts = Path(os.path.realpath(path)).parts
    return any(is_private("/".join(parts[i : i + 2])) for i in range(len(parts) - 1))


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root + os.sep)


def plan_mounts(paths: Iterable[Path | str]) -> list[tuple[str, str, Path]]:
    """``(kind, name, path)`` of every mount the PATHs given to ``archiver serve`` make, in order,
    with unique names (``name-2``… on a clash); nothing is opened. A missing PATH, or a set of PATHs
    with nothing to serve, is a :class:`UsageError`."""
    plan: list[tuple[str, Path, str]] = []  # kind, the path to open, the name it is known by
    for given in paths:
        path = Path(given)
        kind = _classify(path)
        if kind is None:
            raise UsageError("no such file or folder", subject=str(path))
        if _in_private_place(path):
            raise UsageError("a tree's private file is never served", subject=str(path))
        if kind == "file":
            refuse_arc(path)  # named as a PATH, an ARC is refused as by every command (warc.md §1)
        if kind != "folder":
            plan.append((kind, path, path.name))
            continue
        found = False
        top = os.path.realpath(path)
        for child in sorted(path.iterdir(), key=lambda p: p.name):
            if child.name.startswith(".") or _in_private_place(child):
                continue
            real = os.path.realpath(child)
            if real == top or not _inside(real, top):
                continue  # a symlink out of the folder is never followed (§5)
            if child.name.lower().endswith(".zimaa"):  # the first part of a split ZIM: mount it whole
                plan.append(("zim", Path(real[:-2]), child.name[:-2]))
                found = True
                continue
            if re.search(r"\.zima[b-z]$|\.zim[b-z][a-z]$", child.name.lower()):
                continue  # a later part of a split ZIM
            child_kind = _classify(Path(real))
            if child_kind in (None, "folder"):
                continue
            # opened by its real path, so its mount keeps the name the folder gives it
            plan.append((child_kind, Path(real), child.name))
            found = True
        if not found:
            raise UsageError("no gwtar, ZIM, tree or file in this folder", subject=str(path))
    if not plan:
        raise UsageError("nothing to serve")
    named: list[tuple[str, str, Path]] = []
    taken: set[str] = {RESERVED, ""}
    for kind, path, known in plan:
        base = known[:-4] if kind == "zim" and known.lower().endswith(".zim") else known
        base = base or "archive"
        name = base
        n = 2
        while name in taken:
            name = f"{base}-{n}"
            n += 1
        taken.add(name)
        named.append((kind, name, path))
    return named


def mounts_for(paths: Iterable[Path | str], *, gwtar_mime: str = "text/html") -> list[Mount]:
    """The mounts of :func:`plan_mounts`, opened (archives are opened once, here)."""
    mounts: list[Mount] = []
    try:
        for kind, name, path in plan_mounts(paths):
            if kind == "zim":
                mounts.append(_ZimMount(name, path))
            elif kind == "tree":
                mounts.append(_TreeMount(name, path, gwtar_mime))
            else:
                mounts.append(_FileMount(name, path, kind == "gwtar", gwtar_mime))
        from archiver.serve.memento import version_mounts

        mounts += version_mounts(mounts)  # each recorded version of a tree (formats/history.md §7)
    except BaseException:
        for m in mounts:
            m.close()
        raise
    return mounts
