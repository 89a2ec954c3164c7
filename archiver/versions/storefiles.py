"""Reading the version store's own files against a hostile or damaged copy (formats/history.md §4):
a version manifest and ``pending.json`` are read only when they are regular files, opened without
following a symbolic link and without blocking (a FIFO under that name held ``ls --versions``, a
pack and every TimeMap request of ``serve`` forever, before 2026-12), with a bound on what is read;
anything else is one :class:`FormatError` naming the file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from archiver import safefs
from archiver.errors import FormatError
from archiver.tree import Header, Record

__all__ = [
    "MAX_LINE",
    "MAX_MANIFEST_BYTES",
    "MAX_PENDING_BYTES",
    "decode_manifest",
    "pending_started",
    "read_manifest",
]

#: A version manifest's line longer than this is damage (a record's paths and URLs are far shorter).
MAX_LINE = 16 << 20
#: A version manifest read whole (a comparison, a pack's keeper) larger than this is refused.
MAX_MANIFEST_BYTES = 1 << 30
#: ``pending.json`` holds one time: a larger one is not a pending re-capture's mark.
MAX_PENDING_BYTES = 4096

_header_decoder = msgspec.json.Decoder(Header)
_record_decoder = msgspec.json.Decoder(Record)


def read_manifest(path: Path) -> bytes:
    """A version manifest's bytes (a regular file of at most :data:`MAX_MANIFEST_BYTES`)."""
    return safefs.read_regular(path, MAX_MANIFEST_BYTES)


def decode_manifest(path: Path) -> tuple[Header, Iterator[Record]]:
    """A version manifest's header and its records, streamed; a line over :data:`MAX_LINE`, a line
    that is no record, or a path listed twice (a version is compacted, one record a path: a path
    listed twice made ``extract`` write through a link to the tree's own file) is a FormatError."""
    f = open(safefs.open_regular(path), "rb")  # noqa: SIM115 (closed by rows(), or below)
    try:
        first = f.readline(MAX_LINE + 1)
        if len(first) > MAX_LINE:
            raise FormatError(f"line 1 is longer than {MAX_LINE} bytes", subject=str(path))
        header = _header_decoder.decode(first)
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
            while line := f.readline(MAX_LINE + 1):
                n += 1
                if len(line) > MAX_LINE:
                    raise FormatError(f"line {n} is longer than {MAX_LINE} bytes", subject=str(path))
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    raise FormatError(f"line {n} is cut short", subject=str(path))
                try:
                    r = _record_decoder.decode(line)
                except (msgspec.DecodeError, RecursionError) as e:
                    raise FormatError(f"line {n}: {e}", subject=str(path)) from None
                first_at = seen.setdefault(r.path, n)
                if first_at != n:
                    raise FormatError(
                        f"line {n}: {r.path!r} is listed twice (line {first_at} too)", subject=str(path)
                    )
                yield r

    return header, rows()


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
