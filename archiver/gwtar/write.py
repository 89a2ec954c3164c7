"""Pack a canonical tree, a ZIM or a SingleFile page into one ``.gwtar.html`` file (formats/gwtar.md):
:func:`pack`, and :func:`write_archive`, which writes a :class:`~archiver.gwtar.sources.Source` out.

What goes in is read first (:mod:`archiver.gwtar.sources`; SingleFile pages through
:mod:`archiver.gwtar.singlefile`); the layout is planned in full before a byte is written
(:func:`archiver.gwtar.layout.plan`); the body is then streamed in one pass, hashed on the way
(:mod:`archiver.gwtar.body`). The SHA-256 placeholders in the header are patched in place at the end.
The output is written to a temporary name in the target folder, fsynced and renamed; on any error the
temporary file is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from archiver import safefs
from archiver.errors import UsageError
from archiver.gwtar import layout, rules
from archiver.gwtar.body import CHUNK, write_all, write_body
from archiver.gwtar.loader import loader_source
from archiver.gwtar.sources import (
    INDEX_PREFIX,
    Source,
    add_search_index,
    drop_search_index,
    is_zim,
    read_prefix,
    tree_source,
    zim_source,
)
from archiver.progress import Meter

if TYPE_CHECKING:
    from archiver.par2 import FecResult

__all__ = ["PackResult", "pack", "write_archive"]


@dataclass(frozen=True)
class PackResult:
    """What :func:`pack` wrote. ``members`` and ``pages`` do not count the site index; ``listed`` is
    the number of v1 manifest entries (the main page and its assets); ``size`` is the whole file's,
    ``fec`` the FEC tail written after ``total_archive_size`` (None without ``--add-fec-data``)."""

    path: Path
    overhead: int
    total_archive_size: int
    size: int
    members: int
    pages: int
    listed: int
    main: str
    index_offset: int
    fec: FecResult | None = None


def pack(
    src: Path,
    out: Path,
    *,
    main: str | None = None,
    single_page: bool = False,
    created: str | None = None,
    loader: str | None = None,
    fec: float | None = None,
    progress: Meter | None = None,
    search_index: bool = False,
    all_versions: bool = False,
) -> PackResult:
    """Pack ``src`` into the gwtar file ``out``.

    ``src`` is a canonical tree (a folder, with or without ``_archiver/manifest.jsonl``), a ZIM (a
    split one by its base name; :func:`_pack_zim`) or a SingleFile-style ``.html`` file. ``main``
    picks the main page (a tree path; default: the page of the manifest's home URL, else
    ``index.html``, else the first page); ``single_page`` packs only the main
    page and its assets. ``created`` (RFC 3339) overrides the capture time; ``loader`` the loader
    script's text (default :func:`~archiver.gwtar.loader.loader_source`). ``fec`` (a redundancy
    fraction, 0.10 for 10 %) appends a PAR2 tail (formats/fec.md) to the temporary file before its one
    fsync and rename, so the FEC'd file appears atomically. The same input and options
    give byte-identical output. ``progress`` is told the body's size and each member's bytes as they
    are written. ``search_index`` adds the tree's search index and search page as members
    (formats/gwtar.md §5.4; built now when the tree has none; not with ``single_page``).
    ``all_versions`` adds every earlier version of a versioned tree (formats/gwtar.md §13).
    Raises :class:`UsageError` for bad arguments and :class:`FormatError`
    for an input that cannot be packed; no output file exists after an error. SIGTERM and SIGHUP
    end it as Ctrl-C does, from its first temporary folder on (:func:`safefs.interruptible`)."""
    with safefs.interruptible():
        return _pack(
            Path(src), Path(out), main=main, single_page=single_page, created=created, loader=loader,
            fec=fec, progress=progress, search_index=search_index, all_versions=all_versions,
        )  # fmt: skip


def _pack(
    src: Path,
    out: Path,
    *,
    main: str | None,
    single_page: bool,
    created: str | None,
    loader: str | None,
    fec: float | None,
    progress: Meter | None,
    search_index: bool,
    all_versions: bool,
) -> PackResult:
    if out.is_dir():
        raise UsageError("is a folder; give the output file name", subject=str(out))
    if not out.parent.is_dir():
        raise UsageError("the output's folder does not exist", subject=str(out))
    loader_text = loader_source() if loader is None else loader
    if is_zim(src):
        return _pack_zim(
            src, out, main=main, single_page=single_page, created=created, loader=loader_text, fec=fec,
            progress=progress, search_index=search_index,
        )  # fmt: skip
    if all_versions and (single_page or not src.is_dir()):
        raise UsageError(
            "--all-versions packs a whole tree (not --single-page, a ZIM or a page)", subject=str(src)
        )
    if src.is_dir():
        source = tree_source(src, main=main, created=created)
        if all_versions:
            from archiver.gwtar.versions import add_versions

            with safefs.temp_dir(out) as work:
                if search_index:
                    add_search_index(source, src, work)
                else:
                    drop_search_index(source)
                add_versions(source, src, work)
                return write_archive(source, out, loader=loader_text, fec=fec, progress=progress)
        if not search_index or single_page:
            drop_search_index(source)
            return write_archive(
                source, out, single_page=single_page, loader=loader_text, fec=fec, progress=progress
            )
        with safefs.temp_dir(out) as work:
            add_search_index(source, src, work)
            return write_archive(source, out, loader=loader_text, fec=fec, progress=progress)
    if src.is_file():
        if not src.name.lower().endswith((".html", ".htm")):
            raise UsageError("is neither a tree folder, a ZIM nor a SingleFile .html page", subject=str(src))
        if main is not None:
            raise UsageError("--main applies to tree input only", subject=str(src))
        if rules.MAGIC_COMMENT in read_prefix(src, 1024):
            raise UsageError("is already a gwtar (extract it to a tree first)", subject=str(src))
        from archiver.gwtar.singlefile import singlefile_source

        with tempfile.TemporaryDirectory(prefix=".gwtar-singlefile-", dir=out.parent) as work:
            source = singlefile_source(src, Path(work), created=created)
            return write_archive(
                source, out, single_page=single_page, loader=loader_text, fec=fec, progress=progress
            )
    raise UsageError("no such file or folder", subject=str(src))


def _pack_zim(
    src: Path,
    out: Path,
    *,
    main: str | None,
    single_page: bool,
    created: str | None,
    loader: str,
    fec: float | None,
    progress: Meter | None,
    search_index: bool = False,
) -> PackResult:
    """A ZIM packed through a tree (:func:`~archiver.gwtar.sources.zim_source`) extracted into a
    private folder beside ``out`` (``.OUT.archiver-tmp-PID-RAND``, removed on every exit), which is
    packed like any tree."""
    with safefs.temp_dir(out) as work:
        source = zim_source(src, work / "tree", main=main, created=created)
        if search_index and not single_page:
            add_search_index(source, work / "tree", work)
        else:
            drop_search_index(source)
        return write_archive(source, out, single_page=single_page, loader=loader, fec=fec, progress=progress)


def write_archive(
    source: Source,
    out: Path,
    *,
    single_page: bool = False,
    loader: str,
    fec: float | None = None,
    progress: Meter | None = None,
) -> PackResult:
    """Order, plan and write ``source`` to ``out`` atomically (with a FEC tail when ``fec`` is a
    redundancy fraction)."""
    members = layout.order_members(
        list(source.specs.values()),
        source.meta.main,
        source.main_assets,
        single_page=single_page,
        v1_names=source.v1_names,
    )
    # the search index's small files: one bundle member (formats/gwtar.md §5.5)
    run = layout.bundle(members, INDEX_PREFIX)
    plan = layout.plan(members, source.meta, loader=loader, mtime=source.mtime, bundle=run)
    engine = None
    if fec is not None:  # bad settings and a missing engine fail before anything is written
        from archiver import par2

        par2.plan(plan.total_archive_size, fec)
        engine = par2.find_engine()
    with safefs.interruptible():
        return _write_out(source, out, plan, loader=loader, fec=fec, engine=engine, progress=progress)


def _write_out(
    source: Source,
    out: Path,
    plan: layout.Plan,
    *,
    loader: str,
    fec: float | None,
    engine: Any,
    progress: Meter | None,
) -> PackResult:
    fec_result = None
    tmp = safefs.temp_path(out, ".tmp")  # stale ones of killed runs are removed first
    fd = -1
    try:  # created inside the try: a signal right after the open still removes it
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        os.fchmod(fd, 0o644)
        write_all(fd, plan.header)
        meter = Meter() if progress is None else progress
        meter.start(sum(m.size for m in plan.members))
        hashes, titles = write_body(fd, plan, source, meter)
        if titles:  # the pages' titles are known now: the index, and the header's sizes, follow them
            final = layout.with_titles(plan, titles, source.meta, loader=loader)
            if (final.overhead, final.data_offsets, final.hash_slots) != (
                plan.overhead,
                plan.data_offsets,
                plan.hash_slots,
            ):
                raise AssertionError("the titles moved the layout")
            plan = final
            os.pwrite(fd, plan.header, 0)
        index_digest = hashlib.sha256()
        pending = bytearray(plan.blocks(len(plan.members)))
        written = 0
        for chunk in plan.index_chunks(hashes):
            index_digest.update(chunk)
            written += len(chunk)
            pending += chunk
            if len(pending) >= CHUNK:
                write_all(fd, pending)
                pending.clear()
        pending += bytes(-written % 512)
        pending += plan.end_blocks()
        write_all(fd, pending)
        assert written == plan.index_size
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end != plan.total_archive_size:
            raise AssertionError(f"wrote {end} bytes, planned {plan.total_archive_size}")
        for slot, digest in zip(plan.hash_slots, hashes, strict=False):
            os.pwrite(fd, digest.encode("ascii"), slot)
        os.pwrite(fd, index_digest.hexdigest().encode("ascii"), plan.index_hash_slot)
        if fec is not None:
            from archiver import par2

            fec_result = par2.append_fec(tmp, name=out.name, redundancy=fec, engine=engine)
            fec_result = dataclasses.replace(fec_result, path=out)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, out)
        _fsync_dir(out.parent)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return PackResult(
        path=out,
        overhead=plan.overhead,
        total_archive_size=plan.total_archive_size,
        size=plan.total_archive_size + (fec_result.fec_size if fec_result is not None else 0),
        members=len(plan.members),
        pages=sum(1 for m in plan.members if m.kind == "page"),
        listed=len(plan.hash_slots),
        main=source.meta.main,
        index_offset=plan.overhead + plan.index_offset,
        fec=fec_result,
    )


def _fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
