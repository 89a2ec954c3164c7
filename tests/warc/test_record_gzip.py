"""The recorder's gzip members, dates and record ids (formats/warc.md §7.2): every member it writes is
one valid gzip member whatever its size and level (gzip, zlib and warcio read it back), media bodies
are stored (level 0) and text is deflated, dates are WARC 1.1 dates with microseconds and ids are
random version-4 UUIDs."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import os
import uuid
import zlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from archiver.warc.record import Recorder, _record_id, gzip_params, level_for, warc_date


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=70_000), level=st.sampled_from([0, 1, 6, 9]), cut=st.integers(0, 70_000))
def test_any_member_is_one_gzip_member(data: bytes, level: int, cut: int) -> None:
    wbits, mem = gzip_params(len(data) + 40)
    assert 16 + 10 <= wbits <= 16 + 15 and mem in (6, 8)
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem)
    member = c.compress(data[:cut]) + c.compress(data[cut:]) + c.flush()
    assert gzip.decompress(member) == data
    d = zlib.decompressobj(31)
    assert d.decompress(member) == data and d.eof and not d.unused_data


@pytest.mark.parametrize("size", [1, 1023, 1024, 1025, 32767, 32768, 32769, 10**7])
def test_the_window_never_exceeds_the_record_nor_32_kib(size: int) -> None:
    wbits, mem = gzip_params(size)
    assert (1 << (wbits - 16)) >= min(size, 1 << 15) or wbits == 16 + 10
    assert wbits <= 16 + 15 and (mem == 8) == (wbits == 16 + 15)


@pytest.mark.parametrize(
    ("content_type", "coding", "level"),
    [
        ("text/html; charset=utf-8", None, 6),
        ("text/css", None, 6),
        ("application/json", None, 6),
        ("image/svg+xml", None, 6),
        ("image/png", None, 6),
        ("image/gif", None, 6),
        ("audio/wav", None, 6),
        ("font/ttf", None, 6),
        ("application/zipx", None, 6),
        (None, None, 6),
        ("text/html", "identity", 6),
        ("text/html", "gzip", 0),
        (None, "br", 0),
        ("image/jpeg", None, 0),
        ("IMAGE/WEBP; q=1", None, 0),
        ("image/avif", None, 0),
        ("video/mp4", None, 0),
        ("audio/mpeg", None, 0),
        ("font/woff2", None, 0),
        ("font/woff", None, 0),
        ("application/font-woff2", None, 0),
        ("application/zip", None, 0),
        ("application/gzip", None, 0),
    ],
)
def test_levels_by_type_and_coding(content_type: str | None, coding: str | None, level: int) -> None:
    assert level_for(content_type, coding) == level


@settings(max_examples=500, deadline=None)
@given(when=st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))
def test_dates_match_datetime(when: float) -> None:
    micros = round(when * 1_000_000)
    want = datetime.fromtimestamp(micros // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    assert warc_date(when) == f"{want}.{micros % 1_000_000:06d}Z"


def test_record_ids_are_random_uuid4() -> None:
    ids = {_record_id() for _ in range(2000)}
    assert len(ids) == 2000
    for rid in list(ids)[:200]:
        assert rid.startswith("<urn:uuid:") and rid.endswith(">")
        u = uuid.UUID(rid[10:-1])
        assert u.version == 4 and u.variant == uuid.RFC_4122 and str(u) == rid[10:-1]


async def _one(rec: Recorder, url: str, content_type: str, body: bytes) -> None:
    request = httpx.Request("GET", url)
    response = httpx.Response(
        200, headers=[("Content-Type", content_type), ("Content-Length", str(len(body)))], request=request
    )

    async def raw() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 7000):
            yield body[i : i + 7000]

    ex = rec.begin(response)
    async for _ in ex.body(raw()):
        pass
    await ex.end()


def test_stored_and_deflated_records_read_back(tmp_path: Path) -> None:
    """A JPEG body is stored, a page is deflated; warcio reads every record, block and payload
    digests hold, and each member decompresses on its own (random access by offset)."""
    jpeg = b"\xff\xd8\xff\xe0" + os.urandom(200_000)
    page = b"<!doctype html><title>t</title>" + b"<p>text text text</p>" * 3000
    rec = Recorder(tmp_path / "warc", tmp_dir=tmp_path / "tmp", created="20261201000000", info=[("x", "y")])
    rec.open()

    async def go() -> None:
        await _one(rec, "http://a.localhost/p.jpg", "image/jpeg", jpeg)
        await _one(rec, "http://a.localhost/", "text/html", page)

    asyncio.run(go())
    rec.close()
    (path,) = (tmp_path / "warc").iterdir()
    data = path.read_bytes()
    assert len(data) < len(jpeg) + len(page) // 10  # the page shrank, the JPEG was kept as it is
    bodies = {}
    with path.open("rb") as f:
        for r in ArchiveIterator(f, check_digests=True):
            if r.rec_type == "response":
                bodies[r.rec_headers.get_header("WARC-Target-URI")] = r.content_stream().read()
    assert bodies == {"http://a.localhost/p.jpg": jpeg, "http://a.localhost/": page}
    members = 0
    rest = data
    while rest:
        d = zlib.decompressobj(31)
        block = d.decompress(rest)
        assert d.eof and block.startswith(b"WARC/1.1\r\n")
        rest = d.unused_data
        members += 1
    assert members == 5  # warcinfo, then response and request of each exchange
    digest = hashlib.sha256(jpeg).digest()
    assert digest in rec.seen
    with gzip.open(io.BytesIO(data)) as g:
        assert g.read().count(b"WARC/1.1\r\n") == 5
