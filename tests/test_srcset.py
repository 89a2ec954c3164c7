"""srcset by the WHATWG candidate rules: commas inside URLs belong to the URL."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.srcset import Candidate, parse, rewrite, serialize, urls

CASES = [
    # the fixture's gallery: commas inside the URLs, spaces after the separating commas
    (
        "/img/w_300,c_fill/photo.jpg 300w, /img/w_600,c_fill/photo.jpg 600w, "
        "/img/w_1200,c_fill/photo.jpg 1200w",
        [
            ("/img/w_300,c_fill/photo.jpg", "300w"),
            ("/img/w_600,c_fill/photo.jpg", "600w"),
            ("/img/w_1200,c_fill/photo.jpg", "1200w"),
        ],
    ),
    # the blog post: no space after a separating comma
    (
        "/img/w_600,c_fill/photo.jpg 600w,/img/w_1200,c_fill/photo.jpg 1200w",
        [("/img/w_600,c_fill/photo.jpg", "600w"), ("/img/w_1200,c_fill/photo.jpg", "1200w")],
    ),
    # a descriptor-less candidate followed by a comma: the comma ends the URL
    (
        "/img/lazy/deferred.png, /img/lazy/deferred@2x.png 2x",
        [("/img/lazy/deferred.png", ""), ("/img/lazy/deferred@2x.png", "2x")],
    ),
    ("a.png", [("a.png", "")]),
    ("  a.png   1x  ,\n b.png\t2x ", [("a.png", "1x"), ("b.png", "2x")]),
    ("a.png,,, b.png", [("a.png", ""), ("b.png", "")]),
    ("", []),
    (" , , ", []),
    # a comma inside parentheses in a descriptor does not split
    ("a.png 100w (x, y), b.png 2x", [("a.png", "100w (x, y)"), ("b.png", "2x")]),
    # Cloudinary-style transformation with many commas
    (
        "https://res.cloudinary.com/demo/image/upload/w_300,c_fill,g_auto/a.jpg 300w",
        [("https://res.cloudinary.com/demo/image/upload/w_300,c_fill,g_auto/a.jpg", "300w")],
    ),
]


@pytest.mark.parametrize(("value", "expected"), CASES, ids=[c[0][:40] or "empty" for c in CASES])
def test_parse(value: str, expected: list[tuple[str, str]]) -> None:
    assert [(c.url, c.descriptors) for c in parse(value)] == expected


def test_naive_comma_split_would_have_broken_the_fixture() -> None:
    value = "/img/w_300,c_fill/photo.jpg 300w, /img/w_600,c_fill/photo.jpg 600w"
    assert len(value.split(",")) == 4  # what kage does: four pieces, two bogus URLs
    assert len(parse(value)) == 2


def test_rewrite_changes_only_urls() -> None:
    value = "/img/w_600,c_fill/photo.jpg 600w,/img/w_1200,c_fill/photo.jpg 1200w"
    out = rewrite(value, lambda url: "local/" + url.lstrip("/"))
    assert out == "local/img/w_600,c_fill/photo.jpg 600w, local/img/w_1200,c_fill/photo.jpg 1200w"


def test_serialize_escapes_commas_at_the_edges() -> None:
    out = serialize([Candidate("a,", "1x"), Candidate(",b", "")])
    assert out == "a%2C 1x, %2Cb"
    assert [c.url for c in parse(out)] == ["a%2C", "%2Cb"]


_url = st.text(alphabet="ab/,.:%?#()_-é1", min_size=1, max_size=12).filter(
    lambda u: not u.startswith(",") and not u.endswith(",")
)
_desc = st.sampled_from(["", "1x", "2x", "300w", "1.5x"])


@settings(max_examples=200)
@given(st.lists(st.tuples(_url, _desc), max_size=6))
def test_serialize_then_parse_round_trips(items: list[tuple[str, str]]) -> None:
    candidates = [Candidate(u, d) for u, d in items]
    assert parse(serialize(candidates)) == candidates


@pytest.mark.parametrize(("value", "expected"), CASES, ids=[c[0][:40] or "empty" for c in CASES])
def test_urls(value: str, expected: list[tuple[str, str]]) -> None:
    assert urls(value) == [url for url, _ in expected]
