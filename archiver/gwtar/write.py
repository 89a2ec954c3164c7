"""Pack a canonical tree (or a SingleFile page, through :mod:`archiver.gwtar.singlefile`) into one
``.gwtar.html`` file (formats/gwtar.md).

The layout is planned in full before a byte is written (:func:`archiver.gwtar.layout.plan`); the body
is then streamed in one pass: small files are read into a fixed 1 MiB batch buffer with their tar
headers and written a buffer at a time; large files are copied by the kernel (``os.copy_file_range``,
plain writes where the kernel cannot). A hashing thread computes each member's SHA-256 from the same
buffers (reading large files itself) while the writer goes on, and a flushing thread starts writeback
as the output grows, so the closing fsync is short. Memory does not grow with file sizes or counts.
The SHA-256 placeholders in the header are patched in place at the end. The output is written to a
temporary name in the target folder, fsynced and renamed; on any error the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import queue
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from archiver import __version__, safefs, tree
from archiver.errors import FormatError, UsageError
from archiver.gwtar import layout, refs, rules
from archiver.gwtar.layout import MemberSpec, Meta
from archiver.gwtar.loader import loader_source
from archiver.media import media_type_for
from archiver.progress import Meter
from archiver.urls import RESERVED_DIR

if TYPE_CHECKING:
    from archiver.par2 import FecResult

__all__ = ["PackResult", "Source", "pack", "tree_source", "write_archive"]

TOOL = f"archiver/{__version__}"
_CHUNK = 1 << 20
#: A page's title is looked for in its first this many bytes (as :func:`archiver.tree.page_title`).
TITLE_LIMIT = _CHUNK
_MAIN_READ_LIMIT = 16 << 20  # bytes of the main page parsed for its assets
_CSS_READ_LIMIT = 4 << 20


@dataclass(frozen=True)
class PackResult:
    """What :func:`pack` wrote. ``members`` and ``pages`` do not count the site index; ``listed`` is
    the number of v1 manifest entries (the main page and its assets); ``size`` is the whole file's,
    ``fec`` the FEC tail written after ``total_archive_size`` (None without ``--add-fec-data``)."""

    path: Path
    overhead: int
    total_archive_size: int
    size: int
    members: int
    pages: int
    listed: int
    main: str
    index_offset: int
    fec: FecResult | None = None


@dataclass
class Source:
    """The input of :func:`write_archive`: member specs (not yet ordered), the file holding each
    member's bytes, the SHA-256 a manifest promises for it (None when unknown), the metadata, and the
    main page's references in discovery order."""

    specs: dict[str, MemberSpec]
    files: dict[str, Path | str]
    expected: dict[str, str | None]
    meta: Meta
    mtime: int
    main_assets: list[tuple[str, refs.Category]]
    v1_names: bool = False  # listed assets keyed by file name (SingleFile input), not by tree path
    # pages whose title is read from their bytes while they are copied (trees without a manifest):
    # one read per file instead of two; the header's numbers that depend on the titles (the index
    # size and totalArchiveSize) have fixed widths and are written again at the end
    late_titles: frozenset[str] = frozenset()


