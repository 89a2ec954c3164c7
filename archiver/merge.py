"""``archiver merge SHARD... -o TREE``: union capture shards into one canonical tree (formats/tree.md §11).

Workers of one crawl each write their own folder (a *shard*: a capture tree with its
``_archiver/crawl.sqlite``). Every URL's tree path is a pure function of the URL (tree.md §4), so the
shards merge by union: each file is taken from the shard that stored it, the manifest records and the
crawl state are united, and then the end-of-crawl relinking (:func:`archiver.capture.relink.relink`)
runs once over the union, so a link that pointed at a URL no worker stored is absolute and a link to
a URL another worker stored is relative, exactly as a single-process capture leaves them.

Rules (tree.md §11):

- every shard must be a capture of the same home with the same scope options (else exit 2);
- a shard is read from its own folder and never leaves it: each stored file is opened component by
  component from the shard's root descriptor without following a symlink, and must be a regular
  file (a symlink, a FIFO, a device or a socket at a record's path refuses the merge, exit 1, before
  anything is read from it); a file is read up to its record's size, never further; a record or a
  row of the crawl state that is malformed (not JSON, the wrong shape, a NUL or an unsafe path) is
  refused the same way;
- a path stored by several shards: the same URL stored twice (a lease that expired, the URL fetched
  again) keeps the record fetched last (then the smaller SHA-256); two different URLs at one path (a
  §4.5 clash the shards resolved differently) refuse the merge (exit 1);
- every file's bytes are checked against its record's SHA-256 as they are copied (a hard link when
  the shard is on the same file system; the relinking replaces a file, never writes into it), so a
  damaged shard is refused (exit 1) before anything appears at ``TREE``;
- an alias row names the key at the end of its chain of merged rows (a shard may have merged it
  into another alias, met as the owner before the path went on), as one process's rows do;
- every record's depth and referrer are settled once over the union of the shards' discoveries
  (their ``found`` tables; :meth:`archiver.capture.state.State.settle_depths`), the shortest paths a
  single process finds over its own (tree.md §8);
- the result is built in a temporary folder beside ``TREE`` and renamed into place: an interrupted
  merge leaves nothing at ``TREE``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from archiver.capture.aliases import chain_end
from archiver.capture.relink import final_records, public, relink
from archiver.capture.state import FINAL_STATES, ROW_COLUMNS, SCHEMA_VERSION, Row, State, row_from
from archiver.capture.writer import TreeWriter
from archiver.errors import FormatError, StoreError, UsageError, store_error
from archiver.tree import MANIFEST_NAME, Header, Record, is_private, read_header, write_records
from archiver.urls import DEFAULT_HYGIENE, RESERVED_DIR, STATE_NAME
from archiver.walk import makedirs, rmtree

__all__ = ["MergeResult", "merge"]

#: Header options that must agree between shards (the scope: what a URL's outcome depends on).
SCOPE_OPTIONS = (
    "render",
    "depth",
    "max_pages",
    "subdomains",
    "scope_prefix",
    "include",
    "exclude",
    "allow_domains",
    "assets_any_host",
    "asset_cap",
    "robots",
    "skip_extensions",
)
#: Which of two rows of one key the merged state keeps: the most final (a stored file first).
_RANK = {"done": 0, "merged": 1, "failed": 2, "unconfirmed": 3, "refused": 4, "skipped": 5, "pending": 6}
_record_decoder = msgspec.json.Decoder(Record)


@dataclass
class MergeResult:
    path: Path
    shards: int
    pages: int = 0
    assets: int = 0
    files: int = 0
    duplicates: int = 0  # paths several shards stored (the same URL fetched again)
    complete: bool = True
    relinked: int = 0


#: The columns of each shard table merge reads, with the Python types SQLite must give for them
#: (SQLite stores any value in any column: a hostile shard's ``depth`` may be text).
_TEXT, _INT = (str,), (int,)
_OPT_TEXT, _OPT_INT = (str, type(None)), (int, type(None))
_ROW_TYPES = (_TEXT, _TEXT, _TEXT, _INT, _OPT_TEXT, _INT, _INT, _OPT_TEXT, _OPT_TEXT, _OPT_TEXT,
              _OPT_INT, _INT, _OPT_TEXT, _INT)  # fmt: skip
_KINDS = frozenset({"page", "asset"})


@dataclass
class _Shard:
    root: Path
    fd: int  # the shard's folder, opened once: every stored file is opened below it (_open_stored)
    header: Header
    db: sqlite3.Connection

    def _select(
        self, table: str, sql: str, types: Sequence[tuple[type, ...]], args: tuple[object, ...] = ()
    ) -> list[tuple[object, ...]]:
        """Every row of ``sql``, each column checked against ``types`` (else a :class:`FormatError`
        naming the table: a damaged or hostile crawl state)."""
        try:
            rows = list(self.db.execute(sql, args))
        except sqlite3.Error as e:
            raise FormatError(f"unreadable crawl state ({table}): {e}", subject=str(self.root)) from None
        for n, row in enumerate(rows, 1):
            for value, allowed in zip(row, types, strict=True):
                if not isinstance(value, allowed) or (isinstance(value, str) and "\0" in value):
                    raise FormatError(
                        f"crawl state table {table}, row {n}: a malformed value ({type(value).__name__})",
                        subject=str(self.root),
                    )
        return rows

    def rows(self) -> list[Row]:
        sql = f"SELECT {ROW_COLUMNS} FROM urls ORDER BY seq"
        rows = [row_from(v) for v in self._select("urls", sql, _ROW_TYPES)]
        for row in rows:
            if row.kind not in _KINDS:
                raise FormatError(
                    f"crawl state table urls: a row of kind {row.kind[:40]!r}", subject=str(self.root)
                )
        return rows

    def records(self) -> list[Record]:
        out = []
        for path, blob in self._select("records", "SELECT path, record FROM records", (_TEXT, (bytes, str))):
            try:
                record = _record_decoder.decode(blob)  # type: ignore[arg-type]
            except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
                raise FormatError(
                    f"a malformed manifest record in the crawl state ({_shown(path)}): {e}",
                    subject=str(self.root),
                ) from None
            _check_path(record.path, self.root)
            out.append(record)
        return out

    def table(
        self, sql: str, types: Sequence[tuple[type, ...]], args: tuple[object, ...] = ()
    ) -> list[tuple[object, ...]]:
        return self._select(sql.split(" FROM ", 1)[1].split()[0], sql, types, args)

    def found(self) -> list[tuple[object, ...]]:
        """The shard's discoveries (rows of ``found``; none in a state older than the table)."""
        table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'found'"
        if self.db.execute(table).fetchone() is None:
            return []
        return self.table("SELECT src, step, inherit, keys FROM found", (_TEXT, _INT, _INT, _TEXT))

    def meta(self, key: str) -> str | None:
        rows = self.table("SELECT value FROM meta WHERE key = ?", (_TEXT,), (key,))
        return None if not rows else str(rows[0][0])

    def close(self) -> None:
        self.db.close()
        os.close(self.fd)


