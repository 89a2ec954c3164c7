"""A tree's versions through ``archiver serve`` (formats/history.md §7, RFC 7089 Memento): each
recorded version of a tree mount ``NAME`` is a mount of its own, ``NAME@<version id>``
(:class:`VersionMount`, its own origin), whose files come from the version store and carry
``Memento-Datetime`` and ``Link`` (original, timegate, timemap); the bare host answers the TimeMap
(``/~/timemap/NAME/<path>``, ``application/link-format``) and the TimeGate (``/~/timegate/NAME/<path>``:
``Accept-Datetime`` → a 302 to the memento in force, ``Vary: accept-datetime``).

Each version's path → record table is read from its manifest on first use (one dict a version).
This module opens the store's files; it never touches the network."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from archiver.serve.mounts import Mount, _plain_file
from archiver.serve.paths import RESERVED, _href, _query_suffix
from archiver.serve.ranges import format_http_date, parse_http_date
from archiver.serve.representation import _NOT_FOUND, FileSlice, Redirect, Result

__all__ = [
    "VersionMount",
    "holding",
    "link_format",
    "link_uri",
    "memento_links",
    "original_url",
    "timegate",
    "version_mounts",
]

Origin = Callable[[Mount], str]


class VersionMount(Mount):
    """One recorded version of a tree mount, served read-only from the version store."""

    def __init__(self, tree: Mount, version: Any) -> None:
        super().__init__(f"{tree.name}@{version.id}", "version", tree.path)
        self.tree = tree
        self.version = version
        self.seconds = int(datetime.fromisoformat(version.date.replace("Z", "+00:00")).timestamp())
        self._records: dict[str, Any] | None = None
        self._by_url: dict[str, str] | None = None
        self._held: Any = None  # the tree's manifest as path → SHA-256 (store.TreeState), on first use
        self.bare = ""  # the bare host's origin, for the Link header (Site.listening sets it)

    @property
    def href(self) -> str:
        return _href(self.name) + "/"

    def describe(self) -> str:
        return f"{self.tree.name} as of {self.version.date}"

    def records(self) -> dict[str, Any]:
        if self._records is None:
            from archiver.versions import store

            self._records = {r.path: r for r in store.version_records(self.version)}
        return self._records

    def _tree_state(self) -> Any:
        if self._held is None:
            from archiver.versions import store

            self._held = store.TreeState(Path(self.path))
        return self._held

    def path_of(self, url: str) -> str | None:
        """The tree path this version stored ``url`` at (any of a record's URLs), or None."""
        if self._by_url is None:
            self._by_url = {}
            for path, r in self.records().items():
                for u in r.urls:
                    self._by_url.setdefault(u, path)
        return self._by_url.get(url)

    def resolve(self, rest: list[str], slash: bool, raw_query: bytes) -> Result:
        path = "/".join(rest)
        found = self.records()
        r = found.get(path) if path and not slash else None
        if r is None:
            index = f"{path}/index.html" if path else "index.html"
            if index in found:
                if not slash and rest:
                    return Redirect(301, _href(self.name, *rest) + "/" + _query_suffix(raw_query))
                r, path = found[index], index
            else:
                return _NOT_FOUND
        return self._file(path, r)

    def _file(self, path: str, r: Any) -> Result:
        from archiver.errors import FormatError
        from archiver.versions import store

        try:  # its blob, or the tree's file while the tree holds it (formats/history.md §3)
            opened = store.open_checked(Path(self.path), r, self._tree_state())
        except (FormatError, OSError):
            return _NOT_FOUND
        st = opened.stat
        plain = _plain_file(os.fdopen(opened.fd, "rb", buffering=0), st, path.rsplit("/", 1)[-1])
        original = link_uri(r.urls[0]) if r.urls else ""
        extra = [(b"memento-datetime", format_http_date(self.seconds).encode("latin-1"))]
        links = []
        if original:
            links.append(f'<{original}>; rel="original"')
        if self.bare:
            tail = _href(self.tree.name, *path.split("/"))
            links.append(f'<{self.bare}{_href(RESERVED, "timegate")}{tail}>; rel="timegate"')
            links.append(f"<{self.bare}{_href(RESERVED, 'timemap')}{tail}>; rel=\"timemap\"; "
                         "type=\"application/link-format\"")  # fmt: skip
        if links:
            extra.append((b"link", ", ".join(links).encode("ascii", "backslashreplace")))
        # the version's bytes never change: its SHA-256 is its ETag; the version's date its Last-Modified
        etag = f'"{r.sha256[:32]}"'
        if not opened.in_tree:  # a blob: cached as it is
            return FileSlice(plain.file, 0, st.st_size, plain.content_type, etag, self.seconds, extra=extra)
        held = _TreeHeld(plain.file, 0, st.st_size, plain.content_type, etag, self.seconds, extra=extra)
        held.path = os.path.join(self.path, *path.split("/"))  # not None: serve's cache asks fresh()
        held.checked = store.identity(st) if opened.settled else None
        return held


class _TreeHeld(FileSlice):
    """A version's file read from the tree (formats/history.md §3): served from serve's cache only
    while its open descriptor keeps the identity it was checked with (one ``fstat`` a request), so a
    file edited in place is checked again (and refused) at the next request, never served as the
    version's; one changed too recently to be remembered is checked again at every request."""

    __slots__ = ("checked",)

    checked: tuple[int, ...] | None  # its identity when checked (store.identity), None: not remembered

    def fresh(self, now: float) -> bool:
        from archiver.versions import store

        if self.checked is None:
            return False
        try:
            return store.identity(os.fstat(self.fd)) == self.checked
        except OSError:
            return False


def version_mounts(mounts: list[Mount]) -> list[Mount]:
    """The mounts of every recorded version of the tree mounts among ``mounts``, oldest first."""
    from archiver.errors import FormatError
    from archiver.versions import store

    out: list[Mount] = []
    for m in mounts:
        if m.kind != "tree":
            continue
        try:
            found = [v for v in store.versions(Path(m.path)) if v.recorded]
        except (FormatError, OSError) as e:  # the tree itself is still served; verify says more
            where = e.subject if isinstance(e, FormatError) and e.subject else m.path
            why = e.message if isinstance(e, FormatError) else (e.strerror or str(e))
            print(f"archiver serve: {where}: {why} (its earlier versions are not served)", file=sys.stderr)
            continue
        out += [VersionMount(m, v) for v in found]
    return out


def _versions_of(tree: str, mounts: dict[str, Mount]) -> list[VersionMount]:
    return sorted(
        (m for m in mounts.values() if isinstance(m, VersionMount) and m.tree.name == tree),
        key=lambda m: (m.seconds, m.name),
    )


def original_url(path: str) -> str | None:
    """The URI-R a TimeGate or TimeMap path names instead of a tree path (``http:/host/x`` as the
    request path's segments leave ``http://host/x``: empty segments are dropped), or None."""
    for scheme in ("http:", "https:"):
        if path.startswith(scheme + "/") and len(path) > len(scheme) + 1:
            return f"{scheme}//{path[len(scheme) :].lstrip('/')}"
    return None


def holding(tree: str, path: str, mounts: dict[str, Mount]) -> list[tuple[VersionMount, Any, str]]:
    """(version, record, path served) of every version of ``tree`` that has ``path`` (a folder's
    ``index.html`` for ``dir/``; or, for a URI-R, the file each version stored that URL at), oldest
    first."""
    out = []
    url = original_url(path)
    for v in _versions_of(tree, mounts):
        found = v.records()
        if url is not None:
            at = v.path_of(url)
            r = found.get(at) if at is not None else None
            if r is not None and not (r.status is not None and 300 <= r.status < 400):
                out.append((v, r, at))
            continue
        for candidate in (path, f"{path.rstrip('/')}/index.html" if path else "index.html"):
            r = found.get(candidate)
            if r is not None and not (r.status is not None and 300 <= r.status < 400):
                out.append((v, r, candidate))
                break
    return out


# RFC 3986's characters, '%' kept (a URL already escaped stays as it is)
_URI_SAFE = "!#$%&'()*+,/:;=?@[]~"


def link_uri(url: str) -> str:
    """A record's URL (hostile input: the manifest may be edited) as a ``<URI>`` of a Link header or
    link-format: every character outside RFC 3986's set percent-encoded (UTF-8), so CR, LF, space,
    ``<``, ``>`` and ``"`` can neither start a header nor a link nor a parameter of their own."""
    from urllib.parse import quote

    return quote(url, safe=_URI_SAFE)


def _stamp(seconds: int) -> str:
    return format_http_date(seconds)


def link_format(tree: str, path: str, mounts: dict[str, Mount], origin: Origin, bare: str) -> bytes | None:
    """The TimeMap of ``path`` in tree ``tree`` (RFC 7089 §5): None when no version has it."""
    held = holding(tree, path, mounts)
    if not held:
        return None
    tail = _href(tree, *path.split("/")) if path else _href(tree) + "/"
    original = next((link_uri(r.urls[0]) for _, r, _ in reversed(held) if r.urls), "")
    lines = []
    if original:
        lines.append(f'<{original}>; rel="original"')
    lines.append(f'<{bare}{_href(RESERVED, "timegate")}{tail}>; rel="timegate"')
    lines.append(
        f'<{bare}{_href(RESERVED, "timemap")}{tail}>; rel="self"; type="application/link-format"; '
        f'from="{_stamp(held[0][0].seconds)}"; until="{_stamp(held[-1][0].seconds)}"'
    )
    for i, (v, _r, served) in enumerate(held):
        rel = "memento"
        if i == 0:
            rel = "first memento"
        if i == len(held) - 1:
            rel = "last memento" if len(held) > 1 else "first last memento"
        uri = origin(v) + _href(v.name, *served.split("/"))
        lines.append(f'<{uri}>; rel="{rel}"; datetime="{_stamp(v.seconds)}"')
    return (",\n".join(lines) + "\n").encode("ascii", "backslashreplace")


def memento_links(held: list[tuple[VersionMount, Any, str]], at: int, origin: Origin) -> list[str]:
    """The Link values of the memento chosen (``held[at]``) and of the first, last, previous and
    next ones (RFC 7089 §2.2.1.4), each URI once with every relation it has and its datetime."""
    rels: dict[int, list[str]] = {}
    for i, rel in ((0, "first"), (at - 1, "prev"), (at, ""), (at + 1, "next"), (len(held) - 1, "last")):
        if 0 <= i < len(held) and rel not in rels.get(i, []):
            rels.setdefault(i, []).append(rel)
    out = []
    for i in sorted(rels):
        v, _r, served = held[i]
        names = " ".join([n for n in rels[i] if n] + ["memento"])
        uri = origin(v) + _href(v.name, *served.split("/"))
        out.append(f'<{uri}>; rel="{names}"; datetime="{_stamp(v.seconds)}"')
    return out


def timegate(
    tree: str, path: str, accept: str | None, mounts: dict[str, Mount], origin: Origin, bare: str
) -> tuple[int, str, list[tuple[bytes, bytes]]]:
    """(status, message, headers) of the TimeGate (RFC 7089 §4.1, pattern 2.3): a 302 to the memento
    in force at ``accept`` (the first one before it, the last one without it), ``Vary:
    accept-datetime``; 400 for an Accept-Datetime that is no HTTP-date; 404 when no version has it."""
    held = holding(tree, path, mounts)
    vary = (b"vary", b"accept-datetime")
    if not held:
        return 404, "no version of this page", [vary]
    if accept is None:
        chosen = held[-1]
    else:
        when = parse_http_date(accept)
        if when is None:
            return 400, "Accept-Datetime is not an HTTP date", [vary]
        earlier = [h for h in held if h[0].seconds <= when]
        chosen = earlier[-1] if earlier else held[0]
    v, r, served = chosen
    tail = _href(tree, *path.split("/")) if path else _href(tree) + "/"
    links = []
    if r.urls:
        links.append(f'<{link_uri(r.urls[0])}>; rel="original"')
    links.append(f'<{bare}{_href(RESERVED, "timemap")}{tail}>; rel="timemap"; type="application/link-format"')
    links += memento_links(held, held.index(chosen), origin)
    location = origin(v) + _href(v.name, *served.split("/"))
    return (
        302,
        "found",
        [
            (b"location", location.encode("ascii")),
            vary,
            (b"link", ", ".join(links).encode("ascii", "backslashreplace")),
        ],
    )
