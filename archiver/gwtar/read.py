"""Read a gwtar file in the spirit of ``tarfile``/``zipfile``: ``archiver.gwtar.open(path)`` gives the
header's fields and the members with their absolute offsets, sizes, types and hashes, and streams one
member at a time through a bounded reader (formats/gwtar.md).

Opening reads only the header and, for extension-1 files, the site index; a plain v1 file's members
come from its ``assets`` manifest and a walk over the tar headers. Damage that stops the file from
being read raises :class:`~archiver.errors.FormatError` with one line naming the offset; ``verify``
checks everything else.
"""

from __future__ import annotations

import builtins
import codecs
import dataclasses
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

from archiver import tar
from archiver.errors import FormatError
from archiver.gwtar import parse, rules
from archiver.gwtar.rules import Problem
from archiver.media import media_type_for

__all__ = [
    "MAX_HEADER",
    "MAX_INDEX",
    "GwtarReader",
    "IndexStream",
    "Member",
    "MemberReader",
    "TarEntry",
    "TarWalk",
    "open",
    "read_header_bytes",
]

#: A header (the HTML before the tar) larger than this is refused: no real page needs it.
MAX_HEADER = 32 << 20
#: A site index larger than this is refused (about two million members).
MAX_INDEX = 512 << 20
_MAX_EXTENDED = 1 << 20  # pax / GNU long-name data


@dataclass(frozen=True, slots=True)
class Member:
    """One member: ``path`` (its tar name), ``offset`` (absolute file offset of its first data byte),
    ``size``, ``media_type``, ``sha256`` (None when the file does not record it), ``kind`` (``page``
    or ``asset``), ``title`` (pages), ``urls`` (from the tree manifest) and ``key`` (its v1 manifest
    key when it is listed)."""

    path: str
    offset: int
    size: int
    media_type: str
    sha256: str | None = None
    kind: str = "asset"
    title: str | None = None
    urls: tuple[str, ...] = ()
    key: str | None = None

    @property
    def end(self) -> int:
        """Absolute offset just past the member's data."""
        return self.offset + self.size


def read_header_bytes(f: IO[bytes], limit: int = MAX_HEADER) -> bytes:
    """The file's bytes from the start up to and including ``<!-- GWTAR END\\n``, or every byte read
    (at most ``limit``) when the line is not found."""
    f.seek(0)
    data = bytearray()
    while len(data) < limit:
        chunk = f.read(min(1 << 20, limit - len(data)))
        if not chunk:
            break
        scan_from = max(0, len(data) - len(rules.END_MARK))
        data += chunk
        at = data.find(rules.END_MARK, scan_from)
        if at >= 0:
            return bytes(data[: at + len(rules.END_MARK)])
        if len(data) >= 1024 and rules.MAGIC_COMMENT not in data[:1024]:
            break  # not a gwtar: do not read further
    return bytes(data)


@dataclass(frozen=True)
class TarEntry:
    """One member found by walking the tar: absolute offsets of its first header block (a pax or GNU
    long-name header when ``extended``), its ustar header and its data."""

    name: str
    header_offset: int
    ustar_offset: int
    data_offset: int
    size: int
    typeflag: bytes
    linkname: str
    header: tar.TarHeader
    extended: bool

    @property
    def is_regular(self) -> bool:
        return self.header.is_regular


