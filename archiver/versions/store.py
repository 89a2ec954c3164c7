"""The version store of a tree, ``_archiver/.versions/`` (formats/history.md §1–§4): recording the
tree's state as a version, listing the versions, reading one back (``extract --version``) and
checking the store against a hostile or damaged copy. Streaming: one record at a time, files hashed
in 1 MiB chunks; every write goes to a ``.tmp-`` name and is renamed into place."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from archiver.atomicfile import write_atomic
from archiver.errors import FormatError, UsageError
from archiver.tree import (
    MANIFEST_NAME,
    Header,
    Record,
    is_private,
    manifest_path,
    own_folders,
    read_header,
    read_record_list,
    read_records,
)
from archiver.urls import REPORT_NAME, RESERVED_DIR, VERSIONS_NAME
from archiver.versions import dates, storefiles
from archiver.versions.held import Held, TreeState, hash_fd, identity
from archiver.walk import makedirs, rmtree, walk

__all__ = [
    "PENDING",
    "Held",
    "Opened",
    "TreeState",
    "Version",
    "blob_path",
    "extract",
    "identity",
    "open_checked",
    "open_source",
    "problems",
    "read_blob",
    "read_version",
    "record",
    "recorded",
    "source",
    "store_dir",
    "version_records",
    "versions",
]

_CHUNK = 1 << 20
_HEX64 = re.compile(r"^[0-9a-f]{64}\Z")
TMP = ".tmp-"
#: The mark of a re-capture that has not finished (formats/history.md §6): its start time.
PENDING = "pending.json"
#: The store's format (formats/history.md §1): 2, a version's files held by the tree until they leave it.
STORE_MARK = "store.json"
STORE_FORMAT = b'{"format":"archiver-version-store","version":2}\n'
_encoder = msgspec.json.Encoder()
_header_decoder = msgspec.json.Decoder(Header)


class Version(msgspec.Struct, frozen=True):
    """A version of a tree (this module's classes are :class:`msgspec.Struct` ones: a dataclass's
    generated methods were compiled from source at every start of a re-capture)."""

    id: str
    manifest: Path  # the version manifest, or the tree's own for a tree that recorded none
    recorded: bool  # False: the tree's current state, not yet in the store

    @property
    def date(self) -> str:
        return dates.id_date(self.id).strftime("%Y-%m-%dT%H:%M:%SZ")


def store_dir(root: Path) -> Path:
    return root / RESERVED_DIR / VERSIONS_NAME


def blob_path(root: Path, sha256: str) -> Path:
    if not _HEX64.match(sha256):
        raise FormatError(f"{sha256!r} is not a SHA-256", subject=str(store_dir(root)))
    return store_dir(root) / blob_name(sha256)


def blob_name(sha256: str) -> str:
    """A blob's place in the store (formats/history.md §2), as text: one layout for every caller."""
    return f"blobs/sha256/{sha256[:2]}/{sha256}"


def _current_id(root: Path) -> str | None:
    """The id the tree's current state has: its manifest's start, or while a re-capture is pending
    (formats/history.md §6) that run's start."""
    header = read_header(root)
    if header is None:
        return None
    mark = store_dir(root) / PENDING
    started = storefiles.pending_started(mark)  # bounded; any damage is a FormatError naming it
    try:
        return dates.version_id(header.created if started is None else started)
    except ValueError:
        if started is not None:
            raise FormatError(f"its started time {started!r} is not RFC 3339", subject=str(mark)) from None
        raise FormatError(
            f"its created time {header.created!r} is not RFC 3339", subject=str(manifest_path(root))
        ) from None


def recorded(root: Path) -> list[Version]:
    """Every recorded version, oldest first."""
    found: list[Version] = []
    folder = store_dir(root)
    if folder.is_dir():
        for entry in os.scandir(folder):
            name = entry.name
            if not name.endswith(".jsonl") or name.startswith(TMP):
                continue
            if not entry.is_file(follow_symlinks=False):
                continue  # a FIFO, folder or symbolic link is no version: verify names it (problems)
            vid = name[: -len(".jsonl")]
            try:
                dates.id_order(vid)
            except ValueError:
                continue  # not a version manifest's name: verify says so (problems)
            found.append(Version(vid, Path(entry.path), True))
    found.sort(key=lambda v: dates.id_order(v.id))
    return found


def is_sha256(text: str) -> bool:
    return _HEX64.match(text) is not None


