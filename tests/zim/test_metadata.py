"""archiver.zim.metadata against formats/vectors/zim/metadata.json and the openZIM rules."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.errors import UsageError
from archiver.zim import icon
from archiver.zim.metadata import (
    ZimMetadata,
    canonical_key,
    check,
    check_illustration,
    default_name,
    graphemes,
    index_language,
    iso639_3,
    merge_tags,
    png_size,
    truncate,
)

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "formats" / "vectors" / "zim" / "metadata.json").read_text("utf-8")
)
PNG = icon.generated_png("test")
BASE = {
    "Name": "ex.test_en_all",
    "Title": "Example",
    "Description": "An example",
    "Language": "eng",
    "Creator": "ex.test",
    "Publisher": "archiver",
    "Date": "2026-11-29",
}


@pytest.mark.parametrize("row", VECTORS["iso639_3"], ids=lambda r: repr(r["in"]))
def test_iso639_3(row: dict) -> None:
    assert iso639_3(row["in"]) == row["want"]


@pytest.mark.parametrize("row", VECTORS["graphemes"], ids=lambda r: r.get("note", r["in"]))
def test_graphemes(row: dict) -> None:
    assert graphemes(row["in"]) == row["want"]


@pytest.mark.parametrize("row", VECTORS["check"], ids=lambda r: r.get("note") or json.dumps(r["values"]))
def test_check(row: dict) -> None:
    values = row["values"] if row.get("alone") else {**BASE, **row["values"]}
    problems = [str(p) for p in check(values, illustration=PNG)]
    assert len(problems) == len(row["want"]), problems
    for want in row["want"]:
        assert any(want in p for p in problems), (want, problems)


def test_illustration_rules() -> None:
    assert check_illustration(PNG) == []
    assert png_size(PNG) == (48, 48)
    big = icon._png(64, 32, b"".join(b"\0" + b"\0\0\0" * 64 for _ in range(32)))
    assert check_illustration(big) == ["is 64×32 pixels, not 48×48"]
    assert check_illustration(b"GIF89a....") == ["is not a PNG image"]
    assert [str(p) for p in check(BASE)] == ["Illustration_48x48@1: is missing (mandatory)"]


def test_truncate_counts_graphemes_and_marks_the_cut() -> None:
    assert truncate("short", 30) == "short"
    cut = truncate("The Acme Field Guide to Everything Outdoors", 30)
    assert graphemes(cut) == 30 and cut.endswith("…")
    accented = "e\u0301" * 40
    assert graphemes(truncate(accented, 30)) == 30


@settings(max_examples=300)
@given(st.text(min_size=0, max_size=80), st.integers(min_value=1, max_value=40))
def test_truncate_never_exceeds_the_limit(text: str, limit: int) -> None:
    assert graphemes(truncate(text, limit)) <= limit


def test_canonical_key_spellings() -> None:
    assert canonical_key("title") == "Title"
    assert canonical_key("long-description") == "LongDescription"
    assert canonical_key("long_description") == "LongDescription"
    assert canonical_key("flavor") == "Flavour"
    assert canonical_key("illustration") == "Illustration"
    assert canonical_key("x-mine") == "X-mine"
    with pytest.raises(UsageError, match="unknown metadata key 'colour'"):
        canonical_key("colour")
    with pytest.raises(UsageError, match="written by the packer"):
        canonical_key("Counter")


def test_zim_metadata_names_every_problem() -> None:
    with pytest.raises(UsageError) as e:
        ZimMetadata.from_mapping(
            {**BASE, "Title": "x" * 31, "Language": "en", "Description": "a\nb"},
            date=dt.date(2026, 1, 1),
            illustration=PNG,
        )
    message = str(e.value)
    assert "Title: has 31 characters" in message
    assert "Language: 'en' is not ISO 639-3" in message
    assert "Description: contains a line break" in message
    ok = ZimMetadata.from_mapping({**BASE, "X-Mine": "1"}, date=dt.date(2026, 1, 1), illustration=PNG)
    assert ok.text()["Date"] == "2026-11-29" and ok.text()["X-Mine"] == "1"
    with pytest.raises(UsageError, match="not a custom key"):
        ZimMetadata(**{**ok.__dict__, "extra": {"Colour": "red"}})


def test_defaults_helpers() -> None:
    assert default_name("www.Example.com", "eng") == "example.com_en_all"
    assert default_name("127.0.0.1:8080", "yue") == "127.0.0.1_yue_all"
    assert default_name("ex.test", "eng,fra") == "ex.test_mul_all"
    assert (
        merge_tags("wiki;_pictures:no", {"_ftindex": "yes", "_pictures": "yes"})
        == "wiki;_pictures:no;_ftindex:yes"
    )
    assert merge_tags(None, {"_videos": "no"}) == "_videos:no"
    assert index_language("und") == "mul" and index_language("fra,eng") == "fra"


def test_generated_icon_is_deterministic_and_distinct() -> None:
    a, b = icon.generated_png("one"), icon.generated_png("two")
    assert a == icon.generated_png("one") and a != b
    assert png_size(a) == (48, 48)


def test_scaled_icon_from_the_fixture_favicon() -> None:
    ico = (Path(__file__).resolve().parents[2] / "testdata" / "site" / "favicon.ico").read_bytes()
    png = icon.scaled_png(ico)
    assert png is not None and png_size(png) == (48, 48)
    assert icon.scaled_png(b"<svg xmlns='http://www.w3.org/2000/svg'/>") is None