@dataclass
class TarWalk:
    """Walks the tar headers between absolute offsets ``start`` and ``end`` of ``f``, yielding
    :class:`TarEntry` values; stops at the end-of-archive block or at the first damage, which it
    records in ``problems``. ``end_block`` is where the end-of-archive zero block starts (None when
    there is none). Consumers may read ``f`` between entries."""

    f: IO[bytes]
    start: int
    end: int
    problems: list[Problem] = field(default_factory=list)
    end_block: int | None = None
    #: Where the walk gave up on damage (None when it reached the end-of-archive block).
    stopped_at: int | None = None

    def _read(self, offset: int, n: int) -> bytes:
        self.f.seek(offset)
        return self.f.read(n)

    def __iter__(self) -> Iterator[TarEntry]:
        for entry in self._entries():
            self.stopped_at = entry.data_offset + tar.data_span(entry.size)
            yield entry
        if self.end_block is None:
            self.stopped_at = self.stopped_at if self.stopped_at is not None else self.start
        else:
            self.stopped_at = None

    def _entries(self) -> Iterator[TarEntry]:
        pos = self.start
        pax: dict[str, str] = {}
        long_name: str | None = None
        first: int | None = None
        while True:
            if pos + tar.BLOCK > self.end:
                self.problems.append(
                    Problem(None, pos, "the tar ends without its end-of-archive blocks (truncated?)")
                )
                return
            block = self._read(pos, tar.BLOCK)
            if len(block) < tar.BLOCK:
                self.problems.append(Problem(None, pos, "the file ends inside a tar header (truncated)"))
                return
            if tar.is_zero_block(block):
                if first is not None:
                    self.problems.append(
                        Problem(None, first, "an extended header is not followed by a member")
                    )
                self.end_block = pos
                self._check_tail(pos)
                return
            try:
                head = tar.decode_header(block)
            except tar.TarError as e:
                self.problems.append(Problem(None, pos, f"bad tar header: {e}"))
                return
            if not head.checksum_ok:
                self.problems.append(Problem(head.name or None, pos, "tar header checksum does not match"))
                return
            if not head.magic.startswith(b"ustar"):
                self.problems.append(Problem(head.name or None, pos, "tar header has no ustar magic"))
            data_at = pos + tar.BLOCK
            size = head.size
            if head.typeflag in (b"x", b"g", b"L", b"K"):
                if size > _MAX_EXTENDED or data_at + size > self.end:
                    self.problems.append(Problem(None, pos, f"extended header of {size} bytes is too large"))
                    return
                data = self._read(data_at, size)
                if len(data) < size:
                    self.problems.append(Problem(None, pos, "the file ends inside an extended header"))
                    return
                if first is None:
                    first = pos
                if head.typeflag == b"x":
                    try:
                        pax.update(tar.parse_pax(data))
                    except tar.TarError as e:
                        self.problems.append(Problem(None, pos, f"bad pax header: {e}"))
                        return
                elif head.typeflag == b"L":
                    long_name = data.split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")
                pos = data_at + tar.data_span(size)
                continue
            name = pax.get("path", long_name if long_name is not None else head.name)
            if "size" in pax:
                try:
                    size = tar.pax_number(pax["size"], "size")
                except tar.TarError as e:
                    self.problems.append(Problem(name, pos, str(e)))
                    return
            # links, devices, fifos and folders have no data, whatever their size field says
            size_in_archive = 0 if head.typeflag in (b"1", b"2", b"3", b"4", b"5", b"6") else size
            if data_at + size_in_archive > self.end:
                self.problems.append(
                    Problem(
                        name, data_at, f"member data ({size} bytes) runs past the end of the tar (truncated?)"
                    )
                )
                return
            yield TarEntry(
                name=name,
                header_offset=first if first is not None else pos,
                ustar_offset=pos,
                data_offset=data_at,
                size=size_in_archive,
                typeflag=head.typeflag,
                linkname=pax.get("linkpath", head.linkname),
                header=head,
                extended=first is not None,
            )
            pax, long_name, first = {}, None, None
            pos = data_at + tar.data_span(size_in_archive)

    def _check_tail(self, pos: int) -> None:
        second = self._read(pos + tar.BLOCK, tar.BLOCK)
        if pos + 2 * tar.BLOCK > self.end or not tar.is_zero_block(second):
            self.problems.append(Problem(None, pos, "the tar ends with one zero block, not two"))
            return
        at = pos + 2 * tar.BLOCK
        while at < self.end:
            chunk = self._read(at, min(1 << 20, self.end - at))
            if not chunk:
                return
            if any(chunk):
                self.problems.append(
                    Problem(None, at, "non-zero bytes after the tar's end-of-archive blocks")
                )
                return
            at += len(chunk)


