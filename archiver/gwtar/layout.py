"""The gwtar byte layout (formats/gwtar.md): member order, the v1 ``assets`` manifest, the extension-1
metadata and site index, the header text with its fixed-width fields, every offset; and the inverse,
parsing a header back into fields and problems.

Pure: no network, no filesystem, no clock.

Writing is planned in one pass: every number in the header is known before the first body byte is
written (member sizes come from the input), except the SHA-256 values, which are fixed-width
placeholders (64 zeros) patched in place afterwards at the positions the plan reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from archiver import tar
from archiver.errors import FormatError
from archiver.gwtar.refs import Category
from archiver.urls import PRIVATE_NAMES, RESERVED_DIR

__all__ = [
    "END_MARK",
    "EXCLUDED",
    "EXTENSION_VERSION",
    "INDEX_PATH",
    "LARGE",
    "MAGIC",
    "MAGIC_COMMENT",
    "META_ID",
    "RESERVED_ENTRY_FIELDS",
    "ZERO_HASH",
    "MemberSpec",
    "Meta",
    "ParsedHeader",
    "Plan",
    "Problem",
    "index_location",
    "is_array_index",
    "js_order",
    "listing_problem",
    "loader_problem",
    "member_path_problem",
    "order_members",
    "parse_header",
    "plan",
    "script_json",
    "v1_data_offsets",
]

MAGIC_COMMENT = b"<!-- Gwtar self-extracting HTML archive, v1 -->"
MAGIC = b"<html>\n" + MAGIC_COMMENT + b"\n"
END_MARK = b"<!-- GWTAR END\n"
#: The header is UTF-8 (its JSON is ASCII): so is the document the loader writes each page into, and
#: so are the scripts a page loads, whatever a server or a browser's guess would say (gwtar.md §2).
CHARSET_LINE = '<meta charset="utf-8">\n'
#: Switches the browser's tokenizer (and its preload scanner) to PLAINTEXT for the rest of the
#: file: no byte of the tar body is ever markup, whatever a member holds (``-->``, ``<img>``,
#: ``<script>``), and the element is hidden (gwtar.md §2).
BODY_GUARD = "<plaintext hidden>\n"
EXTENSION_VERSION = 1
INDEX_PATH = "_archiver/gwtar-index.json"
META_ID = "archiver-gwtar"
ZERO_HASH = "0" * 64
OVERHEAD_DIGITS = 12
TOTAL_DIGITS = 24
OFFSET_DIGITS = 24
#: Assets above this size go after everything else (formats/gwtar.md §5.2).
LARGE = 4 << 20
#: Tree files never packed: the tree's private files (urls.PRIVATE_NAMES), and a site index left by
#: an earlier extract.
EXCLUDED = frozenset({f"{RESERVED_DIR}/{name}" for name in PRIVATE_NAMES} | {INDEX_PATH})
#: Fields the v1 loader adds to each manifest entry at run time; a manifest must not use them.
RESERVED_ENTRY_FIELDS = frozenset(
    {"name", "byteRangeStart", "byteRangeEnd", "urlString", "data", "status", "rendered"}
)
_MAX_SAFE = 2**53 - 1  # JavaScript numbers are exact up to here

Kind = Literal["page", "asset"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an archive: the member it concerns (None for the file as a whole), the
    byte offset in the file where it shows (None when there is none), and one line saying what."""

    member: str | None
    offset: int | None
    message: str

    def line(self, subject: str) -> str:
        where = []
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.member is not None:
            where.append(f"member {json.dumps(self.member, ensure_ascii=False)}")
        return f"{subject}: {', '.join(where)}: {self.message}" if where else f"{subject}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"member": self.member, "offset": self.offset, "message": self.message}


@dataclass(frozen=True)
class MemberSpec:
    """One member to write: its tree path, size, media type, kind, page title and URLs, and its v1
    manifest key when it is listed (``"0"`` for the main page, None for unlisted members)."""

    path: str
    size: int
    media_type: str
    kind: Kind = "asset"
    title: str | None = None
    urls: tuple[str, ...] = ()
    key: str | None = None


