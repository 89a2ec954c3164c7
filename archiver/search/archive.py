"""The search index inside a packed archive (formats/search.md §8): the same files as a tree's
``_archiver/search/`` (formats/search.md §4.1), as gwtar members or ZIM entries under the same
paths. :func:`pack_files` gives the files to pack (the tree's own index, or one built at pack time);
:func:`archive_index` opens an archive's index through its members or entries, reading one file per
shard a query needs; :func:`check` reports every damaged or missing index file by its path."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from archiver.errors import FormatError
from archiver.search import build, page, store
from archiver.search.guarded import extract
from archiver.search.query import Index
from archiver.search.text import MAX_HTML
from archiver.walk import walk

__all__ = [
    "PREFIX",
    "archive_index",
    "bounded",
    "build_pages",
    "check",
    "entry_reads",
    "is_index_path",
    "media_type",
    "member_reads",
    "pack_files",
    "pack_sizes",
    "page_paths",
    "sidecar",
    "sidecar_read",
    "write_sidecar",
]

#: Every index file's path starts with this, in a tree, a gwtar and a ZIM alike.
PREFIX = f"{store.INDEX_DIR}/"

Read = Callable[[str], bytes]  # a tree path → the member's or entry's bytes (KeyError when absent)
Head = Callable[[str, int], bytes]  # (a tree path, n) → at most the first n bytes of it (KeyError: absent)


def bounded(size_of: Callable[[str], int], head: Head) -> Read:
    """The :data:`Read` of an archive's index files from its members' or entries' sizes and first
    bytes: one of more than :data:`store.MAX_FILE` bytes is refused unread (OSError), as in a tree
    (a forged archive's 1 TiB member is not read whole)."""

    def read(path: str) -> bytes:
        size = size_of(path)
        if size > store.MAX_FILE:
            raise OSError(errno.EFBIG, f"is larger than {store.MAX_FILE} bytes")
        return head(path, size)

    return read


def member_reads(reader: Any) -> tuple[Read, Head]:
    """(:data:`Read` of index files, :data:`Head`) of a gwtar's members (a ``GwtarReader``)."""

    def head(path: str, n: int) -> bytes:
        with reader.open_member(path) as f:
            return bytes(f.read(n))

    return bounded(lambda p: reader.member(p).size, head), head


def entry_reads(zim: Any) -> tuple[Read, Head]:
    """(:data:`Read` of index files, :data:`Head`) of a ZIM's entries (a ``ZimReader``)."""

    def head(path: str, n: int) -> bytes:
        return zim.get(path).read(0, n)

    return bounded(lambda p: zim.get(p).size, head), head


def is_index_path(path: str) -> bool:
    return path.startswith(PREFIX)


def media_type(path: str) -> str:
    return "text/html" if path.endswith(".html") else "text/javascript"


def compressed(path: str, data: bytes) -> bool:
    """Whether the index file ``data`` (at tree path ``path``) holds a format 3 compressed payload
    (formats/search.md §4.1): a container stores it as it is (a second compression gains a little of
    base 64's third back for all the CPU it costs)."""
    name = path[len(PREFIX) : -len(".js")] if is_index_path(path) and path.endswith(".js") else ""
    return bool(name) and name != "manifest" and data.startswith(build.wrap(name, b'"')[:-3])


def _listed(index: Index) -> list[str]:
    """The paths of every file the index's manifest names, then the search page's."""
    names = ["manifest"]
    names += [f"t/{i}" for i in range(len(index.shards))]
    names += [f"d/{i}" for i in range(len(index.groups))]
    names += [f"x/{i}" for i in range(index.text_files)]
    return [f"{PREFIX}{n}.js" for n in names] + [f"{PREFIX}{n}" for n in page.files()]


def pack_files(root: Path, work: Path) -> dict[str, Path]:
    """The index files to pack with the tree at ``root``, by tree path (:func:`pack_sizes` without
    the sizes)."""
    return {path: Path(full) for path, (full, _size) in pack_sizes(root, work).items()}


def pack_sizes(root: Path, work: Path, known: Mapping[str, int] | None = None) -> dict[str, tuple[str, int]]:
    """The index files to pack with the tree at ``root``, by tree path, as (file, size): the tree's
    own index when it has one this archiver reads (written by ``archiver index``; its files are taken
    as they are, checked against its manifest by ``verify`` after packing; the search page and its
    script are this archiver's, written into ``work``, so an index made by an older archiver gets the
    page that works inside the loader), else one built now into ``work`` (streaming over the pages,
    formats/search.md §5). A tree's index file is looked at with one ``lstat`` (a regular file, not
    a symbolic link: the index is thousands of small files, and pack pays for each), or not at all
    when ``known`` has its size (what a walk of the tree found for a plain file, by tree path)."""
    known = known or {}
    if store.has_index(root):
        try:
            index = store.open_index(root)
        except FormatError:
            index = None  # an older or foreign index: built again below
        if index is not None:
            out: dict[str, tuple[str, int]] = {}
            fresh = work / "search-page"
            pages = {PREFIX + name: data for name, data in page.files().items()}
            base = os.path.join(root, "")
            for path in _listed(index):
                if path in pages:  # the page and its script: this archiver's, not the tree's copy
                    fresh.mkdir(parents=True, exist_ok=True)
                    target = fresh / path.rsplit("/", 1)[-1]
                    target.write_bytes(pages[path])
                    out[path] = (str(target), len(pages[path]))
                    continue
                full = base + path if os.sep == "/" else os.path.join(base, *path.split("/"))
                if path in known:
                    out[path] = (full, known[path])
                    continue
                try:
                    st = os.lstat(full)
                except OSError:
                    break
                if not stat.S_ISREG(st.st_mode):  # a symbolic link, a folder, a device
                    break
                out[path] = (full, st.st_size)
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
    built = {}
    for dirpath, _dirs, files in walk(folder):
        for name in files:
            full = Path(dirpath) / name
            built[PREFIX + full.relative_to(folder).as_posix()] = (str(full), full.stat().st_size)
    return dict(sorted(built.items()))


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
    yield from store.file_problems(index, PREFIX)
    for name in page.files():
        if not has(PREFIX + name):
            yield (PREFIX + name, "is missing")


# ---------------------------------------------------------------------------------------------
# An index beside an archive packed without one: ``X.search/`` (formats/search.md §8.1)

_HTML = (".html", ".htm", ".xhtml")


def sidecar(archive_path: Path) -> Path:
    """Where ``archiver index ARCHIVE`` puts the index of an archive that has none."""
    return archive_path.with_name(archive_path.name + ".search")


def page_paths(paths: Iterable[tuple[str, str]]) -> list[str]:
    """The archive's HTML pages (path, media type) in path order, the reserved folder left out."""
    return sorted(
        p
        for p, media in paths
        if not p.startswith("_archiver/") and (p.lower().endswith(_HTML) or media == "text/html")
    )


def build_pages(pages: Sequence[str], head: Head, emit: build.Emit) -> dict:
    """Build the index of ``pages`` (their first :data:`MAX_HTML` bytes read through ``head``) through
    ``emit``, as :func:`archiver.search.store.build_index` does for a tree (the same bytes for the
    same pages)."""
    sample = (extract(head(p, MAX_HTML)) for p in pages[: build.BOILERPLATE_SAMPLE])
    builder = build.Builder(emit, skip=build.boilerplate(sample))
    for p in pages:
        builder.add(p, extract(head(p, MAX_HTML)))
    manifest = builder.finish()
    emit("manifest", build.manifest_bytes(manifest))
    return manifest


def write_sidecar(archive_path: Path, pages: Sequence[str], head: Head) -> tuple[dict, Path]:
    """Build ``X.search/`` beside the archive: into a temporary folder beside it, then renamed over
    the previous one (the archive itself is never touched: its hashes, FEC data and any signature
    stay valid)."""
    target = sidecar(archive_path)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:

        def emit(name: str, data: bytes) -> None:
            path = work / f"{name}.js"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as f:
                f.write(data)

        manifest = build_pages(pages, head, emit)
        for name, data in page.files().items():
            (work / name).write_bytes(data)
        os.chmod(work, 0o755)
        old = None
        if target.is_symlink() or target.is_file():
            raise FormatError("is in the way (not a folder this archiver wrote)", subject=str(target))
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}-old-", dir=target.parent))
            os.rename(target, old / "x")
        os.rename(work, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return manifest, target


def sidecar_read(folder: Path) -> Read:
    """Read a sidecar's files by their archive path (``_archiver/search/t/0.js``)."""

    def read(path: str) -> bytes:
        if not is_index_path(path):
            raise KeyError(path)
        parts = path[len(PREFIX) :].split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise KeyError(path)
        try:
            return store.read_file(folder.joinpath(*parts))
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(path) from None

    return read
