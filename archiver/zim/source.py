"""What ``pack`` reads: a canonical tree, a ZIM or a gwtar, seen as one stream of entries.

Each source yields :class:`SourceEntry` values in a stable order, streams their bytes on demand, and
knows its home URL, a main page candidate, its redirects and whether its crawl is complete. Nothing
here writes anything.
"""

from __future__ import annotations

import contextlib
import html
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from archiver.errors import FormatError, URLError, UsageError
from archiver.media import media_type_for
from archiver.tree import Header, Record, is_private, read_header, read_records, records
from archiver.urls import RESERVED_DIR, local_path, rel
from archiver.zim.zimsafe import Edit, decode_edits

__all__ = [
    "INCOMPLETE_MARKER",
    "STORED_EDITS",
    "STORED_MANIFEST",
    "STUB_LIMIT",
    "STUB_STATUS",
    "Source",
    "SourceEntry",
    "SourceRedirect",
    "TreeSource",
    "ZimSource",
    "aliases",
    "check_entry_path",
    "open_source",
    "parse_redirect_stub",
    "redirect_stub",
]

#: A file in the reserved folder that marks a crawl as unfinished (formats/zim.md §2).
INCOMPLETE_MARKER = "INCOMPLETE"
#: Where the tree's manifest travels inside a ZIM (formats/zim.md §3).
STORED_MANIFEST = f"{RESERVED_DIR}/manifest.jsonl"
#: The byte edits that keep zimcheck quiet, kept so extract restores the pages (formats/zim.md §3.1).
STORED_EDITS = f"{RESERVED_DIR}/zim-edits.jsonl"
_CHUNK = 1 << 20
_ZIM_MAGIC = b"ZIM\x04"
#: The HTTP status a redirect stub's record carries (formats/zim.md §9): a ZIM redirect is permanent.
STUB_STATUS = 301
#: Larger pages are never redirect stubs (a stub is a few hundred bytes and its title).
STUB_LIMIT = 16 << 10
_STUB_START = b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>'
_STUB_FIELDS = re.compile(
    rb'<title>(.*?)</title><meta name="archiver-(redirect|main)" content="([^"]*)">', re.S
)
_NO_TITLE = "Moved"


@dataclass
class SourceEntry:
    """One stored file. ``page`` is True for HTML pages (front articles); ``record`` is the tree
    manifest record it came from (or one made up for other sources)."""

    path: str
    media_type: str
    title: str
    page: bool
    size: int
    sha256: str | None
    source: Source = field(repr=False)
    record: Record | None = None

    def chunks(self) -> Iterator[bytes]:
        """The bytes, in pieces of at most 1 MiB."""
        return self.source.chunks(self)

    def read_at(self, offset: int, length: int) -> bytes:
        """At most ``length`` bytes from ``offset`` (fewer at the end), without reading the rest."""
        return self.source.read_at(self, offset, length)


@dataclass(frozen=True)
class SourceRedirect:
    """An alias of a stored file: ``path`` leads to ``target``."""

    path: str
    target: str
    title: str = ""


class Source(Protocol):
    """The interface every input offers."""

    kind: str
    label: str
    home: str | None
    incomplete: bool
    carried_metadata: dict[str, str]
    carried_illustration: bytes | None
    carried_edits: dict[str, list[Edit]]
    header: Header | None

    def entries(self) -> Iterator[SourceEntry]: ...
    def chunks(self, entry: SourceEntry) -> Iterator[bytes]: ...
    def read_at(self, entry: SourceEntry, offset: int, length: int) -> bytes: ...
    def redirects(self) -> Iterable[SourceRedirect]: ...
    def has(self, path: str) -> bool: ...
    def head(self, path: str, limit: int = _CHUNK) -> bytes | None: ...
    def main_candidates(self) -> list[str]: ...
    def close(self) -> None: ...


def aliases(record: Record, home: str, urls: list[str] | None = None) -> Iterator[SourceRedirect]:
    """The redirects a manifest record asks for (formats/zim.md §5): every extra URL (``urls[1:]``)
    and every URL that redirected to it (``redirects``), at the path LocalPath gives it (tree.md §4),
    when that differs from the record's own path."""
    for url in urls if urls is not None else [*record.urls[1:], *record.redirects]:
        try:
            path = local_path(url, kind=record.kind, home=home)
        except (URLError, ValueError):
            continue
        if path != record.path:
            yield SourceRedirect(path, record.path, record.title or "")


