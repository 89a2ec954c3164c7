"""The libzim writer adapter: items, redirects and metadata in, one ZIM file out.

The only module that imports ``libzim.writer``. It knows nothing about trees, gwtar or ZIM
sources (``archiver.zim.pack`` turns those into :class:`ItemSpec` values) and nothing about temp
names (the caller passes the path to write; libzim itself writes ``<path>.tmp`` and
``<path>_*.idx.tmp`` beside it and renames on finalise).

The binding's traps, handled here (research zim.md §1):

- configuration calls run before ``with``; the creator finalises in ``__exit__`` even when an
  exception is raised, so callers must write to a temporary name and delete it on failure;
- a content provider must yield exactly ``get_size()`` bytes: :class:`_Content` never yields more
  and pads a short source, recording the mismatch (with the SHA-256 it computed on the way) for the
  caller to turn into an error after finalise — raising inside a libzim worker thread is not safe;
- libzim prints progress to the C-level stdout even when not verbose: fd 1 is pointed at
  ``/dev/null`` for the creator's whole life, so ``--json`` output stays clean (this affects the
  whole process: do not pack while another thread writes to stdout);
- ``add_item`` duplicates raise ``RuntimeError``: turned into :class:`FormatError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from libzim.writer import Blob, ContentProvider, Creator, Hint, Item, StringProvider

from archiver import safefs
from archiver.errors import FormatError

__all__ = [
    "CLUSTER_SIZE",
    "ItemSpec",
    "Mismatch",
    "RedirectSpec",
    "default_workers",
    "quiet_stdout",
    "write_zim",
]

#: Cluster size in bytes: 4 MiB, twice libzim's default. Packing Python's docs on 2 cores
#: (formats/zim.md §4) took about 8 % less CPU than with 2 MiB (zstd at libzim's fixed maximum level
#: pays a set-up per cluster) and gave a 4 % smaller file; a reader decompresses at most 4 MiB
#: (a few ms) to reach one entry.
CLUSTER_SIZE = 4 << 20


def default_workers() -> int:
    """Compression workers: one per core, at least 2 and at most 4 (libzim's default is 4) — 2 on
    the 2-core CI machine. zstd at libzim's fixed maximum level is CPU-bound; packing Python's docs
    (530 pages, 67 MB) on 2 cores, 4 workers took 434 MB peak RSS against 260 MB with 2 and about
    10 % more CPU time, for no gain in wall time (formats/zim.md §4)."""
    return max(2, min(4, os.cpu_count() or 2))


@dataclass(frozen=True)
class ItemSpec:
    """One content entry. ``chunks()`` yields the bytes (any chunking); exactly ``size`` of them are
    stored. ``sha256``, when given, is checked on the way through. ``data``, when given, is the
    content itself (``size`` bytes, already checked): libzim's worker threads then read it from a
    native provider without calling back into Python (``chunks`` is not used)."""

    path: str
    title: str
    mimetype: str
    size: int
    front: bool
    compress: bool
    chunks: Callable[[], Iterable[bytes]]
    sha256: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class RedirectSpec:
    """A redirect entry: ``path`` leads to ``target`` (both content paths)."""

    path: str
    target: str
    title: str = ""
    front: bool = False


@dataclass(frozen=True)
class Mismatch:
    """An item whose bytes were not what its spec said (found while libzim read them)."""

    path: str
    message: str


class _Content(ContentProvider):
    def __init__(self, spec: ItemSpec, mismatches: list[Mismatch]) -> None:
        super().__init__()
        self.spec = spec
        self.mismatches = mismatches

    def get_size(self) -> int:
        return self.spec.size

    def gen_blob(self) -> Iterator[Blob]:
        spec = self.spec
        digest = hashlib.sha256() if spec.sha256 else None
        left = spec.size
        seen = 0
        try:
            for chunk in spec.chunks():
                seen += len(chunk)
                if digest is not None:
                    digest.update(chunk)
                if left <= 0 or not chunk:
                    continue
                piece = chunk[:left] if len(chunk) > left else chunk
                left -= len(piece)
                yield Blob(bytes(piece))
        except Exception as e:  # a worker thread: record, never raise into libzim
            self.mismatches.append(Mismatch(spec.path, f"reading it failed: {e}"))
        if left > 0:  # keep libzim's size contract; the caller fails the pack afterwards
            yield Blob(b"\0" * left)
        if seen != spec.size:
            self.mismatches.append(Mismatch(spec.path, f"has {seen} bytes, the source said {spec.size}"))
        elif digest is not None and digest.hexdigest() != spec.sha256:
            self.mismatches.append(Mismatch(spec.path, "SHA-256 differs from the source's record"))


class _Item(Item):
    def __init__(self, spec: ItemSpec, mismatches: list[Mismatch]) -> None:
        super().__init__()
        self.spec = spec
        self.mismatches = mismatches

    def get_path(self) -> str:
        return self.spec.path

    def get_title(self) -> str:
        return self.spec.title

    def get_mimetype(self) -> str:
        return self.spec.mimetype

    def get_contentprovider(self) -> ContentProvider:
        if self.spec.data is not None:
            return StringProvider(self.spec.data)
        return _Content(self.spec, self.mismatches)

    def get_hints(self) -> dict[Hint, int]:
        return {Hint.FRONT_ARTICLE: self.spec.front, Hint.COMPRESS: self.spec.compress}


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Point the process's file descriptor 1 at /dev/null for the block (libzim's C++ progress lines
    go there); Python's own ``sys.stdout`` is flushed first and restored after."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 at all: nothing to keep clean
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def write_zim(
    path: Path,
    *,
    items: Iterable[ItemSpec],
    redirects: Callable[[], Iterable[RedirectSpec]],
    main: str,
    metadata: Callable[[], Mapping[str, str]],
    illustration: bytes,
    index_language: str,
    workers: int | None = None,
    cluster_size: int = CLUSTER_SIZE,
) -> list[Mismatch]:
    """Write a ZIM at ``path`` (finalised by libzim even when this raises: the caller deletes it).
    ``redirects`` and then ``metadata`` are called once every item was added (so metadata can
    describe what was stored); values must have been validated. Returns the items whose bytes did not match
    their spec; the file is then not to be trusted."""
    mismatches: list[Mismatch] = []
    creator = (
        Creator(path)
        .config_verbose(False)
        .config_compression("zstd")
        .config_clustersize(cluster_size)
        .config_nbworkers(workers or default_workers())
        .config_indexing(True, index_language)
    )
    # Ctrl-C, SIGTERM and SIGHUP are held while libzim runs (safefs.deferred) and raised between
    # items: one raised inside a callback of ours made libzim's Cython wrapper end in SystemError
    # ("returned a result with an exception set"), an internal error instead of the interruption
    with safefs.deferred(), quiet_stdout(), creator as c:
        c.add_illustration(48, illustration)
        for spec in items:
            safefs.checkpoint()
            try:
                c.add_item(_Item(spec, mismatches))
            except RuntimeError as e:  # (no signal raises in our callbacks: deferred above)
                raise FormatError(f"libzim refused entry {spec.path!r}: {e}") from None
        for r in redirects():
            try:
                c.add_redirection(r.path, r.title, r.target, {Hint.FRONT_ARTICLE: r.front})
            except RuntimeError as e:
                raise FormatError(f"libzim refused redirect {r.path!r}: {e}") from None
        for key, value in metadata().items():
            c.add_metadata(key, value)
        c.set_mainpath(main)
    return mismatches
