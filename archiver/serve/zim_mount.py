"""A ZIM file served by ``archiver serve`` below ``/<name>/`` (:class:`_ZimMount`, through
:func:`archiver.zim.open`): its entries (:class:`_ZimEntry`), the main page, redirect entries, and
the full-text search behind the search pages of :class:`archiver.serve.site.Site`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from archiver.errors import ArchiverError, UsageError
from archiver.media import media_type_for
from archiver.serve.mounts import Mount, _with_charset
from archiver.serve.paths import _href
from archiver.serve.representation import _NOT_FOUND, Problem, Redirect, Representation, Result

#: an entry over zim.structure.MAX_ENTRY (formats/zim.md §7.1): not read, as every reader refuses it
_TOO_LARGE = Problem(500, "an entry larger than archiver reads from a ZIM")

__all__: list[str] = []  # the serve package's own: sources.mounts_for makes a ZIM file's mount


class _ZimEntry(Representation):
    __slots__ = ("entry",)

    def __init__(self, entry: Any, content_type: str, etag: str, last_modified: int) -> None:
        super().__init__(int(entry.size), content_type, etag, last_modified)
        self.entry = entry

    def read(self, start: int, stop: int) -> bytes:
        return bytes(self.entry.read(start, stop - start))


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
        from archiver.zim.structure import MAX_ENTRY  # with the reader: no libzim at this module's import

        self.max_entry = MAX_ENTRY  # an entry over it is not read (formats/zim.md §7.1)
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
        if int(getattr(entry, "size", 0)) > self.max_entry:  # a bomb's entry: refused before any header
            return _TOO_LARGE
        refusal = getattr(entry, "refusal", None)
        if refusal is not None and refusal() is not None:  # or one deep in a cluster that is a bomb
            return _TOO_LARGE
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


def _zim_parts(path: Path) -> list[Path]:
    """The file of a ZIM, or the parts ``Xaa``, ``Xab``… of a split ZIM named ``X`` (zim.md §7.1)."""
    from archiver.zim.structure import split_parts

    return split_parts(path)