def _shown(text: str) -> str:
    """``text`` for an error line: escaped (a newline or a NUL is shown, never printed), shortened."""
    shown = repr(text[:200])
    return shown + ("…" if len(text) > 200 else "")


def _check_path(path: str, root: Path) -> None:
    """A record's path is a relative tree path below the shard (tree.md §11.2), not a private file."""
    parts = path.split("/")
    if (
        not path
        or "\0" in path
        or path.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or is_private(path)
        or path == f"{RESERVED_DIR}/{MANIFEST_NAME}"
    ):
        raise FormatError(f"unsafe path in a manifest record: {_shown(path)}", subject=str(root))


_KIND_NAMES = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def _what(mode: int) -> str:
    return next((name for test, name in _KIND_NAMES if test(mode)), "not a regular file")


def _open_stored(shard: _Shard, path: str) -> tuple[int, os.stat_result, int]:
    """A descriptor of the stored file ``path`` of ``shard``, its ``fstat`` and a descriptor of the
    folder holding it (the caller closes both): opened one component at a time from the shard's
    folder with ``O_NOFOLLOW`` (a symlink anywhere on the way is refused, never followed), each
    component looked at before it is opened (a FIFO or a device is never opened) and after
    (``fstat``: swapped meanwhile is refused too)."""
    parts = path.split("/")
    here = shard.fd
    opened: list[int] = []
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            shown = "/".join(parts[: i + 1])
            try:
                mode = os.stat(part, dir_fd=here, follow_symlinks=False).st_mode
                ok = stat.S_ISREG(mode) if last else stat.S_ISDIR(mode)
                if not ok:
                    raise FormatError(
                        f"{_shown(shown)} is {_what(mode)}: a stored file must be a regular file",
                        subject=str(shard.root),
                    )
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                fd = os.open(part, flags | (0 if last else os.O_DIRECTORY), dir_fd=here)
                opened.append(fd)
                st = os.fstat(fd)
            except OSError as e:
                raise FormatError(
                    f"{_shown(shown)}: cannot open: {e.strerror}", subject=str(shard.root)
                ) from None
            if stat.S_IFMT(st.st_mode) != stat.S_IFMT(mode):
                raise FormatError(f"{_shown(shown)} changed while it was opened", subject=str(shard.root))
            here = fd
        fd = opened.pop()
        folder = opened.pop() if opened else os.dup(shard.fd)
        return fd, st, folder
    finally:
        for fd in opened:
            os.close(fd)


