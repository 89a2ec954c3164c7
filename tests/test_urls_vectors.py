"""Every vector in formats/vectors/ (kage's conformance table and our deviations), table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from archiver import urls
from archiver.errors import URLError
from tests.vectors import rows


def _expect(row: dict[str, Any], call: Any) -> None:
    if "error" in row:
        with pytest.raises(URLError, match=row["error"]):
            call()
    else:
        assert call() == row["want"], row.get("note", "")


@pytest.mark.parametrize("row", rows("canonicalize.json", "seed"))
def test_parse_seed(row: dict[str, Any]) -> None:
    _expect(row, lambda: urls.parse_seed(row["in"]))


@pytest.mark.parametrize("row", rows("canonicalize.json", "resolve"))
def test_canonicalize(row: dict[str, Any]) -> None:
    _expect(row, lambda: urls.canonicalize(row["in"], row["base"]))


@pytest.mark.parametrize("row", rows("canonicalize.json", "hygiene"))
def test_dedup_key(row: dict[str, Any]) -> None:
    _expect(row, lambda: urls.dedup_key(row["in"]))


@pytest.mark.parametrize("row", rows("local_path.json", "rows"))
def test_local_path(row: dict[str, Any]) -> None:
    url = urls.canonicalize(row["url"], row["home"])
    _expect(row, lambda: urls.local_path(url, kind=row["kind"], home=row["home"]))


@pytest.mark.parametrize("row", rows("rel.json", "rows"))
def test_rel(row: dict[str, Any]) -> None:
    _expect(row, lambda: urls.rel(row["from"], row["to"]))


@pytest.mark.parametrize("row", rows("scope.json", "in_scope"))
def test_in_scope(row: dict[str, Any]) -> None:
    got = urls.in_scope(
        row["home"],
        row["url"],
        subdomains=row.get("subdomains", False),
        prefix=row.get("prefix"),
        exclude=row.get("exclude", ()),
    )
    assert got is row["want"], row.get("note", "")


@pytest.mark.parametrize("row", rows("scope.json", "registrable_domain"))
def test_registrable_domain(row: dict[str, Any]) -> None:
    assert urls.registrable_domain(row["host"]) == row["want"]


@pytest.mark.parametrize("row", rows("scope.json", "same_registrable_domain"))
def test_same_registrable_domain(row: dict[str, Any]) -> None:
    assert urls.same_site(row["home"], row["url"], subdomains=True) is row["want"]


@pytest.mark.parametrize("row", rows("scope.json", "ext"))
def test_ext(row: dict[str, Any]) -> None:
    assert urls.ext(row["url"]) == row["want"]


@pytest.mark.parametrize("row", rows("scope.json", "likely_page"))
def test_likely_page(row: dict[str, Any]) -> None:
    assert urls.likely_page(row["url"]) is row["want"]
    assert urls.guess_kind(row["url"]) == ("page" if row["want"] else "asset")


@pytest.mark.parametrize("row", rows("scope.json", "want_asset"))
def test_want_asset(row: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {"same_domain": row.get("same_domain", True)}
    if "skip" in row:
        kwargs["skip"] = frozenset(row["skip"])
    assert urls.want_asset(row["home"], row["url"], **kwargs) is row["want"]


@pytest.mark.parametrize(
    ("ref", "action"),
    [
        ("", "keep"),
        ("   ", "keep"),
        ("#top", "keep"),
        ("#", "keep"),
        ("javascript:void(0)", "keep"),
        ("JavaScript:alert(1)", "keep"),
        ("mailto:a@b.com", "keep"),
        ("tel:+123", "keep"),
        ("data:image/png;base64,xx", "keep"),
        ("blob:https://ex.com/x", "keep"),
        ("about:blank", "keep"),
        ("../a.css", "fetch"),
        ("https://ex.com/", "fetch"),
        ("//cdn.io/x", "fetch"),
        ("c:\\x", "keep"),
    ],
)
def test_ref_action(ref: str, action: str) -> None:
    assert urls.ref_action(ref) == action


def test_vectors_cover_both_sources() -> None:
    sources = {p.values[0]["source"] for f, t in _ALL_TABLES for p in rows(f, t)}
    assert sources == {"kage", "deviation"}


_ALL_TABLES = [
    ("canonicalize.json", "seed"),
    ("canonicalize.json", "resolve"),
    ("canonicalize.json", "hygiene"),
    ("local_path.json", "rows"),
    ("rel.json", "rows"),
    ("scope.json", "in_scope"),
    ("scope.json", "registrable_domain"),
    ("scope.json", "same_registrable_domain"),
    ("scope.json", "ext"),
    ("scope.json", "likely_page"),
    ("scope.json", "want_asset"),
]