@dataclass(frozen=True)
class Meta:
    """The extension-1 metadata that does not depend on the layout (formats/gwtar.md §4)."""

    tool: str
    created: str
    main: str
    basename: str
    source: Literal["tree", "singlefile"]
    home: str | None = None
    title: str | None = None
    original: dict[str, str] | None = None


def script_json(obj: Any, *, indent: int | None = None) -> str:
    """JSON for an HTML ``<script>`` element: ASCII only, and ``<``, ``>``, ``&`` written as
    ``\\u003c``, ``\\u003e``, ``\\u0026`` (they only occur inside strings), so no text can close the
    element, open a comment or match ``<!-- GWTAR END``."""
    if indent is None:
        text = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    else:
        text = json.dumps(obj, ensure_ascii=True, indent=indent)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")


def is_array_index(key: str) -> bool:
    """True for keys JavaScript orders before all others in ``Object.entries`` (canonical integers
    below 2**32 - 1)."""
    return bool(_ARRAY_INDEX.fullmatch(key)) and int(key) < 2**32 - 1


def member_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be a member name (absolute, ``..``, empty or ``.`` segments, NUL, a
    backslash-free POSIX path is required), or None."""
    if not path:
        return "empty name"
    if "\x00" in path:
        return "name contains NUL"
    if path.startswith("/"):
        return "absolute name"
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "name has an empty, '.' or '..' segment"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    return None


def listing_problem(path: str, size: int) -> str | None:
    """Why a member cannot be listed in the v1 manifest (its name or size needs more than one ustar
    header, or its key would confuse the v1 loader), or None."""
    if not tar.fits_ustar(path, size):
        if size > tar.MAX_USTAR_SIZE:
            return "larger than a ustar header can hold (8 GiB)"
        return "name does not fit one ustar header (100 bytes, or 155 + 100 split at '/')"
    if is_array_index(path):
        return "name looks like an array index, which v1 readers would move first"
    if path == "__proto__":
        return "name is '__proto__', which a JavaScript object literal cannot hold"
    return None


def loader_problem(text: str) -> str | None:
    """Why ``text`` cannot be embedded as the header's loader script, or None."""
    if not text.isascii():
        return "is not ASCII"
    low = text.lower()
    if "</script" in low:
        return "contains '</script', which would end the element"
    if "<!--" in text:
        return "contains '<!--' (the header must hold exactly one '<!-- GWTAR END' and no script comments)"
    return None


def v1_data_offsets(sizes: Sequence[int]) -> list[int]:
    """Data offsets (relative to the tar start) the v1 loader computes for listed members of these
    sizes: the first at 512, each next one after a 512-byte header and the previous data padded to
    512."""
    out: list[int] = []
    pos = tar.BLOCK
    for size in sizes:
        out.append(pos)
        pos += tar.BLOCK + tar.data_span(size)
    return out


def _is_late(spec: MemberSpec) -> bool:
    return spec.size > LARGE or spec.media_type.startswith(("audio/", "video/"))


def order_members(
    members: Sequence[MemberSpec],
    main: str,
    main_assets: Sequence[tuple[str, Category]],
    *,
    single_page: bool = False,
    v1_names: bool = False,
) -> list[MemberSpec]:
    """The members in tar order (formats/gwtar.md §5.2), listed ones carrying their v1 key.

    ``main_assets`` are the main page's references resolved to tree paths, in discovery order (see
    :mod:`archiver.gwtar.refs`); those that are members, assets and listable become the listed
    members after ``"0"``: stylesheets, fonts, then the rest in document order, then media and large
    files. With ``single_page`` only the listed members are kept. Listed keys are tree paths, or with
    ``v1_names`` (SingleFile input) the file names ``BASE-asset-N.EXT``. Raises :class:`FormatError` when the
    main page is missing or cannot be listed."""
    by_path = {m.path: m for m in members}
    if main not in by_path:
        raise FormatError("main page is not in the tree", subject=main)
    head = by_path[main]
    why = listing_problem(main, head.size)
    if why:
        raise FormatError(f'the main page cannot be the v1 member "0": {why}', subject=main)
    buckets: dict[str, list[MemberSpec]] = {"style": [], "font": [], "rest": [], "late": []}
    seen = {main}
    for path, category in main_assets:
        spec = by_path.get(path)
        if spec is None or path in seen or spec.kind != "asset":
            continue
        if listing_problem(path, spec.size):
            continue
        seen.add(path)
        if _is_late(spec):
            buckets["late"].append(spec)
        elif category in ("style", "font"):
            buckets[category].append(spec)
        else:
            buckets["rest"].append(spec)
    listed = [_with_key(head, "0")]
    for name in ("style", "font", "rest", "late"):
        listed.extend(_with_key(s, s.path.rsplit("/", 1)[-1] if v1_names else s.path) for s in buckets[name])
    if single_page:
        return listed
    rest = sorted((m for m in members if m.path not in seen), key=lambda m: m.path)
    pages = [_unlisted(m) for m in rest if m.kind == "page"]
    assets = [_unlisted(m) for m in rest if m.kind != "page" and not _is_late(m)]
    late = [_unlisted(m) for m in rest if m.kind != "page" and _is_late(m)]
    return listed + pages + assets + late


