"""What goes into a gwtar (formats/gwtar.md): a :class:`Source` (member specs, the file behind each,
the SHA-256 a manifest promises, the metadata, the main page's references) read from a canonical tree
(formats/tree.md: from its manifest, else by walking it, §8.2) or from a ZIM extracted into one
(formats/zim.md §9). Nothing is hashed here: hashes are computed while the body is written
(:mod:`archiver.gwtar.body`). SingleFile pages are :mod:`archiver.gwtar.singlefile`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from archiver import __version__, tree
from archiver.errors import FormatError, UsageError
from archiver.gwtar import refs, rules
from archiver.gwtar.body import TITLE_LIMIT
from archiver.gwtar.layout import MemberSpec, Meta
from archiver.media import media_type_for
from archiver.urls import RESERVED_DIR, SEARCH_DIR

__all__ = [
    "TOOL",
    "Source",
    "add_search_index",
    "drop_search_index",
    "is_zim",
    "main_assets",
    "read_prefix",
    "tree_source",
    "zim_source",
]

TOOL = f"archiver/{__version__}"
_MAIN_READ_LIMIT = 16 << 20  # bytes of the main page parsed for its assets
_CSS_READ_LIMIT = 4 << 20


@dataclass
class Source:
    """The input of :func:`~archiver.gwtar.write.write_archive`: member specs (not yet ordered), the
    file holding each member's bytes, the SHA-256 a manifest promises for it (None when unknown), the
    metadata, and the main page's references in discovery order."""

    specs: dict[str, MemberSpec]
    files: dict[str, Path | str]
    expected: dict[str, str | None]
    meta: Meta
    mtime: int
    main_assets: list[tuple[str, refs.Category]]
    v1_names: bool = False  # listed assets keyed by file name (SingleFile input), not by tree path
    # pages whose title is read from their bytes while they are copied (trees without a manifest):
    # one read per file instead of two; the header's numbers that depend on the titles (the index
    # size and totalArchiveSize) have fixed widths and are written again at the end
    late_titles: frozenset[str] = frozenset()
    # the sizes of the tree's search index files the walk found as plain files (not symbolic links):
    # packing the index takes them as they are, without looking at each file again
    index_sizes: dict[str, int] = dataclasses.field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# ZIM input


def is_zim(src: Path) -> bool:
    """A ZIM file (by its magic number), or the base name of a split ZIM (``X.zim`` for ``X.zimaa``…)."""
    if src.is_file():
        return read_prefix(src, 4) == b"ZIM\x04"
    return not src.exists() and src.with_name(f"{src.name}aa").is_file()


def zim_source(src: Path, folder: Path, *, main: str | None, created: str | None) -> Source:
    """A ZIM read through a tree (formats/zim.md §9): the ZIM is extracted (checked first: its
    structure and checksum; redirects as stubs; a manifest made when it has none, pages known by their
    MIME type) into ``folder``, which is read like any tree; the main page is the ZIM's main entry
    unless ``main``."""
    from archiver.zim.extract import extract
    from archiver.zim.read import open_archive

    extract(src, folder)
    if main is None:
        with open_archive(src, check="structure") as reader:
            main = reader.main_path
        if main is not None and not main.lower().endswith((".html", ".htm")):
            main = _main_stub(folder, main)
    return tree_source(folder, main=main, created=created)


def _main_stub(folder: Path, main: str) -> str:
    """Add a page with an ``.html`` name that leads to ``main`` (``index.html``, or the first free
    ``index-N.html``) to the extracted tree and its manifest: a gwtar's main page needs such a name
    (formats/gwtar.md §3) and the old ZIM layout's is ``A/Main_Page``; gwtar → ZIM leaves it out."""
    from archiver.zim.source import STUB_STATUS, redirect_stub

    name = "index.html"
    n = 1
    while (folder / name).exists():
        name, n = f"index-{n}.html", n + 1
    data = redirect_stub(name, main, role="main")
    (folder / name).write_bytes(data)
    record = tree.Record(
        path=name, kind="page", media_type="text/html", size=len(data),
        sha256=hashlib.sha256(data).hexdigest(), status=STUB_STATUS,
    )  # fmt: skip
    if tree.manifest_path(folder).is_file():  # (none when a file of the ZIM is named _archiver)
        with tree.manifest_path(folder).open("ab") as f:
            f.write(msgspec.json.encode(record) + b"\n")
    return name


# ---------------------------------------------------------------------------------------------
# Tree input


def _epoch(created: str, subject: str) -> int:
    try:
        when = datetime.fromisoformat(created)
    except ValueError:
        raise UsageError(f"not an RFC 3339 time: {created!r}", subject=subject) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0, min(int(when.timestamp()), 8**11 - 1))


