"""Pack a canonical tree (or a SingleFile page, through :mod:`archiver.gwtar.singlefile`) into one
``.gwtar.html`` file (formats/gwtar.md).

The layout is planned in full before a byte is written (:func:`archiver.gwtar.layout.plan`); the body
is then streamed: each file is read in fixed-size chunks, hashed on the way and copied into the
output with ``os.copy_file_range`` (plain writes of the same chunk where the kernel cannot), so memory
does not grow with file sizes. The SHA-256 placeholders in the header are patched in place at the end.
The output is written to a temporary name in the target folder, fsynced and renamed; on any error the
temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from archiver import __version__, tree
from archiver.errors import FormatError, UsageError
from archiver.gwtar import layout, refs
from archiver.gwtar.layout import MemberSpec, Meta
from archiver.gwtar.loader import loader_source
from archiver.media import media_type_for
from archiver.urls import RESERVED_DIR

__all__ = ["PackResult", "Source", "pack", "tree_source", "write_archive"]

TOOL = f"archiver/{__version__}"
_CHUNK = 1 << 20
_MAIN_READ_LIMIT = 16 << 20  # bytes of the main page parsed for its assets
_CSS_READ_LIMIT = 4 << 20


@dataclass(frozen=True)
class PackResult:
    """What :func:`pack` wrote. ``members`` and ``pages`` do not count the site index; ``listed`` is
    the number of v1 manifest entries (the main page and its assets)."""

    path: Path
    overhead: int
    total_archive_size: int
    size: int
    members: int
    pages: int
    listed: int
    main: str
    index_offset: int


@dataclass
class Source:
    """The input of :func:`write_archive`: member specs (not yet ordered), the file holding each
    member's bytes, the SHA-256 a manifest promises for it (None when unknown), the metadata, and the
    main page's references in discovery order."""

    specs: dict[str, MemberSpec]
    files: dict[str, Path]
    expected: dict[str, str | None]
    meta: Meta
    mtime: int
    main_assets: list[tuple[str, refs.Category]]
    v1_names: bool = False  # listed assets keyed by file name (SingleFile input), not by tree path


def pack(
    src: Path,
    out: Path,
    *,
    main: str | None = None,
    single_page: bool = False,
    created: str | None = None,
    loader: str | None = None,
) -> PackResult:
    """Pack ``src`` into the gwtar file ``out``.

    ``src`` is a canonical tree (a folder, with or without ``_archiver/manifest.jsonl``) or a
    SingleFile-style ``.html`` file. ``main`` picks the main page (a tree path; default: the page of the
    manifest's home URL, else ``index.html``, else the first page); ``single_page`` packs only the main
    page and its assets. ``created`` (RFC 3339) overrides the capture time; ``loader`` the loader
    script's text (default :func:`~archiver.gwtar.loader.loader_source`). The same input and options
    give byte-identical output. Raises :class:`UsageError` for bad arguments and :class:`FormatError`
    for an input that cannot be packed; no output file exists after an error."""
    src = Path(src)
    out = Path(out)
    if out.is_dir():
        raise UsageError("is a folder; give the output file name", subject=str(out))
    if not out.parent.is_dir():
        raise UsageError("the output's folder does not exist", subject=str(out))
    loader_text = loader_source() if loader is None else loader
    if src.is_dir():
        source = tree_source(src, main=main, created=created)
        return write_archive(source, out, single_page=single_page, loader=loader_text)
    if src.is_file():
        if not src.name.lower().endswith((".html", ".htm")):
            raise UsageError("is neither a tree folder nor a SingleFile .html page", subject=str(src))
        if main is not None:
            raise UsageError("--main applies to tree input only", subject=str(src))
        if layout.MAGIC_COMMENT in _read_prefix(src, 1024):
            raise UsageError("is already a gwtar (extract it to a tree first)", subject=str(src))
        from archiver.gwtar.singlefile import singlefile_source

        with tempfile.TemporaryDirectory(prefix=".gwtar-singlefile-", dir=out.parent) as work:
            source = singlefile_source(src, Path(work), created=created)
            return write_archive(source, out, single_page=single_page, loader=loader_text)
    raise UsageError("no such file or folder", subject=str(src))


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


def _walk(root: str, prefix: str = "") -> Iterator[tuple[str, str, os.stat_result]]:
    """Regular files under ``root`` in sorted path order as (tree path, file path, stat) (tree.md
    §8.2): files directly inside the reserved folder are metadata and skipped; symlinks are followed
    only to files inside the root; symlinked folders and special files are skipped."""
    folder = os.path.join(root, prefix) if prefix else root
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError as e:
        raise FormatError(f"cannot list folder: {e.strerror}", subject=folder) from None
    in_reserved = prefix == RESERVED_DIR
    for entry in entries:
        rel = f"{prefix}/{entry.name}" if prefix else entry.name
        if entry.is_symlink():
            target = os.path.realpath(entry.path)
            if entry.is_dir() or in_reserved or not (target + os.sep).startswith(root + os.sep):
                continue
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(root, rel)
        elif entry.is_file() and not in_reserved:
            yield rel, entry.path, entry.stat()


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


def _read_prefix(path: Path, limit: int) -> bytes:
    with path.open("rb") as f:
        return f.read(limit)


