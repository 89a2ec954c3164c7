"""A mount of ``archiver serve`` (:class:`Mount`: one served thing at ``/<name>`` or ``/<name>/``),
and the mount of a single file (:class:`_FileMount`): a plain file at ``/<name>``, or a gwtar file
that also answers its member URLs ``/<name>/~/<member path>`` (:class:`_Members`, which the tree
mount of :mod:`archiver.serve.tree_mount` uses too for the gwtar files inside a tree).

The representation of a whole file, plain (:func:`_plain_file`) or gwtar (:func:`_gwtar_whole`), is
built here for both. This module opens files but never touches the network.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any, Final

from archiver.errors import UsageError
from archiver.media import is_text, media_type_for
from archiver.serve.paths import RESERVED, _href
from archiver.serve.representation import _NOT_FOUND, FileSlice, Result

__all__ = ["MEMBERS_HEADER", "Mount"]


def _with_charset(media: str) -> str:
    return f"{media}; charset=utf-8" if ";" not in media and is_text(media) else media


def _file_etag(st: os.stat_result) -> str:
    # nginx's format ("mtime-size" in hex), so the two servers agree on a file's ETag.
    return f'"{int(st.st_mtime):x}-{st.st_size:x}"'


def _open_regular(real: str) -> tuple[Any, os.stat_result] | None:
    """Open a regular file by its real path without following a last-moment symlink; None if it is
    not a regular file or cannot be opened. The limit on open files reached is raised (OSError)."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in (errno.EMFILE, errno.ENFILE):  # the process's limit, not this file: raised
            raise
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return None
        return os.fdopen(fd, "rb", buffering=0), st
    except OSError:
        os.close(fd)
        return None


class Mount:
    """One served thing at ``/<name>`` (files, gwtar) or ``/<name>/`` (trees, ZIM)."""

    def __init__(self, name: str, kind: str, path: Path) -> None:
        self.name = name
        self.kind = kind  # "file", "gwtar", "tree", "zim"
        self.path = path
        self.label = ""  # its host name label (policy.host_labels), given by the Site

    @property
    def href(self) -> str:
        return _href(self.name) + ("/" if self.kind in ("tree", "zim") else "")

    def describe(self) -> str:
        """One line for the index page."""
        return ""

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        """The answer for the path segments after the mount's name."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the mount opened."""


class _FileMount(Mount):
    """A single file at ``/<name>``; a gwtar file also answers ``/<name>/~/<member>``."""

    def __init__(self, name: str, path: Path, gwtar: bool, gwtar_mime: str) -> None:
        super().__init__(name, "gwtar" if gwtar else "file", path)
        try:
            opened = _open_regular(os.path.realpath(path))
        except OSError as e:  # EMFILE, ENFILE: the CLI's line names the limit (cli._limit_said)
            raise UsageError("cannot open: too many open files", subject=str(path)) from e
        if opened is None:
            raise UsageError("cannot open as a regular file", subject=str(path))
        file, st = opened
        self.size = st.st_size
        if gwtar:
            self.members: _Members | None = _Members(file, path, st)
            # The archive is read once, now: when its members are readable, every response for the
            # file says so (``Gwtar-Members: 1``), and the loader uses member URLs without probing.
            readable = self.members.count() is not None
            self.rep: FileSlice = _gwtar_whole(file, st, gwtar_mime, members=readable)
        else:
            self.rep = _plain_file(file, st, path.name)
            self.members = None

    def describe(self) -> str:
        text = f"{self.size:,} bytes"
        if self.members is not None and self.members.count() is not None:
            text += f", {self.members.count():,} members"
        return text

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        if not rest:
            return _NOT_FOUND if slash else self.rep
        if self.members is not None and rest[0] == RESERVED:
            return self.members.get(rest[1:], slash)
        return _NOT_FOUND

    def close(self) -> None:
        self.rep.file.close()


def _plain_file(file: Any, st: os.stat_result, name: str) -> FileSlice:
    media = _with_charset(media_type_for(name))
    return FileSlice(file, 0, st.st_size, media, _file_etag(st), int(st.st_mtime))


#: Sent with a gwtar file whose member URLs work (js/README.md, "What the loader needs from a host").
MEMBERS_HEADER: Final = (b"gwtar-members", b"1")


def _gwtar_whole(file: Any, st: os.stat_result, gwtar_mime: str, *, members: bool = False) -> FileSlice:
    # The whole archive: its own type (text/html or x-gwtar, which browsers sniff as HTML and CDNs
    # leave Range on), never compressed, never sniffed into something else by a cache.
    extra = (MEMBERS_HEADER,) if members else ()
    return FileSlice(file, 0, st.st_size, gwtar_mime, _file_etag(st), int(st.st_mtime), extra=extra)


class _Members:
    """The member URLs of one gwtar file, through :func:`archiver.gwtar.open` (opened on first use)."""

    def __init__(self, file: Any, path: Path, st: os.stat_result, *, by_descriptor: bool = False) -> None:
        self.file = file
        self.path = path
        # A file found by a walk is read through its open descriptor, never again by its path (which
        # may lead somewhere else by now).
        self.by_descriptor = by_descriptor
        self.last_modified = int(st.st_mtime)
        self.stamp = f"{int(st.st_mtime):x}-{st.st_size:x}"
        self.table: dict[str, Any] | None = None
        self.failed = False

    def _load(self) -> dict[str, Any] | None:
        if self.table is None and not self.failed:
            try:
                from archiver import gwtar
            except ImportError:
                self.failed = True  # no reader in this build: the whole file still works
                return None
            try:
                source = self.path
                if self.by_descriptor:
                    source = Path(f"/proc/self/fd/{self.file.fileno()}")
                    if not source.exists():
                        self.failed = True  # no way to read an open file by name here: whole file only
                        return None
                reader = gwtar.open(source)
                self.table = {m.path: m for m in reader.members}
                closer = getattr(reader, "close", None)
                if callable(closer):
                    closer()
            except Exception:  # a damaged or foreign archive: its member URLs are 404
                self.failed = True
                return None
        return self.table

    def count(self) -> int | None:
        table = self._load()
        return None if table is None else len(table)

    def get(self, segments: list[str], slash: bool) -> Result:
        table = self._load()
        if table is None or not segments:
            return _NOT_FOUND
        key = "/".join(segments)
        member = table.get(key + "/index.html" if slash else key)
        if member is None:
            return _NOT_FOUND
        sha = getattr(member, "sha256", None)
        etag = f'"{sha[:40]}"' if sha else f'"{self.stamp}-{int(member.offset):x}"'
        media = getattr(member, "media_type", None) or media_type_for(member.path)
        media = _with_charset(media)
        return FileSlice(self.file, int(member.offset), int(member.size), media, etag, self.last_modified)