def versions(root: Path) -> list[Version]:
    """Every recorded version, oldest first, then the tree's current state when it is not recorded
    (an older tree is one version, formats/history.md §1)."""
    found = recorded(root)
    current = _current_id(root)
    if current is not None and not _current_is_recorded(root, found):
        found.append(Version(_unique(current, {v.id for v in found}), manifest_path(root), False))
    return found


def _unique(base: str, taken: set[str]) -> str:
    return dates.next_id(base, taken)


def _manifest_bytes(root: Path) -> bytes:
    """The tree's manifest compacted (one record per path, later wins), as a version stores it."""
    header = read_header(root)
    assert header is not None
    return _encoder.encode(header) + b"\n" + _encoder.encode_lines(manifest_records(root))


def manifest_records(root: Path) -> list[Record]:
    """The tree's records as :func:`archiver.tree.read_record_list` reads them (each line decoded
    once), its header read and checked first: a tree without a manifest is a FormatError."""
    if read_header(root) is None:
        raise FormatError("has no manifest", subject=str(root))
    return read_record_list(root)


def _current_is_recorded(root: Path, found: list[Version]) -> bool:
    if not found:
        return False
    current = _current_id(root)
    same_start = [v for v in found if v.id.split("-")[0] == current]
    if not same_start:
        return False
    # the manifest as a version holds it, byte for byte (what a finished re-capture leaves): no
    # record decoded nor encoded again (a re-capture's begin, ~1,000 records)
    # the tree's manifest as a version's is read: a regular file, bounded (a sparse terabyte: MemoryError)
    head, _, rest = storefiles.read_manifest(manifest_path(root)).partition(b"\n")
    for v in same_start:
        v_head, _, v_rest = storefiles.read_manifest(v.manifest).partition(b"\n")
        if v_rest == rest and _version_body(v_head, "", v.manifest) == _version_body(head, ""):
            return True
    want = hashlib.sha256(_version_body(_manifest_bytes(root), "")).hexdigest()
    return any(
        hashlib.sha256(_version_body(storefiles.read_manifest(v.manifest), "", v.manifest)).hexdigest()
        == want
        for v in same_start
    )


def _version_body(data: bytes, vid: str, subject: Path | None = None) -> bytes:
    """A version manifest's bytes with its header's ``options.version`` set to ``vid`` ("" removes
    it): what two recordings of the same state compare equal on. ``subject``: the manifest read."""
    first, _, rest = data.partition(b"\n")
    try:
        header = _header_decoder.decode(first)
    except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
        raise FormatError(f"line 1 is not a manifest header: {e}", subject=str(subject or "")) from None
    options = dict(header.options)
    options.pop("version", None)
    if vid:
        options["version"] = vid
    header.options = options
    return _encoder.encode(header) + b"\n" + rest


def safe_path(path: str) -> str | None:
    """Why a record's path is not a plain relative path inside the tree (None when it is)."""
    if not path or "\x00" in path or path.startswith("/") or "\\" in path:
        return "not a plain relative path"
    parts = path.split("/")
    if "" in parts or "." in parts or ".." in parts:  # three C scans (a version's every record)
        return "not a plain relative path"
    head = parts[0]
    if (  # a path outside the reserved folder is neither private nor the manifest: one compare
        len(parts) > 1
        and head.lower() == RESERVED_DIR
        and (is_private(path) or (head == RESERVED_DIR and parts[1] == MANIFEST_NAME))
    ):
        return "names a private file of the tree"
    return None