def _with_key(spec: MemberSpec, key: str) -> MemberSpec:
    return spec if spec.key == key else MemberSpec(**{**spec.__dict__, "key": key})


def _unlisted(spec: MemberSpec) -> MemberSpec:
    return spec if spec.key is None else MemberSpec(**{**spec.__dict__, "key": None})


@dataclass
class Plan:
    """Everything the writer needs, byte for byte, except the SHA-256 values.

    ``header`` carries 64-zero placeholders at ``hash_slots`` (one per listed member, in order) and
    at ``index_hash_slot``; the site index (:meth:`index_chunks`) takes the real hashes. Offsets are
    relative to the tar start unless named ``*_file``."""

    header: bytes
    overhead: int
    members: list[MemberSpec]
    data_offsets: list[int]
    hash_slots: list[int]
    index_hash_slot: int
    index_offset: int
    index_size: int
    tar_size: int
    total_archive_size: int
    mtime: int
    _index_parts: list[tuple[bytes, bytes]] = field(repr=False)

    def blocks(self, i: int) -> bytes:
        """The header block(s) before member ``i``'s data (``i == len(members)`` is the index)."""
        if i == len(self.members):
            return tar.member_blocks(INDEX_PATH, self.index_size, mtime=self.mtime)
        spec = self.members[i]
        return tar.member_blocks(spec.path, spec.size, mtime=self.mtime)

    def index_chunks(self, hashes: Sequence[str]) -> Iterator[bytes]:
        """The site index member's bytes, given every member's SHA-256 in member order."""
        if len(hashes) != len(self.members):
            raise ValueError("one hash per member is needed")
        yield _INDEX_HEAD
        for i, ((before, after), digest) in enumerate(zip(self._index_parts, hashes, strict=True)):
            if len(digest) != 64:
                raise ValueError("a SHA-256 hex digest is 64 characters")
            yield (b"," if i else b"") + before + digest.encode("ascii") + after
        yield _INDEX_TAIL

    def end_blocks(self) -> bytes:
        """Zero blocks ending the tar (two, then padding to a 10,240-byte record)."""
        return tar.end_of_archive(self.index_offset + tar.data_span(self.index_size))


_INDEX_HEAD = b'{"format":"archiver-gwtar-index","version":1,"members":['
_INDEX_TAIL = b"]}"


def _manifest_text(listed: Sequence[MemberSpec], basename: str) -> tuple[str, list[int]]:
    """v1's ``assets`` JSON (4-space indent, ``"0"`` first) and each listed hash's offset in it."""
    if not listed:
        return "{}", []
    out: list[str] = ["{"]
    length = 1
    slots: list[int] = []
    for i, spec in enumerate(listed):
        fields: list[tuple[str, Any]] = [("size", spec.size), ("content-type", spec.media_type)]
        if spec.key == "0":
            fields = [("size", spec.size), ("content-type", "text/html"), ("basename", basename)]
        chunk = ("," if i else "") + "\n    " + script_json(spec.key) + ": {"
        for name, value in fields:
            chunk += "\n        " + script_json(name) + ": " + script_json(value) + ","
        chunk += '\n        "hash": "'
        slots.append(length + len(chunk))
        chunk += ZERO_HASH + '"\n    }'
        out.append(chunk)
        length += len(chunk)
    out.append("\n}")
    return "".join(out), slots