def redirect_stub(path: str, target: str, title: str = "", *, role: str = "redirect") -> bytes:
    """The page ``extract`` writes at ``path`` for a ZIM redirect to ``target`` (formats/zim.md §9):
    tree.md §9.1's stub with the target's tree path in ``<meta name="archiver-redirect">``, so that
    packers turn it back into a redirect. ``title`` is the redirect's own title ("Moved" when none).
    With ``role="main"`` it is the page a ZIM → gwtar conversion adds when the ZIM's main page has no
    ``.html`` name (a gwtar's main page must have one): ``<meta name="archiver-main">``, and a gwtar →
    ZIM conversion leaves it out again."""
    href = html.escape(rel(path, target), quote=True)
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title or _NO_TITLE)}</title>'
        f'<meta name="archiver-{role}" content="{html.escape(target, quote=True)}">'
        f'<meta http-equiv="refresh" content="0; url={href}"></head>\n'
        f'<body><p>This page moved to <a href="{href}">{html.escape(target)}</a>.</p></body></html>\n'
    ).encode()


def parse_redirect_stub(path: str, data: bytes, role: str = "redirect") -> SourceRedirect | None:
    """The redirect a page at ``path`` stands for when its bytes are exactly :func:`redirect_stub`'s
    with this ``role`` (any other page, capture's own stubs included, is None)."""
    if len(data) > STUB_LIMIT or not data.startswith(_STUB_START):
        return None
    m = _STUB_FIELDS.search(data)
    if m is None or m[2].decode() != role:
        return None
    try:
        title, target = html.unescape(m[1].decode()), html.unescape(m[3].decode())
        if not target or redirect_stub(path, target, title, role=role) != data:
            return None
    except (UnicodeDecodeError, URLError):
        return None
    return SourceRedirect(path, target, "" if title == _NO_TITLE else title)


def check_entry_path(path: str, label: str) -> None:
    """Refuse an entry path that is not a clean relative path (empty, leading ``/``, ``.``/``..``
    or empty segments, NUL): it could not be extracted safely, and libzim would store ``/x`` apart
    from ``x``."""
    if not path or path.startswith("/") or "\0" in path:
        raise FormatError(f"entry path {path!r} is not a relative path", subject=label)
    if any(seg in ("", ".", "..") for seg in path.split("/")):
        raise FormatError(f"entry path {path!r} has an empty, '.' or '..' segment", subject=label)