def main_assets(main: str, files: dict[str, Path], kinds: dict[str, str]) -> list[tuple[str, refs.Category]]:
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
    files: dict[str, Path] = {}
    expected: dict[str, str | None] = {}
    header = tree.read_header(root)
    newest = 0.0
    home_page: str | None = None
    if header is not None:
        for record in tree.read_records(root):
            if record.path in layout.EXCLUDED:
                continue
            why = layout.member_path_problem(record.path)
            if why:
                raise FormatError(f"manifest names an impossible path: {why}", subject=record.path)
            full = root / record.path
            if not full.is_file() or not full.resolve().is_relative_to(root):
                raise FormatError("listed in the manifest but not a file in the tree", subject=str(full))
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
            if rel in layout.EXCLUDED:
                continue
            why = layout.member_path_problem(rel)
            if why:
                raise FormatError(f"cannot be a member: {why}", subject=full)
            is_page = rel.lower().endswith((".html", ".htm"))
            specs[rel] = MemberSpec(
                path=rel,
                size=st.st_size,
                media_type=media_type_for(rel),
                kind="page" if is_page else "asset",
                title=tree.page_title(Path(full)) if is_page else None,
            )
            files[rel] = Path(full)
            expected[rel] = None
            newest = max(newest, st.st_mtime)
        when = created or _fallback_created(newest)
    main_path = _pick_main(specs, main, home_page, src)
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
    return Source(specs, files, expected, meta, mtime, main_assets(main_path, files, kinds))


# ---------------------------------------------------------------------------------------------
# Writing


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class _Copier:
    """Copies files into the output, hashing on the way; remembers when copy_file_range is refused."""

    def __init__(self) -> None:
        self.buf = bytearray(_CHUNK)
        self.kernel_copy = hasattr(os, "copy_file_range")

    def copy(self, path: Path, out: int, size: int, head: bytes = b"") -> str:
        """Write ``head`` then the file's ``size`` bytes to ``out``; return their SHA-256. A file that
        fits one chunk goes out with its header in one ``writev``; larger ones by kernel copy."""
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
            digest = hashlib.sha256()
            view = memoryview(self.buf)
            offset = 0
            if size <= _CHUNK:
                n = os.preadv(fd, [view[:size]], 0) if size else 0
                if n != size:
                    raise FormatError("file shrank while being packed", subject=str(path))
                digest.update(view[:n])
                done = os.writev(out, [head, view[:n]])
                if done < len(head) + n:  # a short write: finish it plainly
                    _write_all(out, (bytes(head) + bytes(view[:n]))[done:])
                offset = n
            else:
                _write_all(out, head)
            while offset < size:
                want = min(_CHUNK, size - offset)
                n = os.preadv(fd, [view[:want]], offset)
                if n == 0:
                    raise FormatError("file shrank while being packed", subject=str(path))
                digest.update(view[:n])
                self._out(fd, out, view[:n], offset, path)
                offset += n
            after = os.fstat(fd)
            if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                raise FormatError("file changed while being packed", subject=str(path))
            return digest.hexdigest()
        finally:
            os.close(fd)

    def _out(self, src: int, out: int, chunk: memoryview, offset: int, path: Path) -> None:
        if self.kernel_copy:
            done = 0
            try:
                while done < len(chunk):
                    n = os.copy_file_range(src, out, len(chunk) - done, offset + done)
                    if n == 0:
                        raise FormatError("file shrank while being packed", subject=str(path))
                    done += n
                return
            except OSError as e:
                if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                    raise
                self.kernel_copy = False
                _write_all(out, chunk[done:])
                return
        _write_all(out, chunk)


def write_archive(source: Source, out: Path, *, single_page: bool = False, loader: str) -> PackResult:
    """Order, plan and write ``source`` to ``out`` atomically."""
    members = layout.order_members(
        list(source.specs.values()),
        source.meta.main,
        source.main_assets,
        single_page=single_page,
        v1_names=source.v1_names,
    )
    plan = layout.plan(members, source.meta, loader=loader, mtime=source.mtime)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, 0o644)
        _write_all(fd, plan.header)
        copier = _Copier()
        hashes: list[str] = []
        padding = b""  # the previous member's padding goes out with the next header
        for i, spec in enumerate(plan.members):
            digest = copier.copy(source.files[spec.path], fd, spec.size, padding + plan.blocks(i))
            promised = source.expected.get(spec.path)
            if promised is not None and promised != digest:
                raise FormatError(
                    f"SHA-256 {digest} does not match the manifest's {promised}", subject=spec.path
                )
            hashes.append(digest)
            padding = bytes(-spec.size % 512)
        _write_all(fd, padding + plan.blocks(len(plan.members)))
        index_digest = hashlib.sha256()
        written = 0
        pending = bytearray()
        for chunk in plan.index_chunks(hashes):
            index_digest.update(chunk)
            written += len(chunk)
            pending += chunk
            if len(pending) >= _CHUNK:
                _write_all(fd, pending)
                pending.clear()
        _write_all(fd, pending)
        assert written == plan.index_size
        _write_all(fd, bytes(-written % 512))
        _write_all(fd, plan.end_blocks())
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end != plan.total_archive_size:
            raise AssertionError(f"wrote {end} bytes, planned {plan.total_archive_size}")
        for slot, digest in zip(plan.hash_slots, hashes, strict=False):
            os.pwrite(fd, digest.encode("ascii"), slot)
        os.pwrite(fd, index_digest.hexdigest().encode("ascii"), plan.index_hash_slot)
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
        size=plan.total_archive_size,
        members=len(plan.members),
        pages=sum(1 for m in plan.members if m.kind == "page"),
        listed=len(plan.hash_slots),
        main=source.meta.main,
        index_offset=plan.overhead + plan.index_offset,
    )


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
