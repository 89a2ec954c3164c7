"""``pack``: a tree, a gwtar or a ZIM in, a ZIM that Kiwix and zimcheck accept out (formats/zim.md).

The steps: open the source; refuse an incomplete crawl unless allowed; pick the main page; derive
the metadata defaults from it (title, ``<html lang>`` → ISO 639-3, description, icon) and validate
every value before libzim starts; stream the entries to :func:`archiver.zim.write.write_zim` at a
temporary name in the output's folder; re-open the result and check what libzim may drop silently
(redirects, the main page); then fsync and rename. Any failure removes every temporary file, so the
output path holds either the previous file or a complete new one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import glob
import hashlib
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import msgspec

from archiver import __version__, markup_guard, safefs
from archiver.errors import ArchiverError, FormatError, UsageError
from archiver.progress import Meter
from archiver.search import archive as search_archive
from archiver.urls import host_of
from archiver.zim import icon
from archiver.zim.compressible import SMALL, by_type, sample_of, sample_spans, should_compress
from archiver.zim.links import resolve
from archiver.zim.metadata import (
    MANDATORY,
    OPTIONAL,
    ZimMetadata,
    canonical_key,
    check_illustration,
    default_name,
    index_language,
    iso639_3,
    merge_tags,
    truncate,
)
from archiver.zim.offline import CSS_MARK, PREFIX, stylesheet, switch_off, undo_markers
from archiver.zim.page import PageInfo, page_info
from archiver.zim.read import ZimReader
from archiver.zim.source import (
    INCOMPLETE_MARKER,
    STORED_EDITS,
    STORED_MANIFEST,
    Source,
    SourceEntry,
    SourceRedirect,
    TreeSource,
    check_entry_path,
    open_source,
)
from archiver.zim.write import CLUSTER_SIZE, ItemSpec, Mismatch, RedirectSpec, default_workers, write_zim
from archiver.zim.zimsafe import Edit, encode_edits, restore, zimcheck_safe

__all__ = ["INCOMPLETE_KEY", "PackResult", "compress_hint", "pack"]

#: The metadata key that records an incomplete crawl, packed with ``allow_incomplete``.
INCOMPLETE_KEY = "X-Archiver-Incomplete"
_ICON_LIMIT = 8 << 20
_MANIFEST_TYPE = "application/jsonl"
#: Files up to this size are read by pack itself (checked there) and handed to libzim as bytes, so its
#: worker threads never call back into Python; larger ones are streamed (formats/zim.md §4).
_INLINE_LIMIT = 1 << 20
#: HTML pages up to this size are read whole and made zimcheck-safe (formats/zim.md §3.1).
_PAGE_LIMIT = 16 << 20
_HTML_TYPES = ("text/html", "application/xhtml+xml")


@dataclass
class PackResult:
    """What ``pack`` wrote. ``illustration`` says where the 48×48 icon came from (a path in the
    source, the user's file, ``source`` for a ZIM's own, or ``generated``). ``skipped`` lists
    (path, reason) of source files left out (empty ones: ZIM forbids empty entries); ``warnings``
    are defaults the user may want to set explicitly, and what pack changed in pages (references to
    other sites switched off, formats/zim.md §3.3)."""

    path: Path
    source_kind: str
    entries: int
    redirects: int
    bytes_in: int
    size: int
    main: str
    metadata: dict[str, str]
    seconds: float
    incomplete: bool = False
    illustration: str = ""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``--json`` output)."""
        return {
            "path": str(self.path),
            "source": self.source_kind,
            "entries": self.entries,
            "redirects": self.redirects,
            "bytes_in": self.bytes_in,
            "size": self.size,
            "main": self.main,
            "metadata": self.metadata,
            "seconds": round(self.seconds, 3),
            "incomplete": self.incomplete,
            "illustration": self.illustration,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "warnings": self.warnings,
        }


def compress_hint(e: SourceEntry, data: bytes | None = None) -> bool:
    """Whether libzim should compress an entry (formats/zim.md §3.2,
    :func:`archiver.zim.compressible.should_compress`): by its media type, else by a sample of at
    most 64 KiB of its bytes, taken from ``data`` when pack holds them, else read from the source
    (never the whole entry). A sample that cannot be read means "compress" (the writer then reports
    the file)."""
    size = e.size if data is None else len(data)
    if by_type(e.media_type) is not None or size < SMALL:
        return should_compress(e.media_type, size)
    if data is not None:
        return should_compress(e.media_type, size, sample_of(data))
    try:
        sample = b"".join(e.read_at(offset, length) for offset, length in sample_spans(size))
    except (OSError, FormatError, KeyError, RuntimeError):
        return True
    return should_compress(e.media_type, size, sample)