class MemberReader(io.RawIOBase):
    """A read-only, seekable view of one member's bytes, read with ``pread`` (several readers can
    share one file). It never reads past the member's end."""

    def __init__(self, fd: int, start: int, size: int, name: str) -> None:
        super().__init__()
        self._fd, self._start, self._size, self.name = fd, start, size, name
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = min(len(view), self._size - self._pos)
        if n <= 0:
            return 0
        got = os.preadv(self._fd, [view[:n]], self._start + self._pos)
        if got == 0:
            raise FormatError(f"file ends inside member {self.name!r} (truncated)")
        self._pos += got
        return got

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos

    @property
    def size(self) -> int:
        return self._size


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9eE.+\-]*\Z")
_DECODER = json.JSONDecoder()
#: One site index entry (or another top-level value) larger than this is refused.
MAX_INDEX_ENTRY = 16 << 20


class IndexStream:
    """The site index (``{"format": ..., "members": [...]}``) parsed entry by entry from ``size``
    bytes at ``start`` of ``f``, in bounded memory: :meth:`members` yields each raw entry; the other
    top-level values land in ``fields`` as they are met. Raises ``ValueError`` (or ``RecursionError``)
    for text that is not such a JSON object."""

    def __init__(self, f: IO[bytes], start: int, size: int, chunk: int = 1 << 20) -> None:
        self._f, self._pos, self._end, self._chunk = f, start, start + size, chunk
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict")
        self._buf, self._i = "", 0
        self.fields: dict[str, Any] = {}
        self.saw_members = False

    def _fill(self) -> bool:
        if self._pos >= self._end:
            return False
        self._f.seek(self._pos)
        data = self._f.read(min(self._chunk, self._end - self._pos))
        if not data:
            raise ValueError("the file ends inside the site index")
        self._pos += len(data)
        self._buf = self._buf[self._i :] + self._utf8.decode(data, final=self._pos >= self._end)
        self._i = 0
        return True

    def _peek(self) -> str:
        while True:
            self._i = _WS.match(self._buf, self._i).end()  # type: ignore[union-attr]
            if self._i < len(self._buf) or not self._fill():
                return self._buf[self._i : self._i + 1]

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise ValueError(f"expected {char!r} in the site index")
        self._i += 1

    def _value(self) -> Any:
        while True:
            self._peek()
            try:
                value, end = _DECODER.raw_decode(self._buf, self._i)
            except json.JSONDecodeError:
                if len(self._buf) - self._i > MAX_INDEX_ENTRY or not self._fill():
                    raise
                continue
            if self._pos < self._end and (
                end >= len(self._buf) or (type(value) in (int, float) and _NUMBER_TAIL.match(self._buf, end))
            ):  # a number may go on past the buffer: read more first
                self._fill()
                continue
            self._i = end
            return value

    def members(self) -> Iterator[Any]:
        self._expect("{")
        if self._peek() == "}":
            self._i += 1
        else:
            while True:
                key = self._value()
                if not isinstance(key, str):
                    raise ValueError("a site index key is not a string")
                self._expect(":")
                if key == "members" and self._peek() == "[":
                    self._i += 1
                    self.saw_members = True
                    if self._peek() == "]":
                        self._i += 1
                    else:
                        while True:
                            yield self._value()
                            sep = self._peek()
                            self._i += 1
                            if sep == "]":
                                break
                            if sep != ",":
                                raise ValueError("expected ',' or ']' in the site index's members")
                else:
                    self.fields[key] = self._value()
                sep = self._peek()
                self._i += 1
                if sep == "}":
                    break
                if sep != ",":
                    raise ValueError("expected ',' or '}' in the site index")
        if self._peek():
            raise ValueError("data after the site index object")


