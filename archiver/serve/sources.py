"""What a request path maps to: files, trees, gwtar archives and their members, ZIM entries.

This module touches the filesystem (it opens what it serves) but never the network. A served PATH
becomes one or more *mounts* (:func:`mounts_for`):

- a gwtar file (``*.gwtar.html``, or any file that starts with the gwtar magic) → ``/<file name>``,
  its members at ``/<file name>/~/<member path>``;
- a ZIM file → ``/<name without .zim>/``, the main page at that prefix, entries below it;
- a canonical tree (a folder with ``index.html`` or ``_archiver/``) → ``/<folder name>/``, served as
  static files, except its private files (:func:`archiver.tree.is_private`: the capture's state and
  ``_archiver/tmp/``), which are 404 whatever the spelling or symlink; a ``*.gwtar.html`` file
  inside a tree also gets member URLs;
- any other file → ``/<file name>``;
- any other folder → each of its entries that is one of the above becomes a mount of its own
  (a tree's private files, and symlinks that lead out of the folder, excepted).

A private file named as a PATH is refused (:class:`UsageError`).

``/`` is the index page and ``/~/`` is reserved for the server (``/~/search/<zim>?q=…``), so no
mount is called ``~``. Request paths are checked before any file is touched
(:func:`split_request_path`): no ``.``/``..`` segment (also percent-encoded), no backslash, NUL or
control character, valid UTF-8 and escapes, at most 8 KiB; tree files are opened component by
component from the root's descriptor (:func:`archiver.serve.walk.open_beneath`: no symlink leaves
the root, no race). Errors carry a fixed message and never a host path.

Opened files stay open (the bounded cache of :class:`archiver.serve.site.Site`); a tree file is
re-checked with one ``stat`` at most every :data:`REVALIDATE_SECONDS`, so a replaced file is
noticed. Archives named on the command line are opened once and are assumed not to change while
served.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote_to_bytes

from archiver.errors import ArchiverError, UsageError
from archiver.media import is_text, media_type_for
from archiver.serve.ranges import format_http_date
from archiver.serve.walk import open_beneath, open_root
from archiver.tree import is_private

__all__ = [
    "GWTAR_MAGIC",
    "MAX_PATH_BYTES",
    "REVALIDATE_SECONDS",
    "FileSlice",
    "InMemory",
    "Mount",
    "Problem",
    "Redirect",
    "Representation",
    "is_gwtar_name",
    "mounts_for",
    "plan_mounts",
    "split_request_path",
]

#: Request paths longer than this (as sent, percent-encoded) get 414, like nginx's 8 KiB line buffer.
MAX_PATH_BYTES: Final = 8192
#: How often (seconds) a cached tree file is checked against the disk.
REVALIDATE_SECONDS: Final = 2.0
#: The first bytes of every gwtar file (gwtar.md §2).
GWTAR_MAGIC: Final = b"<html>\n<!-- Gwtar self-extracting HTML archive"
#: The reserved first segment: server pages, never a mount.
RESERVED: Final = "~"

_BAD_ESCAPE = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")


# ------------------------------------------------------------------------------------ results


@dataclass(frozen=True, slots=True)
class Problem:
    """An error answer: a status and a fixed one-line message (never a host path)."""

    status: int
    message: str


@dataclass(frozen=True, slots=True)
class Redirect:
    """A redirect answer; ``location`` is an absolute path, already percent-encoded."""

    status: int
    location: str


class Representation:
    """Bytes to serve with their validators. ``head`` is the list of response header pairs a 200
    about it carries (Content-Type, ETag, Last-Modified, Accept-Ranges, extra ones); ``head_partial``
    the same without Accept-Ranges, for a 206."""

    __slots__ = (
        "bare_block",
        "bare_block_partial",
        "bare_head",
        "bare_head_partial",
        "block",
        "block_partial",
        "checked",
        "content_type",
        "etag",
        "head",
        "head_partial",
        "last_modified",
        "mount",
        "path",
        "secured",
        "size",
    )

    def __init__(
        self,
        size: int,
        content_type: str,
        etag: str,
        last_modified: int,
        extra: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        self.size = size
        self.content_type = content_type
        self.etag = etag
        self.last_modified = last_modified
        self.checked = time.monotonic()
        self.path: str | None = None  # the file on disk to revalidate against, when there is one
        self.mount: Mount | None = None  # whose bytes these are (None: the server's own pages)
        self.secured = False
        self.head: list[tuple[bytes, bytes]] = [
            (b"content-type", content_type.encode("latin-1")),
            (b"etag", etag.encode("latin-1")),
            (b"last-modified", format_http_date(last_modified).encode("latin-1")),
            (b"accept-ranges", b"bytes"),
            *extra,
        ]
        self._blocks(self.head, self.head)

    def _blocks(self, head: list[tuple[bytes, bytes]], bare: list[tuple[bytes, bytes]]) -> None:
        self.head = head
        self.bare_head = bare
        # A 206 carries the same validators; Accept-Ranges only tells a client of a 200 (as nginx).
        self.head_partial = [h for h in head if h[0] != b"accept-ranges"]
        self.bare_head_partial = [h for h in bare if h[0] != b"accept-ranges"]
        # The same as HTTP/1.1 header lines, for answers written without ASGI (app.py's fast path).
        self.block = b"".join(b"%s: %s\r\n" % pair for pair in head)
        self.block_partial = b"".join(b"%s: %s\r\n" % pair for pair in self.head_partial)
        self.bare_block = b"".join(b"%s: %s\r\n" % pair for pair in bare)
        self.bare_block_partial = b"".join(b"%s: %s\r\n" % pair for pair in self.bare_head_partial)

    def secure(self, own: Sequence[tuple[bytes, bytes]], bare: Sequence[tuple[bytes, bytes]]) -> None:
        """Add the security headers (formats/serve.md §5.2): ``own`` on the mount's origin, ``bare``
        on the bare host. Once per representation; the header lines are built here, not per request."""
        if self.secured:
            return
        self.secured = True
        base = self.head
        self._blocks([*base, *own], [*base, *bare])

    def read(self, start: int, stop: int) -> bytes:
        """Bytes ``[start, stop)`` of the representation (``0 <= start <= stop <= size``)."""
        raise NotImplementedError

    def fresh(self, now: float) -> bool:
        """False when the bytes on disk may have changed since this was opened (only called when
        ``path`` is set)."""
        return True


class FileSlice(Representation):
    """``size`` bytes of an open file from ``offset`` (a whole file, or a gwtar member), read with
    ``os.pread``: no seek, no shared position, safe for concurrent responses. The file object
    stays open while anything refers to it, so evicting it from a cache never breaks a response."""

    __slots__ = ("fd", "file", "identity", "offset")

    def __init__(
        self,
        file: Any,
        offset: int,
        size: int,
        content_type: str,
        etag: str,
        last_modified: int,
        *,
        path: str | None = None,
        identity: tuple[int, int, int] | None = None,
        extra: Sequence[tuple[bytes, bytes]] = (),
    ) -> None:
        super().__init__(size, content_type, etag, last_modified, extra)
        self.file = file
        self.fd: int = file.fileno()
        self.offset = offset
        self.path = path  # set for tree files, which are revalidated
        self.identity = identity

    def read(self, start: int, stop: int) -> bytes:
        want = stop - start
        data = os.pread(self.fd, want, self.offset + start)
        if len(data) == want:
            return data
        # A short read: the file shrank under us, or a read was interrupted. Keep reading; pad never.
        parts = [data]
        got = len(data)
        while got < want:
            more = os.pread(self.fd, want - got, self.offset + start + got)
            if not more:
                raise OSError("file shrank while being served")
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def fresh(self, now: float) -> bool:
        if now - self.checked < REVALIDATE_SECONDS:
            return True
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if (st.st_ino, st.st_size, st.st_mtime_ns) != self.identity:
            return False
        self.checked = now
        return True


class InMemory(Representation):
    """Generated bytes (the index page, a search page)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes, content_type: str, last_modified: int) -> None:
        etag = '"m-' + hashlib.blake2b(data, digest_size=12).hexdigest() + '"'
        super().__init__(len(data), content_type, etag, last_modified)
        self.data = data

    def read(self, start: int, stop: int) -> bytes:
        return self.data[start:stop]


