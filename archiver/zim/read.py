"""Reading a ZIM file: entries, metadata, search and suggestions, over python-libzim's reader.

The only module that imports ``libzim.reader``, ``libzim.search`` and ``libzim.suggestion``.
Entries are addressed by their path in the content namespace (``C``), exactly as stored: decoded
UTF-8, no leading slash (``café menu/index.html``, ``what?.html``).

Partial reads: the binding exposes an item's data only whole (``getData(0)``); for items in
uncompressed clusters (media, which archiver stores uncompressed) libzim maps that region of the file
(mmap) instead of reading it, so :meth:`Entry.read` with an offset touches only the pages it slices.
Compressed items are decompressed with their cluster, as any ZIM reader does.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from libzim.reader import Archive
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

from archiver.errors import FormatError, UsageError
from archiver.zim.metadata import ILLUSTRATION_KEY

__all__ = ["CHUNK", "Entry", "ZimReader", "open_archive"]

#: Bytes handed out per chunk by :meth:`Entry.chunks`.
CHUNK = 1 << 20
_MAX_REDIRECT_HOPS = 64


@dataclass
class Entry:
    """One entry of the content namespace. For a redirect, ``redirect_target`` is the path it points
    to, and ``mimetype``, ``size`` and :meth:`read` are those of the entry the chain ends at."""

    path: str
    title: str
    mimetype: str
    size: int
    is_redirect: bool
    redirect_target: str | None
    _item: object = field(repr=False, compare=False, default=None)

    def read(self, offset: int = 0, size: int | None = None) -> bytes:
        """``size`` bytes from ``offset`` (to the end when ``size`` is None), like an HTTP range.
        Offsets past the end give ``b""``."""
        if offset < 0 or (size is not None and size < 0):
            raise ValueError("offset and size must not be negative")
        view = self._item.content  # type: ignore[attr-defined]
        end = len(view) if size is None else min(len(view), offset + size)
        return bytes(view[offset:end]) if offset < end else b""

    def chunks(self, chunk: int = CHUNK) -> Iterator[bytes]:
        """The content in pieces of at most ``chunk`` bytes."""
        view = self._item.content  # type: ignore[attr-defined]
        for start in range(0, len(view), chunk):
            yield bytes(view[start : start + chunk])


class ZimReader:
    """An open ZIM file. Use :func:`open_archive` (``archiver.zim.open``). Thread-safe for reading,
    as libzim is; close it (or use ``with``) to release the file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._archive: Archive | None = Archive(self.path)
        except RuntimeError as e:
            raise FormatError(f"not a readable ZIM file: {e}", subject=str(path)) from None

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            raise ValueError("the ZIM reader is closed")
        return self._archive

    # -- entries -------------------------------------------------------------------------------

    @property
    def main_path(self) -> str | None:
        """The path of the main page (the end of the ``W/mainPage`` redirect), None when unset."""
        a = self.archive
        if not a.has_main_entry:
            return None
        entry = a.main_entry
        for _ in range(_MAX_REDIRECT_HOPS):
            if not entry.is_redirect:
                return entry.path
            entry = entry.get_redirect_entry()
        return None

    @property
    def entry_count(self) -> int:
        """Entries of the content namespace (items and redirects)."""
        return self.archive.entry_count

    def entries(self) -> Iterator[str]:
        """Every entry path of the content namespace, in path order."""
        a = self.archive
        for i in range(a.entry_count):
            yield a._get_entry_by_id(i).path

    def has(self, path: str) -> bool:
        """Whether ``path`` is an entry (item or redirect)."""
        return self.archive.has_entry_by_path(path)

    def get(self, path: str) -> Entry:
        """The entry at ``path``; ``KeyError`` when there is none."""
        try:
            raw = self.archive.get_entry_by_path(path)
        except KeyError:
            raise KeyError(path) from None
        return self._wrap(raw)

    def _wrap(self, raw: object) -> Entry:
        target = None
        end = raw
        if raw.is_redirect:  # type: ignore[attr-defined]
            target = raw.get_redirect_entry().path  # type: ignore[attr-defined]
            for _ in range(_MAX_REDIRECT_HOPS):
                if not end.is_redirect:  # type: ignore[attr-defined]
                    break
                end = end.get_redirect_entry()  # type: ignore[attr-defined]
            else:
                raise FormatError(f"redirect loop at {raw.path!r}", subject=str(self.path))  # type: ignore[attr-defined]
        item = end.get_item()  # type: ignore[attr-defined]
        return Entry(
            path=raw.path,  # type: ignore[attr-defined]
            title=raw.title,  # type: ignore[attr-defined]
            mimetype=item.mimetype,
            size=item.size,
            is_redirect=bool(raw.is_redirect),  # type: ignore[attr-defined]
            redirect_target=target,
            _item=item,
        )

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry as an :class:`Entry`, in path order (redirect ends resolved)."""
        a = self.archive
        for i in range(a.entry_count):
            yield self._wrap(a._get_entry_by_id(i))

    # -- metadata ------------------------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, str]:
        """Text metadata (``Title``, ``Language`` …) decoded as UTF-8; illustrations and ``Counter``
        excluded. Invalid UTF-8 is replaced (verify reports it)."""
        out = {}
        for key in self.archive.metadata_keys:
            if key.startswith("Illustration_") or key == "Counter":
                continue
            out[key] = bytes(self.archive.get_metadata(key)).decode("utf-8", "replace")
        return out

    def metadata_bytes(self, key: str) -> bytes | None:
        """The raw bytes of one metadata entry, None when absent."""
        if key not in self.archive.metadata_keys:
            return None
        return bytes(self.archive.get_metadata(key))

    @property
    def illustration(self) -> bytes | None:
        """The bytes of ``Illustration_48x48@1``, None when absent."""
        return self.metadata_bytes(ILLUSTRATION_KEY)

    # -- integrity, search ---------------------------------------------------------------------

    @property
    def has_checksum(self) -> bool:
        return bool(self.archive.has_checksum)

    def check_checksum(self) -> bool:
        """libzim's MD5 over the whole file (reads every byte)."""
        return bool(self.archive.check())

    @property
    def has_fulltext_index(self) -> bool:
        return bool(self.archive.has_fulltext_index)

    @property
    def has_title_index(self) -> bool:
        return bool(self.archive.has_title_index)

    @property
    def article_count(self) -> int:
        """Front articles (pages listed for suggestions)."""
        return self.archive.article_count

    def _titled(self, paths: Iterator[str], limit: int) -> list[tuple[str, str]]:
        out = []
        for path in paths:
            if len(out) >= limit:
                break
            try:
                title = self.archive.get_entry_by_path(path).title
            except KeyError:
                continue
            out.append((path, title))
        return out

    def search(self, query: str, limit: int = 20) -> list[tuple[str, str]]:
        """Full-text search: (path, title) of the best ``limit`` matches; empty without an index."""
        if not query.strip() or not self.has_fulltext_index:
            return []
        search = Searcher(self.archive).search(Query().set_query(query))
        return self._titled(iter(search.getResults(0, limit)), limit)

    def suggest(self, prefix: str, limit: int = 20) -> list[tuple[str, str]]:
        """Title suggestions (front articles whose title matches ``prefix``): (path, title)."""
        if not prefix.strip():
            return []
        search = SuggestionSearcher(self.archive).suggest(prefix)
        return self._titled(iter(search.getResults(0, limit)), limit)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the archive (entries already handed out keep it alive until they go)."""
        self._archive = None

    def __enter__(self) -> ZimReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_archive(path: Path) -> ZimReader:
    """Open the ZIM file at ``path`` (exported as ``archiver.zim.open``). Raises :class:`FormatError`
    when it is not a ZIM libzim can read, :class:`UsageError` when there is no such file."""
    path = Path(path)
    if not path.is_file():
        raise UsageError("no such file", subject=str(path))
    return ZimReader(path)
