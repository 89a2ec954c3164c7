"""Extract a gwtar's body into a folder (``archiver extract``) and list its members (``archiver ls``).

Extraction walks the tar like ``tar x`` does, so it gives back every member (for a tree, the tree),
but it is safe on hostile input (:class:`archiver.safefs.Staging`). Every member is checked before
anything is written: the whole extraction is refused when a name is absolute or has a ``.``/``..``
segment, when a name appears twice or is both a file and a folder, for device files, FIFOs and
unknown types, and for links unless ``keep_symlinks``. Then it writes into a private staging folder
through ``O_NOFOLLOW`` folder descriptors, checks each file's SHA-256 as it streams (when the archive
records one), makes the kept links last (a hard link only to an earlier file member, a symbolic link
only when its target resolves inside the folder, every link followed) and moves the result into
place. On any failure (unsafe member, hash mismatch, full disk, a signal) the output folder is left as
it was. The site index member (``_archiver/gwtar-index.json``) is archive metadata and is not
extracted.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from archiver import safefs
from archiver.errors import FormatError
from archiver.gwtar import bundle, rules
from archiver.gwtar.read import GwtarReader, Member, TarEntry, TarWalk
from archiver.gwtar.read import open as open_gwtar

__all__ = ["extract", "iter_ls", "ls"]

_CHUNK = 1 << 20
_FILE_TYPES = (b"0", b"\x00", b"7")


@dataclass(frozen=True)
class _Item:
    entry: TarEntry
    name: str  # without a trailing slash
    kind: str  # file, dir, symlink, hardlink


def ls(path: Path) -> list[Member]:
    """The members of a gwtar file in tar order (see :class:`archiver.gwtar.Member`)."""
    return list(iter_ls(path))


def iter_ls(path: Path) -> Iterator[Member]:
    """:func:`ls` one member at a time, in bounded memory (``archiver ls`` of a site index of
    millions of entries)."""
    with GwtarReader(Path(path), load_members=False) as g:
        yield from g.iter_members()


def _refuse(path: Path, entry: TarEntry, why: str) -> FormatError:
    return FormatError(
        f"refusing to extract member {entry.name!r} at offset {entry.ustar_offset}: {why}", subject=str(path)
    )


def _plan(path: Path, entries: list[TarEntry], keep_symlinks: bool = False) -> list[_Item]:
    items: list[_Item] = []
    files: set[str] = set()  # regular files (and hard links to them)
    taken: set[str] = set()  # every name that is not a folder
    folders: set[str] = set()
    for entry in entries:
        name = entry.name.rstrip("/") if entry.typeflag == b"5" else entry.name
        if entry.typeflag in _FILE_TYPES and name == rules.INDEX_PATH:
            continue
        why = rules.member_path_problem(name)
        if why:
            raise _refuse(path, entry, why)
        if entry.typeflag in _FILE_TYPES:
            kind = "file"
        elif entry.typeflag == b"5":
            kind = "dir"
        elif entry.typeflag == b"2":
            target = entry.linkname
            if not keep_symlinks:
                raise _refuse(path, entry, f"symbolic link to {target!r} (use --keep-symlinks to keep links)")
            if not target or target.startswith("/") or "\x00" in target:
                raise _refuse(path, entry, f"symbolic link to an absolute path {target!r}")
            kind = "symlink"
        elif entry.typeflag == b"1":
            target = entry.linkname.rstrip("/")
            if not keep_symlinks:
                raise _refuse(path, entry, f"hard link to {target!r} (use --keep-symlinks to keep links)")
            if rules.member_path_problem(target) or target not in files:
                raise _refuse(
                    path, entry, f"hard link to {entry.linkname!r}, which is not an earlier file member"
                )
            kind = "hardlink"
        elif entry.typeflag in (b"3", b"4"):
            raise _refuse(path, entry, "device file")
        elif entry.typeflag == b"6":
            raise _refuse(path, entry, "FIFO")
        else:
            raise _refuse(path, entry, f"unknown tar type {entry.typeflag!r}")
        if kind == "dir":
            if name in taken:
                raise _refuse(path, entry, "the name is both a file or link and a folder")
            folders.add(name)
        else:
            if name in taken or name in folders:
                raise _refuse(path, entry, "the name appears twice")
            taken.add(name)
            if kind != "symlink":
                files.add(name)  # a hard link may name it
        items.append(_Item(entry, name, kind))
    parents = {i.name[:at] for i in items for at in range(len(i.name)) if i.name[at] == "/"}
    clash = sorted(parents & taken)
    if clash:
        raise FormatError(
            f"refusing to extract: member {clash[0]!r} is both a file or link and a folder", subject=str(path)
        )
    return items


def extract(path: Path, out_dir: Path, *, force: bool = False, keep_symlinks: bool = False) -> int:
    """Extract every member of the gwtar file ``path`` into ``out_dir`` (created if missing) and return
    how many were written (files and links). Raises :class:`FormatError` for a damaged archive or an
    unsafe member and :class:`UsageError` when ``out_dir`` is not empty and ``force`` is false; on any
    failure ``out_dir`` is left as it was. With ``force``, files already in ``out_dir`` are replaced
    (only once everything was written and checked)."""
    path, out_dir = Path(path), Path(out_dir)
    with open_gwtar(path) as g:
        known = {m.offset: m.sha256 for m in g.members}
        with path.open("rb") as f:
            walk = TarWalk(f, g.overhead, g.total_archive_size)
            entries = list(walk)
            if walk.problems:
                p = walk.problems[0]
                raise FormatError(f"offset {p.offset}: {p.message}; nothing extracted", subject=str(path))
            items = _plan(path, bundle.expand(g, entries), keep_symlinks)
            with safefs.interruptible(), safefs.Staging(out_dir, force=force, subject=str(path)) as stage:
                buf = bytearray(_CHUNK)
                current = ""
                try:
                    for item in sorted(items, key=lambda i: i.kind == "symlink"):
                        current = item.name
                        if item.kind == "dir":
                            stage.folder(item.name)
                        elif item.kind == "hardlink":
                            stage.hardlink(item.name, item.entry.linkname.rstrip("/"))
                        elif item.kind == "symlink":
                            stage.symlink(item.name, item.entry.linkname)
                        else:
                            _write_file(stage, f.fileno(), item, known.get(item.entry.data_offset), buf)
                    current = ""
                    stage.commit()
                except OSError as e:
                    doing = f"while writing {current!r}" if current else "while moving the files into place"
                    raise safefs.io_error(e, str(out_dir), doing) from None
    return sum(1 for i in items if i.kind != "dir")


def _write_file(stage: safefs.Staging, src: int, item: _Item, sha256: str | None, buf: bytearray) -> None:
    entry = item.entry
    fd = stage.create(item.name, 0o600)
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
                "record (damaged); nothing extracted"
            )
        mode = entry.header.mode & 0o755 or 0o644
        os.fchmod(fd, mode)  # flushed to disk with the whole staging folder, before it is published
        mtime = entry.header.mtime
        if 0 <= mtime < 1 << 40:
            os.utime(fd, (mtime, mtime))
    finally:
        os.close(fd)
