"""archiver.serve.ranges: the pure Range / conditional decision, by example and by property."""

from __future__ import annotations

import ast
import email.utils
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.serve import ranges
from archiver.serve.ranges import (
    MAX_RANGES,
    decide,
    format_http_date,
    multipart_layout,
    parse_http_date,
    parse_range,
    simple_range,
)

ETAG = '"65e3a1f0-2710"'
LM = 1_700_000_000
NOW = LM + 3600


def test_module_is_pure() -> None:
    source = Path(ranges.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    assert "Pure: no network, no filesystem, no clock" in (ast.get_docstring(tree) or "")
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"open", "exec", "eval", "__import__"}
    assert imported <= {"__future__", "dataclasses", "datetime", "typing"}
    assert "now(" not in source and "time.time" not in source


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("bytes=0-99", [(0, 100)]),
        ("bytes=-100", [(9900, 10000)]),
        ("bytes=9990-", [(9990, 10000)]),
        ("bytes=9000-20000", [(9000, 10000)]),
        ("bytes=-20000", [(0, 10000)]),
        ("BYTES=1-1", [(1, 2)]),
        ("bytes=10000-", []),
        ("bytes=-0", []),
        ("bytes=0-1,3-4", [(0, 2), (3, 5)]),
        ("bytes=3-4,0-1", [(3, 5), (0, 2)]),
        ("bytes=0-5,3-9", [(0, 10)]),
        ("bytes=3-9,0-5,20-29", [(0, 10), (20, 30)]),
        ("bytes=0-1,2-3", [(0, 4)]),
        ("bytes=,0-1,", [(0, 2)]),
        ("bytes=0-" + "9" * 40, [(0, 10000)]),
        ("bytes=" + "0" * 30 + "5-6", [(5, 7)]),
        ("items=0-1", "ignore"),
        ("0-1", "ignore"),
        ("=0-1", "ignore"),
        ("bytes=5-4", "invalid"),
        ("bytes=abc", "invalid"),
        ("bytes=", "invalid"),
        ("bytes=1-2-3", "invalid"),
        ("bytes=+1-2", "invalid"),
        ("bytes=١-٢", "invalid"),  # Arabic-Indic digits are not DIGIT
        ("bytes=0-1;x", "invalid"),
    ],
)
def test_parse_range(value: str, want: object) -> None:
    assert parse_range(value, 10000) == want


def test_range_cap() -> None:
    at_cap = "bytes=" + ",".join(f"{2 * i}-{2 * i}" for i in range(MAX_RANGES))
    assert len(parse_range(at_cap, 10000)) == MAX_RANGES
    assert parse_range(at_cap + ",500-500", 10000) == "ignore"
    assert parse_range("bytes=0-0,2-2,4-4", 10000, max_ranges=2) == "ignore"


def test_zero_length_representation() -> None:
    assert parse_range("bytes=0-", 0) == []
    assert parse_range("bytes=-5", 0) == []
    assert decide("GET", 0, range_="bytes=0-").status == 416
    assert decide("GET", 0).ranges == ((0, 0),)


def test_decisions() -> None:
    v = {"etag": ETAG, "last_modified": LM, "now": NOW}
    lm = format_http_date(LM)
    assert decide("GET", 100, **v) == ranges.Decision(200, ((0, 100),))
    assert decide("HEAD", 100, range_="bytes=0-9", **v).status == 200
    assert decide("GET", 100, range_="bytes=0-9", if_range=ETAG, **v).ranges == ((0, 10),)
    assert decide("GET", 100, range_="bytes=0-9", if_range="W/" + ETAG, **v).status == 200
    assert decide("GET", 100, range_="bytes=0-9", if_range=lm, **v).status == 206
    # A Last-Modified within the last second is weak: a date If-Range must not match it.
    assert (
        decide("GET", 100, range_="bytes=0-9", if_range=lm, etag=ETAG, last_modified=LM, now=LM + 0.5).status
        == 200
    )
    assert decide("GET", 100, if_none_match=f'"x", W/{ETAG}', **v).status == 304
    assert decide("GET", 100, if_none_match='"x"', if_modified_since=lm, **v).status == 200
    assert decide("GET", 100, if_modified_since=lm, **v).status == 304
    assert decide("GET", 100, if_match='"x"', range_="bytes=0-1", **v).status == 412
    assert decide("GET", 100, if_match=f"W/{ETAG}", **v).status == 412  # strong comparison
    assert decide("GET", 100, if_unmodified_since=format_http_date(LM - 1), **v).status == 412
    assert decide("GET", 100, if_unmodified_since="garbage", **v).status == 200
    assert decide("GET", 100, range_="bytes=200-", if_range='"old"', **v).status == 200
    assert decide("GET", 100, range_="bytes=5-4", **v).status == 416


@pytest.mark.parametrize(
    "text",
    [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ],
)
def test_http_date_forms(text: str) -> None:
    assert parse_http_date(text) == 784111777


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 25:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 0000 08:49:37 GMT",
    ],
)
def test_http_date_rejects(text: str) -> None:
    assert parse_http_date(text) is None