def _user_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (metadata or {}).items():
        if value is None:
            continue
        name = canonical_key(key)
        if name in out:
            raise UsageError(f"metadata {name} is given twice ({key!r})")
        out[name] = str(value)
    return out


#: The one line of every ``pack`` whose input has no page to open first (gwtar's too), exit 2.
NO_PAGE = "no HTML page to open first (no index.html): name the page to open with --main PATH"


def _pick_main(source: Source, main: str | None) -> str:
    if main is not None:
        main = main.lstrip("/")
        if not source.has(main):
            raise UsageError(f"the main page {main!r} is not in the source", subject=source.label)
        return main
    for candidate in source.main_candidates():
        if source.has(candidate):
            return candidate
    raise UsageError(NO_PAGE, subject=source.label)


def _illustration(
    source: Source, main: str, info: PageInfo, user: str | None, seed: str
) -> tuple[bytes, str]:
    """(48×48 PNG, where it came from)."""
    if user is not None:
        path = Path(user)
        try:
            data = path.read_bytes()
        except OSError as e:
            raise UsageError(f"cannot read the illustration: {e.strerror}", subject=user) from None
        png = data if not check_illustration(data) else icon.scaled_png(data)
        if png is None:
            raise UsageError(
                "the illustration is not an image Pillow can read (PNG, ICO, JPEG …)", subject=user
            )
        return png, user
    carried = source.carried_illustration
    if carried is not None and not check_illustration(carried):
        return carried, "source"
    candidates = []
    for href in info.icons:
        if ":" in href.split("/", 1)[0] or href.startswith(("/", "\\")):
            continue
        target = resolve(main, href)
        if target:
            candidates.append(target)
    host = host_of(source.home) if source.home else None
    candidates += ["favicon.ico", "favicon.png"]
    if host:
        candidates += [f"_archiver/{host}/favicon.ico", f"_archiver/{host}/favicon.png"]
    for target in candidates:
        data = source.head(target, _ICON_LIMIT) if source.has(target) else None
        if data:
            png = icon.scaled_png(data)
            if png is not None:
                return png, target
    return icon.generated_png(seed), "generated"


def _defaults(
    source: Source, main: str, user: dict[str, str], today: dt.date
) -> tuple[dict[str, str], PageInfo, list[str]]:
    warnings = []
    carried = {}
    for key, value in source.carried_metadata.items():
        if key in ("Date", "Scraper", "Counter"):
            continue
        if key in MANDATORY or key in OPTIONAL or key.startswith("X-"):
            carried[key] = value
        else:
            warnings.append(f"metadata {key!r} of the source is not an openZIM key; left out")
    info = page_info(source.head(main) or b"")
    host = host_of(source.home) if source.home else None
    fallback_name = host or Path(source.label).name.split(".", 1)[0] or "archive"
    values = dict(carried)
    if "Language" not in values:
        language = iso639_3(info.lang) if info.lang else None
        if language is None:
            language = "eng"
            if "Language" not in user:
                warnings.append(f"{main} has no usable <html lang>; Language defaults to eng")
        values["Language"] = language
    if "Title" not in values:
        values["Title"] = truncate(info.title or fallback_name, 30)
    if "Description" not in values:
        values["Description"] = truncate(info.description or f"Offline copy of {fallback_name}", 80)
    if "Creator" not in values:
        values["Creator"] = host or fallback_name
    if "Publisher" not in values:
        values["Publisher"] = "archiver"
    if "Source" not in values and source.home:
        values["Source"] = source.home
    values["Scraper"] = f"archiver {__version__}"
    values.update({k: v for k, v in user.items() if k != "Illustration"})
    if "Name" not in values:
        values["Name"] = default_name(fallback_name, values["Language"])
    values.setdefault("Date", today.isoformat())
    return values, info, warnings


def _temp_prefix(out: Path) -> Path:
    """``.OUT.archiver-tmp-PID-RAND``: libzim's own temporary files start with it too, so a later run
    recognises (and removes) what a killed one left (:func:`archiver.safefs.sweep_stale`)."""
    return safefs.temp_path(out)


def _remove_temp(tmp: Path) -> None:
    for p in tmp.parent.glob(glob.escape(tmp.name) + "*"):
        with contextlib.suppress(OSError):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()


