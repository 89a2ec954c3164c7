"""``ls`` and ``extract``: a ZIM's content entries listed, or written back as a tree.

Extraction is safe against hostile archives: the file's checksum is checked and every path before
anything is written (no absolute path, no ``.``/``..``/empty segment, no NUL, no path twice, no file
that is also a folder); then the files go through :class:`archiver.safefs.Staging` (a private
staging folder, folders opened one segment at a time with ``O_NOFOLLOW``, moved into place at the
end), so on any failure (a full disk, a signal) the output folder is left as it was. Redirects are
not files: they are counted but not written (an archiver ZIM carries the tree's manifest, whose
records list the aliases).
Pages that pack made zimcheck-safe are written back byte for byte as they were (``_archiver/zim-edits.jsonl``,
formats/zim.md §3.1); that item itself is not a file of the tree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from archiver import safefs
from archiver.errors import FormatError
from archiver.zim.read import Check, Entry, open_archive
from archiver.zim.source import STORED_EDITS, check_entry_path
from archiver.zim.zimsafe import Edit, decode_edits, restore

__all__ = ["extract", "ls"]


def ls(path: Path, *, check: Check = "full") -> Iterator[Entry]:
    """Every content entry of the ZIM at ``path`` (items and redirects), in path order, once the
    file's structure and (unless ``check="structure"``) checksum are sound (:func:`open_archive`)."""
    reader = open_archive(path, check=check)
    with reader:
        yield from reader.iter_entries()


def _plan(paths: list[str], label: str) -> None:
    files = set(paths)
    if len(files) != len(paths):
        raise FormatError("an entry path appears twice", subject=label)
    for p in paths:
        check_entry_path(p, label)
        parts = p.split("/")
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            if folder in files:
                raise FormatError(f"{folder!r} is both a file and a folder (of {p!r})", subject=label)


def _write_file(stage: safefs.Staging, path: str, entry: Entry, edits: list[Edit] | None = None) -> None:
    fd = stage.create(path)
    with os.fdopen(fd, "wb") as f:
        if edits:
            try:
                f.write(restore(entry.read(), edits))
            except ValueError as e:
                raise FormatError(f"{STORED_EDITS}: {entry.path!r}: {e}") from None
        else:
            for chunk in entry.chunks():
                f.write(chunk)
        # flushed to disk with the whole staging folder, before it is published


def extract(path: Path, out_dir: Path, *, force: bool = False, check: Check = "full") -> int:
    """Write every item of the ZIM at ``path`` under ``out_dir`` at its entry path; return the
    number of files written. ``out_dir`` must be missing or empty unless ``force`` (then files are
    replaced, nothing else is removed). Raises :class:`FormatError` before writing anything when an
    entry path is unsafe or the file is damaged (its structure, or its checksum unless
    ``check="structure"``: :func:`open_archive`); on any failure ``out_dir`` is left as it was."""
    with open_archive(path, check=check) as reader:
        edits: dict[str, list[Edit]] = {}
        if reader.has(STORED_EDITS):
            try:
                edits = decode_edits(reader.get(STORED_EDITS).read())
            except (ValueError, UnicodeDecodeError) as e:
                raise FormatError(f"{STORED_EDITS} is not valid: {e}", subject=str(path)) from None
        items = [e.path for e in reader.iter_entries() if not e.is_redirect and e.path != STORED_EDITS]
        _plan(items, str(path))
        with safefs.interruptible(), safefs.Staging(Path(out_dir), force=force, subject=str(path)) as stage:
            current = ""
            try:
                for p in items:
                    current = p
                    _write_file(stage, p, reader.get(p), edits.get(p))
                current = ""
                stage.commit()
            except OSError as e:
                doing = f"while writing {current!r}" if current else "while moving the files into place"
                raise safefs.io_error(e, str(out_dir), doing) from None
    return len(items)
