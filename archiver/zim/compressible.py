"""Whether libzim should compress an entry: from its media type and a sample of its bytes.

Pure: no network, no filesystem, no clock. libzim compresses with zstd at its fixed maximum level
(about 3–6 MB/s on one core), so storing bytes that do not shrink through it costs minutes for
nothing. The rule (formats/zim.md §3.2):

1. a type that is already compressed (``archiver.media.COMPRESSED_TYPES``) or any ``audio/*`` or
   ``video/*`` → **no**;
2. text (``text/*``, JSON, JavaScript, CSS, XML, SVG, HTML, any ``+json``/``+xml``) → **yes**: text
   compresses well and the full-text index reads it anyway;
3. anything else below :data:`SMALL` bytes → **yes** (cheap, and it shares a cluster with others);
4. anything else → compress the sample (:func:`sample_spans`: the whole entry up to
   :data:`SAMPLE_TOTAL`, else :data:`SLICES` slices of :data:`SLICE` bytes at the start, evenly
   spaced through the middle and at the end) with zlib at level 1, and say **yes** only when it
   shrinks by at least :data:`MIN_SAVING_PERCENT` %.

The answer depends only on the type and the bytes (and on zlib's level-1 output for them), so the
same input always gives the same clusters.
"""

from __future__ import annotations

import zlib

from archiver.media import COMPRESSED_TYPES, is_text

__all__ = [
    "MIN_SAVING_PERCENT",
    "SAMPLE_TOTAL",
    "SLICE",
    "SLICES",
    "SMALL",
    "by_type",
    "sample_of",
    "sample_shrinks",
    "sample_spans",
    "should_compress",
]

#: Entries of an unclassified type below this size are compressed without looking at them.
SMALL = 16 << 10
#: Bytes per sampled slice and number of slices: the sample is at most ``SLICE * SLICES`` bytes.
SLICE = 16 << 10
SLICES = 4
SAMPLE_TOTAL = SLICE * SLICES
#: The sample must shrink by at least this much (zlib level 1) for the entry to be compressed.
MIN_SAVING_PERCENT = 10

_TEXT_TYPES = frozenset(
    {
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/jsonl",
        "application/x-ndjson",
        "application/ld+json",
        "application/xhtml+xml",
        "image/svg+xml",
    }
)


def by_type(media_type: str) -> bool | None:
    """The answer the media type alone gives (rules 1 and 2), or None when the bytes must decide.
    Parameters (``;charset=…``) and case are ignored."""
    kind = media_type.split(";", 1)[0].strip().lower()
    if kind in COMPRESSED_TYPES or kind.startswith(("audio/", "video/")):
        return False
    if is_text(kind) or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return True
    return None


def sample_spans(size: int) -> list[tuple[int, int]]:
    """The (offset, length) slices of an entry of ``size`` bytes that make its sample: the whole
    entry when it is at most :data:`SAMPLE_TOTAL`, else :data:`SLICES` slices of :data:`SLICE`
    bytes, the first at 0, the last ending at ``size``, the others evenly spaced between."""
    if size <= 0:
        return []
    if size <= SAMPLE_TOTAL:
        return [(0, size)]
    last = size - SLICE
    return [(last * i // (SLICES - 1), SLICE) for i in range(SLICES)]


def sample_of(data: bytes) -> bytes:
    """The sample of an entry held in memory (the same slices :func:`sample_spans` names)."""
    return b"".join(data[offset : offset + length] for offset, length in sample_spans(len(data)))


def sample_shrinks(sample: bytes) -> bool:
    """Whether zlib level 1 makes ``sample`` at least :data:`MIN_SAVING_PERCENT` % smaller."""
    if not sample:
        return True
    packed = len(zlib.compress(sample, 1))
    return packed * 100 <= len(sample) * (100 - MIN_SAVING_PERCENT)


def should_compress(media_type: str, size: int, sample: bytes | None = None) -> bool:
    """Whether an entry of ``media_type`` and ``size`` bytes goes to a compressed cluster.
    ``sample`` is the entry's sample (:func:`sample_spans`); it is only looked at for an
    unclassified type of at least :data:`SMALL` bytes, and None there means "compress"."""
    known = by_type(media_type)
    if known is not None:
        return known
    if size < SMALL or sample is None:
        return True
    return sample_shrinks(sample)
