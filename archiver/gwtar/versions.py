"""Every version of a tree in one gwtar (formats/gwtar.md §13, formats/history.md §8).

The newest version is the ordinary members; each recorded version adds its manifest as the member
``_archiver/versions/<id>.jsonl``; every earlier file whose bytes no other member holds adds one member
``_archiver/versions/blobs/<sha256>`` (once per distinct content, however many versions or paths hold
it); ``_archiver/gwtar-versions.json`` is the table. A version's file ``path`` with SHA-256 ``h`` is
read from the blob member of ``h`` when there is one, else from the first member whose site-index
SHA-256 is ``h``. Pack side: :func:`add_versions` (one record at a time; a set of the distinct hashes).
Read side: :func:`table`, :func:`problems`, :func:`extract_version`."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import msgspec

from archiver import tree
from archiver.errors import FormatError, UsageError
from archiver.gwtar import rules
from archiver.gwtar.diffpage import DIFF_PAGE
from archiver.gwtar.diffpage import PATH as DIFF_PATH
from archiver.gwtar.layout import MemberSpec
from archiver.gwtar.read import GwtarReader, Member
from archiver.urls import RESERVED_DIR
from archiver.versions import dates, store, storefiles
from archiver.walk import makedirs, rmtree

if TYPE_CHECKING:
    from archiver.gwtar.sources import Source

__all__ = [
    "BLOBS",
    "PREFIX",
    "TABLE",
    "Entry",
    "MemberSpec",
    "add_versions",
    "extract_version",
    "problems",
    "table",
]

TABLE = f"{RESERVED_DIR}/gwtar-versions.json"
PREFIX = f"{RESERVED_DIR}/versions/"
BLOBS = f"{PREFIX}blobs/"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ID = re.compile(r"^\d{8}T\d{6}Z(?:-\d+)?$")
_CHUNK = 1 << 20
_encoder = msgspec.json.Encoder()
_header_decoder = msgspec.json.Decoder(tree.Header)
_record_decoder = msgspec.json.Decoder(tree.Record)


@dataclass(frozen=True)
class Entry:
    """One row of the versions table: the version's id, date and the member holding its manifest."""

    id: str
    date: str
    manifest: str
    files: int
    pages: int


# ---------------------------------------------------------------------------------------- packing


def add_versions(source: object, root: Path, work: Path) -> None:
    """Add the members of every version of the tree ``root`` to ``source`` (a
    :class:`~archiver.gwtar.sources.Source` read from ``root``'s manifest); the table is written into
    the private folder ``work``, which must outlive the write."""
    from archiver.gwtar.sources import Source

    assert isinstance(source, Source)
    if tree.read_header(root) is None:
        raise UsageError("--all-versions needs a capture's tree (one with a manifest)", subject=str(root))
    clash = [p for p in source.specs if p == TABLE or p.startswith(PREFIX)]
    if clash:
        raise FormatError("is a name --all-versions reserves for the versions", subject=clash[0])
    held = {h for h in source.expected.values() if h is not None}
    found = store.versions(root)
    current = store.TreeState(root)
    rows: list[dict[str, object]] = []
    copies = work / "versions"
    copies.mkdir()
    for v in found:
        if v.recorded:  # read once: its bytes are copied as they are checked, and the copy is packed
            member = f"{PREFIX}{v.id}.jsonl"
            copy = copies / f"{v.id}.jsonl"
            with open(copy, "xb") as out:
                tee = _Tee(out)
                records = storefiles.decode_manifest(v.manifest, tee)[1]
                files, pages = _check_version(source, root, v, records, held, current)
            source.specs[member] = MemberSpec(member, tee.size, "application/jsonl")
            source.files[member] = copy
            source.expected[member] = tee.sha256.hexdigest()
        else:
            member = tree.manifest_path(root).relative_to(root).as_posix()
            files, pages = _check_version(source, root, v, store.version_records(v), held, current)
        rows.append({"id": v.id, "date": v.date, "manifest": member, "files": files, "pages": pages})
    doc = {"format": "archiver-gwtar-versions", "version": 1, "versions": rows}
    data = json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
    page = work / "diff.html"
    page.write_bytes(DIFF_PAGE.encode())
    source.specs[DIFF_PATH] = MemberSpec(DIFF_PATH, page.stat().st_size, "text/html")
    source.files[DIFF_PATH] = page
    source.expected[DIFF_PATH] = None
    held_table = work / "gwtar-versions.json"
    held_table.write_bytes(data)
    source.specs[TABLE] = MemberSpec(TABLE, len(data), "application/json")
    source.files[TABLE] = held_table
    source.expected[TABLE] = hashlib.sha256(data).hexdigest()