class TreeSource:
    """A canonical tree (formats/tree.md): its manifest's records, or inferred ones."""

    kind = "tree"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._resolved = self.root.resolve()
        self._resolved_prefix = os.path.join(self._resolved, "")  # with its final separator
        self.label = str(root)
        self.header = read_header(self.root)
        self.home = self.header.home if self.header else None
        options = self.header.options if self.header else {}
        self.incomplete = (
            bool(options.get("incomplete")) or (self.root / RESERVED_DIR / INCOMPLETE_MARKER).exists()
        )
        self.carried_metadata: dict[str, str] = {}
        self.carried_illustration: bytes | None = None
        self.carried_edits: dict[str, list[Edit]] = {}
        self._pending: list[tuple[Record, str]] = []
        self._stubs: list[SourceRedirect] = []
        self._folders: dict[Path, Path] = {}
        self._listed: set[str] | None = None
        self._first_page: str | None = None
        if self.header is not None:
            # one streaming pass over the manifest: the set of paths (for main/icon look-ups)
            self._listed = set()
            for r in read_records(self.root):
                if is_private(r.path):
                    continue  # never content, even when a manifest names it (formats/serve.md §5.1)
                self._listed.add(r.path)
                if self._first_page is None and r.kind == "page":
                    self._first_page = r.path

    def _file(self, path: str) -> Path:
        return self.root / path

    def has(self, path: str) -> bool:
        """Whether ``path`` is one of the tree's entries: listed in its manifest, or (without one) a
        regular file the walk of tree.md §8.2 would find: not metadata of the reserved folder, not a
        private file (tree.is_private, also through a symlink), not a symlink that leaves the tree."""
        if self._listed is not None:  # a listed path that leaves the tree fails later, in entries()
            return path in self._listed and not self._leads_to_private(self._file(path))
        if not path or path.startswith("/") or any(s in ("", ".", "..") for s in path.split("/")):
            return False
        top, _, rest = path.partition("/")
        if top == RESERVED_DIR and "/" not in rest:
            return False  # metadata files of the reserved folder are never content
        if is_private(path):
            return False
        full = self._file(path)
        return full.is_file() and self._public(full)

    def head(self, path: str, limit: int = _CHUNK) -> bytes | None:
        if not self.has(path):
            return None
        with self._file(path).open("rb") as f:
            return f.read(limit)

    def main_candidates(self) -> list[str]:
        out = []
        main = self.header.options.get("main") if self.header else None
        if isinstance(main, str):  # a tree extracted from a ZIM names the ZIM's main page
            out.append(main)
        if self.home:
            with contextlib.suppress(URLError):
                out.append(local_path(self.home, kind="page", home=self.home))
        out += ["index.html", "index.htm"]
        if self._first_page:
            out.append(self._first_page)
        elif self._listed is None:
            out += sorted(
                p.relative_to(self.root).as_posix() for p in self.root.glob("*.htm*") if p.is_file()
            )
        return out

    def entries(self) -> Iterator[SourceEntry]:
        for record in records(self.root):
            if record.path in (STORED_MANIFEST, STORED_EDITS) or is_private(record.path):
                continue  # a private file is never content, even when a manifest names it
            check_entry_path(record.path, self.label)
            full = self._file(record.path)
            try:
                st = full.stat()
            except OSError:
                raise FormatError(
                    f"{record.path!r} is in the manifest but not on disk", subject=self.label
                ) from None
            if not full.is_file():
                raise FormatError(f"{record.path!r} is not a regular file", subject=self.label)
            target = self._real(full)
            if not target.is_relative_to(self._resolved):
                raise FormatError(f"{record.path!r} is a symlink that leaves the tree", subject=self.label)
            if self._private_target(target):
                continue  # a symlink (or symlinked folder) leading to a private file: left out too
            if st.st_size != record.size:
                raise FormatError(
                    f"{record.path!r} has {st.st_size} bytes on disk, the manifest says {record.size}",
                    subject=self.label,
                )
            for url in [*record.urls[1:], *record.redirects]:
                self._pending.append((record, url))
            stub = self._stub(record, full)
            if stub is not None:
                self._stubs.append(stub)
                continue
            yield SourceEntry(
                path=record.path,
                media_type=record.media_type or media_type_for(record.path),
                title=record.title or "",
                page=record.kind == "page" and record.media_type in ("text/html", "application/xhtml+xml"),
                size=record.size,
                sha256=record.sha256 or None,
                source=self,
                record=record,
            )

    def _stub(self, record: Record, full: Path) -> SourceRedirect | None:
        """The redirect a record stands for when it is a redirect stub (:func:`parse_redirect_stub`,
        with status 3xx) whose target the manifest lists; None for every other file."""
        if record.kind != "page" or not (300 <= (record.status or 0) < 400) or record.size > STUB_LIMIT:
            return None
        with full.open("rb") as f:
            stub = parse_redirect_stub(record.path, f.read(STUB_LIMIT + 1))
        if stub is None or self._listed is None or stub.target not in self._listed:
            return None
        return SourceRedirect(stub.path, stub.target, record.title or "")

    def _real(self, full: Path) -> Path:
        """Where ``full`` really is; each folder is resolved once, a file only when it is a symlink
        itself."""
        folder = self._folders.get(full.parent)
        if folder is None:
            folder = self._folders[full.parent] = full.parent.resolve()
        return full.resolve() if full.is_symlink() else folder / full.name

    def _public(self, full: Path) -> bool:
        """Whether ``full`` resolves inside the tree to a file that is not private (tree.is_private
        of its real path relative to the tree's real root)."""
        target = self._real(full)
        return target.is_relative_to(self._resolved) and not self._private_target(target)

    def _leads_to_private(self, full: Path) -> bool:
        """Whether ``full`` resolves inside the tree to one of its private files."""
        target = self._real(full)
        return target.is_relative_to(self._resolved) and self._private_target(target)

    def _private_target(self, target: Path) -> bool:
        """Whether a real path inside the tree's real root is private (tree.is_private); string
        slicing, as this runs once per entry."""
        rel = str(target)[len(self._resolved_prefix) :]
        return is_private(rel if os.sep == "/" else rel.replace(os.sep, "/"))

    def chunks(self, entry: SourceEntry) -> Iterator[bytes]:
        with self._file(entry.path).open("rb") as f:
            while chunk := f.read(_CHUNK):
                yield chunk

    def read_at(self, entry: SourceEntry, offset: int, length: int) -> bytes:
        with self._file(entry.path).open("rb") as f:
            return os.pread(f.fileno(), length, offset)

    def redirects(self) -> Iterator[SourceRedirect]:
        """Redirect stubs, then aliases from the manifest (:func:`aliases`). Valid once
        :meth:`entries` is exhausted."""
        yield from self._stubs
        if not self.home:
            return
        for record, url in self._pending:
            yield from aliases(record, self.home, [url])

    def close(self) -> None:
        pass