def pack(
    src: Path,
    out: Path,
    *,
    main: str | None = None,
    single_page: bool = False,
    created: str | None = None,
    loader: str | None = None,
    fec: float | None = None,
    progress: Meter | None = None,
) -> PackResult:
    """Pack ``src`` into the gwtar file ``out``.

    ``src`` is a canonical tree (a folder, with or without ``_archiver/manifest.jsonl``), a ZIM (a
    split one by its base name; :func:`_pack_zim`) or a SingleFile-style ``.html`` file. ``main``
    picks the main page (a tree path; default: the page of the manifest's home URL, else
    ``index.html``, else the first page); ``single_page`` packs only the main
    page and its assets. ``created`` (RFC 3339) overrides the capture time; ``loader`` the loader
    script's text (default :func:`~archiver.gwtar.loader.loader_source`). ``fec`` (a redundancy
    fraction, 0.10 for 10 %) appends a PAR2 tail (formats/fec.md) to the temporary file before its one
    fsync and rename, so the FEC'd file appears atomically. The same input and options
    give byte-identical output. ``progress`` is told the body's size and each member's bytes as they
    are written. Raises :class:`UsageError` for bad arguments and :class:`FormatError`
    for an input that cannot be packed; no output file exists after an error."""
    src = Path(src)
    out = Path(out)
    if out.is_dir():
        raise UsageError("is a folder; give the output file name", subject=str(out))
    if not out.parent.is_dir():
        raise UsageError("the output's folder does not exist", subject=str(out))
    loader_text = loader_source() if loader is None else loader
    if _is_zim(src):
        return _pack_zim(
            src, out, main=main, single_page=single_page, created=created, loader=loader_text, fec=fec,
            progress=progress,
        )  # fmt: skip
    if src.is_dir():
        source = tree_source(src, main=main, created=created)
        return write_archive(
            source, out, single_page=single_page, loader=loader_text, fec=fec, progress=progress
        )
    if src.is_file():
        if not src.name.lower().endswith((".html", ".htm")):
            raise UsageError("is neither a tree folder, a ZIM nor a SingleFile .html page", subject=str(src))
        if main is not None:
            raise UsageError("--main applies to tree input only", subject=str(src))
        if rules.MAGIC_COMMENT in _read_prefix(src, 1024):
            raise UsageError("is already a gwtar (extract it to a tree first)", subject=str(src))
        from archiver.gwtar.singlefile import singlefile_source

        with tempfile.TemporaryDirectory(prefix=".gwtar-singlefile-", dir=out.parent) as work:
            source = singlefile_source(src, Path(work), created=created)
            return write_archive(
                source, out, single_page=single_page, loader=loader_text, fec=fec, progress=progress
            )
    raise UsageError("no such file or folder", subject=str(src))


# ---------------------------------------------------------------------------------------------
# ZIM input


def _is_zim(src: Path) -> bool:
    """A ZIM file (by its magic number), or the base name of a split ZIM (``X.zim`` for ``X.zimaa``…)."""
    if src.is_file():
        return _read_prefix(src, 4) == b"ZIM\x04"
    return not src.exists() and src.with_name(f"{src.name}aa").is_file()


def _pack_zim(
    src: Path,
    out: Path,
    *,
    main: str | None,
    single_page: bool,
    created: str | None,
    loader: str,
    fec: float | None,
    progress: Meter | None,
) -> PackResult:
    """A ZIM packed through a tree (formats/zim.md §9): the ZIM is extracted (checked first: its
    structure and checksum; redirects as stubs; a manifest made when it has none, pages known by their
    MIME type) into a private folder beside ``out`` (``.OUT.archiver-tmp-PID-RAND``, removed on every
    exit), which is packed like any tree; the main page is the ZIM's main entry unless ``main``."""
    from archiver.zim.extract import extract
    from archiver.zim.read import open_archive

    with safefs.temp_dir(out) as work:
        folder = work / "tree"
        extract(src, folder)
        if main is None:
            with open_archive(src, check="structure") as reader:
                main = reader.main_path
            if main is not None and not main.lower().endswith((".html", ".htm")):
                main = _main_stub(folder, main)
        source = tree_source(folder, main=main, created=created)
        return write_archive(source, out, single_page=single_page, loader=loader, fec=fec, progress=progress)


def _main_stub(folder: Path, main: str) -> str:
    """Add a page with an ``.html`` name that leads to ``main`` (``index.html``, or the first free
    ``index-N.html``) to the extracted tree and its manifest: a gwtar's main page needs such a name
    (formats/gwtar.md §3) and the old ZIM layout's is ``A/Main_Page``; gwtar → ZIM leaves it out."""
    from archiver.zim.source import STUB_STATUS, redirect_stub

    name = "index.html"
    n = 1
    while (folder / name).exists():
        name, n = f"index-{n}.html", n + 1
    data = redirect_stub(name, main, role="main")
    (folder / name).write_bytes(data)
    record = tree.Record(
        path=name, kind="page", media_type="text/html", size=len(data),
        sha256=hashlib.sha256(data).hexdigest(), status=STUB_STATUS,
    )  # fmt: skip
    if tree.manifest_path(folder).is_file():  # (none when a file of the ZIM is named _archiver)
        with tree.manifest_path(folder).open("ab") as f:
            f.write(msgspec.json.encode(record) + b"\n")
    return name


# ---------------------------------------------------------------------------------------------
# Tree input