class _ZimEntry(Representation):
    __slots__ = ("entry",)

    def __init__(self, entry: Any, content_type: str, etag: str, last_modified: int) -> None:
        super().__init__(int(entry.size), content_type, etag, last_modified)
        self.entry = entry

    def read(self, start: int, stop: int) -> bytes:
        return bytes(self.entry.read(start, stop - start))


Result = Representation | Redirect | Problem

_NOT_FOUND: Final = Problem(404, "not found")
_BAD_PATH: Final = Problem(400, "bad request path")


# ------------------------------------------------------------------------------------ paths


def split_request_path(raw: bytes) -> tuple[list[str], bool] | Problem:
    """The decoded segments of a request path as sent (``raw_path``, no query) and whether it ends
    with ``/``; or a 400/414 :class:`Problem` for anything that could leave a root: a ``.`` or ``..``
    segment (``%2e``, ``%2f`` included: the path is decoded once, then split), a backslash, NUL or
    other control character, invalid UTF-8 or ``%`` escapes, or more than :data:`MAX_PATH_BYTES`.
    Empty segments (``a//b``) are dropped, as nginx's merge_slashes does."""
    if len(raw) > MAX_PATH_BYTES:
        return Problem(414, "request path too long")
    if not raw.startswith(b"/"):
        return _BAD_PATH
    if b"%" in raw and _BAD_ESCAPE.search(raw):
        return _BAD_PATH
    try:
        text = unquote_to_bytes(raw).decode("utf-8") if b"%" in raw else raw.decode("utf-8")
    except UnicodeDecodeError:
        return _BAD_PATH
    if _CONTROL.search(text):
        return _BAD_PATH
    segments = [s for s in text.split("/") if s]
    for s in segments:
        if s in (".", ".."):
            return _BAD_PATH
    return segments, text.endswith("/")


