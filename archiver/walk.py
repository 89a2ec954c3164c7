"""Walking, making and removing folders without recursion: a folder from elsewhere may be nested
thousands deep.

Python 3.11's ``os.walk`` and ``Path.rglob`` recurse once a level: a tree or a folder of archives
nested 3,000 folders deep (an unpacked tarball, a hostile tree) ended ``verify``, ``verify -r``,
``archiver index`` and ``pack --format zim`` in a RecursionError traceback. :func:`walk` is
``os.walk(top)`` (top-down, symbolic links to folders listed but not entered, unreadable folders
passed over, ``dirnames`` prunable in place) with an explicit stack, the same order as ``os.walk``.

``os.makedirs`` and ``Path.mkdir(parents=True)`` recurse once a missing level too, and
``shutil.rmtree`` once a level below: a site linking a page 1,200 folders deep lost it to
"internal error: RecursionError" at every capture. :func:`makedirs` and :func:`rmtree` are the
same with loops."""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["files_below", "makedirs", "rmtree", "walk"]


def makedirs(path: str | os.PathLike[str], mode: int = 0o777) -> None:
    """``os.makedirs(path, mode, exist_ok=True)`` without recursion: every missing folder down to
    ``path`` made, top first; FileExistsError when ``path`` (or a folder on the way) is not a folder."""
    here = os.fspath(path)
    missing: list[str] = []
    while True:
        try:
            os.mkdir(here, mode)
            break
        except FileExistsError:
            if not os.path.isdir(here):
                raise
            break
        except FileNotFoundError:
            head, tail = os.path.split(here)
            if not tail:
                head, tail = os.path.split(head)
            if not head or head == here:
                raise
            missing.append(here)
            here = head
    for folder in reversed(missing):
        try:
            os.mkdir(folder, mode)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def rmtree(path: str | os.PathLike[str], ignore_errors: bool = False) -> None:
    """``shutil.rmtree(path, ignore_errors)``, finished by a loop where that runs out of stack (a
    folder nested more than ~900 deep): links are removed, never followed."""
    import shutil  # here only: with bz2 and lzma, ~8 M instructions of a capture's start-up

    try:
        shutil.rmtree(path, ignore_errors=ignore_errors)
        return
    except RecursionError:
        pass
    try:
        _rmtree_loop(os.fspath(path))
    except OSError:
        if not ignore_errors:
            raise


def _rmtree_loop(top: str) -> None:
    stack = [(top, False)]  # (folder, its entries removed)
    while stack:
        here, emptied = stack.pop()
        if emptied:
            os.rmdir(here)
            continue
        stack.append((here, True))
        with os.scandir(here) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, False))
            else:
                os.unlink(entry.path)


def walk(top: str | os.PathLike[str]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``(dirpath, dirnames, filenames)`` for ``top`` and every folder below it, as ``os.walk(top)``
    gives them (followlinks False, errors ignored), without recursion."""
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        dirs: list[str] = []
        nondirs: list[str] = []
        enter: list[str] = []
        try:
            with os.scandir(here) as it:
                for entry in it:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    (dirs if is_dir else nondirs).append(entry.name)
        except OSError:
            continue
        yield here, dirs, nondirs
        for name in dirs:  # after the caller pruned them; a link to a folder is not entered
            path = os.path.join(here, name)
            if not os.path.islink(path):
                enter.append(path)
        stack.extend(reversed(enter))  # the first folder on top: os.walk's depth-first order


def files_below(top: str | os.PathLike[str]) -> Iterator[str]:
    """The path of every regular file (or link to one) below ``top``, as ``Path.rglob("*")`` with
    ``is_file()`` finds them, without recursion."""
    for here, _dirs, files in walk(top):
        for name in files:
            path = os.path.join(here, name)
            if os.path.isfile(path):
                yield path