def _parent_fd(root: Path, rel: str) -> tuple[int, str]:
    """A descriptor of the folder holding ``rel`` under ``root``, reached component by component
    without following a symbolic link, and ``rel``'s last component."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    parts = rel.split("/")
    try:
        for part in parts[:-1]:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as e:
        os.close(fd)
        raise FormatError(f"cannot be read: {e.strerror or e}", subject=rel) from None
    return fd, parts[-1]


def open_in_tree(root: Path, rel: str) -> int:
    """A read descriptor for the regular file ``rel`` under ``root``, no symbolic link followed."""
    pfd, leaf = _parent_fd(root, rel)
    try:
        st = os.stat(leaf, dir_fd=pfd, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError("is not a regular file", subject=rel)
        return os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=pfd)
    except OSError as e:
        raise FormatError(f"cannot be read: {e.strerror or e}", subject=rel) from None
    finally:
        os.close(pfd)


def hash_path(path: str | Path) -> tuple[int, str]:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    # the temporary name: a link planted there (the store comes with the tree) is never followed
    write_atomic(path, data, tmp=path.with_name(f"{TMP}{path.name}-{os.getpid()}"))


def _clean_temporaries(folder: Path) -> None:
    for dirpath, _dirs, files in walk(folder):
        for name in files:
            if name.startswith(TMP):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(dirpath, name))


class Recorded(NamedTuple):
    version: Version
    new: bool  # False when that state was recorded already
    files: int
    bytes_added: int


def record(
    root: Path, written: tuple[Header, list[Record]] | None = None, encoded: bytes | None = None
) -> Recorded:
    """Record the tree's current state as a version (formats/history.md §2): its manifest only (the
    tree holds the bytes until a capture lets a file go, :mod:`archiver.versions.keeper`).
    ``written``: the header and records the caller has just written as the tree's manifest (with
    :func:`archiver.tree.write_records`: one record a path), recorded without reading it back;
    ``encoded``: that manifest's bytes, as :func:`archiver.tree.write_manifest` returned them (then
    no record is encoded again)."""
    header = read_header(root) if written is None else written[0]
    if header is None:
        raise UsageError("has no manifest: only a capture's tree has versions", subject=str(root))
    folder = store_dir(root)
    own_folders(root, folder)  # the store is the tree's own folder, not one a link points to
    makedirs(folder)
    _clean_temporaries(folder)
    existing = versions(root)
    current = existing[-1] if existing and not existing[-1].recorded else None
    if current is None:
        same = next(v for v in reversed(existing) if v.recorded)
        return Recorded(same, False, 0, 0)
    records = manifest_records(root) if written is None else written[1]
    for r in records:
        why = safe_path(r.path)
        if why:
            raise FormatError(why, subject=f"{manifest_path(root)}: {r.path}")
        if not _HEX64.match(r.sha256):
            blob_path(root, r.sha256)  # raises: not a SHA-256
    if encoded is None or written is None:  # the manifest compacted, as _manifest_bytes
        encoded = _encoder.encode(header) + b"\n" + _encoder.encode_lines(records)
    files = len(records)
    mark = folder / STORE_MARK
    if not mark.is_file():
        _write_atomic(mark, STORE_FORMAT)
    vid = current.id
    body = _version_body(encoded, vid)
    _write_atomic(folder / f"{vid}.jsonl", body)
    report = _report_bytes(root / RESERVED_DIR / REPORT_NAME)
    if report is not None:
        _write_atomic(folder / f"{vid}.report.json", report)
    return Recorded(Version(vid, folder / f"{vid}.jsonl", True), True, files, 0)


def _report_bytes(report: Path) -> bytes | None:
    """The run's report to keep with its version: a regular file (never a FIFO's wait nor a symbolic
    link's target outside the tree) of at most MAX_REPORT_BYTES, else none (history.md §7)."""
    if not os.path.lexists(report):
        return None
    from archiver import safefs
    from archiver.versions.reports import MAX_REPORT_BYTES

    with contextlib.suppress(FormatError):
        return safefs.read_regular(report, MAX_REPORT_BYTES)
    return None


_decode_manifest = storefiles.decode_manifest


def version_records(v: Version) -> Iterator[Record]:
    """The records of a version (a recorded one's manifest, or the tree's own)."""
    if not v.recorded:
        yield from read_records(v.manifest.parent.parent)
        return
    _, rows = _decode_manifest(v.manifest)
    yield from rows


def read_version(root: Path, v: Version, path: str) -> bytes:
    """The bytes of ``path`` in version ``v``, checked against its hash."""
    for r in version_records(v):
        if r.path == path:
            return read_blob(root, r) if v.recorded else _read_tree_file(root, r)
    raise KeyError(path)


def _read_tree_file(root: Path, r: Record) -> bytes:
    fd = open_in_tree(root, r.path)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def source(root: Path, r: Record | Held, tree: TreeState | None = None) -> Path:
    """The file that holds the bytes of a version's record ``r`` (formats/history.md §3): its blob
    when stored, else the tree's file at ``r.path`` when the tree's current manifest names that path
    with the same SHA-256. ``FormatError`` when neither, or when ``r`` names no plain path or no
    SHA-256. The one place every reader of a version's files asks; ``tree``: a reader's
    :class:`TreeState` of ``root``, kept across calls."""
    why = safe_path(r.path)
    if why:
        raise FormatError(why, subject=r.path)
    blob = blob_path(root, r.sha256)
    if os.path.lexists(blob):
        return blob
    if (tree or TreeState(root)).sha256(r.path) == r.sha256:
        return root / r.path
    rel = blob.relative_to(root).as_posix()
    raise FormatError(f"its blob {rel} is missing (and the tree no longer holds its bytes)", subject=r.path)


