"""archiver/codings.py, the one content decoder of the fetcher, the WARC recorder and the import: a
512 MiB bomb of each coding comes out a bounded step at a time whatever the input chunk, what a
request asks for is what it undoes, and ``started`` tells damage from data that was never coded."""

from __future__ import annotations

import asyncio
import gzip
import random
import zlib
from collections.abc import AsyncIterator

import pytest

from archiver.codings import STEP, CodingError, Decoder, accept_encoding, supported
from tests import bombs


@pytest.mark.parametrize("coding", bombs.CODINGS)
@pytest.mark.parametrize("chunk", [1 << 10, 64 << 10, 1 << 30])
def test_a_bomb_comes_out_a_step_at_a_time(coding: str, chunk: int) -> None:
    data = bombs.bomb(coding)
    d = Decoder(coding)
    total = 0
    for i in range(0, len(data), chunk):
        for piece in d.feed(data[i : i + chunk]):
            assert len(piece) <= STEP
            total += len(piece)
            if total > 8 * STEP:  # as a size cap of 8 MiB would stop it
                break
        if total > 8 * STEP:
            break
    assert total > 8 * STEP


def test_the_stream_of_a_bomb_stops_where_its_reader_stops() -> None:
    async def raw() -> AsyncIterator[bytes]:
        yield bombs.bomb("br")

    async def read() -> int:
        total = 0
        stream = Decoder("br").stream(raw())
        async for piece in stream:
            assert len(piece) <= STEP
            total += len(piece)
            if total >= 4 * STEP:
                await stream.aclose()
                break
        return total

    assert 4 * STEP <= asyncio.run(read()) <= 5 * STEP


def test_it_asks_for_what_it_undoes() -> None:
    assert accept_encoding() == "br, deflate, gzip"
    assert set(accept_encoding().split(", ")) | {"x-gzip"} == supported()
    assert Decoder("zstd").identity and Decoder("zstd").unknown == ("zstd",)
    assert Decoder("identity").unknown == ()


def test_started_tells_damage_from_data_never_coded() -> None:
    body = b"<!doctype html><p>" + b"words " * 2000
    never = Decoder("gzip")
    with pytest.raises(CodingError):
        list(never.feed(body))
    assert not never.started
    coded = gzip.compress(random.Random(1).randbytes(20_000), mtime=0)
    damaged = Decoder("gzip")
    with pytest.raises(CodingError):
        list(damaged.feed(coded[: len(coded) // 2] + b"\xff" * 64))
        list(damaged.flush())
    assert damaged.started
    assert b"".join(Decoder("gzip").feed(zlib.compress(body))) == body  # a zlib header under gzip
    assert list(Decoder("gzip").flush()) == [] and list(Decoder("br").flush()) == []  # an empty body
