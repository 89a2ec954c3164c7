"""What ``archiver serve`` answers a request with: a :class:`Representation` (bytes with their
validators and response headers, built once), a :class:`Redirect` or a :class:`Problem`.

A :class:`FileSlice` reads an open file with ``os.pread``; an :class:`InMemory` holds generated
bytes. Opened files stay open (the bounded cache of :class:`archiver.serve.site.Site`); a tree file
is re-checked with one ``stat`` at most every :data:`REVALIDATE_SECONDS`, so a replaced file is
noticed. Archives named on the command line are opened once and are assumed not to change while
served. Nothing here opens a file or touches the network.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from archiver.serve.ranges import format_http_date

if TYPE_CHECKING:
    from archiver.serve.mounts import Mount

__all__ = [
    "REVALIDATE_SECONDS",
    "FileSlice",
    "InMemory",
    "Problem",
    "Redirect",
    "Representation",
    "Result",
]

#: How often (seconds) a cached tree file is checked against the disk.
REVALIDATE_SECONDS: Final = 2.0
#: What a header line cannot carry. A value taken from an archive (a gwtar's or a ZIM's media type, a
#: record's URL) holding one is not sent: before 2026-12 a gwtar site index's type
#: "text/css\r\nSet-Cookie: x" was written as two header lines by the fast path (app.py).
_UNSAFE: Final = re.compile(r"[^\t\x20-\x7e]")
_UNSAFE_BYTES: Final = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
#: What no header name or value may hold (RFC 9110 §5.5: CR, LF and NUL): the last check, on every
#: line a representation writes, whoever built it (the archive's values were cleaned above it).
_BREAKS: Final = re.compile(rb"[\r\n\x00]")
#: What a 200 says that a 304 does not: it has no body to describe (RFC 9110 §15.4.5).
_NOT_IN_304: Final = frozenset({b"content-type", b"accept-ranges", b"content-length"})


@dataclass(frozen=True, slots=True)
class Problem:
    """An error answer: a status and a fixed one-line message (never a host path)."""

    status: int
    message: str
    #: an HTML body instead of the one-line message (a gone page, formats/history.md §7) and the
    #: headers that go with it
    page: bytes = b""
    extra: tuple[tuple[bytes, bytes], ...] = ()


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
        "bare_head_304",
        "bare_head_partial",
        "block",
        "block_partial",
        "checked",
        "content_type",
        "etag",
        "head",
        "head_304",
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
        if _UNSAFE.search(content_type):  # an archive's media type is hostile input
            content_type = self.content_type = "application/octet-stream"
        self.head: list[tuple[bytes, bytes]] = [
            (b"content-type", content_type.encode("ascii")),
            (b"etag", etag.encode("latin-1")),
            (b"last-modified", format_http_date(last_modified).encode("latin-1")),
            (b"accept-ranges", b"bytes"),
            *(pair for pair in extra if not _UNSAFE_BYTES.search(pair[1])),
        ]
        self._blocks(self.head, self.head)

    def _blocks(self, head: list[tuple[bytes, bytes]], bare: list[tuple[bytes, bytes]]) -> None:
        for name, value in (*head, *bare):
            if _BREAKS.search(name) or _BREAKS.search(value):
                # a line break would begin a header of its own on the wire (app.py's fast path writes
                # these lines as they are): refused here, whatever built it (the request gets a 500)
                raise ValueError(f"a response header holds a line break: {name!r}")
        self.head = head
        self.bare_head = bare
        # A 206 carries the same validators; Accept-Ranges only tells a client of a 200 (as nginx).
        self.head_partial = [h for h in head if h[0] != b"accept-ranges"]
        self.bare_head_partial = [h for h in bare if h[0] != b"accept-ranges"]
        # A 304 carries the validators and the same security headers as the 200: a cache updates the
        # stored response's headers from it (RFC 9111 §4.3.4), so an error's CSP there would put the
        # page, reloaded from the cache, under `default-src 'none'` (no stylesheet, no image).
        self.head_304 = [h for h in head if h[0] not in _NOT_IN_304]
        self.bare_head_304 = [h for h in bare if h[0] not in _NOT_IN_304]
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


Result = Representation | Redirect | Problem

_NOT_FOUND: Final = Problem(404, "not found")