def _href(*segments: str) -> str:
    """An absolute, percent-encoded URL path from decoded segments."""
    return "/" + "/".join(quote(s, safe="!$&'()*+,;=:@~") for s in segments if s)


def _with_charset(media: str) -> str:
    return f"{media}; charset=utf-8" if ";" not in media and is_text(media) else media


def _file_etag(st: os.stat_result) -> str:
    # nginx's format ("mtime-size" in hex), so the two servers agree on a file's ETag.
    return f'"{int(st.st_mtime):x}-{st.st_size:x}"'


def _open_regular(real: str) -> tuple[Any, os.stat_result] | None:
    """Open a regular file by its real path without following a last-moment symlink; None if it is
    not a regular file or cannot be opened."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
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


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root + os.sep)


def is_gwtar_name(name: str) -> bool:
    """Whether a file name is a gwtar file's (``*.gwtar.html``, any case)."""
    return name.lower().endswith(".gwtar.html")


# ------------------------------------------------------------------------------------ mounts


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
        opened = _open_regular(os.path.realpath(path))
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


class _TreeMount(Mount):
    """A folder served as static files below ``/<name>/``: ``dir/`` serves ``dir/index.html``, a
    folder without its ``/`` is redirected (301), no listings. gwtar files inside get member URLs."""

    def __init__(self, name: str, path: Path, gwtar_mime: str) -> None:
        super().__init__(name, "tree", path)
        self.root = os.path.realpath(path)
        try:
            self.root_fd = open_root(self.root)
        except OSError as e:
            raise UsageError(f"cannot open the folder: {e.strerror or e}", subject=str(path)) from None
        # the spellings of the root an absolute symlink inside it may use
        self.roots = tuple(dict.fromkeys((self.root, os.path.abspath(path))))
        self.gwtar_mime = gwtar_mime
        self.gwtars: OrderedDict[str, tuple[tuple[int, int, int], _Members]] = OrderedDict()

    def describe(self) -> str:
        index = os.path.join(self.root, "index.html")
        return "canonical tree" if os.path.isfile(index) else "folder"

    def close(self) -> None:
        if self.root_fd >= 0:
            os.close(self.root_fd)
            self.root_fd = -1

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        # A gwtar member URL inside the tree: <...>.gwtar.html/~/<member>
        if RESERVED in rest:
            cut = rest.index(RESERVED)
            if cut > 0 and is_gwtar_name(rest[cut - 1]):
                return self._member(rest[:cut], rest[cut + 1 :], slash)
        found = self._open(rest)
        if found is None:
            return _NOT_FOUND
        fd, st, parts = found
        if stat.S_ISDIR(st.st_mode):
            os.close(fd)
            if not slash and rest:
                return Redirect(301, _href(self.name, *rest) + "/" + _query_suffix(raw_query))
            found = self._open([*parts, "index.html"])  # the real folder's index, walked again
            if found is None or not stat.S_ISREG(found[1].st_mode):
                if found is not None:
                    os.close(found[0])
                return _NOT_FOUND
            fd, st, parts = found
        elif slash:
            os.close(fd)
            return _NOT_FOUND
        file = os.fdopen(fd, "rb", buffering=0)
        name = parts[-1]
        gwtar = is_gwtar_name(name)
        rep = _gwtar_whole(file, st, self.gwtar_mime) if gwtar else _plain_file(file, st, name)
        rep.path = os.path.join(self.root, *parts)
        rep.identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        return rep

    def _open(self, parts: list[str]) -> tuple[int, os.stat_result, list[str]] | None:
        """What ``parts`` name below the root (walk.open_beneath: no symlink leaves the root, no race),
        unless it is one of the tree's private files (tree.is_private, decided on the real path
        relative to the root, so no spelling and no symlink reaches them)."""
        found = open_beneath(self.root_fd, self.roots, parts)
        if found is not None and is_private("/".join(found[2])):
            os.close(found[0])
            return None
        return found

    def _member(self, archive: list[str], member: list[str], slash: bool) -> Result:
        found = self._open(archive)
        if found is None:
            return _NOT_FOUND
        fd, st, parts = found
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return _NOT_FOUND
        file = os.fdopen(fd, "rb", buffering=0)
        real = os.path.join(self.root, *parts)
        identity = (st.st_ino, st.st_size, st.st_mtime_ns)
        known = self.gwtars.get(real)
        if known is not None and known[0] == identity:
            file.close()
            members = known[1]
            self.gwtars.move_to_end(real)
        else:
            members = _Members(file, Path(real), st, by_descriptor=True)
            self.gwtars[real] = (identity, members)
            while len(self.gwtars) > 64:
                self.gwtars.popitem(last=False)
        result = members.get(member, slash)
        if isinstance(result, FileSlice):
            result.path = real  # revalidated like the archive it lives in
            result.identity = identity
        return result


