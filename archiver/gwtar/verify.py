"""Check a gwtar file against formats/gwtar.md and the v1 checklist (research gwtar-reference.md §5,
items 1–6 and 11): magic, terminator, fixed-width fields, manifest parse rules, the tar walk against
the v1 offset arithmetic, ustar checksums, the SHA-256 of every member, the extension-1 metadata and
site index, and what follows the tar.

Problems are data (:class:`~archiver.gwtar.rules.Problem`: member, byte offset, one line), never
exceptions: a damaged or hostile file gives a report, not a traceback. The whole file is read once,
front to back, in fixed-size chunks.

FEC hook: when the bytes after ``totalArchiveSize`` are a ustar archive of ``*.par2`` files (or PAR2
packets start in their first 64 KiB: a tail whose tar framing is damaged), the report says "FEC tail
present", and if the module :mod:`archiver.par2` exists and defines
``check_tail(path, protected_length, spans=None)``, it is called with the file, ``totalArchiveSize``
and (when it takes ``spans``) the members as ``(name, start, end)`` absolute byte ranges; what it
returns (an object with a ``problems`` list, or an iterable) adds its items to the report: a
:class:`~archiver.gwtar.rules.Problem` as is, anything else as one line about the file.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from archiver import tar
from archiver.errors import FormatError
from archiver.gwtar import bundle, parse, rules
from archiver.gwtar.read import MAX_INDEX, IndexStream, TarEntry, TarWalk, _index_member, read_header_bytes
from archiver.gwtar.rules import INDEX_PATH, Problem
from archiver.progress import Meter, bytes_meter, wanted
from archiver.walk import files_below

__all__ = [
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_UNREADABLE",
    "Problem",
    "Report",
    "fec_hook",
    "verify",
    "verify_main",
]

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_UNREADABLE = 2
_CHUNK = 1 << 20
#: Problems kept from the site index's entries; the rest are counted in one line.
_MAX_INDEX_PROBLEMS = 1000
_SUFFIXES = (".gwtar.html", ".gwtar")
_SEARCH_MANIFEST = "_archiver/search/manifest.js"  # archiver.search.archive.PREFIX + "manifest.js"


@dataclass
class Report:
    """The result of :func:`verify`. ``ok`` is true when there is no problem; ``unreadable`` when the
    file could not be read at all (exit 2); ``notes`` are facts that are not problems (a FEC tail)."""

    path: Path
    problems: list[Problem] = field(default_factory=list)
    #: points readers cope with: external resources pages load (:mod:`archiver.gwtar.verify_links`)
    warnings: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: bool = False
    members: int = 0
    listed: int = 0
    overhead: int | None = None
    total_archive_size: int | None = None
    file_size: int | None = None
    extension: int | None = None
    fec: bool = False
    documents: int = 0
    links: int = 0
    #: whether the tar holds the search index's manifest (formats/gwtar.md §5.4), checked then
    search: bool = False
    versions: bool = False  # whether it holds a versions table (formats/gwtar.md §13), checked then

    @property
    def ok(self) -> bool:
        return not self.problems and not self.unreadable

    def strict(self) -> None:
        """Count the warnings as problems (``--strict``)."""
        self.problems += self.warnings
        self.warnings = []

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return EXIT_UNREADABLE
        return EXIT_OK if self.ok else EXIT_INVALID

    def add(self, member: str | None, offset: int | None, message: str) -> None:
        self.problems.append(Problem(member, offset, message))

    def lines(self) -> list[str]:
        """One line per problem, then a summary line."""
        subject = str(self.path)
        out = [p.line(subject) for p in self.problems]
        out += [p.line(f"{subject}: warning") for p in self.warnings]
        facts = [f"{self.members} member{'s' if self.members != 1 else ''}"]
        if self.extension:
            facts.append(f"archiver extension {self.extension}")
        facts.extend(self.notes)
        if self.unreadable:
            out.append(f"{subject}: UNREADABLE")
        elif self.ok:
            if self.warnings:
                facts.append(f"{len(self.warnings)} warning(s) (--strict counts them as problems)")
            out.append(f"{subject}: OK ({'; '.join(facts)})")
        else:
            count = len(self.problems)
            out.append(f"{subject}: INVALID ({count} problem{'s' if count != 1 else ''}; {'; '.join(facts)})")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "ok": self.ok,
            "unreadable": self.unreadable,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [p.to_json() for p in self.warnings],
            "notes": list(self.notes),
            "members": self.members,
            "listed": self.listed,
            "overhead": self.overhead,
            "total_archive_size": self.total_archive_size,
            "file_size": self.file_size,
            "extension": self.extension,
            "fec": self.fec,
            "documents": self.documents,
            "links": self.links,
        }


@dataclass(frozen=True, slots=True)
class _Entry:
    """What verify keeps of each tar member (a few fields, not the whole header: memory per member)."""

    name: str
    header_offset: int
    ustar_offset: int
    data_offset: int
    size: int
    typeflag: bytes
    extended: bool
    is_regular: bool
    is_ustar: bool


@dataclass(frozen=True, slots=True)
class _Seen:
    entry: _Entry
    sha256: str | None
    position: int


def verify(path: Path, *, progress: Meter | None = None, links: bool = True) -> Report:
    """Check the gwtar file at ``path``; never raises for anything the file contains. ``progress`` is
    told the file's size and the bytes of each member as they are hashed. With ``links``, the local
    references of its HTML and CSS members too, when it has archiver's site index and no other problem
    (:func:`archiver.gwtar.verify_links.check_links`)."""
    path = Path(path)
    report = Report(path)
    try:
        f = open(path, "rb", buffering=1 << 16)  # noqa: SIM115 - closed below
    except OSError as e:
        report.unreadable = True
        report.add(None, None, f"cannot read: {e.strerror}")
        return report
    try:
        with f:
            _verify(f, report, Meter() if progress is None else progress)
    except OSError as e:
        report.unreadable = True
        report.add(None, None, f"read error: {e.strerror}")
        return report
    # plain v1 files name assets by manifest keys, not paths; a damaged file's links are not looked
    # at (its index may be anything, a million entries of it)
    if links and report.extension and report.ok:
        from archiver.gwtar.verify_links import check_links

        check_links(path, report)
    if report.extension and not report.unreadable and report.search:  # a reader holds the whole index
        _check_search(path, report)
    if report.extension and not report.unreadable and report.versions:
        from archiver.gwtar.versions import check

        check(path, report)
    return report


def _check_search(path: Path, report: Report) -> None:
    """The search index members (formats/gwtar.md §5.4), each checked against the search manifest."""
    from archiver.gwtar.read import GwtarReader
    from archiver.search import archive

    try:
        reader = GwtarReader(path)
    except FormatError:
        return  # the damage is reported above
    with reader:
        for name, problem in archive.check(archive.member_reads(reader)[0], reader.has):
            report.add(name, None, f"search index: {problem}")


def _verify(f: IO[bytes], report: Report, meter: Meter) -> None:
    report.file_size = size = os.fstat(f.fileno()).st_size
    meter.start(size)
    ph = parse.parse_header(read_header_bytes(f))
    report.problems.extend(ph.problems)
    if ph.fatal:
        return
    assert ph.overhead is not None and ph.total is not None and ph.manifest is not None
    report.overhead, report.total_archive_size = ph.overhead, ph.total
    if size < ph.total:
        report.add(
            None, size, f"the file is {size} bytes, shorter than totalArchiveSize {ph.total} (truncated)"
        )
    end = min(size, ph.total)

    walk = TarWalk(f, ph.overhead, end)
    seen: list[_Seen] = []
    by_data: dict[int, _Seen] = {}
    names: set[str] = set()
    buf = bytearray(_CHUNK)
    for entry in walk:
        digest = _hash(f, entry, buf) if entry.is_regular else None
        meter.advance(entry.data_offset + entry.size - entry.header_offset)
        kept = _Entry(entry.name, entry.header_offset, entry.ustar_offset, entry.data_offset, entry.size,
                      entry.typeflag, entry.extended, entry.is_regular, entry.header.is_ustar)  # fmt: skip
        item = _Seen(kept, digest, len(seen))
        seen.append(item)
        by_data[entry.data_offset] = item
        _check_entry(report, entry, names)
    report.problems.extend(walk.problems)
    report.search = any(s.entry.name == _SEARCH_MANIFEST for s in seen)
    report.versions = any(s.entry.name == "_archiver/gwtar-versions.json" for s in seen)
    report.members = sum(1 for s in seen if s.entry.is_regular and s.entry.name != INDEX_PATH)
    report.listed = len(ph.manifest)

    last_listed = _check_listed(report, ph, seen, by_data, walk.stopped_at)
    for s in seen:
        if s.entry.header_offset < last_listed and (s.entry.extended or not s.entry.is_regular):
            why = "extended or non-file header before the last listed member (v1 offsets shift)"
            report.add(s.entry.name, s.entry.header_offset, why)
    if ph.meta is not None:
        _check_extension(report, f, ph, seen, by_data, walk.stopped_at)
    if size > ph.total:
        spans = [(s.entry.name, s.entry.data_offset, s.entry.data_offset + s.entry.size) for s in seen]
        _check_trailer(report, f, ph.total, size, spans)


def _hash(f: IO[bytes], entry: TarEntry, buf: bytearray) -> str:
    digest = hashlib.sha256()
    view = memoryview(buf)
    f.seek(entry.data_offset)
    left = entry.size
    while left:
        n = f.readinto(view[: min(left, len(view))])  # type: ignore[attr-defined]
        if not n:
            break
        digest.update(view[:n])
        left -= n
    return digest.hexdigest()


def _check_entry(report: Report, entry: TarEntry, names: set[str]) -> None:
    name = entry.name
    at = entry.ustar_offset
    plain = name.rstrip("/") if entry.typeflag == b"5" else name
    why = rules.member_path_problem(plain)
    if why:
        report.add(name, at, f"unsafe member name ({why}): extraction would leave its folder")
    kind = {
        b"1": "a hard link",
        b"2": "a symbolic link",
        b"3": "a character device",
        b"4": "a block device",
        b"6": "a FIFO",
    }.get(entry.typeflag)
    if kind:
        report.add(name, at, f"member is {kind} (gwtar members are regular files)")
    elif entry.typeflag not in (b"0", b"\x00", b"7", b"5"):
        report.add(name, at, f"member has an unknown tar type {entry.typeflag!r}")
    if entry.typeflag != b"5":
        if name in names:
            report.add(name, at, "member name appears twice in the tar")
        names.add(name)


def _name_matches(key: str, name: str, basename: str | None) -> bool:
    if key == "0":
        if not basename:
            return True
        return any(name == basename + ext or name.endswith("/" + basename + ext) for ext in (".html", ".htm"))
    return name == key or name.endswith("/" + key)


def _check_listed(
    report: Report, ph: parse.ParsedHeader, seen: list[_Seen], by_data: dict[int, _Seen], damage: int | None
) -> int:
    """Research §5 items 5–6: each listed member where v1's arithmetic puts it. Returns the absolute
    data offset of the last listed member (0 when none)."""
    assert ph.manifest is not None and ph.overhead is not None and ph.total is not None
    sizes = [entry["size"] for _, entry in ph.manifest]
    offsets = rules.v1_data_offsets(sizes)
    basename = next((e.get("basename") for k, e in ph.manifest if k == "0"), None)
    last = 0
    beyond = 0
    for i, ((key, fields), rel) in enumerate(zip(ph.manifest, offsets, strict=True)):
        at = ph.overhead + rel
        last = at
        size = fields["size"]
        label = "0" if key == "0" else key
        if at + size > ph.total:
            report.add(label, at, f"the manifest puts {size} bytes at {at}, past totalArchiveSize {ph.total}")
            continue
        if damage is not None and at - tar.BLOCK >= damage and at not in by_data:
            beyond += 1
            continue
        s = by_data.get(at)
        if s is None or s.entry.ustar_offset != at - tar.BLOCK:
            found = "nothing readable" if s is None else f"member {s.entry.name!r}"
            why = f"v1 offset arithmetic expects a ustar header here, the tar has {found} (offsets disagree)"
            report.add(label, at - tar.BLOCK, f"manifest entry {label!r}: {why}")
            continue
        e = s.entry
        if s.position != i:
            report.add(e.name, e.ustar_offset, f"listed member {i} is member {s.position} of the tar")
        if not e.is_ustar:
            report.add(
                e.name, e.ustar_offset, "listed member's header lacks POSIX ustar magic ('ustar\\0' '00')"
            )
        if e.typeflag not in (b"0", b"\x00"):
            report.add(
                e.name, e.ustar_offset, f"listed member has tar type {e.typeflag!r}, not a regular file"
            )
        if e.extended:
            report.add(
                e.name, e.header_offset, "listed member is preceded by an extended (pax/long-name) header"
            )
        if e.size != size:
            report.add(e.name, e.ustar_offset, f"tar header says {e.size} bytes, the manifest {size}")
        if not _name_matches(key, e.name, basename if isinstance(basename, str) else None):
            report.add(e.name, e.ustar_offset, f"member name does not match manifest key {label!r}")
        want = fields.get("hash")
        if isinstance(want, str) and s.sha256 is not None and s.sha256 != want and e.size == size:
            report.add(e.name, e.data_offset, f"SHA-256 {s.sha256} does not match the manifest's {want}")
    if beyond:
        report.add(None, damage, f"{beyond} listed member{'s' if beyond != 1 else ''} lie past the damage at "
                   f"offset {damage} and could not be checked")  # fmt: skip
    return last


def _check_extension(
    report: Report,
    f: IO[bytes],
    ph: parse.ParsedHeader,
    seen: list[_Seen],
    by_data: dict[int, _Seen],
    damage: int | None,
) -> None:
    meta = ph.meta
    assert meta is not None and ph.overhead is not None and ph.total is not None
    version = meta.get("version")
    report.extension = version if isinstance(version, int) else None
    if version not in rules.EXTENSION_VERSIONS:
        report.notes.append(f"archiver extension {version} is newer than this reader; its checks skipped")
        return
    where = parse.index_location(meta)
    if isinstance(where, str):
        report.add(INDEX_PATH, None, f"metadata: {where}")
        return
    offset, size, sha = where
    at = ph.overhead + offset
    s = by_data.get(at)
    if s is None and damage is not None and at - tar.BLOCK >= damage:
        return  # past the damage already reported
    if s is None or s.entry.name != INDEX_PATH:
        report.add(INDEX_PATH, at, "the metadata's index offset does not point at the site index member")
        return
    if s.entry.size != size:
        report.add(INDEX_PATH, at, f"site index is {s.entry.size} bytes, the metadata says {size}")
        return
    if s.sha256 != sha:
        report.add(INDEX_PATH, at, f"site index SHA-256 {s.sha256} does not match the metadata's {sha}")
        return
    regular = [x for x in seen if x.entry.is_regular]
    if regular and regular[-1] is not s:
        report.add(INDEX_PATH, at, "the site index is not the last member")
    if size > MAX_INDEX:
        report.add(INDEX_PATH, at, f"site index of {size} bytes exceeds the {MAX_INDEX}-byte limit")
        return
    found = bundle.locate(meta, ph.overhead)
    check = None
    if found is not None:
        b = None if isinstance(found, str) else by_data.get(found.start)
        why = bundle.member_problem(found, None if b is None else (b.entry.name, b.entry.size))
        if why:
            report.add(rules.BUNDLE_PATH, None if isinstance(found, str) else found.start, why)
            return
        assert not isinstance(found, str)
        check = bundle.Check(f.fileno(), found, {x.entry.name for x in seen})
    stream = IndexStream(f, at, size)  # entry by entry: a huge index is never held whole
    covered: set[int] = set()
    pages = count = dropped = 0

    def add(member: str | None, offset: int | None, message: str) -> None:
        nonlocal dropped
        if len(report.problems) - before < _MAX_INDEX_PROBLEMS:
            report.add(member, offset, message)
        else:
            dropped += 1  # counted, not kept: one summary line below

    before = len(report.problems)
    try:
        for i, raw in enumerate(stream.members()):
            count += 1
            m = _index_member(raw, ph.overhead, ph.total)
            if m is None:
                add(INDEX_PATH, at, f"site index entry {i} is malformed or points outside the tar")
                continue
            pages += m.kind == "page"
            if check is not None and check.bundle.holds(i):
                why = check.entry(m)
                if why:
                    add(m.path, m.offset, why)
                continue
            t = by_data.get(m.offset)
            if t is None:
                add(m.path, m.offset, "the site index puts this member where no member's data starts")
                continue
            if t.position in covered:
                add(m.path, m.offset, "the site index lists this member twice")
            covered.add(t.position)
            if t.entry.name != m.path:
                add(m.path, m.offset, f"the site index names it {m.path!r}, the tar {t.entry.name!r}")
            if t.entry.size != m.size:
                add(m.path, m.offset, f"the site index says {m.size} bytes, the tar {t.entry.size}")
            elif m.sha256 is not None and t.sha256 != m.sha256:
                add(m.path, m.offset, f"SHA-256 {t.sha256} does not match the site index's {m.sha256}")
    except (ValueError, RecursionError) as e:
        report.add(INDEX_PATH, at, f"site index is not valid JSON: {str(e)[:100]}")
        return
    if not stream.saw_members or stream.fields.get("format") != "archiver-gwtar-index":
        report.add(INDEX_PATH, at, "site index is not an archiver-gwtar-index object with a members list")
        return
    if dropped:
        report.add(INDEX_PATH, at, f"... and {dropped:,} more problems with site index entries")
    if check is not None:
        why = check.finish(count)
        if why:
            report.add(rules.BUNDLE_PATH, check.bundle.start, why)
        covered.add(by_data[check.bundle.start].position)
        report.members += check.bundle.count - 1
        report.search = report.search or _SEARCH_MANIFEST in check.names
    entries = range(count)
    for x in regular:
        if x is not s and x.position not in covered:
            report.add(x.entry.name, x.entry.data_offset, "member is not in the site index")
    if meta.get("members") != len(entries):
        report.add(
            None, None, f"metadata says {meta.get('members')} members, the site index lists {len(entries)}"
        )
    if meta.get("pages") != pages:
        report.add(None, None, f"metadata says {meta.get('pages')} pages, the site index lists {pages}")
    main = meta.get("main")
    first = by_data.get(ph.overhead + tar.BLOCK)
    if ph.manifest and first is not None and main != first.entry.name:
        report.add(None, None, f"metadata main {main!r} is not the first member {first.entry.name!r}")


def fec_hook() -> Callable[..., Any] | None:
    """``archiver.par2.check_tail`` when that module exists (the FEC engineer's hook), else None."""
    try:
        module = importlib.import_module("archiver.par2")
    except ModuleNotFoundError as e:
        if e.name in ("archiver.par2", "archiver"):
            return None
        raise
    hook = getattr(module, "check_tail", None)
    return hook if callable(hook) else None


_PAR2_MAGIC = b"PAR2\x00PKT"
_PAR2_SCAN = 64 * 1024  # a FEC tail's first packet starts after one or two tar header blocks


def _check_trailer(
    report: Report, f: IO[bytes], total: int, size: int, spans: list[tuple[str, int, int]]
) -> None:
    extra = size - total
    f.seek(total)
    block = f.read(tar.BLOCK)
    names: list[str] = []
    if len(block) == tar.BLOCK and not tar.is_zero_block(block):
        try:
            head = tar.decode_header(block)
        except tar.TarError:
            head = None
        if head is not None and head.checksum_ok and head.magic.startswith(b"ustar"):
            walk = TarWalk(f, total, size)
            names = [e.name for e in walk]
            if walk.problems:
                names = []
    par2_files = bool(names) and all(n.endswith(".par2") for n in names)
    framing_damaged = False
    if not par2_files:
        # damaged tar framing: the tail is still FEC data when PAR2 packets start near its beginning
        f.seek(total)
        framing_damaged = _PAR2_MAGIC in f.read(_PAR2_SCAN)
    if par2_files or framing_damaged:
        report.fec = True
        hook = fec_hook()
        what = (
            f"{len(names)} PAR2 file{'s' if len(names) != 1 else ''}"
            if par2_files
            else "its tar framing is damaged"
        )
        report.notes.append(
            f"FEC tail present ({what}, {extra} bytes" + ("" if hook else "; slices not checked") + ")"
        )
        if hook is not None:
            try:
                takes_spans = "spans" in inspect.signature(hook).parameters
            except (TypeError, ValueError):
                takes_spans = False
            result = hook(report.path, total, spans=spans) if takes_spans else hook(report.path, total)
            items: Iterable[Any] = getattr(result, "problems", result) or ()
            for item in items:
                if isinstance(item, Problem):
                    report.problems.append(item)
                else:
                    report.add(None, None, f"FEC: {item}")
    else:
        report.notes.append(f"{extra} bytes of unrecognised data after totalArchiveSize")


# ---------------------------------------------------------------------------------------------
# Command-line shape


def _targets(paths: Sequence[Path], recursive: bool, err: IO[str]) -> tuple[list[Path], int]:
    files: list[Path] = []
    code = EXIT_OK
    for p in paths:
        p = Path(p)
        if p.is_dir():
            if not recursive:
                print(f"archiver: {p}: is a folder (use -r to verify every gwtar in it)", file=err)
                code = EXIT_UNREADABLE
                continue
            found = sorted(Path(x) for x in files_below(p) if x.endswith(_SUFFIXES))
            if not found:
                print(f"archiver: {p}: no .gwtar.html files in this folder", file=err)
                code = EXIT_UNREADABLE
            files.extend(found)
        else:
            files.append(p)
    return files, code


def verify_main(
    paths: list[Path],
    *,
    recursive: bool = False,
    as_json: bool = False,
    more: Sequence[dict[str, Any]] = (),
    strict: bool = False,
    links: bool = True,
) -> int:
    """``archiver verify [-r] [--json] PATH...``: check each file (every ``*.gwtar.html`` under a
    folder with ``recursive``), print one line per problem naming the member and byte offset and a
    summary line per file (or one JSON object with ``as_json``, whose ``files`` end with ``more``:
    other formats' reports, each with an ``ok``), and return the exit code: 0 all valid, 1 some
    invalid or damaged, 2 some unreadable or a usage error (the worst wins). ``strict`` counts
    warnings (external resources) as problems; ``links=False`` leaves the link check out."""
    if not paths and not more:
        print("archiver: verify: no file given", file=sys.stderr)
        return EXIT_UNREADABLE
    files, code = _targets(paths, recursive, sys.stderr)
    show = wanted(as_json=as_json)
    reports = []
    for p in files:
        with bytes_meter(f"verify {p.name}", show=show) as meter:
            reports.append(verify(p, progress=meter, links=links))
        if strict:
            reports[-1].strict()
    if as_json:
        ok = code == EXIT_OK and all(r.ok for r in reports) and all(m["ok"] for m in more)
        doc = {"ok": ok, "files": [*(r.to_json() for r in reports), *more]}
        print(json.dumps(doc, ensure_ascii=False, indent=1))
    else:
        for r in reports:
            if r.unreadable:  # an error, not a finding: why on stderr, the verdict on stdout
                for p in r.problems:
                    print(f"archiver: {p.line(str(r.path))}", file=sys.stderr)
                print(f"{r.path}: UNREADABLE")
                continue
            for line in r.lines():
                print(line)
    return max([code, *(r.exit_code for r in reports)])
