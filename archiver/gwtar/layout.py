"""The gwtar byte layout as written (formats/gwtar.md): member order, the v1 ``assets`` manifest,
the extension-1 metadata and site index, the header text with its fixed-width fields, every offset.
Parsing a header back is :mod:`archiver.gwtar.parse`; what both share is :mod:`archiver.gwtar.rules`.

Pure: no network, no filesystem, no clock.

Writing is planned in one pass: every number in the header is known before the first body byte is
written (member sizes come from the input), except the SHA-256 values, which are fixed-width
placeholders (64 zeros) patched in place afterwards at the positions the plan reports.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from json.encoder import encode_basestring as _encode_string
from typing import Any, Literal

from archiver import tar
from archiver.errors import FormatError
from archiver.gwtar.refs import Category
from archiver.gwtar.rules import (
    BUNDLE_PATH,
    BUNDLE_VERSION,
    EXTENSION_VERSION,
    INDEX_PATH,
    META_ID,
    OFFSET_DIGITS,
    OVERHEAD_DIGITS,
    TOTAL_DIGITS,
    is_array_index,
    member_path_problem,
    plain_names,
    v1_data_offsets,
)

__all__ = [
    "LARGE",
    "ZERO_HASH",
    "MemberSpec",
    "Meta",
    "Plan",
    "bundle",
    "listing_problem",
    "loader_problem",
    "order_members",
    "plan",
    "script_json",
    "with_titles",
]

#: The header is UTF-8 (its JSON is ASCII): so is the document the loader writes each page into, and
#: so are the scripts a page loads, whatever a server or a browser's guess would say (gwtar.md §2).
CHARSET_LINE = '<meta charset="utf-8">\n'
#: Switches the browser's tokenizer (and its preload scanner) to PLAINTEXT for the rest of the
#: file: no byte of the tar body is ever markup, whatever a member holds (``-->``, ``<img>``,
#: ``<script>``), and the element is hidden (gwtar.md §2).
BODY_GUARD = "<plaintext hidden>\n"
ZERO_HASH = "0" * 64
#: Assets above this size go after everything else (formats/gwtar.md §5.2).
LARGE = 4 << 20

Kind = Literal["page", "asset"]


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


_MEDIA = ("audio/", "video/")


def _is_late(spec: MemberSpec) -> bool:
    return spec.size > LARGE or spec.media_type.startswith(_MEDIA)


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
    rest = sorted((m for m in members if m.path not in seen), key=_path_of)
    pages: list[MemberSpec] = []
    assets: list[MemberSpec] = []
    late: list[MemberSpec] = []
    for m in rest:  # one pass (an indexed tree has thousands of members)
        if m.key is not None:
            m = _unlisted(m)
        if m.kind == "page":
            pages.append(m)
        elif m.size > LARGE or m.media_type.startswith(_MEDIA):  # (_is_late, inline: thousands)
            late.append(m)
        else:
            assets.append(m)
    return listed + pages + assets + late


_path_of = operator.attrgetter("path")


def bundle(members: Sequence[MemberSpec], prefix: str) -> tuple[int, int] | None:
    """The members (in tar order) to bundle (formats/gwtar.md §5.5), as (first, last) member numbers:
    the unlisted assets whose path starts with ``prefix`` (the search index's thousands of small
    files), one run in tar order (remaining assets in path order, §5.2); large ones (placed last) stay
    members of their own; None for fewer than two."""
    picked = [
        i
        for i, m in enumerate(members)
        if m.path.startswith(prefix)
        and m.key is None
        and m.kind == "asset"
        and m.size <= LARGE
        and not m.media_type.startswith(_MEDIA)  # (not _is_late, inline: thousands)
    ]
    if len(picked) < 2 or picked[-1] - picked[0] + 1 != len(picked):
        return None
    return picked[0], picked[-1]


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
    body_end: int = 0  # where the members' data (padded) ends: the site index's header starts here
    # the bundled members (formats/gwtar.md §5.5): (first, last) member numbers, or None
    bundle: tuple[int, int] | None = None
    bundle_size: int = 0

    def blocks(self, i: int) -> bytes:
        """The header block(s) before member ``i``'s data (``i == len(members)`` is the index; a
        bundled member: the bundle's header before the first, nothing before the others)."""
        if i == len(self.members):
            return tar.member_blocks(INDEX_PATH, self.index_size, mtime=self.mtime)
        if self.bundle is not None and self.bundle[0] <= i <= self.bundle[1]:
            if i != self.bundle[0]:
                return b""
            return tar.member_blocks(BUNDLE_PATH, self.bundle_size, mtime=self.mtime)
        spec = self.members[i]
        return tar.member_blocks(spec.path, spec.size, mtime=self.mtime)

    def padding(self, i: int) -> int:
        """Zero bytes after member ``i``'s data (none inside the bundle; the bundle's after its last)."""
        if self.bundle is not None and self.bundle[0] <= i <= self.bundle[1]:
            return 0 if i != self.bundle[1] else -self.bundle_size % tar.BLOCK
        return -self.members[i].size % tar.BLOCK

    def index_chunks(self, hashes: Sequence[str]) -> Iterator[bytes]:
        """The site index member's bytes, given every member's SHA-256 in member order."""
        if len(hashes) != len(self.members):
            raise ValueError("one hash per member is needed")
        if any(len(digest) != 64 for digest in hashes):
            raise ValueError("a SHA-256 hex digest is 64 characters")
        yield _INDEX_HEAD
        step = 1024  # entries a chunk
        for start in range(0, len(hashes), step):
            yield (b"," if start else b"") + b",".join(
                b"%s%s%s" % (before, digest.encode("ascii"), after)
                for (before, after), digest in zip(
                    self._index_parts[start : start + step], hashes[start : start + step], strict=True
                )
            )
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