class _Tee:
    """Takes a version manifest's lines as they are read and checked: into ``out``, hashed, counted."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.sha256 = hashlib.sha256()
        self.size = 0

    def __call__(self, line: bytes) -> None:
        self.out.write(line)
        self.sha256.update(line)
        self.size += len(line)


def _check_version(
    source: Source,
    root: Path,
    v: store.Version,
    records: Iterator[tree.Record],
    held: set[str],
    current: store.TreeState,
) -> tuple[int, int]:
    """Check the version ``v``'s ``records`` (a hostile store, formats/history.md §4, is refused
    before a byte is written) and add a blob member for each content no member holds yet (``held``);
    its (files, pages)."""
    files = pages = 0
    for r in records:
        files += 1
        pages += r.kind == "page"
        why = _path_problem(r.path) or (None if _HEX64.match(r.sha256) else "its sha256 is no SHA-256")
        if why:
            raise FormatError(why, subject=f"{v.manifest}: {r.path}")
        if r.sha256 in held:
            continue
        held.add(r.sha256)
        try:  # its blob, or the tree's file while the tree holds it (formats/history.md §3)
            fd, full = store.open_source(root, r, current)
        except FormatError as e:
            raise FormatError(e.message, subject=f"{v.manifest}: {r.path}") from None
        os.close(fd)
        blob = f"{BLOBS}{r.sha256}"
        source.specs[blob] = MemberSpec(blob, r.size, "application/octet-stream")
        source.files[blob] = full
        source.expected[blob] = r.sha256
    return files, pages


# ---------------------------------------------------------------------------------------- reading


#: The largest versions table read (a row is ~120 bytes: 100,000 versions are 12 MB)
MAX_TABLE = 64 << 20


def has_versions(reader: GwtarReader) -> bool:
    return reader.has(TABLE)


def table(reader: GwtarReader) -> list[Entry]:
    """The versions table, oldest first; FormatError for one that is not a table."""
    try:
        size = reader.member(TABLE).size
        if size > MAX_TABLE:  # a forged archive's terabyte member is refused unread
            raise FormatError(f"versions table: {size} bytes, more than {MAX_TABLE}", subject=TABLE)
        doc = json.loads(reader.read(TABLE))
        rows = doc["versions"]
        if doc.get("format") != "archiver-gwtar-versions" or not isinstance(rows, list):
            raise ValueError("not a versions table")
        found = [
            Entry(str(r["id"]), str(r["date"]), str(r["manifest"]), int(r["files"]), int(r["pages"]))
            for r in rows
        ]
    except KeyError:
        raise FormatError("has no versions (pack it with --all-versions)", subject=str(reader.path)) from None
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as e:
        # OverflowError: a count of 1e400 (int of an infinity); RecursionError: nested too deep
        raise FormatError(f"versions table: {e}", subject=TABLE) from None
    for e in found:
        try:
            date = dates.id_date(e.id).strftime("%Y-%m-%dT%H:%M:%SZ") if _ID.match(e.id) else None
        except ValueError:  # 20261399T000000Z: the shape of an id, no date
            date = None
        if date is None:
            raise FormatError(f"versions table: {e.id[:64]!r} is not a version id", subject=TABLE)
        if e.date != date:  # shown by ls and extract: the id's date, as the writer put it
            raise FormatError(f"versions table: version {e.id} is dated {e.date[:64]!r}", subject=TABLE)
        if e.manifest not in (f"{PREFIX}{e.id}.jsonl", f"{RESERVED_DIR}/{tree.MANIFEST_NAME}"):
            raise FormatError(
                f"versions table: version {e.id} names {e.manifest!r} as its manifest", subject=TABLE
            )
    if len({e.id for e in found}) != len(found) or not found:
        raise FormatError("versions table: no version, or an id twice", subject=TABLE)
    found.sort(key=lambda e: dates.id_order(e.id))
    for e in found[:-1]:  # the tree's manifest is the newest version's only (not recorded yet)
        if e.manifest != f"{PREFIX}{e.id}.jsonl":
            raise FormatError(
                f"versions table: version {e.id} names {e.manifest!r} as its manifest", subject=TABLE
            )
    return found


def _by_hash(reader: GwtarReader) -> dict[str, Member]:
    """SHA-256 → the member to read it from (formats/gwtar.md §13.2)."""
    found: dict[str, Member] = {}
    for m in reader.iter_members():
        if m.sha256 is None:
            continue
        if m.path.startswith(BLOBS) or m.sha256 not in found:
            found[m.sha256] = m
    return found


def _records(reader: GwtarReader, e: Entry) -> tuple[bytes, Iterator[tuple[bytes, tree.Record]]]:
    """The version manifest's header line and its (line, record) pairs, read and decoded one line at
    a time (memory: one line, whatever the number of files)."""
    try:
        member = reader.member(e.manifest)
    except KeyError:
        raise FormatError(
            f"version {e.id}: its manifest {e.manifest} is not a member", subject=TABLE
        ) from None
    f = io.BufferedReader(reader.open_member(member), 1 << 16)
    first = f.readline()
    try:
        _header_decoder.decode(first)
    except (msgspec.DecodeError, RecursionError) as err:  # msgspec: RecursionError when nested too deep
        f.close()
        raise FormatError(f"line 1 is not a manifest header: {err}", subject=e.manifest) from None

    def rows() -> Iterator[tuple[bytes, tree.Record]]:
        with f:
            for n, line in enumerate(f, 2):
                if line.strip():
                    try:
                        yield line, _record_decoder.decode(line)
                    except (msgspec.DecodeError, RecursionError) as err:  # nested too deep
                        raise FormatError(f"line {n}: {err}", subject=e.manifest) from None

    return first, rows()


def _path_problem(path: str) -> str | None:
    why = rules.member_path_problem(path)
    if why or "\\" in path:
        return "not a plain relative path"
    if tree.is_private(path) or path in (RESERVED_DIR, f"{RESERVED_DIR}/{tree.MANIFEST_NAME}"):
        return "names a private file of the tree"
    return None


def version_problems(reader: GwtarReader, e: Entry, by_hash: dict[str, Member]) -> Iterator[tuple[str, str]]:
    """(where, what) for every problem of one version: paths, hashes, sizes, a file also a folder."""
    try:
        _, rows = _records(reader, e)
        paths: set[str] = set()
        folders: set[str] = set()
        for _line, r in rows:
            where = f"{e.manifest}: {r.path}"
            why = _path_problem(r.path)
            if why:
                yield (where, why)
                continue
            if not _HEX64.match(r.sha256):
                yield (where, f"{r.sha256!r} is not a SHA-256")
                continue
            m = by_hash.get(r.sha256)
            if m is None:
                yield (where, "its SHA-256 is no member's: its bytes are not in the archive")
            elif m.size != r.size:
                yield (where, f"its size {r.size} is not that of member {m.path} ({m.size})")
            parts = r.path.split("/")
            prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
            if r.path in paths or r.path in folders or prefixes & paths:
                yield (where, "named twice, or both a file and a folder")
            paths.add(r.path)
            folders |= prefixes
    except FormatError as err:
        yield (err.subject or e.manifest, err.message)


def problems(reader: GwtarReader) -> Iterator[tuple[str, str]]:
    """(where, what) for every problem of the versions in an archive that has a table."""
    try:
        entries = table(reader)
    except FormatError as err:
        yield (err.subject or TABLE, err.message)
        return
    by_hash = _by_hash(reader)
    named = {e.manifest for e in entries}
    for m in reader.iter_members():
        if m.path.startswith(BLOBS) and m.path[len(BLOBS) :] != m.sha256:
            yield (m.path, "a versions blob whose name is not the SHA-256 of its bytes")
        elif m.path.startswith(PREFIX) and not m.path.startswith(BLOBS) and m.path not in named | {DIFF_PATH}:
            yield (m.path, "a version manifest the versions table does not name")
    for e in entries:
        yield from version_problems(reader, e, by_hash)


def check(path: Path, report: object) -> None:
    """Add the versions' problems to a verify report (formats/gwtar.md §13.3)."""
    try:
        reader = GwtarReader(path)
    except FormatError:
        return  # the damage is reported by the checks before
    with reader:
        for where, what in problems(reader):
            report.add(where, None, f"versions: {what}")  # type: ignore[attr-defined]


