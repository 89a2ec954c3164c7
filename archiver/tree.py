"""The canonical tree on disk and its manifest (formats/tree.md §8).

This module touches the filesystem; the path rules it relies on are pure and live in
:mod:`archiver.urls`. Reading is streaming: records are yielded one at a time, files are hashed in
fixed-size chunks, so a tree of any size is read in constant memory (the manifest reader keeps one
``path → offset`` map to apply "later record wins").
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Literal

import msgspec

from archiver import __version__
from archiver.atomicfile import create_new, write_atomic
from archiver.errors import FormatError
from archiver.media import media_type_for
from archiver.treefolders import MANIFEST_NAME, manifest_path, own_folders, own_parent
from archiver.urls import PRIVATE_NAMES, REPORT_NAME, RESERVED_DIR, STATE_NAME
from archiver.walk import makedirs

__all__ = [
    "FORMAT_VERSION",
    "LINE_LIMIT",
    "MANIFEST_NAME",
    "PRIVATE_NAMES",
    "STATE_NAME",
    "Header",
    "ManifestWriter",
    "Record",
    "WarcRef",
    "decode_record",
    "hash_file",
    "infer_records",
    "is_private",
    "manifest_path",
    "open_manifest",
    "own_folders",
    "own_parent",
    "page_title",
    "read_header",
    "read_line",
    "read_records",
    "records",
    "title_from_html",
    "write_manifest",
    "write_records",
]

FORMAT_VERSION = 1
# STATE_NAME and PRIVATE_NAMES (the private files, is_private) are re-exported from archiver.urls,
# where they are defined because RESERVED_NAMES is built from them and urls cannot import this module.
_CHUNK = 1 << 20


class Header(msgspec.Struct, kw_only=True):
    """The first line of ``_archiver/manifest.jsonl`` (tree.md §8.1)."""

    format: Literal["archiver-tree"] = "archiver-tree"
    version: int = FORMAT_VERSION
    home: str
    created: str
    tool: str = f"archiver/{__version__}"
    seeds: list[str] = msgspec.field(default_factory=list)
    options: dict[str, Any] = msgspec.field(default_factory=dict)


class WarcRef(msgspec.Struct, kw_only=True):
    """Where the WARC record of a stored file's response is (tree.md §8.1, warc.md §7): the file's
    name in ``_archiver/warc/``, the offset of the record's gzip member, its ``WARC-Record-ID``."""

    file: str
    offset: int
    id: str