def _epoch(created: str, subject: str) -> int:
    try:
        when = datetime.fromisoformat(created)
    except ValueError:
        raise UsageError(f"not an RFC 3339 time: {created!r}", subject=subject) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, min(int(when.timestamp()), 8**11 - 1))


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fallback_created(newest: float) -> str:
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        if not env.isdigit():
            raise UsageError(f"not a number of seconds: {env!r}", subject="SOURCE_DATE_EPOCH")
        return _rfc3339(int(env))
    return _rfc3339(int(newest))


def _sorted_entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as e:
        raise FormatError(f"cannot list folder: {e.strerror}", subject=folder) from None


def _walk(root: str) -> Iterator[tuple[str, str, os.stat_result]]:
    """Regular files under ``root`` in sorted path order as (tree path, file path, stat) (tree.md
    §8.2): files directly inside the reserved folder are metadata and skipped, and so are the tree's
    private files (:func:`archiver.tree.is_private`: the ``tmp`` folder is not entered); symlinks are
    followed only to files inside the root that are not private; symlinked folders and special files
    are skipped. Iterative (one generator, whatever the depth): trees of many small files are walked
    at the cost of the stat."""
    inside = root + os.sep
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", iter(_sorted_entries(root)))]
    while stack:
        prefix, entries = stack[-1]
        in_reserved = prefix == RESERVED_DIR
        # only entries of a top-level folder named like the reserved one (any case) can be private
        maybe_private = prefix.lower() == RESERVED_DIR
        for entry in entries:
            rel = f"{prefix}/{entry.name}" if prefix else entry.name
            if maybe_private and tree.is_private(rel):
                continue
            if entry.is_symlink():
                if entry.is_dir() or in_reserved:
                    continue
                real = os.path.realpath(entry.path)
                if not real.startswith(inside) or _private_real(real[len(inside) :]):
                    continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((rel, iter(_sorted_entries(entry.path))))
                break
            if entry.is_file() and not in_reserved:
                yield rel, entry.path, entry.stat()
        else:
            stack.pop()


def _private_real(rel: str) -> bool:
    """Whether a real path relative to the tree's real root (``os.sep``-separated) is private."""
    return tree.is_private(rel if os.sep == "/" else rel.replace(os.sep, "/"))


def _pick_main(specs: dict[str, MemberSpec], main: str | None, home_page: str | None, src: Path) -> str:
    if main is not None:
        main = main.strip("/")
        if main not in specs:
            raise UsageError("no such page in the tree", subject=main)
        if specs[main].kind != "page" or not main.lower().endswith((".html", ".htm")):
            raise UsageError("the main page must be an HTML page (.html or .htm)", subject=main)
        return main
    if home_page and home_page in specs and home_page.lower().endswith((".html", ".htm")):
        return home_page
    if "index.html" in specs:
        return "index.html"
    pages = sorted(p for p, s in specs.items() if s.kind == "page" and p.lower().endswith((".html", ".htm")))
    if not pages:
        raise FormatError("the tree has no HTML page to open first", subject=str(src))
    return pages[0]


