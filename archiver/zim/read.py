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

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from libzim.reader import Archive
from libzim.search import Query, Searcher
from libzim.suggestion import SuggestionSearcher

from archiver.errors import FormatError, UsageError
from archiver.zim.clusters import ClusterGuard
from archiver.zim.metadata import ILLUSTRATION_KEY
from archiver.zim.structure import MAX_ENTRY, NOT_A_ZIM, Source, split_parts
from archiver.zim.structure import check as check_structure

__all__ = ["CHUNK", "MAX_ENTRY", "Check", "Entry", "ZimReader", "open_archive", "structure_problems"]

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
    _file: str | None = field(repr=False, compare=False, default=None)
    _why: Callable[[object, str], FormatError | None] | None = field(repr=False, compare=False, default=None)

    def read(self, offset: int = 0, size: int | None = None) -> bytes:
        """``size`` bytes from ``offset`` (to the end when ``size`` is None), like an HTTP range.
        Offsets past the end give ``b""``."""
        if offset < 0 or (size is not None and size < 0):
            raise ValueError("offset and size must not be negative")
        view = self._content()
        end = len(view) if size is None else min(len(view), offset + size)
        return bytes(view[offset:end]) if offset < end else b""

    def chunks(self, chunk: int = CHUNK) -> Iterator[bytes]:
        """The content in pieces of at most ``chunk`` bytes."""
        view = self._content()
        for start in range(0, len(view), chunk):
            yield bytes(view[start : start + chunk])

    def refusal(self) -> FormatError | None:
        """Why the entry is not read (without reading it), None when it may be: libzim hands an
        item's bytes out whole, decompressing its cluster up to them, so an entry said to be
        gigabytes long, or lying gigabytes into its compressed cluster, is a bomb of a few hundred
        kilobytes of file (formats/zim.md §7.1)."""
        if self.size > MAX_ENTRY:
            return FormatError(
                f"entry {self.path!r} is {self.size} bytes, more than archiver reads of one ZIM entry"
                f" ({MAX_ENTRY}; formats/zim.md §7.1)",
                subject=self._file,
            )
        return None if self._why is None else self._why(self._item, self.path)

    def _content(self) -> memoryview:
        refused = self.refusal()
        if refused is not None:
            raise refused
        try:
            return self._item.content  # type: ignore[attr-defined,no-any-return]
        except (RuntimeError, UnicodeDecodeError, MemoryError) as e:  # a damaged cluster ("Data
            error = _damaged(self.path, e)  # corruption detected"), std::bad_alloc
            error.subject = self._file
            raise error from None


def _refusal(guard: ClusterGuard, file: str, item: Any, what: str) -> FormatError | None:
    """The one-line :class:`FormatError` when libzim would decompress more than
    :data:`archiver.zim.clusters.MAX_REACH` bytes of a cluster to hand ``item`` out."""
    why = guard.check(int(item._index))
    if why is None:
        return None
    return FormatError(f"damaged ZIM: entry {what!r} is not read: {why}", subject=file)


def _damaged(path: str, e: Exception) -> FormatError:
    return FormatError(f"damaged ZIM: entry {path!r} cannot be read ({e})")


_T = TypeVar("_T")


def _guarded(method: Callable[..., _T]) -> Callable[..., _T]:
    """libzim's errors on a damaged file, raised from ``method``, as one :class:`FormatError`."""

    @functools.wraps(method)
    def guarded(self: ZimReader, *args: Any) -> _T:
        try:
            return method(self, *args)
        except (RuntimeError, UnicodeDecodeError) as e:
            raise FormatError(f"damaged ZIM: {e}", subject=str(self.path)) from None

    return guarded