def _copy_checked(shard: _Shard, dst: Path, record: Record) -> None:
    """Put the stored file ``record.path`` of ``shard`` at ``dst`` (a hard link of the file read,
    else a copy of it), its size and bytes checked against ``record``; nothing past the record's
    size is read."""
    subject = str(shard.root)
    makedirs(dst.parent)
    fd, st, folder = _open_stored(shard, record.path)
    with open(fd, "rb", closefd=True) as f, contextlib.closing(_Fd(folder)):
        if st.st_size != record.size:
            raise FormatError(
                f"{_shown(record.path)}: bytes differ from the manifest record"
                f" (size {st.st_size}, expected {record.size})",
                subject=subject,
            )
        digest = hashlib.sha256()
        left = record.size + 1  # one byte more: a file that grew is seen, never read on
        try:
            while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                digest.update(chunk)
                left -= len(chunk)
        except OSError as e:
            raise FormatError(f"{_shown(record.path)}: cannot read: {e.strerror}", subject=subject) from None
        if left != 1 or digest.hexdigest() != record.sha256:
            raise FormatError(
                f"{_shown(record.path)}: bytes differ from the manifest record", subject=subject
            )
        name = record.path.rsplit("/", 1)[-1]
        with contextlib.suppress(OSError):  # the name in the folder read, never followed (linkat 0)
            os.link(name, dst, src_dir_fd=folder, follow_symlinks=False)
            linked = os.lstat(dst)
            if (linked.st_dev, linked.st_ino) == (st.st_dev, st.st_ino):
                return  # the very file read
            os.unlink(dst)  # swapped since it was read: the copy below is of the file read
        f.seek(0)
        with open(dst, "xb") as w:
            left = record.size
            while left > 0 and (chunk := f.read(min(left, 1 << 20))):
                w.write(chunk)
                left -= len(chunk)


@dataclass
class _Fd:
    fd: int

    def close(self) -> None:
        os.close(self.fd)


def _open_shard(root: Path) -> _Shard:
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        raise UsageError("not a folder", subject=str(root)) from None
    try:
        return _read_shard(root, fd)
    except BaseException:
        os.close(fd)
        raise


