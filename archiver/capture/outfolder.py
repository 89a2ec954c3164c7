"""The capture's output folder before a run: what may be written into (a new or empty folder, or one
holding a capture to resume), one run at a time (an exclusive ``flock`` on the reserved folder,
formats/crawl-state.md §4), and ``--no-resume`` deleting the capture it holds (only the files that
capture recorded, never others)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING

from archiver import tree
from archiver.errors import UsageError
from archiver.urls import VERSIONS_NAME
from archiver.walk import walk

if TYPE_CHECKING:
    from archiver.capture.crawlstate import StateFactory
    from archiver.capture.writer import TreeWriter

__all__ = ["check_out", "discard_previous", "lock_folder"]


def lock_folder(reserved: Path, out: Path) -> int:
    """An open descriptor of ``reserved`` holding its exclusive ``flock`` (closing it releases the
    lock, and so does the end of the process, however it ends); one line if another run holds it."""
    fd = os.open(reserved, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            "another capture is running in this folder; wait for it to end", subject=str(out)
        ) from None
    return fd


def check_out(
    out: Path,
    reserved: Path,
    tmp: Path,
    state_name: str,
    *,
    resume: bool,
    open_state: StateFactory,
    writer: TreeWriter,
) -> None:
    """``out`` may take this run: not a file, empty or holding a capture (``reserved/state_name``);
    without ``resume`` that capture is deleted first (refused while it runs). Makes ``tmp``. The
    reserved folder and those archiver writes and empties in it must be the tree's own folders
    (:func:`archiver.tree.own_folders`: a link to elsewhere is refused before anything is done)."""
    if out.exists() and not out.is_dir():
        raise UsageError("not a folder", subject=str(out))
    # warc: warc.record.WARC_DIR (tree_path's private names; that module is not imported for this)
    tree.own_folders(out, reserved, tmp, reserved / "warc", reserved / VERSIONS_NAME)
    has_state = (reserved / state_name).exists()
    if out.exists() and any(out.iterdir()) and not has_state:
        raise UsageError(
            "folder is not empty and holds no capture to resume; choose an empty or new folder",
            subject=str(out),
        )
    if has_state and not resume:
        os.close(lock_folder(reserved, out))  # never delete a capture that is running
        discard_previous(out, reserved, tmp, state_name, open_state=open_state, writer=writer)
    try:
        tmp.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the folder: {e.strerror}", subject=str(out)) from None


def discard_previous(
    out: Path, reserved: Path, tmp: Path, state_name: str, *, open_state: StateFactory, writer: TreeWriter
) -> None:
    """Delete the capture in ``out`` (every file its state recorded, its metadata, its WARCs, then the
    folders left empty) so a run starts afresh. Files the capture did not write are left alone."""
    old = open_state(reserved / state_name)
    try:
        paths = [record.path for record in old.records()] + list(old.paths_map())
    finally:
        old.close()
    own: set[str] = set()
    for rel in paths:
        target = out / rel
        # the tree's own files only: not one behind a folder that links out of the tree
        if ".." not in rel.split("/") and tree.own_parent(out, rel, own) and target.is_file():
            writer.keep(rel)  # a recorded version holding it only in the tree keeps it first
            target.unlink()
    side = (state_name + "-wal", state_name + "-shm", "manifest.jsonl", "manifest.jsonl.tmp")
    for name in (state_name, *side):
        with contextlib.suppress(FileNotFoundError):
            (reserved / name).unlink()
    if tmp.is_dir():
        writer.empty_tmp(remove=True)
    from archiver.warc.record import WARC_DIR, discard

    discard(reserved / WARC_DIR)
    folders = [Path(here, d) for here, dirs, _f in walk(out) for d in dirs]  # no recursion
    folders = [p for p in folders if p.is_dir() and not p.is_symlink()]
    for folder in sorted(folders, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            folder.rmdir()  # only empty ones go
