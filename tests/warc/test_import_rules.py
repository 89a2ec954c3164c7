"""The pure rules of the import (archiver/warc/replay_rules.py): chunking undone at every split point,
bodies that only claim to be chunked, content codings undone in bounded pieces (bombs included),
WARC-Date order and the revisit plan."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from archiver.warc import replay_rules as rules

BODY = b"<html>" + bytes(range(256)) * 40 + b"</html>"


def _chunked(data: bytes, size: int) -> bytes:
    out = b"".join(
        b"%x;ext=1\r\n" % len(data[i : i + size]) + data[i : i + size] + b"\r\n"
        for i in range(0, len(data), size)
    )
    return out + b"0\r\nTrailer: x\r\n\r\n"


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64, 4096, 1 << 20])
def test_dechunk_at_every_split(step: int) -> None:
    framed = _chunked(BODY, 333)
    d = rules.Dechunker()
    out = b"".join(d.feed(framed[i : i + step]) for i in range(0, len(framed), step)) + d.close()
    assert out == BODY and not d.bad


def test_a_body_that_only_claims_to_be_chunked_is_kept() -> None:
    for body in (b"<!doctype html><p>plain", b"", b"abc"):  # pywb: de-chunked, header kept
        d = rules.Dechunker()
        assert d.feed(body) + d.close() == body


def test_a_cut_chunked_body_is_reported() -> None:
    d = rules.Dechunker()
    d.feed(_chunked(BODY, 100)[:500])
    d.close()
    assert "ends before" in d.bad


def _decode(coding: str, data: bytes, step: int = 1000) -> tuple[list[bytes], str]:
    dec = rules.BodyDecoder(coding)
    pieces = []
    for i in range(0, len(data), step):
        pieces += list(dec.feed(data[i : i + step]))
    pieces += list(dec.close())
    return pieces, dec.error


@pytest.mark.parametrize(
    "coding,data",
    [
        ("gzip", gzip.compress(BODY)),
        ("x-gzip", gzip.compress(BODY)),
        ("deflate", zlib.compress(BODY)),
        ("deflate", zlib.compress(BODY, wbits=-15)),  # raw DEFLATE, as old servers send it
        ("br", brotli.compress(BODY)),
        ("gzip, br", brotli.compress(gzip.compress(BODY))),  # applied in order, undone in reverse
        ("identity", BODY),
        ("", BODY),
    ],
)
def test_codings_are_undone(coding: str, data: bytes) -> None:
    pieces, error = _decode(coding, data)
    assert b"".join(pieces) == BODY and error == ""


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_a_bomb_comes_out_in_bounded_pieces(coding: str) -> None:
    big = bytes(64 << 20)
    data = gzip.compress(big) if coding == "gzip" else brotli.compress(big)
    dec = rules.BodyDecoder(coding)
    total = 0
    for piece in dec.feed(data):  # the caller stops at its size cap; here every piece is small
        assert len(piece) <= 256 * 1024  # a step (brotli may overshoot a step by its last block)
        total += len(piece)
        if total > 1 << 20:
            break
    assert total > 1 << 20


def test_unknown_and_damaged_codings_are_errors() -> None:
    assert "not supported" in rules.BodyDecoder("zstd").error
    _pieces, error = _decode("gzip", b"\x1f\x8b\x08\x00 not gzip at all")
    assert "damaged" in error
    _pieces, error = _decode("gzip", gzip.compress(BODY)[:-20])
    assert "ends early" in error


def test_dates_sort_in_time_order() -> None:
    dates = ["2026-01-02T00:00:00.5Z", "2026-01-02T00:00:00Z", "not a date", "2025-12-31T23:59:59.999Z"]
    assert sorted(dates, key=rules.date_key) == [dates[2], dates[3], dates[1], dates[0]]


def test_revisit_plan_and_outcomes() -> None:
    headers = {
        "warc-type": "revisit",
        "warc-date": "2026-01-02T00:00:00Z",
        "warc-payload-digest": "SHA1:AB",
        "warc-refers-to-target-uri": "<http://a.test/x>",
        "warc-refers-to-date": "2026-01-01T00:00:00Z",
        "warc-profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
    }
    e = rules.entry_of(headers, "http://a.test/x", None, "", 0, 10)
    assert e is not None and e.digest == "sha1:ab" and e.refers_uri == "http://a.test/x"
    assert [step[0] for step in rules.revisit_plan(e)] == ["uri-date", "digest"]
    not_modified = {**headers, "warc-profile": ".../revisit/server-not-modified"}
    e = rules.entry_of(not_modified, "http://a.test/x", 304, "", 0, 10)
    assert e is not None and rules.revisit_plan(e)[-1][0] == "earlier"
    assert rules.entry_of({"warc-type": "request"}, "http://a.test/", None, "", 0, 0) is None
    assert rules.entry_of({"warc-type": "response"}, "dns:a.test", None, "", 0, 0) is None
    assert rules.failure_of(200) is None and rules.failure_of(302) is None
    assert rules.failure_of(404) == ("failed", "HTTP 404 (as recorded)")
    assert rules.failure_of(403) == ("unconfirmed", "HTTP 403 (as recorded)")
    assert rules.parse_http_head(b"HTTP/1.1 200 OK\r\nContent-Type: a\r\ncontent-type: b\r\n\r\n") == (
        200,
        {"content-type": "a"},
    )
    assert rules.media_of('Text/HTML; Charset="ISO-8859-1"') == ("text/html", "ISO-8859-1")