def _noscript() -> str:
    return (
        "This file is a gwtar archive: a web page, its files and the rest of its site in one HTML file. "
        "Showing it needs JavaScript and a web server that answers HTTP Range requests. Without them, "
        "extract it and open the files: perl -ne'print $_ if $x; $x=1 if /&lt;!-- GWTAR END/' "
        "&lt; FILE.gwtar.html | tar x"
    )


def _comment_safe(text: str) -> str:
    return text.replace("--", "- -").replace(">", "")


def _header_text(manifest: str, meta: str, loader: str, tool: str, overhead: int, total: int) -> str:
    return (
        "<html>\n"
        "<!-- Gwtar self-extracting HTML archive, v1 -->\n"
        f"<!-- archiver gwtar {EXTENSION_VERSION}; {_comment_safe(tool)} -->\n"
        f"{CHARSET_LINE}"
        "<body>\n<script>\n"
        f"let assets = {manifest};\n"
        "</script>\n<script>\n"
        f'let overhead = parseInt("{overhead:0{OVERHEAD_DIGITS}d}");\n'
        f'let totalArchiveSize = parseInt("{total:0{TOTAL_DIGITS}d}");\n'
        "</script>\n"
        f'<script type="application/json" id="{META_ID}">{meta}</script>\n'
        f"<script>\n{loader}\n</script>\n"
        f"<noscript>{_noscript()}</noscript>\n"
        "<script>\nwindow.stop();\n</script>\n"
        f"</body>\n</html>\n{BODY_GUARD}<!-- GWTAR END\n"
    )


def plan(members: Sequence[MemberSpec], meta: Meta, *, loader: str, mtime: int) -> Plan:
    """Lay out a gwtar: ``members`` in tar order (listed ones first, see :func:`order_members`), the
    site index after them. Raises :class:`FormatError` for a member name that cannot be written, a
    listed member that is not a prefix or not listable, or a loader that cannot be embedded."""
    why = loader_problem(loader)
    if why:
        raise FormatError(f"the loader script {why}", subject="js/loader.js")
    seen: set[str] = set()
    keys: set[str] = set()
    listed: list[MemberSpec] = []
    for i, spec in enumerate(members):
        problem = member_path_problem(spec.path)
        if problem:
            raise FormatError(problem, subject=spec.path)
        if spec.path in seen or spec.path == INDEX_PATH:
            raise FormatError("name used twice (or reserved for the site index)", subject=spec.path)
        seen.add(spec.path)
        if spec.size < 0:
            raise FormatError("negative size", subject=spec.path)
        if spec.key is not None:
            if len(listed) != i:
                raise FormatError("listed members must come before unlisted ones", subject=spec.path)
            if (i == 0) != (spec.key == "0"):
                raise FormatError('the first listed member, and only it, has key "0"', subject=spec.path)
            problem = listing_problem(spec.path, spec.size)
            if problem:
                raise FormatError(f"cannot be listed: {problem}", subject=spec.path)
            if i and (is_array_index(spec.key) or spec.key == "__proto__" or spec.key in keys):
                raise FormatError(f"manifest key {spec.key!r} is repeated or would confuse the v1 loader",
                                  subject=spec.path)  # fmt: skip
            keys.add(spec.key)
            listed.append(spec)
    if not listed:
        raise FormatError('no main page (the first member must be listed with key "0")', subject=meta.main)

    # tar offsets: listed members by v1's arithmetic, the rest after their (pax +) ustar header(s)
    data_offsets: list[int] = []
    pos = 0
    for spec in members:
        pos += tar.member_blocks_size(spec.path, spec.size) if spec.key is None else tar.BLOCK
        data_offsets.append(pos)
        pos += tar.data_span(spec.size)
    assert data_offsets[: len(listed)] == v1_data_offsets([s.size for s in listed])

    parts: list[tuple[bytes, bytes]] = []
    index_size = len(_INDEX_HEAD) + len(_INDEX_TAIL)
    marker = '"sha256":"' + ZERO_HASH + '"'
    for i, (spec, offset) in enumerate(zip(members, data_offsets, strict=True)):
        entry = {
            "path": spec.path,
            "offset": offset,
            "size": spec.size,
            "type": spec.media_type,
            "sha256": ZERO_HASH,
            "kind": spec.kind,
            "title": spec.title,
            "urls": list(spec.urls),
        }
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        cut = text.index(marker) + len('"sha256":"')
        before, after = text[:cut].encode("utf-8"), text[cut + 64 :].encode("utf-8")
        parts.append((before, after))
        index_size += len(before) + 64 + len(after) + (1 if i else 0)

    index_offset = pos + tar.member_blocks_size(INDEX_PATH, index_size)
    tar_end = index_offset + tar.data_span(index_size)
    tar_size = tar_end + len(tar.end_of_archive(tar_end))

    manifest, slots = _manifest_text(listed, meta.basename)
    meta_obj: dict[str, Any] = {
        "format": META_ID,
        "version": EXTENSION_VERSION,
        "tool": meta.tool,
        "created": meta.created,
        "home": meta.home,
        "main": meta.main,
        "title": meta.title,
        "source": meta.source,
        "index": {
            "offset": f"{index_offset:0{OFFSET_DIGITS}d}",
            "size": f"{index_size:0{OFFSET_DIGITS}d}",
            "sha256": ZERO_HASH,
        },
        "members": len(members),
        "pages": sum(1 for m in members if m.kind == "page"),
    }
    if meta.original is not None:
        meta_obj["original"] = meta.original
    meta_text = script_json(meta_obj)
    template = _header_text(manifest, meta_text, loader, meta.tool, 0, 0)
    overhead = len(template.encode("ascii"))
    header = _header_text(manifest, meta_text, loader, meta.tool, overhead, overhead + tar_size)
    data = header.encode("ascii")
    assert len(data) == overhead
    manifest_at = data.index(b"let assets = ") + len(b"let assets = ")
    meta_at = data.index(f'id="{META_ID}">'.encode()) + len(f'id="{META_ID}">')
    index_slot = meta_at + meta_text.index('"sha256":"' + ZERO_HASH) + len('"sha256":"')
    return Plan(
        header=data,
        overhead=overhead,
        members=list(members),
        data_offsets=data_offsets,
        hash_slots=[manifest_at + s for s in slots],
        index_hash_slot=index_slot,
        index_offset=index_offset,
        index_size=index_size,
        tar_size=tar_size,
        total_archive_size=overhead + tar_size,
        mtime=mtime,
        _index_parts=parts,
    )