def _query_suffix(raw_query: bytes) -> str:
    return "?" + raw_query.decode("latin-1") if raw_query else ""


class _ZimMount(Mount):
    """A ZIM file below ``/<name>/`` through :func:`archiver.zim.open`: entries with their media
    types, the main page at ``/<name>/`` (a redirect when it is not in the top folder, so its
    relative links resolve), redirect entries as 302."""

    def __init__(self, name: str, path: Path) -> None:
        super().__init__(name, "zim", path)
        try:
            from archiver import zim
        except ImportError:
            raise UsageError("ZIM support is not available in this build", subject=str(path)) from None
        try:
            self.reader = zim.open(path)
        except ArchiverError as e:  # one line already, naming the damage
            raise UsageError(f"cannot open as a ZIM file: {e.message}", subject=str(path)) from None
        except Exception as e:  # the adapter's own error, whatever its class
            raise UsageError(f"cannot open as a ZIM file: {e}", subject=str(path)) from None
        parts = [os.stat(p) for p in _zim_parts(path)]  # one file, or the parts of a split ZIM
        self.last_modified = int(max(st.st_mtime for st in parts))
        self.size = sum(st.st_size for st in parts)
        self.stamp = f"{self.last_modified:x}-{self.size:x}"

    def describe(self) -> str:
        return f"ZIM, {self.size:,} bytes"

    def _lookup(self, key: str) -> Any:
        try:
            return self.reader.get(key)
        except (KeyError, LookupError):
            return None
        except Exception:
            return None

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        main = getattr(self.reader, "main_path", None)
        if not rest:
            if not main:
                return _NOT_FOUND
            if "/" in main:
                return Redirect(302, _href(self.name, *main.split("/")))
            return self._entry(main, redirects_left=8)
        return self._entry("/".join(rest) + ("/" if slash else ""), redirects_left=8)

    def _entry(self, key: str, *, redirects_left: int) -> Result:
        entry = self._lookup(key)
        if entry is None:
            return _NOT_FOUND
        if getattr(entry, "is_redirect", False):
            target = getattr(entry, "redirect_target", None)
            if not target:
                return _NOT_FOUND
            return Redirect(302, _href(self.name, *str(target).split("/")))
        media = str(getattr(entry, "mimetype", "") or media_type_for(key))
        digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).hexdigest()
        return _ZimEntry(entry, _with_charset(media), f'"z{self.stamp}-{digest}"', self.last_modified)

    def search(self, query: str, limit: int) -> list[tuple[str, str]]:
        """(path, title) of the entries matching a full-text query."""
        finder = getattr(self.reader, "search", None)
        if finder is None or not query.strip():
            return []
        try:
            found = finder(query, limit)
        except Exception:
            return []
        out: list[tuple[str, str]] = []
        for item in found:
            if isinstance(item, str):
                out.append((item, item))
            elif isinstance(item, tuple) and item:
                out.append((str(item[0]), str(item[1] if len(item) > 1 and item[1] else item[0])))
            else:
                path = str(getattr(item, "path", ""))
                out.append((path, str(getattr(item, "title", "") or path)))
        return out

    def close(self) -> None:
        closer = getattr(self.reader, "close", None)
        if callable(closer):
            closer()