def test_multipart_layout_length() -> None:
    heads, tail, total = multipart_layout([(0, 2), (5, 9)], 10, "text/plain", "B")
    assert heads[0] == b"\r\n--B\r\nContent-Type: text/plain\r\nContent-Range: bytes 0-1/10\r\n\r\n"
    assert tail == b"\r\n--B--\r\n"
    assert total == sum(map(len, heads)) + 2 + 4 + len(tail)


# ------------------------------------------------------------------------------------ properties

_spec = st.one_of(
    st.tuples(st.integers(0, 300), st.none()).map(lambda t: f"{t[0]}-"),
    st.tuples(st.integers(0, 300), st.integers(0, 300)).map(lambda t: f"{min(t)}-{max(t)}"),
    st.integers(0, 300).map(lambda n: f"-{n}"),
)
CONTENT = bytes(range(256)) + bytes(range(255, -1, -1))


def _requested(spec: str, size: int) -> tuple[int, int] | None:
    """The half-open range one spec asks for, clamped (None when it selects nothing)."""
    first, _, last = spec.partition("-")
    if not first:
        n = int(last)
        return (max(size - n, 0), size) if n and size else None
    a, b = int(first), (min(int(last) + 1, size) if last else size)
    return (a, b) if a < b else None


def _union(pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, merged intervals covering the same bytes (touching ones joined)."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(pieces):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


@settings(max_examples=1000)
@given(value=st.text(max_size=60), size=st.integers(0, 10**6), method=st.sampled_from(["GET", "HEAD"]))
def test_any_header_gives_a_valid_decision(value: str, size: int, method: str) -> None:
    for header in (value, "bytes=" + value):
        d = decide(method, size, etag=ETAG, last_modified=LM, now=NOW, range_=header, if_range=value or None)
        assert d.status in (200, 206, 416)
        covered = 0
        for start, stop in d.ranges:
            assert 0 <= start < stop <= size or (d.status == 200 and (start, stop) == (0, size))
            covered += stop - start
        assert covered <= size
        if d.status == 206:
            assert d.ranges


@settings(max_examples=1000)
@given(specs=st.lists(_spec, min_size=1, max_size=8), size=st.integers(0, len(CONTENT)))
def test_satisfiable_ranges_are_the_requested_bytes(specs: list[str], size: int) -> None:
    content = CONTENT[:size]
    result = parse_range("bytes=" + ",".join(specs), size)
    assert isinstance(result, list)
    wanted = [r for r in (_requested(s, size) for s in specs) if r]
    for start, stop in result:
        assert 0 <= start < stop <= size
    # Exactly the requested bytes, none twice; the multipart body is those bytes of the content.
    assert _union(result) == _union(wanted)
    assert sum(b - a for a, b in result) == sum(b - a for a, b in _union(result))
    heads, tail, total = multipart_layout(result, size, "application/octet-stream", "B")
    body = b"".join(h + content[a:b] for h, (a, b) in zip(heads, result, strict=True)) + tail
    assert len(body) == total
    for head, (a, b) in zip(heads, result, strict=True):
        at = body.index(head) + len(head)
        assert body[at : at + b - a] == CONTENT[a:b]
    merged = _union(wanted)
    if len(merged) == len(wanted):  # nothing overlapped or touched: exactly what was asked, in order
        assert result == wanted
    d = decide("GET", size, range_="bytes=" + ",".join(specs))
    assert d.status == (206 if wanted else 416)


@settings(max_examples=1000)
@given(count=st.integers(1, MAX_RANGES), seed=st.integers(0, 2**32), size=st.integers(1, 10**6))
def test_overlap_never_amplifies(count: int, seed: int, size: int) -> None:
    # Many overlapping open ranges (the CVE-2025-62727 shape): the answer is at most the file.
    rng = random.Random(seed)
    starts = [rng.randrange(0, 2 * size) for _ in range(count)]
    d = decide("GET", size, range_="bytes=" + ",".join(f"{s}-" for s in starts))
    assert sum(b - a for a, b in d.ranges) <= size
    if any(s < size for s in starts):
        assert d.ranges == ((min(starts), size),)


@settings(max_examples=1000)
@given(st.integers(0, 253402300799))
def test_http_date_round_trip(seconds: int) -> None:
    text = format_http_date(seconds)
    assert text == email.utils.formatdate(seconds, usegmt=True)
    assert parse_http_date(text) == seconds


@settings(max_examples=1000)
@given(
    value=st.one_of(
        st.binary(max_size=30),
        st.tuples(st.integers(0, 2000), st.one_of(st.none(), st.integers(0, 2000))).map(
            lambda t: f"bytes={t[0]}-{'' if t[1] is None else t[1]}".encode()
        ),
    ),
    size=st.integers(0, 1500),
)
def test_simple_range_agrees_with_decide(value: bytes, size: int) -> None:
    fast = simple_range(value, size)
    if fast is not None:
        assert decide("GET", size, range_=value.decode("latin-1")) == ranges.Decision(206, (fast,))
