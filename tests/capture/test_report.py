"""The report: the progress line on a terminal, the text summary, the JSON form, redaction."""

from __future__ import annotations

import io
import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.capture import capture, capture_main
from archiver.capture.report import CaptureReport, Item, report_line
from archiver.fixture import FixtureConfig, FixtureServer

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head><body>
<a href="/b.html?token=s3cret&amp;page=2">next</a> <img src="/missing.png"></body></html>"""


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE.format(title="A"))
    (site / "b.html").write_text(PAGE.format(title="B"))
    return site


def test_progress_line_summary_and_json(
    tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FixtureServer(FixtureConfig(root=tiny, robots=None)) as server:
        report = capture([server.url], tmp_path / "a", render=False, delay=0, progress=True)
        err = capsys.readouterr().err
        assert "pages 2 done, 0 queued" in err and "pages/s" in err and "ETA" in err
        text = report.summary()
        assert text.startswith("captured 2 pages and 0 assets") and "failed" in text
        assert "missing.png" in text and "HTTP 404" in text
        out = io.StringIO()
        assert (
            capture_main([server.url], tmp_path / "b", render=False, delay=0, as_json=True, stdout=out) == 0
        )
    data = json.loads(out.getvalue())
    assert data["complete"] is True and data["pages"] == 2 and data["counts"]["failed"] == 1
    assert {i["outcome"] for i in data["items"]} == {"ok", "failed"}


def test_secret_query_values_never_reach_the_manifest_or_report(tiny: Path, tmp_path: Path) -> None:
    with FixtureServer(FixtureConfig(root=tiny, robots=None)) as server:
        report = capture([server.url], tmp_path / "t", render=False, delay=0, progress=False)
    manifest = (tmp_path / "t/_archiver/manifest.jsonl").read_text()
    summary = json.dumps(report.to_json()) + report.summary()
    assert "s3cret" not in manifest and "s3cret" not in summary
    assert "token=REDACTED&page=2" in manifest and "token=REDACTED&page=2" in summary


def _shown(item: Item) -> dict[str, object]:
    """The fields of ``item`` a report shows, by the struct's own field list (every field that is
    neither None nor empty): what Item.to_json spells out field by field must not fall behind it."""
    values = {f.name: getattr(item, f.name) for f in msgspec.structs.fields(Item)}
    return {name: v for name, v in values.items() if v is not None and v != ""}


@pytest.mark.parametrize(
    "item",
    [
        Item("https://a.test/", "page", "ok"),
        Item("https://a.test/x", "asset", "failed", "timed out", None, None),
        Item("https://a.test/y", "page", "ok", "", 0, "y/index.html"),  # status 0 is shown, "" is not
        Item("https://a.test/z", "page", "skipped", "beyond the depth limit", 404, "z.html"),
        Item("", "", "", "", None, ""),
    ],
)
def test_an_items_json_shows_every_set_field(item: Item) -> None:
    assert item.to_json() == _shown(item)


def test_an_items_json_names_every_field_of_the_struct() -> None:
    # every field set: a field added to Item but not to to_json is missing here
    values = {str: "x", int: 7}
    fields = msgspec.structs.fields(Item)
    full = Item(**{f.name: values[int if "int" in str(f.type) else str] for f in fields})
    assert set(full.to_json()) == {f.name for f in fields}


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)  # any character UTF-8 can write


@given(
    st.lists(st.builds(Item, _TEXT, _TEXT, _TEXT, _TEXT, st.none() | st.integers(-1, 10**12),
                       st.none() | _TEXT), max_size=4),
    st.floats(min_value=0, max_value=1e20) | st.sampled_from([0.0, 1e-05, 0.0004, 1e16, 12.345]),
    st.dictionaries(_TEXT, st.integers(0, 10**6), max_size=3),
    st.lists(_TEXT, max_size=2),
    _TEXT,
)  # fmt: skip
def test_the_json_line_is_the_standard_librarys(
    items: list[Item], elapsed: float, counts: dict[str, int], notes: list[str], out: str
) -> None:
    """``capture --json`` prints what ``json.dumps(report.to_json(), ensure_ascii=False)`` printed, to
    the byte: quotes, backslashes, control and non-ASCII characters, every elapsed time (an exponent's
    too), counts, notes."""
    report = CaptureReport(out=out, home=out[::-1], complete=bool(notes), elapsed=elapsed, counts=counts,
                           items=items, notes=notes, unchanged=len(items))  # fmt: skip
    assert report_line(report) == json.dumps(report.to_json(), ensure_ascii=False)