def _read_prefix(path: Path | str, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


def main_assets(
    main: str, files: dict[str, Path | str], kinds: dict[str, str]
) -> list[tuple[str, refs.Category]]:
    """The main page's references resolved to member paths, stylesheets expanded in place (their
    ``@import`` and ``url()`` after them), in discovery order."""
    found: list[tuple[str, refs.Category]] = []
    expanded: set[str] = set()

    def expand_css(path: str) -> None:
        if path in expanded:
            return
        expanded.add(path)
        try:
            text = _read_prefix(files[path], _CSS_READ_LIMIT).decode("utf-8", "replace")
        except OSError:
            return
        for ref in refs.css_refs(text):
            add(path, ref)

    def add(base: str, ref: refs.Ref) -> None:
        target = refs.resolve(base, ref.url)
        if target is None or target not in files or kinds.get(target) != "asset":
            return
        found.append((target, ref.category))
        if ref.category == "style":
            expand_css(target)

    for ref in refs.html_refs(_read_prefix(files[main], _MAIN_READ_LIMIT)):
        add(main, ref)
    return found


def tree_source(src: Path, *, main: str | None = None, created: str | None = None) -> Source:
    """Read a tree (formats/tree.md) into a :class:`Source`: from its manifest when it has one (the
    manifest itself becomes a member too), else by walking it (§8.2), without hashing (hashes are
    computed while copying)."""
    root = src.resolve()
    specs: dict[str, MemberSpec] = {}
    files: dict[str, Path | str] = {}
    expected: dict[str, str | None] = {}
    header = tree.read_header(root)
    newest = 0.0
    home_page: str | None = None
    late: set[str] = set()
    if header is not None:
        for record in tree.read_records(root):
            if record.path in rules.EXCLUDED or tree.is_private(record.path):
                continue  # a private file is left out even when the manifest names it
            why = rules.member_path_problem(record.path)
            if why:
                raise FormatError(f"manifest names an impossible path: {why}", subject=record.path)
            full = root / record.path
            real = full.resolve()
            if not full.is_file() or not real.is_relative_to(root):
                raise FormatError("listed in the manifest but not a file in the tree", subject=str(full))
            if tree.is_private(real.relative_to(root).as_posix()):
                continue  # a symlink to a private file: left out too
            specs[record.path] = MemberSpec(
                path=record.path,
                size=record.size,
                media_type=record.media_type,
                kind=record.kind,
                title=record.title,
                urls=tuple(record.urls),
            )
            files[record.path] = full
            expected[record.path] = record.sha256
            if header.home in record.urls and record.kind == "page" and home_page is None:
                home_page = record.path
        manifest = tree.manifest_path(root)
        rel = manifest.relative_to(root).as_posix()
        specs[rel] = MemberSpec(path=rel, size=manifest.stat().st_size, media_type="application/jsonl")
        files[rel] = manifest
        expected[rel] = None
        when = created or header.created
    else:
        for rel, full, st in _walk(str(root)):
            if rel in rules.EXCLUDED:
                continue
            why = rules.member_path_problem(rel)
            if why:
                raise FormatError(f"cannot be a member: {why}", subject=full)
            is_page = rel.lower().endswith((".html", ".htm"))
            specs[rel] = MemberSpec(
                path=rel, size=st.st_size, media_type=media_type_for(rel), kind="page" if is_page else "asset"
            )
            if is_page:
                late.add(rel)
            files[rel] = full
            expected[rel] = None
            newest = max(newest, st.st_mtime)
        when = created or _fallback_created(newest)
    main_path = _pick_main(specs, main, home_page, src)
    if main_path in late:  # the header needs the main page's title before the body is written
        late.discard(main_path)
        title = tree.page_title(Path(files[main_path]), limit=TITLE_LIMIT)
        specs[main_path] = dataclasses.replace(specs[main_path], title=title)
    kinds = {p: s.kind for p, s in specs.items()}
    stem = main_path.rsplit(".", 1)[0]
    meta = Meta(
        tool=TOOL,
        created=when,
        main=main_path,
        basename=stem,
        source="tree",
        home=header.home if header is not None else None,
        title=specs[main_path].title,
    )
    mtime = _epoch(when, "created")
    return Source(
        specs, files, expected, meta, mtime, main_assets(main_path, files, kinds), late_titles=frozenset(late)
    )


# ---------------------------------------------------------------------------------------------
# Writing
#
# Three things overlap on two cores: the main thread reads small files into a 1 MiB batch buffer
# (their tar headers and padding in between) and writes each full buffer with one system call, and
# has the kernel copy large files (copy_file_range); a hashing thread computes every member's SHA-256
# (from the batch buffers, and by reading large files itself), and a flushing thread starts writeback
# of what is written (sync_file_range), so the final fsync waits for little. hashlib and the system
# calls release the GIL. Memory is a fixed number of buffers, whatever the archive's size.

_BUFFERS = 4  # batch buffers in flight (written, or waiting to be hashed)
_JOBS = 16  # hashing jobs queued at most
_FLUSH_STEP = 16 << 20  # start writeback every this many bytes
_SYNC_FILE_RANGE_WRITE = 2
# copy_file_range refused for these files: fall back to plain reads and writes
_NO_KERNEL_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _open_member(path: Path | str, size: int) -> tuple[int, os.stat_result]:
    """A read-only descriptor for a member's file, checked to be a regular file of ``size`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        raise FormatError(f"cannot read: {e.strerror}", subject=str(path)) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise FormatError("not a regular file", subject=str(path))
        if before.st_size != size:
            raise FormatError(f"is {before.st_size} bytes, expected {size} (changed?)", subject=str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, before


def _check_unchanged(fd: int, before: os.stat_result, path: Path | str) -> None:
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise FormatError("file changed while being packed", subject=str(path))


class _Hasher(threading.Thread):
    """Runs hashing jobs in order. A failing job records the first error and later jobs still run
    their clean-up (buffers go back to the pool, descriptors are closed), so the writer never waits
    forever; the writer raises the error when it next looks."""

    def __init__(self, members: int) -> None:
        super().__init__(name="gwtar-hash", daemon=True)
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=_JOBS)
        self.hashes: list[str | None] = [None] * members
        self.titles: dict[int, str | None] = {}  # member → title, for pages read with want_title
        self.error: BaseException | None = None
        self.buf = bytearray(_CHUNK)

    def run(self) -> None:
        while (job := self.jobs.get()) is not None:
            try:
                job()
            except BaseException as e:  # handed to the writer thread
                if self.error is None:
                    self.error = e

    def hash_file(
        self, fd: int, before: os.stat_result, path: Path | str, i: int, *, want_title: bool = False
    ) -> None:
        """Queue: read and hash a whole file from ``fd`` (then close it) as member ``i``'s SHA-256
        (and its page title from the first :data:`TITLE_LIMIT` bytes when ``want_title``)."""

        def job() -> None:
            try:
                if self.error is not None:
                    return
                digest = hashlib.sha256()
                view = memoryview(self.buf)
                offset = 0
                while offset < before.st_size:
                    n = os.preadv(fd, [view[: min(_CHUNK, before.st_size - offset)]], offset)
                    if n == 0:
                        raise FormatError("file shrank while being packed", subject=str(path))
                    digest.update(view[:n])
                    if want_title and offset == 0:
                        self.titles[i] = tree.title_from_html(bytes(view[: min(n, TITLE_LIMIT)]))
                    offset += n
                _check_unchanged(fd, before, path)
                self.hashes[i] = digest.hexdigest()
            finally:
                os.close(fd)

        self.jobs.put(job)

    def stop(self) -> None:
        self.jobs.put(None)
        self.join()


class _Flusher(threading.Thread):
    """Starts writeback of the output as it grows (``sync_file_range`` where Linux has it, else
    ``fdatasync``), so the closing fsync is short. A hint only: errors are left to that fsync."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="gwtar-flush", daemon=True)
        self.fd = fd
        self.end = 0  # bytes written so far; set by the writer
        self.wake = threading.Event()
        self.done = False
        self.sync_range = _sync_file_range()

    def grew(self, end: int) -> None:
        self.end = end
        self.wake.set()

    def run(self) -> None:
        started = 0
        while not self.done:
            self.wake.wait()
            self.wake.clear()
            end = self.end
            if end - started < _FLUSH_STEP:
                continue
            try:
                if self.sync_range is not None:
                    self.sync_range(self.fd, started, end - started, _SYNC_FILE_RANGE_WRITE)
                else:
                    os.fdatasync(self.fd)
            except OSError:
                return
            started = end

    def stop(self) -> None:
        self.done = True
        self.wake.set()
        self.join()


def _sync_file_range() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        func = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func  # type: ignore[no-any-return]


class _Body:
    """The writer's side: batches small members into a buffer, kernel-copies large ones, and hands
    every byte range to be hashed to the :class:`_Hasher`."""

    def __init__(self, out: int, start: int, hasher: _Hasher, flusher: _Flusher) -> None:
        self.out = out
        self.pos = start  # bytes of the output written so far
        self.hasher = hasher
        self.flusher = flusher
        self.pool: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
        for _ in range(_BUFFERS):
            self.pool.put(bytearray(_CHUNK))
        self.buf = self.pool.get()
        self.view = memoryview(self.buf)
        self.fill = 0
        # hashing work for the current buffer, in order: ("data", digest, start, end) hashes a range,
        # ("done", (i, digest), 0, 0) finishes member i, ("title", i, start, end) reads a page's title
        self.pieces: list[tuple[str, Any, int, int]] = []
        self.kernel_copy = hasattr(os, "copy_file_range")

    def put(self, data: bytes) -> None:
        """Append bytes that are not hashed (tar headers, padding, the index)."""
        view = memoryview(data)
        while view:
            if self.fill == _CHUNK:
                self.flush()
            n = min(len(view), _CHUNK - self.fill)
            self.view[self.fill : self.fill + n] = view[:n]
            self.fill += n
            view = view[n:]

    def member(self, i: int, path: Path | str, size: int, head: bytes, *, want_title: bool = False) -> None:
        """Member ``i``: its header blocks ``head``, then the file's ``size`` bytes (a page's title is
        taken from them on the way when ``want_title``)."""
        self.put(head)
        fd, before = _open_member(path, size)
        if size >= _CHUNK and self.kernel_copy:
            self._copy_large(i, fd, before, path, size, want_title)
            return
        try:
            digest = hashlib.sha256()
            if want_title:  # the whole page in one buffer, so its title is found in one piece
                if self.fill + size > _CHUNK:
                    self.flush()
                self.pieces.append(("title", i, self.fill, self.fill + size))
            self._read_in(fd, 0, size, path, digest)
            _check_unchanged(fd, before, path)
            self.pieces.append(("done", (i, digest), 0, 0))
        finally:
            os.close(fd)

    def _copy_large(
        self, i: int, fd: int, before: os.stat_result, path: Path | str, size: int, want_title: bool
    ) -> None:
        self.flush()
        try:
            self.hasher.hash_file(os.dup(fd), before, path, i, want_title=want_title)
            done = 0
            while done < size:
                try:
                    n = os.copy_file_range(fd, self.out, size - done, done)
                except OSError as e:
                    if e.errno not in _NO_KERNEL_COPY:
                        raise
                    self.kernel_copy = False
                    self._plain_copy(fd, done, size, path)
                    break
                if n == 0:
                    raise FormatError("file shrank while being packed", subject=str(path))
                done += n
                self.pos += n
                self.flusher.grew(self.pos)
            _check_unchanged(fd, before, path)
        finally:
            os.close(fd)

    def _plain_copy(self, fd: int, offset: int, size: int, path: Path | str) -> None:
        """The rest of a large file through the batch buffer (already being hashed by the hasher)."""
        self._read_in(fd, offset, size, path)
        self.flush()

    def _read_in(
        self, fd: int, offset: int, size: int, path: Path | str, digest: hashlib._Hash | None = None
    ) -> None:
        """Read bytes [offset, size) of ``fd`` into the batch buffers (flushing each full one), to be
        hashed into ``digest`` when given."""
        while offset < size:
            if self.fill == _CHUNK:
                self.flush()
            want = min(size - offset, _CHUNK - self.fill)
            n = os.preadv(fd, [self.view[self.fill : self.fill + want]], offset)
            if n == 0:
                raise FormatError("file shrank while being packed", subject=str(path))
            if digest is not None:
                self.pieces.append(("data", digest, self.fill, self.fill + n))
            self.fill += n
            offset += n

    def flush(self) -> None:
        """Queue the buffer's pieces for hashing, write it, and take the next free buffer."""
        if self.hasher.error is not None:
            raise self.hasher.error
        if not self.fill:
            return
        buf, view, fill, pieces = self.buf, self.view, self.fill, self.pieces
        hashes, titles, pool = self.hasher.hashes, self.hasher.titles, self.pool

        def job() -> None:
            try:
                for kind, what, start, end in pieces:
                    if kind == "data":  # what: the member's digest
                        what.update(view[start:end])
                    elif kind == "done":  # what: (member, digest)
                        hashes[what[0]] = what[1].hexdigest()
                    else:  # "title"; what: the member
                        titles[what] = tree.title_from_html(
                            bytes(view[start : min(end, start + TITLE_LIMIT)])
                        )
            finally:
                pool.put(buf)

        self.hasher.jobs.put(job)
        _write_all(self.out, view[:fill])
        self.pos += fill
        self.flusher.grew(self.pos)
        self.buf = self.pool.get()
        self.view = memoryview(self.buf)
        self.fill = 0
        self.pieces = []


def write_archive(
    source: Source,
    out: Path,
    *,
    single_page: bool = False,
    loader: str,
    fec: float | None = None,
    progress: Meter | None = None,
) -> PackResult:
    """Order, plan and write ``source`` to ``out`` atomically (with a FEC tail when ``fec`` is a
    redundancy fraction)."""
    members = layout.order_members(
        list(source.specs.values()),
        source.meta.main,
        source.main_assets,
        single_page=single_page,
        v1_names=source.v1_names,
    )
    plan = layout.plan(members, source.meta, loader=loader, mtime=source.mtime)
    engine = None
    if fec is not None:  # bad settings and a missing engine fail before anything is written
        from archiver import par2

        par2.plan(plan.total_archive_size, fec)
        engine = par2.find_engine()
    with safefs.interruptible():
        return _write_out(source, out, plan, loader=loader, fec=fec, engine=engine, progress=progress)


def _write_out(
    source: Source,
    out: Path,
    plan: layout.Plan,
    *,
    loader: str,
    fec: float | None,
    engine: Any,
    progress: Meter | None,
) -> PackResult:
    fec_result = None
    tmp = safefs.temp_path(out, ".tmp")  # stale ones of killed runs are removed first
    fd = -1
    try:  # created inside the try: a signal right after the open still removes it
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o644)
        _write_all(fd, plan.header)
        meter = Meter() if progress is None else progress
        meter.start(sum(m.size for m in plan.members))
        hashes, titles = _write_body(fd, plan, source, meter)
        if titles:  # the pages' titles are known now: the index, and the header's sizes, follow them
            members = [
                dataclasses.replace(spec, title=titles[i]) if i in titles else spec
                for i, spec in enumerate(plan.members)
            ]
            final = layout.plan(members, source.meta, loader=loader, mtime=source.mtime)
            if (final.overhead, final.data_offsets, final.hash_slots) != (
                plan.overhead,
                plan.data_offsets,
                plan.hash_slots,
            ):
                raise AssertionError("the titles moved the layout")
            plan = final
            os.pwrite(fd, plan.header, 0)
        index_digest = hashlib.sha256()
        pending = bytearray(plan.blocks(len(plan.members)))
        written = 0
        for chunk in plan.index_chunks(hashes):
            index_digest.update(chunk)
            written += len(chunk)
            pending += chunk
            if len(pending) >= _CHUNK:
                _write_all(fd, pending)
                pending.clear()
        pending += bytes(-written % 512)
        pending += plan.end_blocks()
        _write_all(fd, pending)
        assert written == plan.index_size
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end != plan.total_archive_size:
            raise AssertionError(f"wrote {end} bytes, planned {plan.total_archive_size}")
        for slot, digest in zip(plan.hash_slots, hashes, strict=False):
            os.pwrite(fd, digest.encode("ascii"), slot)
        os.pwrite(fd, index_digest.hexdigest().encode("ascii"), plan.index_hash_slot)
        if fec is not None:
            from archiver import par2

            fec_result = par2.append_fec(tmp, name=out.name, redundancy=fec, engine=engine)
            fec_result = dataclasses.replace(fec_result, path=out)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, out)
        _fsync_dir(out.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return PackResult(
        path=out,
        overhead=plan.overhead,
        total_archive_size=plan.total_archive_size,
        size=plan.total_archive_size + (fec_result.fec_size if fec_result is not None else 0),
        members=len(plan.members),
        pages=sum(1 for m in plan.members if m.kind == "page"),
        listed=len(plan.hash_slots),
        main=source.meta.main,
        index_offset=plan.overhead + plan.index_offset,
        fec=fec_result,
    )


def _write_body(
    fd: int, plan: layout.Plan, source: Source, meter: Meter
) -> tuple[list[str], dict[int, str | None]]:
    """Write every member (headers, data, padding) after the header at ``fd``'s position; return
    the members' SHA-256 values, checked against the manifest's, and the titles of the pages in
    ``source.late_titles`` (by member index)."""
    hasher = _Hasher(len(plan.members))
    flusher = _Flusher(fd)
    hasher.start()
    flusher.start()
    try:
        body = _Body(fd, len(plan.header), hasher, flusher)
        padding = b""  # the previous member's padding goes out with the next header
        late = source.late_titles
        for i, spec in enumerate(plan.members):
            body.member(
                i, source.files[spec.path], spec.size, padding + plan.blocks(i), want_title=spec.path in late
            )
            padding = bytes(-spec.size % 512)
            meter.advance(spec.size)
        body.put(padding)
        body.flush()
    finally:
        hasher.stop()
        flusher.stop()
    if hasher.error is not None:
        raise hasher.error
    hashes: list[str] = []
    for spec, digest in zip(plan.members, hasher.hashes, strict=True):
        assert digest is not None
        promised = source.expected.get(spec.path)
        if promised is not None and promised != digest:
            raise FormatError(f"SHA-256 {digest} does not match the manifest's {promised}", subject=spec.path)
        hashes.append(digest)
    return hashes, hasher.titles


def _fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