def _header_text(
    manifest: str, meta: str, loader: str, tool: str, overhead: int, total: int, version: int
) -> str:
    return (
        "<html>\n"
        "<!-- Gwtar self-extracting HTML archive, v1 -->\n"
        f"<!-- archiver gwtar {version}; {_comment_safe(tool)} -->\n"
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


def _entry_parts(spec: MemberSpec, offset: int) -> tuple[bytes, bytes]:
    """A member's site index entry (formats/gwtar.md §4.2) as the UTF-8 bytes before and after its
    SHA-256: the text ``json.dumps(entry, ensure_ascii=False, separators=(",", ":"))`` gives, put
    together from its strings' JSON (an indexed tree has thousands of members: the generic encoder's
    walk of a dict cost ~10 µs an entry)."""
    if type(spec.size) is not int or type(offset) is not int:  # bool is not a size
        raise TypeError("member sizes and offsets are integers")
    media_type = _TYPES.get(spec.media_type) if type(spec.media_type) is str else None
    if media_type is None:
        media_type = _TYPES[spec.media_type] = _json_string(spec.media_type)
    before = (
        f'{{"path":{_json_string(spec.path)},"offset":{offset},"size":{spec.size},'
        f'"type":{media_type},"sha256":"'
    ).encode()
    if spec.title is None and not spec.urls and spec.kind in _PLAIN_AFTER:  # every asset, most pages
        return before, _PLAIN_AFTER[spec.kind]
    title = "null" if spec.title is None else _json_string(spec.title)
    urls = ",".join(_json_string(u) for u in spec.urls)
    after = f'","kind":{_json_string(spec.kind)},"title":{title},"urls":[{urls}]}}'
    return before, after.encode("utf-8")


#: The JSON of the media types met so far (a few dozen in a site of thousands of members), and the
#: text after the hash of an entry without title and URLs, by kind.
_TYPES: dict[str, str] = {}
_PLAIN_AFTER = {kind: f'","kind":"{kind}","title":null,"urls":[]}}'.encode() for kind in ("asset", "page")}


def _json_string(value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a string is needed, not {type(value).__name__}")
    return _encode_string(value)


def plan(
    members: Sequence[MemberSpec],
    meta: Meta,
    *,
    loader: str,
    mtime: int,
    bundle: tuple[int, int] | None = None,
) -> Plan:
    """Lay out a gwtar: ``members`` in tar order (listed ones first, see :func:`order_members`), the
    site index after them; the members ``bundle`` names (first, last) as one bundle member (§5.5).
    Raises :class:`FormatError` for a member name that cannot be written, a listed member that is not
    a prefix or not listable, bundled members that are not unlisted, or a loader that cannot be
    embedded."""
    why = loader_problem(loader)
    if why:
        raise FormatError(f"the loader script {why}", subject="js/loader.js")
    # the unlisted members' checks for all at once (an indexed tree has thousands): names, repeats,
    # sizes; when one fails, the loop checks every member and says which
    paths = [m.path for m in members]
    sizes = [m.size for m in members]
    key_of = [m.key for m in members]
    unlisted = key_of.count(None)
    names = set(paths)
    plain = (
        plain_names(paths)
        and len(names) == len(paths)
        and INDEX_PATH not in names
        and set(map(type, sizes)) <= {int}
        and min(sizes, default=0) >= 0
    )
    seen: set[str] = set()
    keys: set[str] = set()
    listed: list[MemberSpec] = []
    for i, spec in enumerate(members):
        if plain and i == len(members) - unlisted:
            if key_of[i:].count(None) == unlisted:  # all the rest are unlisted
                break
            plain = False
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

    # tar offsets: listed members by v1's arithmetic, the rest after their (pax +) ustar header(s);
    # bundled ones one after the other, unpadded, in the bundle member's data
    first, last = bundle if bundle is not None else (-1, -1)
    if bundle is not None and not (len(listed) <= first < last < len(members)):
        raise FormatError("bundled members must be two or more unlisted members", subject=BUNDLE_PATH)
    bundle_size = sum(sizes[first : last + 1]) if bundle is not None else 0
    data_offsets: list[int] = []
    pos = 0

    def place(run: Sequence[MemberSpec]) -> None:
        nonlocal pos
        for spec in run:
            pos += tar.member_blocks_size(spec.path, spec.size) if spec.key is None else tar.BLOCK
            data_offsets.append(pos)
            pos += tar.data_span(spec.size)

    if bundle is None:
        place(members)
    else:
        place(members[:first])
        pos += tar.member_blocks_size(BUNDLE_PATH, bundle_size)
        data_offsets.extend(accumulate(sizes[first:last], initial=pos))
        pos += bundle_size + -bundle_size % tar.BLOCK
        place(members[last + 1 :])
    assert data_offsets[: len(listed)] == v1_data_offsets([s.size for s in listed])

    parts: list[tuple[bytes, bytes]] = []
    index_size = len(_INDEX_HEAD) + len(_INDEX_TAIL)
    for i, (spec, offset) in enumerate(zip(members, data_offsets, strict=True)):
        before, after = _entry_parts(spec, offset)
        parts.append((before, after))
        index_size += len(before) + 64 + len(after) + (1 if i else 0)

    return _finish(
        list(members), listed, data_offsets, pos, parts, index_size, meta, loader, mtime, bundle, bundle_size
    )


def with_titles(plan: Plan, titles: dict[int, str | None], meta: Meta, *, loader: str) -> Plan:
    """``plan`` with the titles of the members ``titles`` names (by member index; pages whose title
    is read while they are written): their site index entries are encoded again, every other member's
    entry and every check and offset of :func:`plan` is kept (an indexed tree has thousands of
    members; the titles change nothing but the index's text)."""
    members = list(plan.members)
    parts = list(plan._index_parts)
    index_size = plan.index_size
    for i, title in titles.items():
        members[i] = dataclasses.replace(members[i], title=title)
        old = parts[i]
        parts[i] = _entry_parts(members[i], plan.data_offsets[i])
        index_size += len(parts[i][0]) + len(parts[i][1]) - len(old[0]) - len(old[1])
    listed = [m for m in members if m.key is not None]
    return _finish(
        members, listed, plan.data_offsets, plan.body_end, parts, index_size, meta, loader, plan.mtime,
        plan.bundle, plan.bundle_size,
    )  # fmt: skip


def _finish(
    members: list[MemberSpec],
    listed: list[MemberSpec],
    data_offsets: list[int],
    pos: int,
    parts: list[tuple[bytes, bytes]],
    index_size: int,
    meta: Meta,
    loader: str,
    mtime: int,
    bundle: tuple[int, int] | None,
    bundle_size: int,
) -> Plan:
    """The plan of members laid out up to ``pos``, their index entries ``parts`` (``index_size``
    bytes in all), the bundled run ``bundle`` (``bundle_size`` bytes): the site index's place, the
    header text and its slots."""
    index_offset = pos + tar.member_blocks_size(INDEX_PATH, index_size)
    tar_end = index_offset + tar.data_span(index_size)
    tar_size = tar_end + len(tar.end_of_archive(tar_end))

    manifest, slots = _manifest_text(listed, meta.basename)
    version = EXTENSION_VERSION if bundle is None else BUNDLE_VERSION
    meta_obj: dict[str, Any] = {
        "format": META_ID,
        "version": version,
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
    }
    if bundle is not None:
        at = data_offsets[bundle[0]]
        meta_obj["bundle"] = {
            "offset": f"{at:0{OFFSET_DIGITS}d}",
            "size": f"{bundle_size:0{OFFSET_DIGITS}d}",
            "first": bundle[0],
            "count": bundle[1] - bundle[0] + 1,
        }
    meta_obj |= {
        "members": len(members),
        "pages": sum(1 for m in members if m.kind == "page"),
    }
    if meta.original is not None:
        meta_obj["original"] = meta.original
    meta_text = script_json(meta_obj)
    template = _header_text(manifest, meta_text, loader, meta.tool, 0, 0, version)
    overhead = len(template.encode("ascii"))
    header = _header_text(manifest, meta_text, loader, meta.tool, overhead, overhead + tar_size, version)
    data = header.encode("ascii")
    assert len(data) == overhead
    manifest_at = data.index(b"let assets = ") + len(b"let assets = ")
    meta_at = data.index(f'id="{META_ID}">'.encode()) + len(f'id="{META_ID}">')
    index_slot = meta_at + meta_text.index('"sha256":"' + ZERO_HASH) + len('"sha256":"')
    return Plan(
        header=data,
        overhead=overhead,
        members=members,
        data_offsets=data_offsets,
        hash_slots=[manifest_at + s for s in slots],
        index_hash_slot=index_slot,
        index_offset=index_offset,
        index_size=index_size,
        tar_size=tar_size,
        total_archive_size=overhead + tar_size,
        mtime=mtime,
        _index_parts=parts,
        body_end=pos,
        bundle=bundle,
        bundle_size=bundle_size,
    )