def _libzim_write(out: Path, tmp: Path, **kw: Any) -> list[Mismatch]:
    """:func:`write_zim`, with libzim's own failure (a full disk, an I/O error: a C++ exception that
    reaches Python as RuntimeError) as one error line."""
    try:
        return write_zim(tmp, **kw)
    except RuntimeError as e:
        text = " ".join(str(e).split())
        if "no space left on device" in text.lower():
            text = "no space left on device"
        else:  # libzim's writer thread can lose the reason ("Unknown exception"): the disk says it
            text = _disk_refusal(tmp.parent) or text
        raise ArchiverError(f"libzim could not write the file: {text[:300]}", subject=str(out)) from None


#: Free bytes (libzim's temporary files still there) below which a disk counts as full: a cluster.
_FULL_BELOW = 4 << 20


def _disk_refusal(folder: Path) -> str | None:
    """Why ``folder``'s disk refuses writes (read-only, or full: :data:`_FULL_BELOW`), or None."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return "read-only file system"
    return "no space left on device" if st.f_bavail * st.f_frsize < _FULL_BELOW else None


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pack(
    src: Path,
    out: Path,
    *,
    metadata: dict[str, str] | None = None,
    allow_incomplete: bool = False,
    main: str | None = None,
    workers: int | None = None,
    cluster_size: int = CLUSTER_SIZE,
    today: dt.date | None = None,
    progress: Meter | None = None,
    search_index: bool = False,
) -> PackResult:
    """Pack ``src`` (a canonical tree folder, a ``.gwtar.html`` or a ``.zim``) into the ZIM file
    ``out`` (replaced if it exists, only once the new one is complete).

    ``metadata`` overrides the defaults, keyed ``title``/``Title``, ``long-description``/
    ``LongDescription`` … (see :func:`archiver.zim.metadata.canonical_key`); ``illustration`` is a
    path to an image file. Every value is checked against the openZIM rules first
    (:class:`UsageError` naming each problem). ``main`` is the main page's path (default: the home's
    page, ``index.html``, or the first page). A tree whose crawl is unfinished (formats/zim.md §2)
    is refused unless ``allow_incomplete``, and then marked ``X-Archiver-Incomplete: yes``.
    ``progress`` is told the bytes of each entry as it is handed to libzim (libzim's own
    compression and index finalising follow). ``search_index`` adds the tree's search index and
    search page as entries (formats/zim.md §11; built now when the tree has none); a ZIM or gwtar
    input keeps the index entries it has; without it, every ``_archiver/search/`` entry is left out."""
    started = time.monotonic()
    src, out = Path(src), Path(out)
    if out.is_dir():
        raise UsageError("the output is a folder; name a .zim file", subject=str(out))
    if not out.parent.is_dir():
        raise UsageError("the output's folder does not exist", subject=str(out))
    user = _user_metadata(metadata)
    source = open_source(src)
    try:
        if source.incomplete and not allow_incomplete:
            raise UsageError(
                f"the crawl is incomplete (options.incomplete in the manifest, or {INCOMPLETE_MARKER} in "
                "_archiver/); finish it (run the capture again), or pack anyway with --allow-incomplete",
                subject=source.label,
            )
        main_path = _pick_main(source, main)
        day = today or dt.datetime.now(dt.UTC).date()
        values, info, warnings = _defaults(source, main_path, user, day)
        if source.incomplete:
            values[INCOMPLETE_KEY] = "yes"
        png, icon_from = _illustration(source, main_path, info, user.get("Illustration"), values["Name"])
        user_tags = values.pop("Tags", None)
        probe = {"_ftindex": "yes", "_pictures": "no", "_videos": "no", "_details": "yes"}
        # validate everything before libzim starts (Tags again at the end, with what was seen)
        ZimMetadata.from_mapping({**values, "Tags": merge_tags(user_tags, probe)}, date=day, illustration=png)
        with safefs.interruptible(), contextlib.ExitStack() as stack:
            index_files: dict[str, Path] | None = {} if not search_index else None
            if search_index and isinstance(source, TreeSource):
                index_files = search_archive.pack_files(
                    source.root, stack.enter_context(safefs.temp_dir(out))
                )
            result = _write(
                source, out, values, user_tags, png, main_path, workers, cluster_size, warnings, started,
                Meter() if progress is None else progress, index_files,
            )  # fmt: skip
        result.illustration = icon_from
        return result
    finally:
        source.close()


def _write(
    source: Source,
    out: Path,
    values: dict[str, str],
    user_tags: str | None,
    png: bytes,
    main: str,
    workers: int | None,
    cluster_size: int,
    warnings: list[str],
    started: float,
    meter: Meter,
    index_files: dict[str, Path] | None = None,
) -> PackResult:
    tmp = _temp_prefix(out)
    manifest_tmp = tmp.with_name(tmp.name + ".manifest")
    paths: set[str] = set()
    added: list[RedirectSpec] = []
    skipped: list[tuple[str, str]] = []
    seen = {"pictures": False, "videos": False, "bytes": 0}
    encoder = msgspec.json.Encoder()
    early: list[Mismatch] = []
    edits: dict[str, list[Edit]] = {}

    def items(manifest: Any) -> Iterator[ItemSpec]:
        for e in source.entries():
            if index_files is not None and search_archive.is_index_path(e.path):
                continue  # replaced by the index built for this pack, or left out (--no-search-index)
            if e.size == 0:
                skipped.append((e.path, "empty: ZIM forbids empty entries"))
                continue
            paths.add(e.path)
            seen["bytes"] += e.size
            seen["pictures"] |= e.media_type.startswith("image/")
            seen["videos"] |= e.media_type.startswith("video/")
            if manifest is not None and e.record is not None:
                manifest.write(encoder.encode(e.record) + b"\n")
            yield _spec(e, source.carried_edits.get(e.path), edits, early)
            meter.advance(e.size)
        for path, full in (index_files or {}).items():
            data = full.read_bytes()
            paths.add(path)
            yield ItemSpec(
                path=path, title="", mimetype=search_archive.media_type(path), size=len(data), front=False,
                compress=not search_archive.compressed(path, data), chunks=lambda data=data: [data],
                data=data,
            )  # fmt: skip
        if edits:
            data = encode_edits(edits)
            paths.add(STORED_EDITS)
            yield ItemSpec(
                path=STORED_EDITS, title="", mimetype=_MANIFEST_TYPE, size=len(data), front=False,
                compress=True, chunks=lambda: [data], data=data,
            )  # fmt: skip
        if manifest is not None:
            manifest.close()
            size = manifest_tmp.stat().st_size
            paths.add(STORED_MANIFEST)
            yield ItemSpec(
                path=STORED_MANIFEST, title="", mimetype=_MANIFEST_TYPE, size=size, front=False,
                compress=True, chunks=lambda: _file_chunks(manifest_tmp),
            )  # fmt: skip

    def redirects() -> Iterator[RedirectSpec]:
        # a redirect may lead to another redirect (chains in a ZIM source): accept in rounds, each
        # one whose target is already an item or an accepted redirect; loops and dangling ones stay out
        pending = list(source.redirects())
        while pending:
            left = []
            for r in pending:
                spec = _redirect(r, paths)
                if spec is not None:
                    paths.add(spec.path)
                    added.append(spec)
                    yield spec
                elif r.path not in paths and r.target not in paths:
                    left.append(r)
            if len(left) == len(pending):
                break
            pending = left

    def tags() -> str:
        computed = {
            "_ftindex": "yes",
            "_pictures": "yes" if seen["pictures"] else "no",
            "_videos": "yes" if seen["videos"] else "no",
            "_details": "yes",
        }
        return merge_tags(user_tags, computed)

    try:
        manifest = None
        if source.header is not None:
            manifest = manifest_tmp.open("wb")
            manifest.write(encoder.encode(source.header) + b"\n")
        final: dict[str, str] = {}

        def final_metadata() -> dict[str, str]:
            final.update(values)
            final["Tags"] = tags()
            return final

        mismatches = _libzim_write(
            out,
            tmp,
            items=items(manifest),
            redirects=redirects,
            main=main,
            metadata=final_metadata,
            illustration=png,
            index_language=index_language(values["Language"]),
            workers=workers or default_workers(),
            cluster_size=cluster_size,
        )
        mismatches = early + mismatches
        if mismatches:
            shown = "; ".join(f"{m.path!r} {m.message}" for m in mismatches[:5])
            more = f" (and {len(mismatches) - 5} more)" if len(mismatches) > 5 else ""
            raise FormatError(f"source files changed while packing: {shown}{more}", subject=source.label)
        _check_written(tmp, main, added, len(paths))
        _fsync(tmp)
        os.replace(tmp, out)
        _fsync(out.parent, directory=True)
    except BaseException:
        _remove_temp(tmp)
        raise
    finally:
        with contextlib.suppress(OSError):
            manifest_tmp.unlink()
    return PackResult(
        path=out,
        source_kind=source.kind,
        entries=len(paths) - len(added),
        redirects=len(added),
        bytes_in=seen["bytes"],
        size=out.stat().st_size,
        main=main,
        metadata=dict(sorted(final.items())),
        seconds=time.monotonic() - started,
        incomplete=source.incomplete,
        skipped=skipped,
        warnings=warnings + _offline_note(edits),
    )


def _offline_note(edits: dict[str, list[Edit]]) -> list[str]:
    """One line on the references switched off (formats/zim.md §3.3), if any were."""
    count = {path: sum(1 for e in made if e.new in (PREFIX, CSS_MARK)) for path, made in edits.items()}
    pages = [path for path, n in sorted(count.items()) if n]
    if not pages:
        return []
    shown = ", ".join(pages[:3]) + (f" and {len(pages) - 3} more" if len(pages) > 3 else "")
    return [
        f"{sum(count.values())} reference(s) to other sites that pages load (images, media, frames, "
        f"stylesheets, CSS url()…) switched off in {len(pages)} file(s): {shown} (a ZIM reader is "
        "offline; extract restores them)"
    ]


def _spec(
    e: SourceEntry, carried: list[Edit] | None, edits: dict[str, list[Edit]], mismatches: list[Mismatch]
) -> ItemSpec:
    """The item for one source entry. Small files and HTML pages are read here (size and SHA-256
    checked on the spot, pages made zimcheck-safe, a ZIM source's own edits undone first); the rest
    is streamed and checked by the writer."""
    spec = ItemSpec(
        path=e.path,
        title=e.title if e.page else "",
        mimetype=e.media_type,
        size=e.size,
        front=e.page,
        compress=True,
        chunks=e.chunks,
        sha256=e.sha256,
    )
    html = e.media_type in _HTML_TYPES
    if e.size > (_PAGE_LIMIT if html or carried else _INLINE_LIMIT):
        return replace(spec, compress=compress_hint(e))
    data = b"".join(e.chunks())
    if len(data) != e.size:
        mismatches.append(Mismatch(e.path, f"has {len(data)} bytes, the source said {e.size}"))
        data = data[: e.size].ljust(e.size, b"\0")
        return replace(spec, data=data, sha256=None, compress=compress_hint(e, data))
    if e.sha256 and hashlib.sha256(data).hexdigest() != e.sha256:
        mismatches.append(Mismatch(e.path, "SHA-256 differs from the source's record"))
    if carried:
        try:
            data = restore(data, carried)
        except ValueError as err:
            raise FormatError(f"{STORED_EDITS}: {e.path!r}: {err}") from None
    made: list[Edit] = []
    if html:
        try:
            data, made = zimcheck_safe(data, switch_off(data), undo_markers, markup_guard.vet)
        except markup_guard.CostlyMarkup as err:
            raise FormatError(str(err), subject=e.path) from None
    elif e.media_type == "text/css":
        data, made = stylesheet(data)
    if made:
        edits[e.path] = made
    return replace(spec, size=len(data), data=data, sha256=None, compress=compress_hint(e, data))


def _redirect(r: SourceRedirect, paths: set[str]) -> RedirectSpec | None:
    if r.path in paths or r.target not in paths or r.path == r.target:
        return None
    try:
        check_entry_path(r.path, "redirect")
    except FormatError:
        return None
    return RedirectSpec(path=r.path, target=r.target, title=r.title)


def _file_chunks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            yield chunk


def _check_written(tmp: Path, main: str, redirects: list[RedirectSpec], expected: int) -> None:
    """What libzim drops without an error: redirects (dangling, loops), hence entries; the main page."""
    with ZimReader(tmp) as reader:
        lost = []
        for r in redirects:
            try:
                entry = reader.get(r.path)
            except KeyError:
                lost.append(r.path)
                continue
            if not entry.is_redirect or entry.redirect_target != r.target:
                lost.append(r.path)
        if lost:
            raise FormatError(f"libzim dropped {len(lost)} redirect(s): {', '.join(map(repr, lost[:5]))}")
        if reader.entry_count != expected:
            raise FormatError(f"the ZIM holds {reader.entry_count} entries, {expected} were added")
        if reader.main_path != main:
            raise FormatError(f"the ZIM's main page is {reader.main_path!r}, not {main!r}")