# ---------------------------------------------------------------------------------------------
# Reading a header back


@dataclass
class ParsedHeader:
    """The fields of a gwtar header and the problems found in it. ``fatal`` means the file cannot be
    read as a gwtar at all (no magic, no terminator, unreadable numeric fields or manifest).
    ``manifest`` lists ``(key, entry)`` in the order the v1 loader walks them (:func:`js_order`)."""

    overhead: int | None = None
    total: int | None = None
    end: int | None = None
    manifest: list[tuple[str, dict[str, Any]]] | None = None
    manifest_is_array: bool = False
    meta: dict[str, Any] | None = None
    extension: bool = False
    problems: list[Problem] = field(default_factory=list)
    fatal_problem: Problem | None = None

    @property
    def fatal(self) -> bool:
        return self.fatal_problem is not None

    def fail(self, message: str, offset: int | None = None, *, fatal: bool = False) -> None:
        problem = Problem(None, offset, message)
        self.problems.append(problem)
        if fatal and self.fatal_problem is None:
            self.fatal_problem = problem


def js_order(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``Object.entries`` order of an object given as (key, value) pairs in text order: array-index
    keys first in numeric order, then the others in text order; a repeated key keeps its first
    position and its last value."""
    values: dict[str, Any] = {}
    for key, value in pairs:
        values[key] = value  # dict keeps the first insertion position, the last value
    ints = sorted((k for k in values if is_array_index(k)), key=int)
    return [(k, values[k]) for k in ints] + [(k, v) for k, v in values.items() if not is_array_index(k)]


_OVERHEAD_RE = re.compile(rb'let overhead = parseInt\("([^"\n]{0,64})"\)')
_TOTAL_RE = re.compile(rb'let totalArchiveSize = parseInt\("([^"\n]{0,64})"\)')
_META_OPEN = f'<script type="application/json" id="{META_ID}">'.encode()
_EXT_LINE = b"<!-- archiver gwtar "
_V1_KEY = re.compile(r".+-asset-[0-9]+\.[0-9A-Za-z]+")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _number_field(
    ph: ParsedHeader, data: bytes, regex: re.Pattern[bytes], name: str, width: int
) -> int | None:
    m = regex.search(data)
    if m is None:
        ph.fail(f"no '{name} = parseInt(\"…\")' field in the header", fatal=True)
        return None
    raw = m.group(1)
    text = raw.decode("ascii", "replace")
    if not raw.isdigit() or not raw.isascii():
        ph.fail(f"{name} is not a decimal number: {text!r}", m.start(1), fatal=True)
        return None
    if len(raw) != width:
        ph.fail(f"{name} has {len(raw)} digits, v1 fixes {width}: {text!r}", m.start(1))
    return int(raw)


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_SAFE


def _parse_json(text: bytes) -> Any:
    pairs_seen: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            pairs_seen.extend(k for k in keys if keys.count(k) > 1)
        return _Pairs(pairs)

    value = json.loads(text.decode("utf-8"), object_pairs_hook=hook)
    return value, sorted(set(pairs_seen))


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs in text order."""


def _plain(value: Any) -> Any:
    if isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_header(data: bytes) -> ParsedHeader:
    """Parse the header at the start of ``data`` (the file's first bytes, at least up to and including
    ``<!-- GWTAR END``). Never raises: every problem is in the result (research §5 items 1–4)."""
    ph = ParsedHeader()
    if not data.startswith(MAGIC) and MAGIC_COMMENT not in data[:1024]:
        ph.fail("not a gwtar: no '<!-- Gwtar self-extracting HTML archive, v1 -->' in the first 1 KB", 0,
                fatal=True)  # fmt: skip
        return ph
    if not data.startswith(b"<html>"):
        ph.fail("the file does not start with '<html>'", 0)
    end_at = data.find(END_MARK)
    if end_at < 0:
        ph.fail("no '<!-- GWTAR END' line: the header is truncated or too large", len(data), fatal=True)
        return ph
    ph.end = end_at + len(END_MARK)
    head = data[: ph.end]
    ph.extension = _EXT_LINE in head[:1024]

    ph.overhead = _number_field(ph, head, _OVERHEAD_RE, "overhead", OVERHEAD_DIGITS)
    ph.total = _number_field(ph, head, _TOTAL_RE, "totalArchiveSize", TOTAL_DIGITS)
    if ph.overhead is not None and ph.overhead != ph.end:
        ph.fail(f"overhead is {ph.overhead} but '<!-- GWTAR END' ends the header at {ph.end}", ph.end)
    if ph.overhead is not None and ph.total is not None and ph.total < ph.overhead + 2 * tar.BLOCK:
        ph.fail(f"totalArchiveSize {ph.total} leaves no room for a tar after overhead {ph.overhead}",
                fatal=True)  # fmt: skip
    if ph.overhead is not None and ph.overhead > ph.end and END_MARK in data[ph.end : ph.overhead]:
        ph.fail("'<!-- GWTAR END' appears more than once in the header", ph.end)

    try:
        _parse_manifest(ph, head)
    except RecursionError:
        ph.fail("the manifest is nested too deeply", fatal=True)
    try:
        _parse_meta(ph, head)
    except RecursionError:
        ph.fail("the metadata is nested too deeply")
    return ph


def _parse_manifest(ph: ParsedHeader, head: bytes) -> None:
    start = head.find(b"let assets = ")
    if start < 0:
        ph.fail("no 'let assets = ' manifest in the header", fatal=True)
        return
    start += len(b"let assets = ")
    close = head.find(b"</script>", start)
    if close < 0:
        ph.fail("the manifest's <script> is not closed", start, fatal=True)
        return
    text = head[start:close].strip()
    if text.endswith(b";"):
        text = text[:-1].rstrip()
    try:
        value, dupes = _parse_json(text)
    except RecursionError:
        ph.fail("the manifest is not valid JSON: nested too deeply", start, fatal=True)
        return
    except (ValueError, UnicodeDecodeError) as e:
        ph.fail(f"the manifest is not valid JSON: {str(e)[:120]}", start, fatal=True)
        return
    for key in dupes:
        ph.fail(f"manifest key {key!r} appears more than once", start)
    if isinstance(value, _Pairs):
        pairs = list(value)
    elif isinstance(value, list):
        ph.manifest_is_array = True
        pairs = [(str(i), v) for i, v in enumerate(value)]
    else:
        ph.fail("the manifest is neither a JSON object nor an array", start, fatal=True)
        return
    ordered = js_order(pairs)
    manifest: list[tuple[str, dict[str, Any]]] = []
    for key, entry in ordered:
        if not isinstance(entry, _Pairs):
            ph.fail(f"manifest entry {key!r} is not an object", start)
            entry = _Pairs()
        manifest.append((key, _plain(entry)))
    ph.manifest = manifest
    keys = [k for k, _ in manifest]
    if "0" not in keys:
        ph.fail('the manifest has no entry "0" (the main page)', start)
    for key, entry in manifest:
        if not _is_size(entry.get("size")):
            ph.fail(f"manifest entry {key!r}: size is not a non-negative integer: {entry.get('size')!r}",
                    start, fatal=True)  # fmt: skip
        h = entry.get("hash")
        if h is None:
            ph.fail(f"manifest entry {key!r} has no hash", start)
        elif not isinstance(h, str) or not _HEX64.fullmatch(h):
            ph.fail(f"manifest entry {key!r}: hash is not 64 lowercase hex digits", start)
        if not isinstance(entry.get("content-type"), str):
            ph.fail(f"manifest entry {key!r} has no content-type", start)
        if key == "0":
            if entry.get("content-type") != "text/html":
                ph.fail(f'manifest entry "0": content-type is {entry.get("content-type")!r}, not text/html',
                        start)  # fmt: skip
            if not isinstance(entry.get("basename"), str) or not entry.get("basename"):
                ph.fail('manifest entry "0" has no basename', start)
        elif not ph.manifest_is_array:
            if is_array_index(key):
                ph.fail(f"manifest key {key!r} looks like an array index: v1 readers move it first", start)
            elif not ph.extension and not _V1_KEY.fullmatch(key):
                ph.fail(f"manifest key {key!r} is not of the v1 form BASE-asset-N.EXT", start)


def _parse_meta(ph: ParsedHeader, head: bytes) -> None:
    start = head.find(_META_OPEN)
    if start < 0:
        if ph.extension:
            ph.fail(f'the header names archiver gwtar but has no <script id="{META_ID}"> element', 0)
        return
    start += len(_META_OPEN)
    close = head.find(b"</script>", start)
    if close < 0:
        ph.fail("the metadata <script> is not closed", start)
        return
    try:
        value, _ = _parse_json(head[start:close])
    except RecursionError:
        ph.fail("the metadata is not valid JSON: nested too deeply", start)
        return
    except (ValueError, UnicodeDecodeError) as e:
        ph.fail(f"the metadata is not valid JSON: {str(e)[:120]}", start)
        return
    meta = _plain(value)
    if not isinstance(meta, dict) or meta.get("format") != META_ID:
        ph.fail(f"the metadata element is not an object with format {META_ID!r}", start)
        return
    if not isinstance(meta.get("version"), int):
        ph.fail("the metadata has no integer version", start)
        return
    ph.meta = meta
    ph.extension = True


def index_location(meta: dict[str, Any]) -> tuple[int, int, str] | str:
    """(data offset relative to the tar start, size, sha256) of the site index from the metadata, or a
    message saying what is wrong with it."""
    index = meta.get("index")
    if not isinstance(index, dict):
        return "the metadata has no index object"
    out: list[int] = []
    for name in ("offset", "size"):
        value = index.get(name)
        if isinstance(value, str) and value.isascii() and value.isdigit():
            if len(value) != OFFSET_DIGITS:
                return f"index {name} has {len(value)} digits, not {OFFSET_DIGITS}"
            out.append(int(value))
        elif _is_size(value):
            out.append(value)
        else:
            return f"index {name} is not a decimal number: {value!r}"
    sha = index.get("sha256")
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        return "index sha256 is not 64 lowercase hex digits"
    return out[0], out[1], sha
