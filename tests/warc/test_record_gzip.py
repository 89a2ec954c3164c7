"""The recorder's gzip members, dates and record ids (formats/warc.md §7.2): every member it writes is
one valid gzip member whatever its size, packing and compressor (gzip, zlib and warcio read it back),
media bodies are stored and text is deflated (by ISA-L when installed, else zlib), dates are WARC
1.1 dates with microseconds and ids are random version-4 UUIDs."""

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
from types import ModuleType

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from archiver.warc.members import DEFLATE, ENGINE, STORED, compressor, gzip_params, packing_for
from archiver.warc.record import Recorder, _record_id, http_heads, warc_date


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


ENGINES: list[ModuleType] = [zlib]
if ENGINE == "isal":
    from isal import isal_zlib

    ENGINES.append(isal_zlib)


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=70_000) | st.text(max_size=40_000).map(str.encode),
    packing=st.sampled_from([STORED, DEFLATE]),
    engine=st.sampled_from(ENGINES),
    cut=st.integers(0, 70_000),
)
def test_the_recorders_compressor_makes_one_gzip_member(
    data: bytes, packing: str, engine: ModuleType, cut: int
) -> None:
    """Whichever compressor deflates (ISA-L or zlib) and however the record is fed, its member is
    one gzip member holding exactly the record; a stored one is no smaller than the record."""
    c = compressor(packing, len(data) + 40, engine)  # type: ignore[arg-type]  # a str, one of the two
    member = c.compress(data[:cut]) + c.compress(data[cut:]) + c.flush()
    d = zlib.decompressobj(31)
    assert d.decompress(member) == data and d.eof and not d.unused_data
    assert gzip.decompress(member) == data
    if packing == STORED:
        assert len(member) >= len(data)


def test_isal_deflates_when_installed() -> None:
    """The project depends on isal (pyproject): where it is installed, it is the engine."""
    try:
        import isal.isal_zlib  # noqa: F401
    except ImportError:
        assert ENGINE == "zlib"
    else:
        assert ENGINE == "isal"


@pytest.mark.parametrize("size", [1, 1023, 1024, 1025, 32767, 32768, 32769, 10**7])
def test_the_window_never_exceeds_the_record_nor_32_kib(size: int) -> None:
    wbits, mem = gzip_params(size)
    assert (1 << (wbits - 16)) >= min(size, 1 << 15) or wbits == 16 + 10
    assert wbits <= 16 + 15 and (mem == 8) == (wbits == 16 + 15)


@pytest.mark.parametrize(
    ("content_type", "coding", "packing"),
    [
        ("text/html; charset=utf-8", None, DEFLATE),
        ("text/css", None, DEFLATE),
        ("application/json", None, DEFLATE),
        ("image/svg+xml", None, DEFLATE),
        ("image/png", None, DEFLATE),
        ("image/gif", None, DEFLATE),
        ("audio/wav", None, DEFLATE),
        ("font/ttf", None, DEFLATE),
        ("application/zipx", None, DEFLATE),
        (None, None, DEFLATE),
        ("text/html", "identity", DEFLATE),
        ("text/html", "gzip", STORED),
        (None, "br", STORED),
        ("image/jpeg", None, STORED),
        ("IMAGE/WEBP; q=1", None, STORED),
        ("image/avif", None, STORED),
        ("video/mp4", None, STORED),
        ("audio/mpeg", None, STORED),
        ("font/woff2", None, STORED),
        ("font/woff", None, STORED),
        ("application/font-woff2", None, STORED),
        ("application/zip", None, STORED),
        ("application/gzip", None, STORED),
    ],
)
def test_packing_by_type_and_coding(content_type: str | None, coding: str | None, packing: str) -> None:
    assert packing_for(content_type, coding) == packing


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


def test_heads_as_sent_and_received_and_the_codings_read_in_the_same_pass() -> None:
    request = httpx.Request("GET", "http://a.localhost:8080/p%20q?x=1", headers=[("Accept", "*/*")])
    response = httpx.Response(
        200,
        headers=[
            ("content-Type", "text/html"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("content-encoding", "br"),
        ],
        request=request,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": b"Fine"},
    )
    heads = http_heads(response)
    assert heads.request.startswith(b"GET /p%20q?x=1 HTTP/1.1\r\n") and heads.request.endswith(b"\r\n\r\n")
    assert b"Accept: */*\r\n" in heads.request and b"Host: a.localhost:8080\r\n" in heads.request
    assert heads.response == (
        b"HTTP/1.1 200 Fine\r\ncontent-Type: text/html\r\nContent-Encoding: gzip\r\n"
        b"X-Archiver-Transfer-Encoding: chunked\r\ncontent-encoding: br\r\n\r\n"
    )
    # as httpx's Headers.get gives them: what the decoder and the packing are chosen by
    assert (heads.content_type, heads.content_encoding) == ("text/html", "gzip, br")
    assert heads.content_encoding == response.headers.get("content-encoding")
    assert heads.ip is None


def test_a_forked_child_draws_its_own_record_ids() -> None:
    """Ids come from a pool of random bytes: a forked child must not hand out the parent's next ones."""
    _record_id()  # the pool is filled
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(w, _record_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(r, 100).decode()
    os.close(r)
    os.close(w)
    assert child.startswith("<urn:uuid:") and child != _record_id()


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