class GwtarReader:
    """An open gwtar file (use :func:`open`). Attributes: ``path``, ``overhead``,
    ``total_archive_size``, ``file_size``, ``meta`` (the extension-1 metadata, None for plain v1),
    ``assets`` (the v1 manifest, keys in v1 order), ``members`` (tar order), ``main`` (the main page's
    path), ``trailer_offset``/``trailer_size`` (bytes after the tar, e.g. a FEC tail)."""

    def __init__(self, path: Path, *, load_members: bool = True) -> None:
        self.path = Path(path)
        self._load_members = load_members
        try:
            self._file: BinaryIO = builtins.open(self.path, "rb", buffering=1 << 16)  # noqa: SIM115
        except OSError as e:
            raise FormatError(f"cannot open: {e.strerror}", subject=str(self.path)) from None
        try:
            self._load()
        except BaseException:
            self._file.close()
            raise

    # -- loading

    def _fail(self, message: str, offset: int | None = None) -> FormatError:
        where = f"offset {offset}: " if offset is not None else ""
        return FormatError(f"{where}{message}", subject=str(self.path))

    def _load(self) -> None:
        self.file_size = os.fstat(self._file.fileno()).st_size
        head = read_header_bytes(self._file)
        ph = parse.parse_header(head)
        if ph.fatal_problem is not None:
            raise self._fail(ph.fatal_problem.message, ph.fatal_problem.offset)
        assert ph.overhead is not None and ph.total is not None and ph.manifest is not None
        self.overhead: int = ph.overhead
        self.total_archive_size: int = ph.total
        if self.total_archive_size > self.file_size:
            raise self._fail(
                f"the file is {self.file_size} bytes but totalArchiveSize is {self.total_archive_size} "
                "(truncated)",
                self.file_size,
            )
        self.assets: dict[str, dict[str, Any]] = dict(ph.manifest)
        self.meta: dict[str, Any] | None = ph.meta
        self.trailer_offset = self.total_archive_size
        self.trailer_size = self.file_size - self.total_archive_size
        if not self._load_members:  # iter_members() streams them
            return
        if self.meta is not None and self.meta.get("version") in rules.EXTENSION_VERSIONS:
            self.members: list[Member] = self._members_from_index(self.meta)
            main = self.meta.get("main")
            self.main: str = main if isinstance(main, str) else self.members[0].path
        else:
            self.members = self._members_from_tar(ph.manifest)
            self.main = next((m.path for m in self.members if m.key == "0"), self.members[0].path)
        self._by_path = {m.path: m for m in self.members}
        self._by_key = {m.key: m for m in self.members if m.key is not None}

    def _members_from_index(self, meta: dict[str, Any]) -> list[Member]:
        return list(self._iter_index(meta))

    def _iter_index(self, meta: dict[str, Any]) -> Iterator[Member]:
        """The site index's members, one at a time: its SHA-256 is checked first (streaming), then it
        is parsed entry by entry, so a huge index never sits in memory whole."""
        where = parse.index_location(meta)
        if isinstance(where, str):
            raise self._fail(f"extension-1 metadata: {where}")
        offset, size, sha = where
        start = self.overhead + offset
        if size > MAX_INDEX or start + size > self.total_archive_size:
            raise self._fail(f"the site index ({size} bytes at {start}) lies outside the tar", start)
        digest = hashlib.sha256()
        with MemberReader(self._file.fileno(), start, size, rules.INDEX_PATH) as raw:
            while chunk := raw.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != sha:
            raise self._fail("the site index does not match its SHA-256 in the metadata (damaged)", start)
        keys = list(self.assets)
        stream = IndexStream(self._file, start, size)
        count = 0
        try:
            for i, entry in enumerate(stream.members()):
                member = _index_member(entry, self.overhead, self.total_archive_size)
                if member is None:
                    raise self._fail(f"site index entry {i} is malformed or points outside the tar", start)
                if i < len(keys):  # listed members come first, in manifest order
                    member = dataclasses.replace(member, key=keys[i])
                count += 1
                yield member
        except (ValueError, RecursionError) as e:
            raise self._fail(f"the site index is not valid JSON: {str(e)[:100]}", start) from None
        if not stream.saw_members:
            raise self._fail("the site index has no members list", start)
        if not count:
            raise self._fail("the site index lists no members", start)

    def _members_from_tar(self, manifest: list[tuple[str, dict[str, Any]]]) -> list[Member]:
        offsets = rules.v1_data_offsets([entry["size"] for _, entry in manifest])
        walk = TarWalk(self._file, self.overhead, self.total_archive_size)
        members: list[Member] = []
        for i, entry in enumerate(walk):
            if i < len(manifest):
                key, fields = manifest[i]
                expected = self.overhead + offsets[i]
                if entry.data_offset != expected or entry.size != fields["size"] or not entry.is_regular:
                    raise self._fail(
                        f"the tar member at {entry.ustar_offset} does not match manifest entry {key!r} "
                        "(run archiver verify for details)",
                        entry.ustar_offset,
                    )
                ctype = fields.get("content-type")
                members.append(
                    Member(
                        path=entry.name,
                        offset=entry.data_offset,
                        size=entry.size,
                        media_type=ctype if isinstance(ctype, str) else media_type_for(entry.name),
                        sha256=fields.get("hash") if isinstance(fields.get("hash"), str) else None,
                        kind="page" if key == "0" else "asset",
                        key=key,
                    )
                )
            elif entry.is_regular:
                is_page = entry.name.lower().endswith((".html", ".htm"))
                members.append(
                    Member(
                        path=entry.name,
                        offset=entry.data_offset,
                        size=entry.size,
                        media_type=media_type_for(entry.name),
                        kind="page" if is_page else "asset",
                    )
                )
        if len(members) < len(manifest) or (walk.problems and len(members) <= len(manifest)):
            problem = walk.problems[0] if walk.problems else Problem(None, None, "the tar has fewer members")
            raise self._fail(f"the tar does not hold every listed member: {problem.message}", problem.offset)
        return members

    # -- API

    def iter_members(self) -> Iterator[Member]:
        """The members in tar order, one at a time (a reader opened with ``load_members=False`` holds
        no list of them: for a site index of millions of entries)."""
        if self._load_members:
            yield from self.members
        elif self.meta is not None and self.meta.get("version") in rules.EXTENSION_VERSIONS:
            yield from self._iter_index(self.meta)
        else:
            yield from self._members_from_tar(list(self.assets.items()))

    def member(self, path: str) -> Member:
        """The member named ``path`` (or with v1 key ``path``); raises KeyError when there is none."""
        found = self._by_path.get(path) or self._by_key.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def has(self, path: str) -> bool:
        """Whether a member is named ``path`` (or has v1 key ``path``)."""
        return path in self._by_path or path in self._by_key

    def open_member(self, member: str | Member) -> MemberReader:
        """A bounded streaming reader over one member's bytes."""
        m = self.member(member) if isinstance(member, str) else member
        return MemberReader(self._file.fileno(), m.offset, m.size, m.path)

    def read(self, member: str | Member) -> bytes:
        """A whole member's bytes (for small members; stream large ones with :meth:`open_member`)."""
        with self.open_member(member) as f:
            return f.read()

    def __iter__(self) -> Iterator[Member]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> GwtarReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _index_member(entry: Any, overhead: int, total: int) -> Member | None:
    if not isinstance(entry, dict):
        return None
    path, offset, size = entry.get("path"), entry.get("offset"), entry.get("size")
    if not isinstance(path, str) or rules.member_path_problem(path):
        return None
    if not (isinstance(offset, int) and isinstance(size, int)) or isinstance(offset, bool):
        return None
    if offset < tar.BLOCK or size < 0 or overhead + offset + size > total:
        return None
    sha = entry.get("sha256")
    urls = entry.get("urls")
    title = entry.get("title")
    mtype = entry.get("type")
    return Member(
        path=path,
        offset=overhead + offset,
        size=size,
        media_type=mtype if isinstance(mtype, str) else media_type_for(path),
        sha256=sha if isinstance(sha, str) else None,
        kind="page" if entry.get("kind") == "page" else "asset",
        title=title if isinstance(title, str) else None,
        urls=tuple(u for u in urls if isinstance(u, str)) if isinstance(urls, list) else (),
    )


def open(path: Path | str) -> GwtarReader:
    """Open a gwtar file for reading (a context manager). Raises :class:`FormatError` when the file is
    not a readable gwtar."""
    return GwtarReader(Path(path))
