"""Replace a file atomically under a temporary name that a hostile folder cannot redirect.

A tree, its reserved folder and its version store come from anywhere (a copied folder, an unpacked
tarball): a name archiver writes a temporary file under may already be there as a symbolic link to
someone's file. ``open(tmp, "wb")`` follows it, truncates the link's target and writes into it, and
the rename then puts the link in the real file's place: a resumed capture of a tree holding
``_archiver/manifest.jsonl.tmp -> ~/notes.txt`` overwrote the notes with its manifest.

:func:`write_atomic` removes whatever is under the temporary name (``unlink`` never follows a link),
creates the file with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a link or file put back in between is an
error, never followed), writes, optionally ``fsync``s, and renames it over the target; on any failure
(a full disk, a signal) the temporary file is removed and the target is as it was. Imports only
``os`` and ``contextlib``: a capture's start writes through it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

__all__ = ["create_new", "write_atomic"]

_GATHER = 1 << 20
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create_new(tmp: str | Path, mode: int = 0o666) -> int:
    """A write descriptor of a new file ``tmp``: whatever was under that name (a leftover of a killed
    run, a planted symbolic link) removed first, without following it; the file made with
    ``O_EXCL | O_NOFOLLOW``, so nothing put there in between is ever written through."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):  # a folder: O_EXCL names it
        os.unlink(tmp)
    return os.open(tmp, _NEW, mode)


def write_atomic(
    path: str | Path,
    data: bytes | Iterable[bytes],
    *,
    tmp: str | Path | None = None,
    durable: bool = True,
) -> None:
    """Put ``data`` (bytes, or chunks of bytes) at ``path`` atomically: written to ``tmp`` (default
    ``PATH.tmp``) made by :func:`create_new`, ``fsync``ed when ``durable``, renamed over ``path``.
    On failure the temporary file is gone and ``path`` untouched; the error is raised as it came."""
    tmp = f"{os.fspath(path)}.tmp" if tmp is None else os.fspath(tmp)
    fd = create_new(tmp)
    try:
        try:
            if isinstance(data, bytes | bytearray | memoryview):
                _write_all(fd, data)
            else:  # small chunks (a manifest's lines) gathered into writes of about 1 MiB
                held: list[bytes] = []
                size = 0
                for chunk in data:
                    held.append(chunk)
                    size += len(chunk)
                    if size >= _GATHER:
                        _write_all(fd, b"".join(held))
                        held, size = [], 0
                _write_all(fd, b"".join(held))
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