# ------------------------------------------------------------------------------------ discovery


def _is_tree(folder: Path) -> bool:
    return (folder / "index.html").is_file() or (folder / "_archiver").is_dir()


def _sniff_gwtar(path: Path) -> bool:
    if is_gwtar_name(path.name):
        return True
    try:
        with path.open("rb") as f:
            return f.read(len(GWTAR_MAGIC)) == GWTAR_MAGIC
    except OSError:
        return False


def _zim_parts(path: Path) -> list[Path]:
    """The file of a ZIM, or the parts ``Xaa``, ``Xab``… of a split ZIM named ``X`` (zim.md §7.1)."""
    from archiver.zim.structure import split_parts

    return split_parts(path)


def _classify(path: Path) -> str | None:
    if path.is_dir():
        return "tree" if _is_tree(path) else "folder"
    if path.is_file():
        if path.suffix.lower() == ".zim":
            return "zim"
        return "gwtar" if _sniff_gwtar(path) else "file"
    if path.suffix.lower() == ".zim" and path.with_name(f"{path.name}aa").is_file():
        return "zim"  # a split ZIM named by its base name, as kiwix-serve takes it
    return None


def _in_private_place(path: Path) -> bool:
    """Whether a path's real location is a tree's private file or inside one (some ``_archiver``
    folder on the way holds it as tree.is_private says): such a child of a served folder is no mount."""
    parts = Path(os.path.realpath(path)).parts
    return any(is_private("/".join(parts[i : i + 2])) for i in range(len(parts) - 1))


def plan_mounts(paths: Iterable[Path | str]) -> list[tuple[str, str, Path]]:
    """``(kind, name, path)`` of every mount the PATHs given to ``archiver serve`` make, in order,
    with unique names (``name-2``… on a clash); nothing is opened. A missing PATH, or a set of PATHs
    with nothing to serve, is a :class:`UsageError`."""
    plan: list[tuple[str, Path, str]] = []  # kind, the path to open, the name it is known by
    for given in paths:
        path = Path(given)
        kind = _classify(path)
        if kind is None:
            raise UsageError("no such file or folder", subject=str(path))
        if _in_private_place(path):
            raise UsageError("a tree's private file is never served", subject=str(path))
        if kind != "folder":
            plan.append((kind, path, path.name))
            continue
        found = False
        top = os.path.realpath(path)
        for child in sorted(path.iterdir(), key=lambda p: p.name):
            if child.name.startswith(".") or _in_private_place(child):
                continue
            real = os.path.realpath(child)
            if real == top or not _inside(real, top):
                continue  # a symlink out of the folder is never followed (§5)
            if child.name.lower().endswith(".zimaa"):  # the first part of a split ZIM: mount it whole
                plan.append(("zim", Path(real[:-2]), child.name[:-2]))
                found = True
                continue
            if re.search(r"\.zima[b-z]$|\.zim[b-z][a-z]$", child.name.lower()):
                continue  # a later part of a split ZIM
            child_kind = _classify(Path(real))
            if child_kind in (None, "folder"):
                continue
            # opened by its real path, so its mount keeps the name the folder gives it
            plan.append((child_kind, Path(real), child.name))
            found = True
        if not found:
            raise UsageError("no gwtar, ZIM, tree or file in this folder", subject=str(path))
    if not plan:
        raise UsageError("nothing to serve")
    named: list[tuple[str, str, Path]] = []
    taken: set[str] = {RESERVED, ""}
    for kind, path, known in plan:
        base = known[:-4] if kind == "zim" and known.lower().endswith(".zim") else known
        base = base or "archive"
        name = base
        n = 2
        while name in taken:
            name = f"{base}-{n}"
            n += 1
        taken.add(name)
        named.append((kind, name, path))
    return named


def mounts_for(paths: Iterable[Path | str], *, gwtar_mime: str = "text/html") -> list[Mount]:
    """The mounts of :func:`plan_mounts`, opened (archives are opened once, here)."""
    mounts: list[Mount] = []
    try:
        for kind, name, path in plan_mounts(paths):
            if kind == "zim":
                mounts.append(_ZimMount(name, path))
            elif kind == "tree":
                mounts.append(_TreeMount(name, path, gwtar_mime))
            else:
                mounts.append(_FileMount(name, path, kind == "gwtar", gwtar_mime))
    except BaseException:
        for m in mounts:
            m.close()
        raise
    return mounts
