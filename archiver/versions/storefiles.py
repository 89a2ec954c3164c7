"""Reading the version store's own files against a hostile or damaged copy (formats/history.md §4):
a version manifest and ``pending.json`` are read only when they are regular files, opened without
following a symbolic link and without blocking (a FIFO under that name held ``ls --versions``, a
pack and every TimeMap request of ``serve`` forever, before 2026-12), with a bound on what is read;
anything else is one :class:`FormatError` naming the file."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from archiver import safefs
from archiver.errors import FormatError
from archiver.tree import Header, Record, decode_record, open_manifest, read_line

__all__ = [
    "MAX_MANIFEST_BYTES",
    "MAX_PENDING_BYTES",
    "decode_manifest",
    "pending_started",
    "read_manifest",
]

#: A version manifest read whole (a comparison, a pack's keeper) larger than this is refused.
MAX_MANIFEST_BYTES = 1 << 30
#: ``pending.json`` holds one time: a larger one is not a pending re-capture's mark.
MAX_PENDING_BYTES = 4096

_header_decoder = msgspec.json.Decoder(Header)


def read_manifest(path: Path) -> bytes:
    """A version manifest's bytes (a regular file of at most :data:`MAX_MANIFEST_BYTES`)."""
    return safefs.read_regular(path, MAX_MANIFEST_BYTES)


def decode_manifest(
    path: Path, tee: Callable[[bytes], object] | None = None, *, data: bytes | None = None
) -> tuple[Header, Iterator[Record]]:
    """A version manifest's header and its records, streamed; a line over the tree's
    :data:`~archiver.tree.LINE_LIMIT`, a line that is no record, a line cut short, or a path listed
    twice (a version is compacted, one record a path: a path listed twice made ``extract`` write
    through a link to the tree's own file) is a FormatError. Opened, read a line at a time and
    decoded as the tree's own manifest is (:func:`archiver.tree.open_manifest`). ``tee``, when
    given, gets every line as it is read (the header first): once the records are all read, what it
    got is the file's bytes, the very ones checked (``pack --all-versions`` packs them, not the file
    read again by its name). ``data``: the manifest's bytes already read (:func:`read_manifest`),
    decoded instead of the file (``path`` names it in errors)."""
    f = open_manifest(path) if data is None else io.BytesIO(data)
    line = read_line if tee is None else _teed(tee)
    try:
        header = _header_decoder.decode(line(f, 1, path))
    except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
        f.close()
        raise FormatError(f"line 1 is not a manifest header: {e}", subject=str(path)) from None
    except BaseException:
        f.close()
        raise

    def rows() -> Iterator[Record]:
        seen: dict[str, int] = {}
        with f:
            n = 1
            while text := line(f, n + 1, path):
                n += 1
                if not text.strip():
                    continue
                if not text.endswith(b"\n"):
                    raise FormatError(f"line {n} is cut short", subject=str(path))
                r = decode_record(text, n, path)
                first_at = seen.setdefault(r.path, n)
                if first_at != n:
                    raise FormatError(
                        f"line {n}: {r.path!r} is listed twice (line {first_at} too)", subject=str(path)
                    )
                yield r

    return header, rows()


def _teed(tee: Callable[[bytes], object]) -> Callable[[BinaryIO, int, Path], bytes]:
    def line(f: BinaryIO, lineno: int, path: Path) -> bytes:
        text = read_line(f, lineno, path)
        tee(text)
        return text

    return line


def pending_started(mark: Path) -> str | None:
    """The ``started`` time of the pending re-capture's mark ``mark`` (formats/history.md §6), None
    when there is none. A mark that is no regular file, over :data:`MAX_PENDING_BYTES`, no JSON
    (nested too deep included) or without a ``started`` string is a FormatError naming it."""
    if not os.path.lexists(mark):
        return None
    data = safefs.read_regular(mark, MAX_PENDING_BYTES)
    try:
        started = json.loads(data)["started"]
    except (ValueError, RecursionError, KeyError, TypeError, IndexError):
        started = None
    if not isinstance(started, str):
        raise FormatError('is not a pending re-capture\'s mark (no "started" time)', subject=str(mark))
    return started
