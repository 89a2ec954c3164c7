"""Repairing the WARC files an earlier capture run wrote (formats/warc.md §7.4): their complete
records read back one at a time, then a torn tail (the file ends inside its last gzip member: the
writer was killed) cut off, and a file left with no record removed. Damage that is not a torn tail
is left as it is: ``archiver verify`` reports it."""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from archiver.warc import read

__all__ = ["recover"]

_STEP = 1 << 20


def recover(path: Path) -> Iterator[read.Record]:
    """The complete records of a WARC file an earlier run wrote, one at a time; once they have all
    been read, a torn tail (the file ends inside its last gzip member: the writer was killed) is cut
    off, and a file left with no record is removed. Damage that is not a torn tail is left as it is
    (``archiver verify`` reports it); the records before it count."""
    findings: list[read.Finding] = []
    end = 0
    ours = True
    unknown: read.Record | None = None  # a record whose member's end the reader could not tell
    with path.open("rb") as f:
        for rec in read.iter_records(f, findings):
            if unknown is not None:
                ours = False  # records sharing a member: not written by us, never cut
            if rec.length is None:
                unknown = rec
            else:
                end = rec.offset + rec.length
            yield rec
    problems = [f.offset for f in findings if not f.warning]
    if unknown is not None:  # the last record: its member ends where the damaged one starts
        if problems and problems[0] > unknown.offset:
            end = problems[0]
        else:
            ours = False
    if ours and problems and _torn_after(path, end):
        with path.open("rb+") as f:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
        if end == 0:
            path.unlink()


def _torn_after(path: Path, end: int) -> bool:
    """Whether the bytes of ``path`` from ``end`` on are the start of one gzip member that the file
    cuts short (what a killed writer leaves), not a complete member or other damage."""
    with path.open("rb") as f:
        f.seek(end)
        d = zlib.decompressobj(31)
        while chunk := f.read(_STEP):
            try:
                d.decompress(chunk, _STEP)
                while d.unconsumed_tail and not d.eof:
                    d.decompress(d.unconsumed_tail, _STEP)
            except zlib.error:
                return False
            if d.eof:
                return False
    return not d.eof