def _is(fd: int, name: str, test: Callable[[int], bool]) -> bool:
    """Is ``name`` below the folder ``fd`` a file of the kind ``test`` (``stat.S_ISDIR``…), itself
    and not through a symlink?"""
    try:
        return test(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _read_shard(root: Path, fd: int) -> _Shard:
    not_capture = UsageError(
        "not a capture folder (no _archiver/manifest.jsonl and crawl state)", subject=str(root)
    )
    if _is(fd, RESERVED_DIR, stat.S_ISLNK):
        raise FormatError(f"{RESERVED_DIR} is a symbolic link", subject=str(root))
    if not _is(fd, RESERVED_DIR, stat.S_ISDIR):
        raise not_capture
    reserved = os.open(RESERVED_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
    try:
        names = (MANIFEST_NAME, STATE_NAME)
        links = [n for n in names if _is(reserved, n, stat.S_ISLNK)]
        regular = all(_is(reserved, n, stat.S_ISREG) for n in names)
    finally:
        os.close(reserved)
    if links:  # the shard's own metadata is read from inside it too
        raise FormatError(f"{RESERVED_DIR}/{links[0]} is a symbolic link", subject=str(root))
    if not regular:
        raise not_capture
    db_path = root / RESERVED_DIR / STATE_NAME
    header = read_header(root)
    if header is None:
        raise not_capture
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        version = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.Error as e:
        raise FormatError(f"unreadable crawl state: {e}", subject=str(db_path)) from None
    if version is None or not str(version[0]).isdecimal() or int(version[0]) > SCHEMA_VERSION:
        db.close()
        raise FormatError("crawl state of an unknown schema", subject=str(db_path))
    return _Shard(root, fd, header, db)


def _scope(header: Header) -> dict[str, object]:
    return {k: header.options.get(k) for k in SCOPE_OPTIONS}


def _check_same_crawl(shards: list[_Shard]) -> None:
    first = shards[0]
    for other in shards[1:]:
        if other.header.home != first.header.home:
            raise UsageError(
                f"a capture of {other.header.home}, not of {first.header.home}: not a shard of this crawl",
                subject=str(other.root),
            )
        a, b = _scope(first.header), _scope(other.header)
        differ = sorted(k for k in SCOPE_OPTIONS if a[k] != b[k])
        if differ:
            raise UsageError(
                f"scope options differ from {first.root}'s ({', '.join(differ)}): not a shard of this crawl",
                subject=str(other.root),
            )


def _newer(a: Record, b: Record) -> bool:
    """Is ``a`` the record to keep over ``b`` (same URL stored twice)?"""
    return (a.fetched or "", b.sha256) > (b.fetched or "", a.sha256)


def merge(shard_roots: list[Path], out: Path) -> MergeResult:
    """Merge the capture shards ``shard_roots`` into a new tree at ``out`` (see the module docstring)."""
    if not shard_roots:
        raise UsageError("no shard folder given", subject="merge")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError("exists and is not an empty folder", subject=str(out))
    resolved = [p.resolve() for p in shard_roots]
    if len(set(resolved)) != len(resolved):
        raise UsageError("a shard folder is given twice", subject="merge")
    if any(out.resolve() == p or p in out.resolve().parents for p in resolved):
        raise UsageError("the output folder is inside a shard", subject=str(out))
    shards: list[_Shard] = []
    try:
        for p in shard_roots:
            shards.append(_open_shard(p))
        _check_same_crawl(shards)
        return _merge(shards, out)
    finally:
        for s in shards:
            s.close()


def _merge(shards: list[_Shard], out: Path) -> MergeResult:
    result = MergeResult(out, len(shards))
    # choose each path's record
    chosen: dict[str, tuple[Record, _Shard]] = {}
    for shard in shards:
        for record in shard.records():  # each path checked (_check_path)
            have = chosen.get(record.path)
            if have is None:
                chosen[record.path] = (record, shard)
                continue
            result.duplicates += 1
            old = have[0]
            if (old.urls[:1] or [None]) != (record.urls[:1] or [None]):
                raise FormatError(
                    f"shards disagree on {record.path}: it holds {old.urls[:1]} in {have[1].root}"
                    f" and {record.urls[:1]} here",
                    subject=str(shard.root),
                )
            if _newer(record, old):
                chosen[record.path] = (record, shard)
    # stage beside the output, rename at the end
    stage = out.parent / f".{out.name}.merge-{os.getpid()}"
    made = [p for p in (out.parent, *out.parent.parents) if not p.exists()]  # removed on failure
    try:
        makedirs(out.parent)
        if stage.exists():
            rmtree(stage)
        (stage / RESERVED_DIR / "tmp").mkdir(parents=True)
        for path, (record, shard) in sorted(chosen.items()):
            _copy_checked(shard, stage / path, record)
            result.files += 1
        state = State(stage / RESERVED_DIR / STATE_NAME)
        try:
            _merge_state(state, shards, chosen)
            state.settle_depths()  # once, over every shard's discoveries (tree.md §8)
            complete = state.count("pending") == 0 and all(s.meta("complete") == "1" for s in shards)
            result.complete = complete
            writer = TreeWriter(stage, stage / RESERVED_DIR / "tmp")
            before = {r.path: r.sha256 for r in state.records()}
            relink(state, stage, DEFAULT_HYGIENE, writer)
            records = [public(r) for r in final_records(state)]
            result.relinked = sum(1 for r in records if before.get(r.path) != r.sha256)
            result.pages = sum(1 for r in records if r.kind == "page" and (r.status or 200) // 100 != 3)
            result.assets = sum(1 for r in records if r.kind == "asset")
            state.set("complete", "1" if complete else "0")
            write_records(stage, _header(shards, complete), records)
            writer.empty_tmp(remove=True)
        finally:
            state.close()
        if out.exists():
            out.rmdir()  # empty (checked above)
        os.replace(stage, out)
    except BaseException as e:
        with contextlib.suppress(OSError):
            rmtree(stage)
        for folder in made:  # deepest first; only what this run made, and only if still empty
            with contextlib.suppress(OSError):
                folder.rmdir()
        stop = store_error(e, str(out)) if isinstance(e, Exception) else None
        if stop is None:
            raise
        # the staging folder is gone: the output is named (and its disk's refusal), not a file in it
        raise StoreError(f"{stop.message} (while merging); nothing was written", subject=str(out)) from None
    return result


def _merge_state(state: State, shards: list[_Shard], chosen: dict[str, tuple[Record, _Shard]]) -> None:
    """Write the union of the shards' crawl states into ``state``: per key the most final row (the
    one of the shard whose file was kept, for stored files) with the smallest depth and referrer any
    shard knows, the kept records, their documents' links, every path, move, blob, discovery and
    seed."""
    keeper: dict[str, _Shard] = {}  # key → the shard whose stored file of that key was kept
    for record, shard in chosen.values():
        for key in record.urls:
            keeper.setdefault(key, shard)
    rows: dict[str, tuple[Row, _Shard]] = {}
    best: dict[str, tuple[int, str]] = {}  # key → the smallest (depth, referrer) any shard knows
    for shard in shards:
        for row in shard.rows():
            seen = (row.depth, row.referrer or "")
            if row.referrer is None and row.depth > 0:
                continue  # a row a shard made for bookkeeping (an alias), not a discovery
            if row.key not in best or seen < best[row.key]:
                best[row.key] = seen
            have = rows.get(row.key)
            if have is None:
                rows[row.key] = (row, shard)
                continue
            old = have[0]
            better = (_RANK.get(row.state, 9), row.depth) < (_RANK.get(old.state, 9), old.depth)
            if keeper.get(row.key) is shard and row.state == "done":
                better = True
            elif keeper.get(row.key) is have[1] and old.state == "done":
                better = False
            if better:
                rows[row.key] = (row, shard)
    # an alias names the key at the end of its chain, as one process's rows do (a shard settled its
    # rows with the aliases it knew then: ``a`` merged into ``b``, and another shard's ``b`` into ``c``)
    final = {k: r.final_url for k, (r, _) in rows.items() if r.state == "merged" and r.final_url}

    db = state.db
    state.known.forget()  # the rows below are written directly: the State's lookups ask SQLite
    with state.transaction():
        seq = 0
        for row, _shard in sorted(rows.values(), key=lambda rs: (rs[0].seq, rs[0].key)):
            seq += 1
            if row.state == "merged" and row.final_url:
                row = msgspec.structs.replace(row, final_url=chain_end(final, row.final_url))
            st = row.state if row.state in FINAL_STATES or row.state == "pending" else "pending"
            depth, referrer = best.get(
                row.key, (row.depth, row.referrer or "")
            )  # the smallest, as one process keeps it
            row = msgspec.structs.replace(row, depth=depth, referrer=referrer or None)
            db.execute(
                f"INSERT INTO urls ({ROW_COLUMNS}) VALUES ({', '.join('?' * 14)})",
                (row.key, row.kind, st, row.depth, row.referrer, row.priority, seq, row.path, row.outcome,
                 row.reason, row.status, row.attempts, row.final_url, int(row.stylesheet)),
            )  # fmt: skip
        for record, _shard in chosen.values():
            db.execute(
                "INSERT INTO records (path, record) VALUES (?, ?)",
                (record.path, msgspec.json.encode(record)),
            )
            for key in record.urls[:1]:
                if key not in rows:  # a shard whose rows live elsewhere (a shared state): say it is stored
                    seq += 1
                    db.execute(
                        "INSERT OR IGNORE INTO urls (key, kind, state, depth, priority, seq, path, outcome)"
                        " VALUES (?, ?, 'done', ?, 1, ?, ?, 'ok')",
                        (key, record.kind, record.depth or 0, seq, record.path),
                    )
        for path, (_record, shard) in chosen.items():
            for src, key, local in shard.table(
                "SELECT src, key, local FROM links WHERE src = ?", (_TEXT, _TEXT, _INT), (path,)
            ):
                db.execute(
                    "INSERT OR IGNORE INTO links (src, key, local) VALUES (?, ?, ?)", (src, key, local)
                )
        for shard in shards:
            for path, key in shard.table("SELECT path, key FROM paths", (_TEXT, _TEXT)):
                db.execute("INSERT OR IGNORE INTO paths (path, key) VALUES (?, ?)", (path, key))
            for path, key in shard.table("SELECT path, key FROM moves", (_TEXT, _TEXT)):
                db.execute("INSERT OR IGNORE INTO moves (path, key) VALUES (?, ?)", (path, key))
            for sha, path in shard.table("SELECT sha256, path FROM blobs", (_TEXT, _TEXT)):
                if path in chosen:
                    db.execute("INSERT OR IGNORE INTO blobs (sha256, path) VALUES (?, ?)", (sha, path))
            db.executemany("INSERT INTO found (src, step, inherit, keys) VALUES (?, ?, ?, ?)", shard.found())
            for url, folder, title in shard.table(
                "SELECT url, folder, title FROM seeds ORDER BY seq", (_TEXT, _OPT_TEXT, _OPT_TEXT)
            ):
                state.add_seed(str(url), folder, title)  # type: ignore[arg-type]
        first = shards[0]
        state.set("home", first.meta("home") or first.header.home)
        state.set("created", min(s.meta("created") or s.header.created for s in shards))


def _header(shards: list[_Shard], complete: bool) -> Header:
    first = shards[0].header
    # every shard's seeds in order, each once (a set beside the list: the list's 'in' was quadratic,
    # 40,000 seeds took 5 s of CPU and a seeds file of a million would take hours)
    seeds = list(dict.fromkeys(u for s in shards for u in s.header.seeds))
    options = dict(first.options)
    options.pop("incomplete", None)
    if not complete:
        options["incomplete"] = True
    return Header(
        home=first.home, created=min(s.header.created for s in shards), seeds=seeds, options=options
    )
