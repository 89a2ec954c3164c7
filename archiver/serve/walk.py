"""Open a file below a folder without a race: component by component from the folder's own
descriptor, never following a symlink that leaves it (formats/serve.md §5).

Each component is opened with ``O_NOFOLLOW`` relative to the descriptor of the folder above it
(``openat``), so a folder swapped for a symlink between two steps is seen as the symlink it now is.
A symlink is read (``readlinkat``) and its target walked the same way: a relative target from the
folder holding it, ``..`` back up the folders already open (never past the root), an absolute target
only when it names a path inside the root. So whatever is renamed or swapped while a request runs,
the descriptor returned is of a file that was inside the root when it was opened, reached through
folders that were inside the root; the real path relative to the root comes with it (private files
are decided on that). Nothing is ever opened by a path string that the kernel resolves on its own.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from typing import Final

__all__ = ["MAX_LINKS", "Found", "open_beneath", "open_root"]

#: Symlinks followed in one walk at most (as Linux's MAXSYMLINKS).
MAX_LINKS: Final = 40

_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO never hangs
_SYMLINK_ERRORS: Final = frozenset({errno.ELOOP, errno.EMLINK})  # EMLINK: FreeBSD's O_NOFOLLOW error

Found = tuple[int, os.stat_result, list[str]]


def open_root(path: str) -> int:
    """A descriptor of a served folder, opened once at start (the folder, not a later symlink)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def open_beneath(root_fd: int, roots: Sequence[str], parts: Sequence[str]) -> Found | None:
    """(descriptor, its fstat, real path components) of ``parts`` below the folder ``root_fd``: a
    regular file or a folder (the caller closes the descriptor); None when it does not exist, is
    something else, or can only be reached by leaving the root. ``roots``: the absolute spellings of
    the root (its real path first) that an absolute symlink may name."""
    todo = [p for p in reversed(parts)]
    names: list[str] = []
    fds: list[int] = []  # descriptors of the folders in ``names``, outermost first
    links = 0
    try:
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not names:
                    return None  # above the root
                names.pop()
                os.close(fds.pop())
                continue
            here = fds[-1] if fds else root_fd
            try:
                fd = os.open(part, _FLAGS, dir_fd=here)
            except OSError as e:
                if e.errno not in _SYMLINK_ERRORS:
                    return None
                links += 1
                if links > MAX_LINKS:
                    return None
                try:
                    target = os.readlink(part, dir_fd=here)
                except OSError:
                    return None  # swapped again meanwhile: not found, never a guess
                if target.startswith("/"):
                    inside = _below(target, roots)
                    if inside is None:
                        return None
                    while fds:
                        os.close(fds.pop())
                    names.clear()
                    todo.extend(reversed(inside))
                else:
                    todo.extend(reversed(target.split("/")))
                continue
            try:
                st = os.fstat(fd)
            except OSError:
                os.close(fd)
                return None
            if stat.S_ISDIR(st.st_mode):
                fds.append(fd)
                names.append(part)
                continue
            if stat.S_ISREG(st.st_mode) and not any(p not in ("", ".") for p in todo):
                return fd, st, [*names, part]
            os.close(fd)
            return None
        if fds:  # the walk ended on a folder: hand its descriptor over
            fd = fds.pop()
            return fd, os.fstat(fd), names
        fd = os.dup(root_fd)
        return fd, os.fstat(fd), []
    finally:
        for fd in fds:
            os.close(fd)


def _below(target: str, roots: Sequence[str]) -> list[str] | None:
    for root in roots:
        if target == root:
            return []
        if target.startswith(root.rstrip("/") + "/"):
            return target[len(root.rstrip("/")) + 1 :].split("/")
    return None
