"""``archiver capture --from-warc`` and ``archiver pack X.warc.gz|X.wacz --format gwtar|zim``: the
canonical tree built from WARC and WACZ records instead of the network (formats/warc.md §8).

The capture code runs unchanged (scope, rendering, rewriting, report): only its transport is the
:class:`archiver.warc.replay.ReplayTransport` of an :class:`archiver.warc.replay.Archive`, whose
index lives in a private folder beside the output (``.OUT.archiver-tmp-PID-RAND``, removed at the
end, swept by a later run after a ``kill -9``). ``pack`` imports into a temporary tree in that
folder, packs it with the tree's own packer (which writes atomically) and removes the folder.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from archiver import safefs
from archiver.errors import CaptureError, StoreError, UsageError, store_error
from archiver.walk import makedirs
from archiver.warc.replay import Archive

__all__ = ["PACK_DEPTH", "import_main", "imported_tree", "open_archive"]

#: ``pack`` of a WARC follows links this deep (no scope options there: everything the seeds reach).
PACK_DEPTH = 10_000


@contextlib.contextmanager
def open_archive(paths: list[Path], out: Path) -> Iterator[Archive]:
    """The :class:`Archive` of ``paths``, its index in a private folder beside ``out`` (removed on
    exit). Raises :class:`FormatError` for a damaged or hostile input, :class:`UsageError` for a
    missing one, before anything is written."""
    if not paths:
        raise UsageError("--from-warc needs at least one WARC or WACZ file", subject="capture")
    for p in paths:
        if not p.is_file():
            raise UsageError("no such file" if not p.exists() else "not a file", subject=str(p))
    parent = out.absolute().parent
    try:
        makedirs(parent)
    except OSError as e:
        raise UsageError(f"cannot create the folder: {e.strerror}", subject=str(parent)) from None
    with contextlib.ExitStack() as stack:
        try:
            work = stack.enter_context(safefs.temp_dir(out.absolute()))
            archive = Archive(paths, work / "index.sqlite")
        except (OSError, sqlite3.Error) as e:
            raise _index_not_written(e, paths, out) from None
        try:
            yield archive
        finally:
            archive.close()


def _index_not_written(e: OSError | sqlite3.Error, paths: list[Path], out: Path) -> BaseException:
    """The records' index beside ``out`` could not be made (its private folder or its SQLite file:
    a full, read-only or failing disk): a :class:`StoreError` naming ``out``, whatever temporary
    file refused (the folder is removed already). Before, a traceback (exit 70). An input that
    cannot be read is ``e`` as it came."""
    if isinstance(e, OSError) and e.filename is not None and Path(e.filename) in paths:
        return e
    stop = store_error(e, str(out))
    if stop is None:
        return e
    return StoreError(
        f"{stop.message} (indexing the records beside it); nothing was written", subject=str(out)
    )


def _seeds(archive: Archive, given: list[str], more: bool = False) -> list[str]:
    """The given seeds; else (``more``: none in a seeds file either) the archive's own."""
    seeds = list(given) or ([] if more else archive.seeds)
    if not seeds:
        raise CaptureError(
            "no page to start from: no pages.jsonl page and no HTML response with status 200 in the "
            "first WARC; name a URL of the archive after the files",
            subject=archive.sources[0].label if archive.sources else "capture",
        )
    return seeds


def import_main(
    files: list[Path],
    seeds: list[str],
    out: Path,
    *,
    as_json: bool = False,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    **options: Any,
) -> int:
    """``archiver capture --from-warc FILE... -o OUT [URL...]``: :func:`archiver.capture.capture_main`
    with the seeds of formats/warc.md §8.5 and the archive as the transport."""
    from archiver.capture import capture_main

    more = options.get("seeds_file") is not None or options.get("bookmarks") is not None
    with open_archive(files, out) as archive:
        return capture_main(
            _seeds(archive, seeds, more),
            out,
            as_json=as_json,
            stdout=stdout,
            stderr=stderr,
            transport=archive.factory,
            **options,
        )


@contextlib.contextmanager
def imported_tree(
    files: list[Path],
    out: Path,
    *,
    seeds: list[str] | None = None,
    progress: bool | None = None,
    **options: Any,
) -> Iterator[Path]:
    """A temporary canonical tree of ``files`` beside ``out`` (``pack``'s first step), removed on
    exit. Every page the seeds reach (any depth) is imported; Chromium renders unless
    ``render=False``. Raises :class:`CaptureError` when no page could be stored."""
    from archiver.capture import capture

    options.setdefault("depth", PACK_DEPTH)
    with safefs.interruptible(), open_archive(files, out) as archive:  # SIGTERM cleans up as Ctrl-C
        tree = archive.db_path.parent / "tree"
        try:
            report = capture(
                _seeds(archive, seeds or []),
                tree,
                transport=archive.factory,
                delay=0,
                progress=progress,
                **options,
            )
        except (StoreError, sqlite3.Error) as e:  # the temporary tree: nothing to resume, named as out
            raise _tree_not_written(e, out) from None
        if report.pages == 0:
            raise CaptureError(f"no page imported: {report.why_no_page()}", subject=str(files[0]))
        yield tree


def _tree_not_written(e: StoreError | sqlite3.Error, out: Path) -> BaseException:
    """``pack``'s temporary tree could not be written: a :class:`StoreError` naming ``out`` and the
    first refusal (not the temporary folder, removed on the way out, nor the capture's "run the same
    command again to resume": nothing of a pack is kept)."""
    first = store_error(e.__context__, "") if e.__context__ is not None else None
    stop = first or store_error(e, str(out))
    if stop is None:
        return e
    return StoreError(
        f"{stop.message} (importing the records beside it); nothing was written", subject=str(out)
    )
