"""Compress or not: the pure decision of archiver.zim.compressible (formats/zim.md §3.2)."""

from __future__ import annotations

import gzip
import io
import itertools
import random
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.media import COMPRESSED_TYPES
from archiver.zim.compressible import (
    SAMPLE_TOTAL,
    SLICE,
    SLICES,
    SMALL,
    by_type,
    sample_of,
    sample_shrinks,
    sample_spans,
    should_compress,
)


def _random(size: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(size)


def _zip(size: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("word/document.xml", _random(size // 2, 7).hex().encode())
    return buf.getvalue()


TEXTISH = b"".join(b"<row id=%d name='item %d' value='%d'/>\n" % (i, i * 7, i * i) for i in range(4000))
BASE64 = __import__("base64").b64encode(_random(96 << 10, 3))
HALF = b"".join(_random(512, i) + b"\0" * 512 for i in range(128))  # half random, half zero

# (media type, bytes, compress?)
VECTORS = [
    # known compressed types: never, whatever the bytes
    ("image/png", b"\0" * (1 << 20), False),
    ("image/jpeg", TEXTISH, False),
    ("font/woff2", b"a" * 100, False),
    ("application/zip", TEXTISH, False),
    ("application/gzip", TEXTISH, False),
    ("application/pdf", TEXTISH, False),
    ("video/x-matroska", TEXTISH, False),
    ("audio/wav", b"\0" * (1 << 20), False),
    # text: always, even random bytes
    ("text/html", _random(1 << 20), True),
    ("text/plain", _random(SMALL * 4), True),
    ("text/css", b"", True),
    ("text/javascript", _random(SMALL), True),
    ("application/javascript", _random(SMALL), True),
    ("application/json", _random(SMALL), True),
    ("application/ld+json", _random(SMALL), True),
    ("application/xml", _random(SMALL), True),
    ("application/rss+xml", _random(SMALL), True),
    ("image/svg+xml", _random(SMALL), True),
    ("application/xhtml+xml", _random(SMALL), True),
    ("application/jsonl", _random(SMALL), True),
    ("Text/HTML; charset=utf-8", _random(SMALL), True),
    # anything else: small → compress; large → the sample decides
    ("application/octet-stream", _random(SMALL - 1), True),
    ("application/octet-stream", _random(SMALL), False),
    ("application/octet-stream", _random(5 << 20), False),
    ("application/octet-stream", gzip.compress(_random(100_000, 5).hex().encode(), 9, mtime=0), False),
    # deflate leaves structure in very regular text that a second pass still finds (11 % here)
    ("application/octet-stream", gzip.compress(TEXTISH, 6, mtime=0), True),
    ("application/octet-stream", TEXTISH, True),
    ("application/octet-stream", b"\0" * (3 << 20), True),
    ("application/octet-stream", BASE64, True),
    ("application/octet-stream", HALF, True),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", _zip(200_000), False),
    ("application/x-7z-compressed", _random(100_000, 9), False),
    ("image/bmp", b"\x10\x20\x30\x00" * 50_000, True),
    ("image/x-icon", _random(40_000), False),
    ("application/wasm", TEXTISH, True),
]


@pytest.mark.parametrize(
    ("media_type", "data", "want"), VECTORS, ids=[f"{v[0]}-{len(v[1])}" for v in VECTORS]
)
def test_vectors(media_type: str, data: bytes, want: bool) -> None:
    assert should_compress(media_type, len(data), sample_of(data)) is want


def test_sample_spans_table() -> None:
    assert sample_spans(0) == []
    assert sample_spans(1) == [(0, 1)]
    assert sample_spans(SAMPLE_TOTAL) == [(0, SAMPLE_TOTAL)]
    size = SAMPLE_TOTAL + 1
    assert sample_spans(size) == [(0, SLICE), (16384, SLICE), (32768, SLICE), (49153, SLICE)]
    assert sample_spans(10 << 20)[-1] == ((10 << 20) - SLICE, SLICE)
    assert len(sample_spans(1 << 40)) == SLICES


KINDS = st.one_of(
    st.sampled_from([*sorted(COMPRESSED_TYPES), "video/x-matroska", "audio/wav"]),
    st.sampled_from(["text/html", "text/plain", "text/x-anything", "application/json", "image/svg+xml",
                     "application/atom+xml", "application/vnd.api+json", "text/javascript"]),
    st.sampled_from(["application/octet-stream", "application/x-thing", "image/bmp", ""]),
    st.text(max_size=30),
)  # fmt: skip


@given(KINDS, st.integers(min_value=0, max_value=1 << 40), st.one_of(st.none(), st.binary(max_size=512)))
def test_the_rule(kind: str, size: int, sample: bytes | None) -> None:
    """Known compressed → no and text → yes whatever the bytes; else small or unsampled → yes;
    else the sample alone decides."""
    known = by_type(kind)
    got = should_compress(kind, size, sample)
    assert got is should_compress(kind, size, None if sample is None else bytes(sample))
    if kind in COMPRESSED_TYPES or kind.startswith(("audio/", "video/")):
        assert known is False and got is False
    elif kind.startswith("text/") or kind.endswith(("+json", "+xml")) or kind == "application/json":
        assert known is True and got is True
    if known is not None:
        assert got is known
        assert should_compress(kind.upper(), size, sample) is known  # case does not matter
    elif size < SMALL or sample is None:
        assert got is True
    else:
        assert got is sample_shrinks(sample)


@given(
    st.one_of(
        st.integers(min_value=0, max_value=3 * SAMPLE_TOTAL), st.integers(min_value=0, max_value=1 << 45)
    ),
    st.integers(min_value=0, max_value=2**32 - 1),
    st.sampled_from(["random", "repeated"]),
)
def test_sampling(size: int, seed: int, content: str) -> None:
    """The slices are bounded, ordered and reach both ends; the sample is those slices and nothing
    else; random bytes are stored, repetitive bytes compressed."""
    spans = sample_spans(size)
    assert sum(n for _, n in spans) == min(size, SAMPLE_TOTAL)
    if size:
        assert spans[0][0] == 0
        assert spans[-1][0] + spans[-1][1] == size
    for (a, n), (b, _) in itertools.pairwise(spans):
        assert a + n <= b  # in order, never overlapping
    assert all(off >= 0 and n > 0 and off + n <= size for off, n in spans)
    if size > 3 * SAMPLE_TOTAL:
        return
    unit = _random(1 + seed % 64, seed)  # repeated: a unit of 1 to 64 random bytes
    data = _random(size, seed) if content == "random" else (unit * (size // len(unit) + 1))[:size]
    sample = sample_of(data)
    assert sample == b"".join(data[o : o + n] for o, n in spans)
    changed = bytearray(_random(size, seed + 1))  # the bytes outside the sample replaced
    for o, n in spans:
        changed[o : o + n] = data[o : o + n]
    assert sample_of(bytes(changed)) == sample
    got = should_compress("application/octet-stream", size, sample)
    assert got is (size < SMALL or content == "repeated")