class Opened(msgspec.Struct, frozen=True):
    """A version's file opened for reading (:func:`open_checked`)."""

    fd: int  # at offset 0
    path: Path
    stat: os.stat_result  # of ``fd``, when its bytes were found to be the record's
    in_tree: bool  # the tree's file (its bytes may change in place), not a blob
    settled: bool  # a tree file its TreeState remembers: the same identity, the same bytes


def open_checked(root: Path, r: Record | Held, tree: TreeState | None = None) -> Opened:
    """:func:`source` opened (reached without a symbolic link, a regular file of ``r.size`` bytes).
    A file of the tree (not a blob: the tree's files are replaced as captures run) must hold the
    record's SHA-256: hashed unless ``tree`` remembers its identity (formats/history.md §3); one
    replaced or changed meanwhile is looked for again (its blob was stored before it went)."""
    state = tree or TreeState(root)
    for _ in range(2):
        path = source(root, r, state)
        rel = path.relative_to(root).as_posix()
        fd = open_in_tree(root, rel)
        try:
            st = os.fstat(fd)
            if st.st_size == r.size and rel != r.path:
                return Opened(fd, path, st, False, False)
            got = state.check(fd) if st.st_size == r.size else None
            if got is not None and got[1] == r.sha256 and got[0].st_size == r.size:
                os.lseek(fd, 0, os.SEEK_SET)
                return Opened(fd, path, got[0], True, state.known(identity(got[0])) == r.sha256)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        if rel != r.path:
            break
    what = "its blob" if rel != r.path else "its file in the tree (no blob stored)"
    raise FormatError(f"{what} {rel} does not hold the bytes its record says", subject=r.path)


def open_source(root: Path, r: Record | Held, tree: TreeState | None = None) -> tuple[int, Path]:
    """:func:`open_checked`'s descriptor and path."""
    opened = open_checked(root, r, tree)
    return opened.fd, opened.path


def read_blob(root: Path, r: Record | Held, tree: TreeState | None = None) -> bytes:
    """The bytes of a version's record ``r`` (:func:`source`), checked against its SHA-256."""
    fd, path = open_source(root, r, tree)
    try:
        data = b"".join(iter(lambda: os.read(fd, _CHUNK), b""))
    finally:
        os.close(fd)
    if hashlib.sha256(data).hexdigest() != r.sha256:
        raise FormatError("its bytes do not match its SHA-256", subject=str(path))
    return data


def problems(root: Path) -> Iterator[tuple[str, str]]:
    """(where, what) for every problem of the store (formats/history.md §4); nothing when the tree
    has no store or a sound one."""
    folder = store_dir(root)
    if not folder.is_dir():
        return
    checked: set[str] = set()
    tree = TreeState(root)
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name = entry.name
        if name in ("blobs", PENDING, STORE_MARK) or name.startswith(TMP) or name.endswith(".report.json"):
            continue
        where = f"{RESERVED_DIR}/{VERSIONS_NAME}/{name}"
        if not name.endswith(".jsonl"):
            yield (where, "is not part of the version store")
            continue
        vid = name[: -len(".jsonl")]
        try:
            dates.id_order(vid)
        except ValueError:
            yield (where, "is not named by a version id")
            continue
        if entry.is_symlink() or not entry.is_file(follow_symlinks=False):
            yield (where, "is not a regular file")
            continue
        try:
            header, rows = _decode_manifest(Path(entry.path))
            if header.options.get("version") != vid:
                yield (where, f"its header names version {header.options.get('version')!r}, not {vid}")
            for r in rows:
                why = safe_path(r.path)
                if why:
                    yield (f"{where}: {r.path}", why)
                    continue
                if not _HEX64.match(r.sha256):
                    yield (f"{where}: {r.path}", f"{r.sha256!r} is not a SHA-256")
                    continue
                yield from _source_problems(root, r, where, tree, checked)
        except FormatError as e:
            yield (e.subject or where, e.message)


