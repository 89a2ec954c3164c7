"""``ls`` and ``extract``: a ZIM's content entries listed, or written back as a tree.

Extraction is safe against hostile archives: every path is checked before anything is written (no
absolute path, no ``.``/``..``/empty segment, no NUL, no file that is also a folder); folders are
created one by one and never through a symlink; each file is written to a temporary name in its
folder, fsynced and renamed, so a crash leaves whole files only. Redirects are not files: they are
counted but not written (an archiver ZIM carries the tree's manifest, whose records list the aliases).
Pages that pack made zimcheck-safe are written back byte for byte as they were (``_archiver/zim-edits.jsonl``,
formats/zim.md §3.1); that item itself is not a file of the tree.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from archiver.errors import FormatError, UsageError
from archiver.zim.read import Entry, open_archive
from archiver.zim.source import STORED_EDITS, check_entry_path
from archiver.zim.zimsafe import Edit, decode_edits, restore

__all__ = ["extract", "ls"]


def ls(path: Path) -> Iterator[Entry]:
    """Every content entry of the ZIM at ``path`` (items and redirects), in path order."""
    reader = open_archive(path)
    with reader:
        yield from reader.iter_entries()


def _plan(paths: list[str], label: str) -> None:
    files = set(paths)
    for p in paths:
        check_entry_path(p, label)
        parts = p.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in files:
                raise FormatError(f"{folder!r} is both a file and a folder (of {p!r})", subject=label)


def _make_folders(out: Path, parts: list[str]) -> Path:
    here = out
    for name in parts:
        here = here / name
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            os.mkdir(here)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise FormatError(f"{here} exists and is not a folder (a symlink is never followed)")
    return here


def _write_file(folder: Path, name: str, entry: Entry, edits: list[Edit] | None = None) -> None:
    target = folder / name
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise FormatError(f"{target} is a folder; cannot write a file there")
    tmp = folder / f".{name[:100]}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            if edits:
                try:
                    f.write(restore(entry.read(), edits))
                except ValueError as e:
                    raise FormatError(f"{STORED_EDITS}: {entry.path!r}: {e}") from None
            else:
                for chunk in entry.chunks():
                    f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)  # replaces a symlink itself, never what it points to
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def extract(path: Path, out_dir: Path, *, force: bool = False) -> int:
    """Write every item of the ZIM at ``path`` under ``out_dir`` at its entry path; return the
    number of files written. ``out_dir`` must be missing or empty unless ``force`` (then files are
    replaced, nothing else is removed). Raises :class:`FormatError` before writing anything when an
    entry path is unsafe."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UsageError("exists and is not a folder", subject=str(out))
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UsageError("the folder is not empty (use force to write into it)", subject=str(out))
    with open_archive(path) as reader:
        edits: dict[str, list[Edit]] = {}
        if reader.has(STORED_EDITS):
            try:
                edits = decode_edits(reader.get(STORED_EDITS).read())
            except (ValueError, UnicodeDecodeError) as e:
                raise FormatError(f"{STORED_EDITS} is not valid: {e}", subject=str(path)) from None
        items = [e.path for e in reader.iter_entries() if not e.is_redirect and e.path != STORED_EDITS]
        _plan(items, str(path))
        out.mkdir(parents=True, exist_ok=True)
        written = 0
        for p in items:
            *folders, name = p.split("/")
            folder = _make_folders(out, folders)
            _write_file(folder, name, reader.get(p), edits.get(p))
            written += 1
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    return written