def pick(entries: list[Entry], when: str, subject: str) -> Entry:
    """The version in force at ``when`` (formats/history.md §3)."""
    exact = [e for e in entries if e.id == when]
    if exact:
        return exact[0]
    try:
        instant = dates.parse(when)
    except ValueError as err:
        raise UsageError(str(err), subject=subject) from None
    vid = dates.in_force([e.id for e in entries], instant)
    if vid is None:
        raise UsageError(f"no version at or before {when}: the first is {entries[0].date}", subject=subject)
    return next(e for e in entries if e.id == vid)


def ls_version(path: Path, when: str) -> Iterator[tree.Record]:
    """The records of the version of the gwtar ``path`` in force at ``when``, one at a time
    (``archiver ls FILE --version DATE``)."""
    with GwtarReader(path) as reader:
        e = pick(table(reader), when, str(path))
        for _, r in _records(reader, e)[1]:
            yield r


def extract_version(path: Path, when: str, out: Path) -> tuple[Entry, int]:
    """Write the version of the gwtar ``path`` in force at ``when`` as a plain tree at ``out`` (which
    must not exist, or be empty), as ``archiver extract TREE --version`` writes it: the version is
    checked whole before anything is written; each file's SHA-256 is checked as it is copied; the
    output appears by one rename."""
    with GwtarReader(path) as reader:
        e = pick(table(reader), when, str(path))
        by_hash = _by_hash(reader)
        for where, what in version_problems(reader, e, by_hash):
            raise FormatError(what, subject=where)
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UsageError("exists and is not an empty folder", subject=str(out))
        work = out.with_name(f".{out.name}.archiver-tmp-{os.getpid()}")
        rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            first, rows = _records(reader, e)
            n = 0
            (work / RESERVED_DIR).mkdir()
            with open(work / RESERVED_DIR / tree.MANIFEST_NAME, "xb") as manifest:
                manifest.write(_without_version(first) if e.manifest.startswith(PREFIX) else first)
                for line, r in rows:
                    manifest.write(line)
                    dest = work / r.path
                    makedirs(dest.parent)
                    _copy(reader, by_hash[r.sha256], dest, r.sha256)
                    n += 1
            if out.exists():
                out.rmdir()
            os.replace(work, out)
            return e, n
        except BaseException:
            rmtree(work, ignore_errors=True)
            raise


def _copy(reader: GwtarReader, m: Member, dest: Path, sha256: str) -> None:
    digest = hashlib.sha256()
    with reader.open_member(m) as src, open(dest, "xb") as f:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            f.write(chunk)
    if digest.hexdigest() != sha256:
        with contextlib.suppress(OSError):
            dest.unlink()
        raise FormatError("its bytes do not match the SHA-256 its version names", subject=m.path)


def _without_version(first: bytes) -> bytes:
    """A version manifest's header line as a tree's: ``options.version`` removed (formats/history.md
    §3, as ``archiver extract TREE --version`` writes it)."""
    header = _header_decoder.decode(first)
    options = dict(header.options)
    options.pop("version", None)
    header.options = options
    return _encoder.encode(header) + b"\n"