def _source_problems(
    root: Path, r: Record, where: str, tree: TreeState, checked: set[str]
) -> Iterator[tuple[str, str]]:
    """The problem of the file holding ``r``'s bytes (:func:`source`), each such file hashed once."""
    at = f"{where}: {r.path}"
    try:
        path = source(root, r, tree)
    except FormatError as e:
        yield (at, e.message)
        return
    if str(path) in checked:
        return
    checked.add(str(path))
    rel = path.relative_to(root).as_posix()
    held = f"its blob {rel}" if rel != r.path else f"its file {rel} in the tree (no blob stored)"
    try:
        fd = open_in_tree(root, rel)
    except FormatError as e:
        yield (at, f"{held} {e.message}")
        return
    try:  # a tree file through ``tree``: remembered, a reader after verify does not hash it again
        if rel != r.path:
            got: tuple[int, str] | None = hash_fd(fd)
        else:
            seen = tree.check(fd)
            got = None if seen is None else (seen[0].st_size, seen[1])
    finally:
        os.close(fd)
    if got != (r.size, r.sha256):
        says = "its name and record say" if rel != r.path else "its record says"
        yield (at, f"{held} does not hold the bytes {says}")


def extract(root: Path, v: Version, out: Path) -> int:
    """Write version ``v`` as a plain tree at ``out`` (which must not exist, or be empty): every file
    a hard link to its blob (a copy across file systems), the version's manifest as the tree's. The
    version is checked whole before anything is written. Returns the number of files."""
    if not v.recorded:
        raise UsageError(
            f"version {v.id} is the tree itself: copy the tree, or record it first", subject=str(root)
        )
    tree = TreeState(root)  # the check's: a tree file it hashed is not hashed again below
    data = storefiles.read_manifest(v.manifest)  # read once: what is checked is what is written
    for where, what in problems_of_version(root, v, tree, data):
        raise FormatError(what, subject=where)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError("exists and is not an empty folder", subject=str(out))
    import shutil  # here only: with bz2 and lzma, ~8 M instructions of every --new-version capture

    work = out.with_name(f".{out.name}.archiver-tmp-{os.getpid()}")
    rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        _, rows = _decode_manifest(v.manifest, data=data)
        n = 0
        for r in rows:
            dest = work / r.path
            try:
                makedirs(dest.parent)
            except (FileExistsError, NotADirectoryError):
                raise FormatError(
                    f"{r.path!r} is inside another record's file", subject=str(v.manifest)
                ) from None
            fd, src = open_source(root, r, tree)
            try:
                os.link(src, dest, follow_symlinks=False)
                if not os.path.samestat(os.lstat(dest), os.fstat(fd)):  # replaced since it was checked
                    os.unlink(dest)
                    raise OSError("not the file checked")
            except FileExistsError:  # never written through: dest may be a link to the tree's file
                raise FormatError(f"{r.path!r} is listed twice", subject=str(v.manifest)) from None
            except OSError:  # "xb" (O_EXCL): a name that exists is never opened and truncated
                with os.fdopen(os.dup(fd), "rb") as f, open(dest, "xb") as copy:
                    shutil.copyfileobj(f, copy)
            finally:
                os.close(fd)
            n += 1
        body = _version_body(data, "", v.manifest)
        (work / RESERVED_DIR).mkdir(exist_ok=True)
        (work / RESERVED_DIR / MANIFEST_NAME).write_bytes(body)
        if out.exists():
            out.rmdir()
        os.replace(work, out)
        return n
    except BaseException:
        rmtree(work, ignore_errors=True)
        raise


def problems_of_version(
    root: Path, v: Version, tree: TreeState | None = None, data: bytes | None = None
) -> Iterator[tuple[str, str]]:
    """(where, what) for every problem of the recorded version ``v`` (its manifest's bytes ``data``
    when they were read already)."""
    where = f"{RESERVED_DIR}/{VERSIONS_NAME}/{v.manifest.name}"
    _, rows = _decode_manifest(v.manifest, data=data)
    checked: set[str] = set()
    tree = tree or TreeState(root)
    for r in rows:
        why = safe_path(r.path)
        if why:
            yield (f"{where}: {r.path}", why)
            continue
        if not _HEX64.match(r.sha256):
            yield (f"{where}: {r.path}", f"{r.sha256!r} is not a SHA-256")
            continue
        yield from _source_problems(root, r, where, tree, checked)