class ZimSource:
    """A ZIM file: its content entries, redirects, metadata and illustration."""

    kind = "zim"

    def __init__(self, path: Path) -> None:
        from archiver.zim.read import open_archive

        self.reader = open_archive(path)
        self.label = str(path)
        self.header = None
        self.incomplete = False
        meta = self.reader.metadata
        self.home = meta.get("Source") or None
        self.carried_metadata = meta
        self.carried_illustration = self.reader.illustration
        self.carried_edits: dict[str, list[Edit]] = {}
        if self.reader.has(STORED_EDITS):
            try:
                self.carried_edits = decode_edits(self.reader.get(STORED_EDITS).read())
            except (ValueError, UnicodeDecodeError) as e:
                self.reader.close()
                raise FormatError(f"{STORED_EDITS} is not valid: {e}", subject=self.label) from None
        self._redirects: list[SourceRedirect] = []

    def has(self, path: str) -> bool:
        return self.reader.has(path)

    def head(self, path: str, limit: int = _CHUNK) -> bytes | None:
        try:
            return self.reader.get(path).read(0, limit)
        except KeyError:
            return None

    def main_candidates(self) -> list[str]:
        main = self.reader.main_path
        return [main] if main else ["index.html"]

    def entries(self) -> Iterator[SourceEntry]:
        for entry in self.reader.iter_entries():
            check_entry_path(entry.path, self.label)
            if entry.path == STORED_EDITS:
                continue  # pack restores the pages and writes its own (formats/zim.md §3.1)
            if entry.is_redirect:
                title = entry.title if entry.title != entry.path else ""
                self._redirects.append(SourceRedirect(entry.path, entry.redirect_target or "", title))
                continue
            mimetype = entry.mimetype.split(";", 1)[0].strip()
            page = mimetype in ("text/html", "application/xhtml+xml") and entry.path != STORED_MANIFEST
            yield SourceEntry(
                path=entry.path,
                media_type=mimetype,
                title=entry.title if entry.title != entry.path else "",
                page=page,
                size=entry.size,
                sha256=None,
                source=self,
            )

    def chunks(self, entry: SourceEntry) -> Iterator[bytes]:
        return self.reader.get(entry.path).chunks(_CHUNK)

    def read_at(self, entry: SourceEntry, offset: int, length: int) -> bytes:
        return self.reader.get(entry.path).read(offset, length)

    def redirects(self) -> list[SourceRedirect]:
        return self._redirects

    def close(self) -> None:
        self.reader.close()


def _is_zim(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == _ZIM_MAGIC


def open_source(src: Path) -> Source:
    """The right reader for ``src``: a folder is a tree; a file starting with the ZIM magic number is
    a ZIM; a ``.gwtar.html`` (or any file :mod:`archiver.gwtar` opens) is a gwtar."""
    src = Path(src)
    if src.is_dir():
        return TreeSource(src)
    if not src.exists():
        if src.with_name(f"{src.name}aa").is_file():  # a split ZIM named by its base name
            return ZimSource(src)
        raise UsageError("no such file or folder", subject=str(src))
    if not src.is_file():
        raise UsageError("not a folder (tree), a .zim or a .gwtar.html", subject=str(src))
    if _is_zim(src):
        return ZimSource(src)
    if src.name.lower().endswith((".html", ".htm")):
        from archiver.zim.convert import GwtarSource

        return GwtarSource(src)
    raise UsageError("not a folder (tree), a .zim or a .gwtar.html", subject=str(src))
