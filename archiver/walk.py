"""Walking a folder without recursion: a folder from elsewhere may be nested thousands deep.

Python 3.11's ``os.walk`` and ``Path.rglob`` recurse once a level: a tree or a folder of archives
nested 3,000 folders deep (an unpacked tarball, a hostile tree) ended ``verify``, ``verify -r``,
``archiver index`` and ``pack --format zim`` in a RecursionError traceback. :func:`walk` is
``os.walk(top)`` (top-down, symbolic links to folders listed but not entered, unreadable folders
passed over, ``dirnames`` prunable in place) with an explicit stack, the same order as ``os.walk``."""

from __future__ import annotations

import os
from collections.abc import Iterator

__all__ = ["files_below", "walk"]


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
