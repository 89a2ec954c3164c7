"""Extract a gwtar's body into a folder (``archiver extract``) and list its members (``archiver ls``).

Extraction walks the tar like ``tar x`` does, so it gives back every member (for a tree, the tree),
but it is safe on hostile input: every member is checked before anything is written, and the whole
extraction is refused when one name is absolute or has a ``..`` segment, when a symbolic link
points outside the folder (absolute, or ``..`` above it), when a hard link names anything but an
earlier member, or for device files and FIFOs. Existing files are never replaced without ``force``;
no file is ever written through a symbolic link. Each file is written to a temporary name, checked
against its recorded SHA-256 when the archive has one, fsynced and renamed into place. The site
index member (``_archiver/gwtar-index.json``) is archive metadata and is not extracted.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from archiver.errors import FormatError, UsageError
from archiver.gwtar import layout
from archiver.gwtar.read import Member, TarEntry, TarWalk
from archiver.gwtar.read import open as open_gwtar

__all__ = ["extract", "ls"]

_CHUNK = 1 << 20
_FILE_TYPES = (b"0", b"\x00", b"7")


@dataclass(frozen=True)
class _Item:
    entry: TarEntry
    name: str  # without a trailing slash
    kind: str  # file, dir, symlink, hardlink


def ls(path: Path) -> list[Member]:
    """The members of a gwtar file in tar order (see :class:`archiver.gwtar.Member`)."""
    with open_gwtar(path) as g:
        return list(g.members)


def _refuse(path: Path, entry: TarEntry, why: str) -> FormatError:
    return FormatError(
        f"refusing to extract member {entry.name!r} at offset {entry.ustar_offset}: {why}", subject=str(path)
    )


def _plan(path: Path, entries: list[TarEntry]) -> list[_Item]:
    items: list[_Item] = []
    files: set[str] = set()
    for entry in entries:
        name = entry.name.rstrip("/") if entry.typeflag == b"5" else entry.name
        if entry.typeflag in _FILE_TYPES and name == layout.INDEX_PATH:
            continue
        why = layout.member_path_problem(name)
        if why:
            raise _refuse(path, entry, why)
        if entry.typeflag in _FILE_TYPES:
            kind = "file"
        elif entry.typeflag == b"5":
            kind = "dir"
        elif entry.typeflag == b"2":
            target = entry.linkname
            if not target or target.startswith("/"):
                raise _refuse(path, entry, f"symbolic link to an absolute path {target!r}")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
            if resolved == ".." or resolved.startswith("../"):
                raise _refuse(path, entry, f"symbolic link {target!r} leaves the output folder")
            kind = "symlink"
        elif entry.typeflag == b"1":
            target = entry.linkname.rstrip("/")
            if layout.member_path_problem(target) or target not in files:
                raise _refuse(path, entry, f"hard link to {entry.linkname!r}, which is not an earlier member")
            kind = "hardlink"
        elif entry.typeflag in (b"3", b"4"):
            raise _refuse(path, entry, "device file")
        elif entry.typeflag == b"6":
            raise _refuse(path, entry, "FIFO")
        else:
            raise _refuse(path, entry, f"unknown tar type {entry.typeflag!r}")
        if kind != "dir":
            files.add(name)
        items.append(_Item(entry, name, kind))
    folders = {posixpath.dirname(i.name) for i in items} - {""}
    parents = {"/".join(f.split("/")[: n + 1]) for f in folders for n in range(f.count("/") + 1)}
    clash = sorted(parents & files)
    if clash:
        raise FormatError(f"member {clash[0]!r} is both a file and a folder", subject=str(path))
    return items


def _safe_folder(root: Path, rel: str) -> Path:
    """Create ``root/rel`` as a folder, refusing to pass through a symbolic link or a file."""
    folder = root
    for part in rel.split("/") if rel else []:
        folder = folder / part
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            os.mkdir(folder)
            continue
        if stat.S_ISLNK(st.st_mode):
            raise FormatError("is a symbolic link; refusing to write through it", subject=str(folder))
        if not stat.S_ISDIR(st.st_mode):
            raise FormatError("is a file where a folder is needed", subject=str(folder))
    return folder


def extract(path: Path, out_dir: Path, *, force: bool = False) -> int:
    """Extract every member of the gwtar file ``path`` into ``out_dir`` (created if missing) and return
    how many were written (files and links). Raises :class:`FormatError` for a damaged archive or an
    unsafe member (nothing is written then) and :class:`UsageError` when a target exists and ``force``
    is false."""
    path, out_dir = Path(path), Path(out_dir)
    with open_gwtar(path) as g:
        known = {m.offset: m.sha256 for m in g.members}
        with path.open("rb") as f:
            walk = TarWalk(f, g.overhead, g.total_archive_size)
            entries = list(walk)
            if walk.problems:
                p = walk.problems[0]
                raise FormatError(f"offset {p.offset}: {p.message}; nothing extracted", subject=str(path))
            items = _plan(path, entries)
            if out_dir.exists() and not out_dir.is_dir():
                raise UsageError("exists and is not a folder", subject=str(out_dir))
            if not force:
                for item in items:
                    target = out_dir / item.name
                    if os.path.lexists(target) and not (item.kind == "dir" and target.is_dir()):
                        raise UsageError("exists; use --force to overwrite", subject=str(target))
            out_dir.mkdir(parents=True, exist_ok=True)
            root = out_dir.resolve()
            written = 0
            buf = bytearray(_CHUNK)
            for item in items:
                if item.kind == "dir":
                    _safe_folder(root, item.name)
                    continue
                folder = _safe_folder(root, posixpath.dirname(item.name))
                target = folder / posixpath.basename(item.name)
                if target.is_dir() and not target.is_symlink():
                    raise FormatError("is a folder; a member needs it as a file", subject=str(target))
                _place(f.fileno(), item, root, folder, target, known.get(item.entry.data_offset), buf)
                written += 1
    return written


def _place(
    src: int, item: _Item, root: Path, folder: Path, target: Path, sha256: str | None, buf: bytearray
) -> None:
    tmp = Path(tempfile.mktemp(prefix=f".{target.name[:40]}.", suffix=".tmp", dir=folder))
    try:
        if item.kind == "symlink":
            os.symlink(item.entry.linkname, tmp)
        elif item.kind == "hardlink":
            os.link(root / item.entry.linkname.rstrip("/"), tmp, follow_symlinks=False)
        else:
            _write_file(src, item.entry, tmp, sha256, buf)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _write_file(src: int, entry: TarEntry, tmp: Path, sha256: str | None, buf: bytearray) -> None:
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        digest = hashlib.sha256()
        view = memoryview(buf)
        offset, left = entry.data_offset, entry.size
        while left:
            n = os.preadv(src, [view[: min(left, len(view))]], offset)
            if n == 0:
                raise FormatError(f"the file ends inside member {entry.name!r} (truncated)")
            digest.update(view[:n])
            chunk = view[:n]
            while chunk:
                chunk = chunk[os.write(fd, chunk) :]
            offset += n
            left -= n
        if sha256 is not None and digest.hexdigest() != sha256:
            raise FormatError(
                f"member {entry.name!r} at offset {entry.data_offset}: SHA-256 does not match the archive's "
                "record (damaged); not extracted"
            )
        mode = entry.header.mode & 0o755 or 0o644
        os.fchmod(fd, mode)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.utime(tmp, (entry.header.mtime, entry.header.mtime))