class ZimReader:
    """An open ZIM file. Use :func:`open_archive` (``archiver.zim.open``). Thread-safe for reading,
    as libzim is; close it (or use ``with``) to release the file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            self._archive: Archive | None = Archive(self.path)
        except (RuntimeError, UnicodeDecodeError) as e:
            raise FormatError(f"not a readable ZIM file: {e}", subject=str(path)) from None
        try:  # how far libzim would decompress a cluster for an entry, asked before it is (§7.1)
            self._guard: ClusterGuard | None = ClusterGuard(split_parts(self.path))
        except Exception:  # unreadable as our own reader sees it: libzim opened it, it answers
            self._guard = None

        #: the check each entry handed out carries (it keeps the guard open as long as it lives)
        self._why: Callable[[Any, str], FormatError | None] | None = (
            None if self._guard is None else functools.partial(_refusal, self._guard, str(self.path))
        )

    def _allowed(self, item: Any, what: str) -> None:
        refused = None if self._why is None else self._why(item, what)
        if refused is not None:
            raise refused

    @property
    def archive(self) -> Archive:
        if self._archive is None:
            raise ValueError("the ZIM reader is closed")
        return self._archive

    # -- entries -------------------------------------------------------------------------------

    @property
    @_guarded
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
            try:
                yield a._get_entry_by_id(i).path
            except (RuntimeError, UnicodeDecodeError) as e:
                raise self._damaged(f"#{i}", e) from None

    @_guarded
    def has(self, path: str) -> bool:
        """Whether ``path`` is an entry (item or redirect)."""
        return self.archive.has_entry_by_path(path)

    @_guarded
    def get(self, path: str) -> Entry:
        """The entry at ``path``; ``KeyError`` when there is none."""
        try:
            raw = self.archive.get_entry_by_path(path)
        except KeyError:
            raise KeyError(path) from None
        return self._wrap(raw)

    def _damaged(self, what: str, e: Exception) -> FormatError:
        error = _damaged(what, e)
        error.subject = str(self.path)
        return error

    def _wrap(self, raw: object) -> Entry:
        try:
            return self._wrap_raw(raw)
        except (RuntimeError, UnicodeDecodeError) as e:
            raise self._damaged(str(getattr(raw, "path", "?")), e) from None

    def _wrap_raw(self, raw: object) -> Entry:
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
            _file=str(self.path),
            _why=self._why,
        )

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry as an :class:`Entry`, in path order (redirect ends resolved)."""
        a = self.archive
        for i in range(a.entry_count):
            try:
                raw = a._get_entry_by_id(i)
            except (RuntimeError, UnicodeDecodeError) as e:
                raise self._damaged(f"#{i}", e) from None
            yield self._wrap(raw)

    # -- metadata ------------------------------------------------------------------------------

    @property
    @_guarded
    def metadata(self) -> dict[str, str]:
        """Text metadata (``Title``, ``Language`` …) decoded as UTF-8; illustrations and ``Counter``
        excluded. Invalid UTF-8 is replaced (verify reports it)."""
        out = {}
        for key in self.archive.metadata_keys:
            if key.startswith("Illustration_") or key == "Counter":
                continue
            item = self.archive.get_metadata_item(key)
            self._allowed(item, f"M/{key}")
            out[key] = bytes(item.content).decode("utf-8", "replace")
        return out

    @_guarded
    def metadata_bytes(self, key: str) -> bytes | None:
        """The raw bytes of one metadata entry, None when absent."""
        if key not in self.archive.metadata_keys:
            return None
        item = self.archive.get_metadata_item(key)
        self._allowed(item, f"M/{key}")
        return bytes(item.content)

    @property
    def illustration(self) -> bytes | None:
        """The bytes of ``Illustration_48x48@1``, None when absent."""
        return self.metadata_bytes(ILLUSTRATION_KEY)

    # -- integrity, search ---------------------------------------------------------------------

    @property
    def has_checksum(self) -> bool:
        return bool(self.archive.has_checksum)

    @_guarded
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
        self._guard = self._why = None  # closed when the last entry handed out goes too

    def __enter__(self) -> ZimReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: How much :func:`open_archive` checks before libzim is trusted with a file.
Check = Literal["full", "structure"]


def open_archive(path: Path, *, check: Check = "full") -> ZimReader:
    """Open the ZIM file at ``path`` (exported as ``archiver.zim.open``); a split ZIM is opened by
    its base name (``X.zim`` for ``X.zimaa``, ``X.zimab``…), as libzim and kiwix-serve do.

    Before libzim reads it, the file's structure is checked (:mod:`archiver.zim.structure`: every
    pointer, index and blob table in range, the directory sorted) and, with ``check="full"``, its
    MD5 checksum (when it has one): a crafted or damaged file is refused with one
    :class:`FormatError` line instead of crashing libzim or handing out wrong bytes.
    ``check="structure"`` skips the checksum (a full read of the file; ``--no-check`` on the
    command line). Raises :class:`UsageError` when there is
    no such file."""
    path = Path(path)
    parts = split_parts(path)
    if not parts or not all(p.is_file() for p in parts):
        raise UsageError("no such file", subject=str(path))
    problems = structure_problems(parts)
    if problems and problems[0].startswith(NOT_A_ZIM):
        raise FormatError(f"not a readable ZIM file: {problems[0]}", subject=str(path))
    if problems:
        more = f" ({len(problems) - 1} more; archiver verify lists them)" if len(problems) > 1 else ""
        raise FormatError(f"damaged ZIM: {problems[0]}{more}", subject=str(path))
    reader = ZimReader(path)
    if check == "full" and reader.has_checksum and not reader.check_checksum():
        reader.close()
        raise FormatError(
            "damaged ZIM: the MD5 checksum does not match (--no-check reads it all the same)",
            subject=str(path),
        )
    return reader


def structure_problems(parts: list[Path]) -> list[str]:
    """The structural problems of the ZIM made of ``parts`` (empty when sound)."""
    try:
        with Source(parts) as src:
            return check_structure(src)
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror}", subject=str(parts[0])) from None
