"""The search index inside a packed archive (formats/search.md §8): the same files as a tree's
``_archiver/search/`` (formats/search.md §4.1), as gwtar members or ZIM entries under the same
paths. :func:`pack_files` gives the files to pack (the tree's own index, or one built at pack time);
:func:`archive_index` opens an archive's index through its members or entries, reading one file per
shard a query needs; :func:`check` reports every damaged or missing index file by its path."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from archiver.errors import FormatError
from archiver.search import page, store
from archiver.search.query import Index

__all__ = ["PREFIX", "archive_index", "check", "is_index_path", "media_type", "pack_files"]

#: Every index file's path starts with this, in a tree, a gwtar and a ZIM alike.
PREFIX = f"{store.INDEX_DIR}/"

Read = Callable[[str], bytes]  # a tree path → the member's or entry's bytes (KeyError when absent)


def is_index_path(path: str) -> bool:
    return path.startswith(PREFIX)


def media_type(path: str) -> str:
    return "text/html" if path.endswith(".html") else "text/javascript"


def _listed(index: Index) -> list[str]:
    """The paths of every file the index's manifest names, then the search page's."""
    names = ["manifest"]
    names += [f"t/{i}" for i in range(len(index.shards))]
    names += [f"d/{i}" for i in range(len(index.groups))]
    names += [f"x/{i}" for i in range(len(index.texts))]
    return [f"{PREFIX}{n}.js" for n in names] + [f"{PREFIX}{n}" for n in page.files()]


def pack_files(root: Path, work: Path) -> dict[str, Path]:
    """The index files to pack with the tree at ``root``, by tree path: the tree's own index when it
    has one this archiver reads (written by ``archiver index``; its files are taken as they are,
    checked against its manifest by ``verify`` after packing), else one built now into ``work``
    (streaming over the pages, formats/search.md §5)."""
    if store.has_index(root):
        try:
            index = store.open_index(root)
        except FormatError:
            index = None  # an older or foreign index: built again below
        if index is not None:
            out = {}
            for path in _listed(index):
                full = Path(root) / path
                if not full.is_file() or full.is_symlink():
                    break
                out[path] = full
            else:
                return out
    folder = work / "search"

    def emit(name: str, data: bytes) -> None:
        target = folder / f"{name}.js"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:
            f.write(data)

    folder.mkdir(parents=True, exist_ok=True)
    store.build_index(Path(root), emit)
    for name, data in page.files().items():
        (folder / name).write_bytes(data)
    out = {}
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            full = Path(dirpath) / name
            out[PREFIX + full.relative_to(folder).as_posix()] = full
    return dict(sorted(out.items()))


def _load(read: Read) -> Callable[[str], bytes]:
    def load(name: str) -> bytes:
        try:
            return read(f"{PREFIX}{name}.js")
        except KeyError:
            raise OSError("is missing") from None

    return load


def archive_index(read: Read, label: str) -> Index:
    """The index of an archive read through ``read`` (FormatError when it is damaged)."""
    return Index(_load(read), label)


def check(read: Read, has: Callable[[str], bool]) -> Iterator[tuple[str, str]]:
    """(path, problem) for every damaged or missing file of an archive's index, the paths as the
    archive names them (``_archiver/search/t/3.js``); nothing when the archive has no index."""
    if not has(f"{PREFIX}manifest.js"):
        return
    label = store.INDEX_DIR
    try:
        index = archive_index(read, label)
    except FormatError as e:
        yield (e.subject or f"{PREFIX}manifest.js", e.message)
        return
    for i in range(len(index.shards)):
        try:
            index.shard(i)
        except FormatError as e:
            yield (e.subject or PREFIX, e.message)
    for first, _last, _size, _sha in index.groups:
        try:
            index.fragment(first)
        except FormatError as e:
            yield (e.subject or PREFIX, e.message)
    for (doc, k), _last, _size, _sha in index.texts:
        try:
            index.chunk(doc, k)
        except FormatError as e:
            yield (e.subject or PREFIX, e.message)
    for name in page.files():
        if not has(PREFIX + name):
            yield (PREFIX + name, "is missing")
