"""gwtar → ZIM: a gwtar file (formats/gwtar.md) seen as a ``pack`` source.

Members become entries at their paths with their media types and titles; pages are front articles;
the gwtar's main page is the ZIM's; the tree manifest the gwtar carries (``_archiver/manifest.jsonl``)
is stored as it is and its aliases become redirects (formats/zim.md §5, §9). Member bytes are
streamed with ``pread``, so libzim's worker threads can read several at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec

from archiver import gwtar
from archiver.gwtar.rules import INDEX_PATH
from archiver.media import media_type_for
from archiver.tree import Record
from archiver.zim.source import (
    STORED_EDITS,
    STORED_MANIFEST,
    STUB_LIMIT,
    SourceEntry,
    SourceRedirect,
    aliases,
    check_entry_path,
    parse_redirect_stub,
)
from archiver.zim.zimsafe import Edit

__all__ = ["GwtarSource"]

_CHUNK = 1 << 20
_record = msgspec.json.Decoder(Record)


class GwtarSource:
    """A ``.gwtar.html`` file as a source for :func:`archiver.zim.pack`."""

    kind = "gwtar"

    def __init__(self, path: Path) -> None:
        self.reader = gwtar.open(path)
        self.label = str(path)
        self.header = None  # the gwtar's own copy of the manifest is stored as it is
        meta = self.reader.meta or {}
        home = meta.get("home")
        self.home: str | None = home if isinstance(home, str) else None
        self.incomplete = False
        self.carried_metadata: dict[str, str] = {}
        self.carried_illustration: bytes | None = None
        self.carried_edits: dict[str, list[Edit]] = {}
        skip = (INDEX_PATH, STORED_EDITS)
        self._members = {m.path: m for m in self.reader.members if m.path not in skip}
        self._stubs: list[SourceRedirect] = []
        self._main = self.reader.main
        added = self._members.get(self._main)
        if added is not None and added.size <= STUB_LIMIT:  # the page a ZIM → gwtar conversion added
            stub = parse_redirect_stub(added.path, self.head(added.path) or b"", role="main")
            if stub is not None and stub.target in self._members:
                del self._members[added.path]
                self._main = stub.target

    def has(self, path: str) -> bool:
        return path in self._members

    def head(self, path: str, limit: int = _CHUNK) -> bytes | None:
        member = self._members.get(path)
        if member is None:
            return None
        with self.reader.open_member(member) as f:
            return f.read(limit)

    def main_candidates(self) -> list[str]:
        return [self._main, "index.html"]

    def entries(self) -> Iterator[SourceEntry]:
        for m in self._members.values():
            check_entry_path(m.path, self.label)
            media_type = m.media_type or media_type_for(m.path)
            if m.kind == "page" and m.size <= STUB_LIMIT:
                stub = parse_redirect_stub(m.path, self.head(m.path) or b"")
                if stub is not None and stub.target in self._members:
                    self._stubs.append(stub)  # a ZIM redirect that went through a tree (zim.md §9)
                    continue
            yield SourceEntry(
                path=m.path,
                media_type=media_type,
                title=m.title or "",
                page=m.kind == "page" and media_type in ("text/html", "application/xhtml+xml"),
                size=m.size,
                sha256=m.sha256,
                source=self,
            )

    def chunks(self, entry: SourceEntry) -> Iterator[bytes]:
        with self.reader.open_member(self._members[entry.path]) as f:
            while chunk := f.read(_CHUNK):
                yield chunk

    def read_at(self, entry: SourceEntry, offset: int, length: int) -> bytes:
        with self.reader.open_member(self._members[entry.path]) as f:
            f.seek(offset)
            return f.read(length) or b""

    def redirects(self) -> Iterator[SourceRedirect]:
        """Redirect stubs, then the manifest's aliases. Valid once :meth:`entries` is exhausted."""
        yield from self._stubs
        manifest = self._members.get(STORED_MANIFEST)
        if manifest is None or not self.home:
            return
        with self.reader.open_member(manifest) as f:
            f.readline()  # the header
            for line in f:
                if not line.endswith(b"\n") or not line.strip():
                    continue
                try:
                    record = _record.decode(line)
                except msgspec.DecodeError:
                    continue
                yield from aliases(record, self.home)

    def close(self) -> None:
        self.reader.close()
