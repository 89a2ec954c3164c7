"""The site ``archiver serve`` serves: every mount, the index page and the search pages, and the
bounded cache of answers (formats/serve.md §1, §5.2, §6).

This module touches no file itself (the mounts :mod:`archiver.serve.sources` makes do) and never the
network.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Callable
from typing import Final

from archiver.serve import memento
from archiver.serve.history_pages import GonePages, calendar_html
from archiver.serve.mounts import Mount
from archiver.serve.paths import RESERVED, _href, _query_suffix, split_request_path
from archiver.serve.policy import PAGE_HEADERS, content_headers, host_labels
from archiver.serve.representation import _NOT_FOUND, InMemory, Problem, Redirect, Representation, Result
from archiver.serve.search import Searcher, results_page, search_form
from archiver.serve.zim_mount import _ZimMount

__all__ = ["Site"]

_CACHE_ENTRIES: Final = 4096  # at most; a quarter of the open-file limit when that is lower


class Site:
    """Every mount plus the index and search pages; :meth:`resolve` maps a request path to a
    :class:`Representation`, a :class:`Redirect` or a :class:`Problem`. Results for static paths
    are cached (bounded; the oldest entry goes first)."""

    def __init__(
        self, mounts: list[Mount], *, clock: Callable[[], float] = time.time, allow_live: bool = False
    ) -> None:
        self.mounts = {m.name: m for m in mounts}
        for mount, label in zip(mounts, host_labels(m.name for m in mounts), strict=True):
            mount.label = label
        self.clock = clock
        self.allow_live = allow_live
        # The security headers of every mount's content (formats/serve.md §5.2), built once.
        self.own_headers = content_headers(allow_live=allow_live)
        self.bare_headers = content_headers(allow_live=allow_live, sandbox=True)
        self.domain = "localhost"
        self.port = 0
        self.started = int(clock())
        self.index = self._page(_index_page(mounts, None), self.started)
        self.cache: dict[bytes, Representation] = {}
        self.cache_entries = _cache_entries()
        self.searcher = Searcher(mounts)
        self.gone = GonePages()
        self._last_search: tuple[tuple[tuple[str, ...], bytes], Result] | None = None

    def origin(self, mount: Mount) -> str:
        """The origin a mount is served at (``http://<label>.<domain>:<port>``)."""
        return f"http://{mount.label}.{self.domain}:{self.port}"

    def listening(self, domain: str, port: int) -> None:
        """Where the server listens (known once its socket is bound): the index links to the mounts'
        own origins."""
        self.domain, self.port = domain, port
        self.searcher.prepare()  # the search's postings tables, before serving (and forking)
        for m in self.mounts.values():
            if isinstance(m, memento.VersionMount):
                m.bare = self.bare
        self.index = self._page(_index_page(list(self.mounts.values()), self.origin), self.started)

    @staticmethod
    def _page(data: bytes, last_modified: int) -> InMemory:
        page = InMemory(data, "text/html; charset=utf-8", last_modified)
        page.secure(PAGE_HEADERS, PAGE_HEADERS)
        return page

    def resolve(self, raw_path: bytes, raw_query: bytes = b"") -> Result:
        """What a request path maps to; a representation knows its ``mount`` (None: a server page)."""
        cached = self.cache.get(raw_path)
        if cached is not None:
            if cached.path is None or cached.fresh(time.monotonic()):
                return cached
            del self.cache[raw_path]
        return self.lookup(raw_path, raw_query)[1]

    def lookup(self, raw_path: bytes, raw_query: bytes = b"") -> tuple[Mount | None, Result]:
        """(the mount a request path belongs to, or None for the index and server pages; the answer)."""
        cached = self.cache.get(raw_path)
        if cached is not None and (cached.path is None or cached.fresh(time.monotonic())):
            return cached.mount, cached
        mount, result = self._resolve(raw_path, raw_query)
        if isinstance(result, Representation) and not isinstance(result, InMemory):
            if not result.secured:
                result.mount = mount
                result.secure(self.own_headers, self.bare_headers)
            self.cache.pop(raw_path, None)
            if len(self.cache) >= self.cache_entries:
                del self.cache[next(iter(self.cache))]  # the oldest entry out: a bounded cache
            self.cache[raw_path] = result
        return mount, result

    def _resolve(self, raw_path: bytes, raw_query: bytes) -> tuple[Mount | None, Result]:
        split = split_request_path(raw_path)
        if isinstance(split, Problem):
            return None, split
        segments, slash = split
        if not segments:
            return None, self.index
        head, rest = segments[0], segments[1:]
        if head == RESERVED:
            return None, self._server_page(rest, raw_query)
        mount = self.mounts.get(head)
        if mount is None:
            return None, _NOT_FOUND
        if mount.kind in ("tree", "zim", "version") and not rest and not slash:
            return mount, Redirect(301, mount.href + _query_suffix(raw_query))
        result = mount.resolve(rest, slash, raw_query)
        if mount.kind == "tree" and isinstance(result, Problem) and result.status == 404:
            # a page the newest capture lacks and an earlier version kept (formats/history.md §7)
            gone = self.gone.page(mount, "/".join(rest), self.mounts, self.origin, self.bare)
            if gone is not None:
                return mount, gone
        return mount, result

    def _search(self, rest: list[str], raw_query: bytes) -> Result:
        doc = self.searcher.search(
            _query_param(raw_query, "q"),
            _int_param(raw_query, "limit", 10),
            _int_param(raw_query, "offset", 0),
            self.origin,
        )
        if rest[0] == "search":
            return self._page(results_page(doc, _STYLE), int(self.clock()))
        page = InMemory(
            json.dumps(doc, ensure_ascii=False).encode("utf-8"), "application/json", int(self.clock())
        )
        page.secure(PAGE_HEADERS, PAGE_HEADERS)
        return page

    def _server_page(self, rest: list[str], raw_query: bytes) -> Result:
        if rest in (["api", "search"], ["search"]):  # formats/serve.md §8
            key = (tuple(rest), raw_query)
            if self._last_search is not None and self._last_search[0] == key:
                # the fast path resolved this request and left a large answer to the ASGI path:
                # the same answer, not a second search (one entry, used once)
                answer, self._last_search = self._last_search[1], None
                return answer
            answer = self._search(rest, raw_query)
            self._last_search = (key, answer)
            return answer
        if len(rest) == 2 and rest[0] == "search":
            mount = self.mounts.get(rest[1])
            if isinstance(mount, _ZimMount):
                query = _query_param(raw_query, "q")
                hits = mount.search(query, 50) if query else []
                return self._page(_search_page(mount, query, hits), int(self.clock()))
        if len(rest) >= 2 and rest[0] == "timemap":  # formats/history.md §7
            body = memento.link_format(rest[1], "/".join(rest[2:]), self.mounts, self.origin, self.bare)
            if body is None:
                return _NOT_FOUND
            page = InMemory(body, "application/link-format", int(self.clock()))
            page.secure(PAGE_HEADERS, PAGE_HEADERS)
            return page
        return _NOT_FOUND

    @property
    def bare(self) -> str:
        """The bare host's origin (the server pages, the TimeMap and TimeGate)."""
        return f"http://{self.domain}:{self.port}"

    def timegate(self, raw_path: bytes, accept: str | None) -> tuple[int, str, list[tuple[bytes, bytes]]]:
        """The TimeGate's answer for ``/~/timegate/<tree>/<path>`` (formats/history.md §7)."""
        split = split_request_path(raw_path)
        if isinstance(split, Problem) or len(split[0]) < 3:
            return 404, "not found", []
        segments, _slash = split
        tree, path = segments[2], "/".join(segments[3:])
        return memento.timegate(tree, path, accept, self.mounts, self.origin, self.bare)

    def close(self) -> None:
        self.cache.clear()
        self.searcher.close()
        for m in self.mounts.values():
            m.close()


def _cache_entries() -> int:
    # Every cached tree file holds a descriptor: stay well below the process's open-file limit.
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 256
    if soft == resource.RLIM_INFINITY:
        return _CACHE_ENTRIES
    return max(16, min(_CACHE_ENTRIES, soft // 4))


def _int_param(raw_query: bytes, name: str, default: int) -> int:
    """A whole number given as ``name`` (the caller clamps it to its bounds: a number of any length
    is a large one, so ``offset=99999999999999`` is past the end, not the first page); ``default``
    when it is absent or not ASCII digits."""
    text = _query_param(raw_query, name)
    if not (text.isascii() and text.isdigit()):
        return default
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18


def _query_param(raw_query: bytes, name: str) -> str:
    from urllib.parse import parse_qs

    values = parse_qs(raw_query.decode("latin-1"), encoding="utf-8", errors="replace").get(name)
    return values[0][:500] if values else ""


_STYLE = (
    "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem}"
    "td,th{padding:.2rem .8rem;text-align:left}small{color:#555}</style>"
)


def _index_page(mounts: list[Mount], origin: Callable[[Mount], str] | None) -> bytes:
    rows = []
    versions: dict[str, list[memento.VersionMount]] = {}
    for m in mounts:
        if isinstance(m, memento.VersionMount):
            versions.setdefault(m.tree.name, []).append(m)
    for m in mounts:
        if isinstance(m, memento.VersionMount):
            continue  # in its tree's calendar
        extra = ""
        if isinstance(m, _ZimMount):
            extra = f' · <a href="{html.escape(_href(RESERVED, "search", m.name))}">search</a>'
        # each archive at its own origin (formats/serve.md §5.2); a relative link would be redirected
        link = origin(m) + m.href if origin is not None else m.href
        rows.append(
            f'<tr><td><a href="{html.escape(link)}">{html.escape(m.name)}</a>{extra}</td>'
            f"<td>{html.escape(m.kind)}</td><td><small>{html.escape(m.describe())}</small></td></tr>"
        )
        rows.append(calendar_html(m, versions.get(m.name, []), origin))
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>archiver serve</title>'
        f"{_STYLE}</head><body><h1>Served here</h1>{search_form()}"
        "<table><tr><th>name</th><th>kind</th><th></th></tr>" + "".join(rows) + "</table></body></html>\n"
    )
    return text.encode("utf-8")


def _search_page(mount: _ZimMount, query: str, hits: list[tuple[str, str]]) -> bytes:
    items = "".join(
        f'<li><a href="{html.escape(_href(mount.name, *path.split("/")))}">{html.escape(title)}</a></li>'
        for path, title in hits
    )
    if query and not hits:
        items = "<li>No results.</li>"
    text = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Search {html.escape(mount.name)}'
        f'</title>{_STYLE}</head><body><h1>Search <a href="{html.escape(mount.href)}">'
        f"{html.escape(mount.name)}</a></h1>"
        f'<form method="get"><input name="q" value="{html.escape(query)}" autofocus> '
        f'<button>Search</button></form><ol>{items}</ol><p><a href="/">all archives</a></p></body></html>\n'
    )
    return text.encode("utf-8")