class Record(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One stored file (tree.md §8.1)."""

    path: str
    kind: Literal["page", "asset"]
    media_type: str
    size: int
    sha256: str
    urls: list[str] = msgspec.field(default_factory=list)
    title: str | None = None
    status: int | None = None
    fetched: str | None = None
    depth: int | None = None
    referrer: str | None = None
    redirects: list[str] = msgspec.field(default_factory=list)
    warc: WarcRef | None = None
    #: the response's validators, sanitised (archiver.capture.conditional); optional (tree.md §8.1)
    etag: str | None = None
    last_modified: str | None = None
    #: this run's conditional request was answered 304: the bytes are the previous run's
    revalidated: bool = False


_header_decoder = msgspec.json.Decoder(Header)
_record_decoder = msgspec.json.Decoder(Record)
_encoder = msgspec.json.Encoder()


def is_private(tree_path: str) -> bool:
    """Whether a '/'-separated path relative to a tree's root is one of its private files
    (:data:`PRIVATE_NAMES`, or anything inside the ``tmp`` folder). Empty and ``.`` segments are
    ignored; names compare case-insensitively, as a case-insensitive file system finds them."""
    parts = [p for p in tree_path.split("/") if p and p != "."]
    if len(parts) < 2 or parts[0].lower() != RESERVED_DIR:
        return False
    name = parts[1].lower()
    return name in PRIVATE_NAMES or name.startswith((STATE_NAME, REPORT_NAME))


#: The longest manifest line read (a record's line is a few hundred bytes): a tree is hostile input,
#: and a manifest of one endless line was read whole into memory.
LINE_LIMIT = 16 << 20
#: The largest manifest :func:`read_record_list` reads whole (as the version store bounds a version's
#: manifest, versions/storefiles.MAX_MANIFEST_BYTES): larger is a FormatError, nothing read.
WHOLE_LIMIT = 1 << 30


def open_manifest(path: Path) -> BinaryIO:
    """The manifest ``path`` opened for reading: a regular file, never a symbolic link followed out
    of the tree nor a FIFO waited on (a :class:`FormatError` naming it)."""
    from archiver import safefs  # not at import: a capture's start imports this module

    return os.fdopen(safefs.open_regular(path), "rb")


def read_line(f: BinaryIO, lineno: int, path: Path) -> bytes:
    """The next line of the manifest ``f`` (line ``lineno`` of ``path``), read no further than
    :data:`LINE_LIMIT`: a longer one is a :class:`FormatError` naming it."""
    line = f.readline(LINE_LIMIT + 1)
    if len(line) > LINE_LIMIT:
        raise FormatError(f"line {lineno} is longer than {LINE_LIMIT} bytes", subject=str(path))
    return line


def read_header(root: Path) -> Header | None:
    """The manifest header of the tree at ``root``, or None when the tree has no manifest."""
    path = manifest_path(root)
    if not path.is_file():
        return None
    with open_manifest(path) as f:
        first = read_line(f, 1, path)
    return _decode_header(first, path)


def _decode_header(line: bytes, path: Path) -> Header:
    try:
        header = _header_decoder.decode(line)
    except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
        raise FormatError(f"line 1 is not a manifest header: {e}", subject=str(path)) from None
    if header.version > FORMAT_VERSION:
        raise FormatError(
            f"tree format {header.version} is newer than this archiver reads ({FORMAT_VERSION}); upgrade",
            subject=str(path),
        )
    return header


def read_records(root: Path) -> Iterator[Record]:
    """The records of the tree's manifest, later records for a path replacing earlier ones, in the
    order their paths first appeared. A torn last line (a crash mid-append) is ignored; any other bad
    line is a :class:`FormatError` naming the line."""
    path = manifest_path(root)
    offsets: dict[str, int] = {}
    order: list[str] = []
    with open_manifest(path) as f:
        for offset, record in _manifest_lines(f, path):
            if record.path not in offsets:
                order.append(record.path)
            offsets[record.path] = offset
        for p in order:
            f.seek(offsets[p])
            yield _record_decoder.decode(f.readline(LINE_LIMIT + 1))


def read_record_list(root: Path) -> list[Record]:
    """:func:`read_records` as a list: the same records in the same order, the same errors, each line
    decoded once (read_records decodes every line twice, to hold offsets rather than records) for a
    caller that holds them all anyway."""
    path = manifest_path(root)
    by_path: dict[str, Record] = {}  # a later record for a path replaces it where it first was
    with open_manifest(path) as f:
        if os.fstat(f.fileno()).st_size > WHOLE_LIMIT:  # read whole below: a sparse terabyte was
            raise FormatError(f"is larger than {WHOLE_LIMIT} bytes", subject=str(path))  # MemoryError
        _decode_header(read_line(f, 1, path), path)
        lines = f.read(WHOLE_LIMIT).split(b"\n")  # no offsets: no tell() (a system call) a line
    last = len(lines) - 1  # lines[last]: b"" after a whole last line, else a torn one (ignored)
    for n, line in enumerate(lines):
        if n == last:
            break
        if len(line) > LINE_LIMIT:  # as read_records says it
            raise FormatError(f"line {n + 2} is longer than {LINE_LIMIT} bytes", subject=str(path))
        if line.strip():
            record = decode_record(line, n + 2, path)
            by_path[record.path] = record
    return list(by_path.values())


def decode_record(line: bytes, lineno: int, path: Path) -> Record:
    """The record on manifest line ``lineno`` (1 is the header), or a :class:`FormatError` naming it."""
    try:
        return _record_decoder.decode(line)
    except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
        raise FormatError(f"line {lineno}: {e}", subject=str(path)) from None


def _manifest_lines(f: BinaryIO, path: Path) -> Iterator[tuple[int, Record]]:
    """Each record of the open manifest ``f`` after its header (checked), with the offset its line
    starts at. A torn last line (a crash mid-append) ends it; any other bad line is a
    :class:`FormatError` naming the line."""
    _decode_header(read_line(f, 1, path), path)
    lineno = 1
    while True:
        offset = f.tell()
        line = read_line(f, lineno + 1, path)
        if not line:
            return
        lineno += 1
        if not line.endswith(b"\n"):
            return  # torn last line
        if line.strip():
            yield offset, decode_record(line, lineno, path)


def records(root: Path) -> Iterator[Record]:
    """The records of the tree at ``root``: from its manifest when it has one, inferred otherwise."""
    if manifest_path(root).is_file():
        yield from read_records(root)
    else:
        yield from infer_records(root)


def hash_file(path: Path) -> tuple[int, str]:
    """(size, SHA-256 hex) of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


# compiled at their use (re keeps them), case-insensitive: a capture, which imports this module at
# its start, never reads a title from bytes. What they find is what rb"<title[^>]*>(.*?)</title\s*>"
# (re.DOTALL) and rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""" searches found, in linear
# time (:func:`_title_text`, :func:`_charset`): those were tried from every "<title" and "<meta", each
# try running to the end of the bytes or the next ">" (1 MiB of "<title>" took minutes).
_TITLE_END = rb"</title\s*>"
_CHARSET_AT = rb"""(?=charset\s*=\s*["']?([A-Za-z0-9_\-]+))"""


def _title_text(data: bytes) -> bytes | None:
    """The bytes between the first ``<title...>`` and the next ``</title>``. A try from a later
    ``<title`` reads from a later ``>`` and cannot find an end the first one did not."""
    first = re.compile(rb"<title", re.IGNORECASE).search(data)  # no lowered copy of a MiB a page
    gt = -1 if first is None else data.find(b">", first.start())
    if gt < 0:
        return None
    end = re.compile(_TITLE_END, re.IGNORECASE).search(data, gt + 1)
    return None if end is None else data[gt + 1 : end.start()]


def _charset(data: bytes) -> bytes | None:
    """The ``charset=`` of the first ``<meta`` that has one before its ``>``: the last one there (the
    old pattern's ``[^>]+`` was greedy). The ``<meta`` after the first one before the same ``>`` see
    only part of its span: once it has none, the search goes on past that ``>``."""
    at = re.compile(_CHARSET_AT, re.IGNORECASE)
    meta = re.compile(rb"<meta", re.IGNORECASE)
    found_meta = meta.search(data)
    while found_meta is not None:
        start = found_meta.start()
        gt = data.find(b">", start)
        found = at.findall(data, start + 6, len(data) if gt < 0 else gt)
        if found:
            return found[-1]  # type: ignore[no-any-return]
        if gt < 0:
            return None
        found_meta = meta.search(data, gt + 1)
    return None


def page_title(path: Path, *, limit: int = 1 << 20) -> str | None:
    """The text of a page's ``<title>``, entities decoded and whitespace collapsed, read from its
    first ``limit`` bytes (the title belongs in the head)."""
    with path.open("rb") as f:
        head = f.read(limit)
    return title_from_html(head)


def title_from_html(data: bytes) -> str | None:
    """The ``<title>`` of an HTML document's bytes (see :func:`page_title`)."""
    found = _title_text(data)
    if found is None:
        return None
    cs = _charset(data)
    encoding = cs.decode("ascii") if cs else "utf-8"
    try:
        text = found.decode(encoding, "replace")
    except LookupError:
        text = found.decode("utf-8", "replace")
    import html  # its entity table: only for a tree without a manifest

    title = " ".join(html.unescape(text).split())
    return title or None


def infer_records(root: Path) -> Iterator[Record]:
    """Records for a tree without a manifest (tree.md §8.2): every regular file under ``root`` in
    sorted path order, except the files directly inside the reserved folder (metadata) and the
    private ones (:func:`is_private`, also when a symlink leads there); symlinks that leave the root,
    symlinked folders and special files are skipped."""
    root = root.resolve()
    for rel in _walk(root, root):
        full = root / rel
        size, sha = hash_file(full)
        is_page = rel.lower().endswith((".html", ".htm"))
        yield Record(
            path=rel,
            kind="page" if is_page else "asset",
            media_type=media_type_for(rel),
            size=size,
            sha256=sha,
            title=page_title(full) if is_page else None,
        )


def _walk(root: Path, folder: Path) -> Iterator[str]:
    """The tree paths of the files below ``folder``, in sorted order, a folder's files where its
    name sorts. A stack of folders' listings, not recursion: a tree nested thousands of folders deep
    ended ``pack --format zim`` in a RecursionError."""
    stack = [(folder, _listing(folder))]
    while stack:
        here, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        full = Path(entry.path)
        rel = full.relative_to(root).as_posix()
        if here == root / RESERVED_DIR and not entry.is_dir(follow_symlinks=False):
            continue  # files directly in the reserved folder are metadata; only folders are hosts
        if is_private(rel):
            continue
        if entry.is_symlink():
            if entry.is_dir():
                continue  # a symlinked folder: a second path to files (or a loop), never followed
            target = full.resolve()
            if not target.is_relative_to(root) or is_private(target.relative_to(root).as_posix()):
                continue
        if entry.is_dir():
            stack.append((full, _listing(full)))
        elif entry.is_file():
            yield rel


def _listing(folder: Path) -> Iterator[os.DirEntry[str]]:
    try:
        return iter(sorted(os.scandir(folder), key=lambda e: e.name))
    except OSError as e:
        raise FormatError(f"cannot list folder: {e.strerror}", subject=str(folder)) from None


class ManifestWriter:
    """Appends records to a tree's manifest as files land (tree.md §8.1).

    Opening an existing manifest keeps it (a resumed capture), after cutting a torn last line;
    :meth:`compact` rewrites it with one record per path, atomically. Each line is fsynced unless
    ``durable`` is False (then only flushed to the kernel: a killed process loses none of it, a power
    cut may; for a writer that keeps its own durable record, as the capture's state)."""

    def __init__(self, root: Path, header: Header, *, durable: bool = True) -> None:
        self.root = root
        self.durable = durable
        self.path = manifest_path(root)
        makedirs(self.path.parent)
        if self.path.is_symlink() or (self.path.exists() and self.path.stat().st_size):
            with open_manifest(self.path) as f:  # not a link out of the tree: it is cut and appended to
                _decode_header(read_line(f, 1, self.path), self.path)
            _cut_torn_line(self.path)
            self._file = _open_append(self.path)
        else:  # made new: nothing under the name (an empty file, a link put there since) written through
            self._file = os.fdopen(create_new(self.path), "wb")
            self._file.write(_encoder.encode(header) + b"\n")
            self._flush()
        self.header = header

    def add(self, record: Record) -> None:
        self._file.write(_encoder.encode(record) + b"\n")
        self._flush()

    def add_encoded(self, lines: list[bytes]) -> None:
        """Records already encoded as :meth:`add` writes them (JSON, no newline), in one write."""
        if lines:
            self._file.write(b"\n".join(lines) + b"\n")
            self._flush()

    def _flush(self) -> None:
        self._file.flush()
        if self.durable:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> ManifestWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def compact(self) -> None:
        """Rewrite the manifest with one record per path (temp file + rename)."""
        self._file.flush()
        header = read_header(self.root)
        assert header is not None
        self._file.close()
        # its temporary name never a link followed (atomicfile)
        write_atomic(self.path, _lines(header, read_records(self.root)))
        self._file = _open_append(self.path)


def _open_append(path: Path) -> BinaryIO:
    """The manifest opened to append to: a regular file, no symbolic link followed (FormatError)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FormatError("is not a regular file", subject=str(path))
    return os.fdopen(fd, "ab")


def _cut_torn_line(path: Path) -> None:
    with os.fdopen(os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb+") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        if end == 0:
            return
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return
        # walk back to the last newline and cut there
        pos = end
        while pos > 0:
            step = min(_CHUNK, pos)
            f.seek(pos - step)
            block = f.read(step)
            nl = block.rfind(b"\n")
            if nl >= 0:
                f.truncate(pos - step + nl + 1)
                return
            pos -= step
        f.truncate(0)


def write_records(root: Path, header: Header, items: Iterable[Record]) -> None:
    """Write a whole manifest at once (temp file + rename), for tools that build a tree in one go."""
    path = manifest_path(root)
    makedirs(path.parent)
    write_atomic(path, _lines(header, items))  # its temporary name never a link followed (atomicfile)


def _lines(header: Header, items: Iterable[Record]) -> Iterator[bytes]:
    yield _encoder.encode(header) + b"\n"
    for record in items:
        yield _encoder.encode(record) + b"\n"


def write_manifest(root: Path, header: Header, items: list[Record]) -> bytes:
    """:func:`write_records`, the file's bytes built first and returned: each record encoded once
    for a caller that stores the same bytes again (a re-capture's version,
    :mod:`archiver.versions.recapture`)."""
    data = _encoder.encode(header) + b"\n" + _encoder.encode_lines(items)  # one C call for the records
    path = manifest_path(root)
    makedirs(path.parent)
    write_atomic(path, data)
    return data