def _rfc3339(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fallback_created(newest: float) -> str:
    env = os.environ.get("SOURCE_DATE_EPOCH")
    if env:
        if not env.isdigit():
            raise UsageError(f"not a number of seconds: {env!r}", subject="SOURCE_DATE_EPOCH")
        return _rfc3339(int(env))
    return _rfc3339(int(newest))


def _sorted_entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as e:
        raise FormatError(f"cannot list folder: {e.strerror}", subject=folder) from None


#: The tree paths of the search index's files start so (their sizes the walk keeps: Source.index_sizes).
INDEX_PREFIX = f"{SEARCH_DIR}/"


def _walk(root: str) -> Iterator[tuple[str, str, os.stat_result, bool]]:
    """Regular files under ``root`` in sorted path order as (tree path, file path, stat, whether it
    is a symbolic link) (tree.md §8.2): files directly inside the reserved folder are metadata and
    skipped, and so are the tree's private files (:func:`archiver.tree.is_private`: the ``tmp``
    folder is not entered); symlinks are followed only to files inside the root that are not
    private; symlinked folders and special files are skipped. Iterative (one generator, whatever the
    depth): trees of many small files are walked at the cost of the stat."""
    inside = root + os.sep
    stack: list[tuple[str, Iterator[os.DirEntry[str]]]] = [("", iter(_sorted_entries(root)))]
    while stack:
        prefix, entries = stack[-1]
        in_reserved = prefix == RESERVED_DIR
        # only entries of a top-level folder named like the reserved one (any case) can be private
        maybe_private = prefix.lower() == RESERVED_DIR
        for entry in entries:
            rel = f"{prefix}/{entry.name}" if prefix else entry.name
            if maybe_private and tree.is_private(rel):
                continue
            linked = entry.is_symlink()
            if linked:
                if entry.is_dir() or in_reserved:
                    continue
                real = os.path.realpath(entry.path)
                if not real.startswith(inside) or _private_real(real[len(inside) :]):
                    continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((rel, iter(_sorted_entries(entry.path))))
                break
            if entry.is_file() and not in_reserved:
                yield rel, entry.path, entry.stat(), linked
        else:
            stack.pop()


def _private_real(rel: str) -> bool:
    """Whether a real path relative to the tree's real root (``os.sep``-separated) is private."""
    return tree.is_private(rel if os.sep == "/" else rel.replace(os.sep, "/"))


def _pick_main(specs: dict[str, MemberSpec], main: str | None, home_page: str | None, src: Path) -> str:
    if main is not None:
        main = main.strip("/")
        if main not in specs:
            raise UsageError("no such page in the tree", subject=main)
        if specs[main].kind != "page" or not main.lower().endswith((".html", ".htm")):
            raise UsageError("the main page must be an HTML page (.html or .htm)", subject=main)
        return main
    if home_page and home_page in specs and home_page.lower().endswith((".html", ".htm")):
        return home_page
    if "index.html" in specs:
        return "index.html"
    pages = sorted(p for p, s in specs.items() if s.kind == "page" and p.lower().endswith((".html", ".htm")))
    if not pages:
        why = "no HTML page to open first (no index.html): name the page to open with --main PATH"
        raise UsageError(why, subject=str(src))  # the same line as zim.pack.NO_PAGE
    return pages[0]


def read_prefix(path: Path | str, limit: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(limit)


def main_assets(
    main: str, files: dict[str, Path | str], kinds: dict[str, str]
) -> list[tuple[str, refs.Category]]:
    """The main page's references resolved to member paths, stylesheets expanded in place (their
    ``@import`` and ``url()`` after them), in discovery order."""
    found: list[tuple[str, refs.Category]] = []
    expanded: set[str] = set()

    def expand_css(path: str) -> None:
        if path in expanded:
            return
        expanded.add(path)
        try:
            text = read_prefix(files[path], _CSS_READ_LIMIT).decode("utf-8", "replace")
        except OSError:
            return
        for ref in refs.css_refs(text):
            add(path, ref)

    def add(base: str, ref: refs.Ref) -> None:
        target = refs.resolve(base, ref.url)
        if target is None or target not in files or kinds.get(target) != "asset":
            return
        found.append((target, ref.category))
        if ref.category == "style":
            expand_css(target)

    for ref in refs.html_refs(read_prefix(files[main], _MAIN_READ_LIMIT)):
        add(main, ref)
    return found


def tree_source(src: Path, *, main: str | None = None, created: str | None = None) -> Source:
    """Read a tree (formats/tree.md) into a :class:`Source`: from its manifest when it has one (the
    manifest itself becomes a member too), else by walking it (§8.2), without hashing (hashes are
    computed while copying)."""
    root = src.resolve()
    specs: dict[str, MemberSpec] = {}
    files: dict[str, Path | str] = {}
    expected: dict[str, str | None] = {}
    header = tree.read_header(root)
    newest = 0.0
    home_page: str | None = None
    late: set[str] = set()
    index_sizes: dict[str, int] = {}
    if header is not None:
        for record in tree.read_records(root):
            if record.path in rules.EXCLUDED or tree.is_private(record.path):
                continue  # a private file is left out even when the manifest names it
            why = rules.member_path_problem(record.path)
            if why:
                raise FormatError(f"manifest names an impossible path: {why}", subject=record.path)
            full = root / record.path
            real = full.resolve()
            if not full.is_file() or not real.is_relative_to(root):
                raise FormatError("listed in the manifest but not a file in the tree", subject=str(full))
            if tree.is_private(real.relative_to(root).as_posix()):
                continue  # a symlink to a private file: left out too
            specs[record.path] = MemberSpec(
                path=record.path,
                size=record.size,
                media_type=record.media_type,
                kind=record.kind,
                title=record.title,
                urls=tuple(record.urls),
            )
            files[record.path] = full
            expected[record.path] = record.sha256
            if header.home in record.urls and record.kind == "page" and home_page is None:
                home_page = record.path
        manifest = tree.manifest_path(root)
        rel = manifest.relative_to(root).as_posix()
        specs[rel] = MemberSpec(path=rel, size=manifest.stat().st_size, media_type="application/jsonl")
        files[rel] = manifest
        expected[rel] = None
        when = created or header.created
    else:
        for rel, full, st, linked in _walk(str(root)):
            if rel in rules.EXCLUDED:
                continue
            why = rules.member_path_problem(rel)
            if why:
                raise FormatError(f"cannot be a member: {why}", subject=full)
            is_page = rel.lower().endswith((".html", ".htm"))
            specs[rel] = MemberSpec(
                path=rel, size=st.st_size, media_type=media_type_for(rel), kind="page" if is_page else "asset"
            )
            if is_page:
                late.add(rel)
            files[rel] = full
            expected[rel] = None
            newest = max(newest, st.st_mtime)
            if not linked and rel.startswith(INDEX_PREFIX):
                index_sizes[rel] = st.st_size
        when = created or _fallback_created(newest)
    main_path = _pick_main(specs, main, home_page, src)
    if main_path in late:  # the header needs the main page's title before the body is written
        late.discard(main_path)
        title = tree.page_title(Path(files[main_path]), limit=TITLE_LIMIT)
        specs[main_path] = dataclasses.replace(specs[main_path], title=title)
    kinds = {p: s.kind for p, s in specs.items()}
    stem = main_path.rsplit(".", 1)[0]
    meta = Meta(
        tool=TOOL,
        created=when,
        main=main_path,
        basename=stem,
        source="tree",
        home=header.home if header is not None else None,
        title=specs[main_path].title,
    )
    mtime = _epoch(when, "created")
    assets = main_assets(main_path, files, kinds)
    return Source(
        specs, files, expected, meta, mtime, assets, late_titles=frozenset(late), index_sizes=index_sizes
    )


def add_search_index(source: Source, root: Path, work: Path) -> None:
    """Make the tree's search index members of ``source`` (formats/gwtar.md §5.4): the tree's own
    ``_archiver/search/`` when this archiver reads it, else one built into ``work`` now; any other
    file under ``_archiver/search/`` the walk found is replaced."""
    from archiver.search import archive

    packed = archive.pack_sizes(root, work, known=source.index_sizes)
    specs, files, expected = source.specs, source.files, source.expected
    prefix = archive.PREFIX
    for path in [p for p in specs if p.startswith(prefix) and p not in packed]:
        del specs[path], files[path], expected[path]
    for path, (full, size) in packed.items():
        media_type = archive.media_type(path)
        had = specs.get(path)  # the walk's spec of the same file is kept (thousands: no new object)
        if (
            had is None
            or had.size != size
            or had.media_type != media_type
            or had.kind != "asset"
            or had.title is not None
            or had.urls
            or had.key is not None
        ):
            specs[path] = MemberSpec(path=path, size=size, media_type=media_type)
        files[path] = full
        expected[path] = None


def drop_search_index(source: Source) -> None:
    """Leave every ``_archiver/search/`` file out of ``source`` (``--no-search-index``)."""
    from archiver.search import archive

    for path in [p for p in source.specs if archive.is_index_path(p)]:
        del source.specs[path], source.files[path], source.expected[path]
