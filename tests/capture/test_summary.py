"""The capture summary: counts by reason with a few examples, not a line per URL; a resumed run's
share beside the totals; the full list in the private report file (formats/tree.md §9.3)."""

from __future__ import annotations

import json
from pathlib import Path

from archiver import tree
from archiver.capture import capture
from archiver.capture.crawl import CaptureReport, Item
from archiver.fixture import FixtureServer
from archiver.gwtar import pack


def test_a_thousand_skips_are_one_group_with_examples() -> None:
    items = [
        Item(f"https://ex.com/p{i}", "page", "skipped", "out of scope (not under '/docs/')")
        for i in range(1676)
    ]
    items += [Item("https://ex.com/a.png", "asset", "failed", "answered 404", 404)]
    items += [
        Item(f"https://cdn{i}.com/x.js", "asset", "skipped", f"host cdn{i}.com is not allowed")
        for i in range(3)
    ]
    report = CaptureReport(out="t", home="https://ex.com/", complete=True, pages=5, assets=1, items=items,
                           counts={"skipped": 1679, "failed": 1}, run_pages=5, run_assets=1)  # fmt: skip
    lines = report.summary().splitlines()
    assert len(lines) < 15, lines
    scope = "1676 URLs: out of scope (not under '/docs/') (--scope, --include"
    assert any(scope in line for line in lines), lines
    assert sum("e.g." in line for line in lines) == 6 and any("… and 1673 more" in line for line in lines)
    assert any("https://ex.com/a.png [404]: answered 404" in line for line in lines)
    assert any(
        "3 URLs: host cdn0.com is not allowed ×1, host cdn1.com is not allowed ×1, host cdn2.com" in line
        for line in lines
    ), lines
    assert "this run" not in lines[0]


def test_a_group_names_its_real_reasons_never_a_placeholder() -> None:
    # before: "failed 9 URLs: HTTP N after N retries" (the group's pattern, digits taken out)
    u = "https://ex.com/"
    items = [Item(f"{u}a{i}", "page", "failed", "HTTP 503 after 3 retries", 503) for i in range(6)]
    items += [Item(f"{u}b{i}", "page", "failed", "HTTP 500 after 3 retries", 500) for i in range(3)]
    items += [Item(f"{u}c{i}", "page", "failed", f"HTTP 50{i} after 1 retry", 500 + i) for i in range(5)]
    text = CaptureReport(out="t", home="h", complete=True, items=items).summary()
    assert " N" not in text and "…" not in text.replace("… and", ""), text
    assert "9 URLs: HTTP 503 after 3 retries ×6, HTTP 500 after 3 retries ×3" in text, text
    assert (
        "5 URLs: HTTP 500 after 1 retry ×1, HTTP 501 after 1 retry ×1, HTTP 502 after 1 retry ×1, "
        "HTTP 503 after 1 retry ×1, 1 other reason ×1" in text
    ), text


def test_a_resumed_run_says_what_it_added(tmp_path: Path) -> None:
    report = CaptureReport(out="t", home="h", complete=True, pages=40, assets=60, run_pages=3, run_assets=1)
    assert "captured 40 pages and 60 assets" in report.summary()
    assert "(this run: 3 pages, 1 asset, 0 B)" in report.summary()
    assert report.to_json()["this_run"] == {"pages": 3, "assets": 1, "bytes": 0}
    again = CaptureReport(out="t", home="h", complete=True, pages=40, assets=60, run_pages=40, run_assets=60,
                          unchanged=97)  # fmt: skip
    assert "(this run: 40 pages, 60 assets, 0 B; 97 unchanged: answered 304" in again.summary()
    assert again.to_json()["this_run"] == {"pages": 40, "assets": 60, "bytes": 0, "unchanged": 97}


def test_the_report_file_is_written_private_and_never_packed(
    tmp_path: Path, site_server: FixtureServer
) -> None:
    out = tmp_path / "t"
    report = capture([site_server.url + "about.html"], out, render=False, delay=0, depth=1, progress=False)
    written = json.loads((out / "_archiver" / "report.json").read_text())
    assert written["pages"] == report.pages and len(written["items"]) == len(report.items) > 1
    assert tree.is_private("_archiver/report.json") and tree.is_private("_archiver/report.json.123.tmp")
    (out / "_archiver" / "report.json.999.tmp").write_text("{}")  # a killed run's leftover
    packed = pack(out, tmp_path / "t.gwtar.html")
    data = packed.path.read_bytes()
    assert b"_archiver/report.json" not in data


def test_reasons_that_name_a_setting_name_its_flag() -> None:
    items = [
        Item("https://ex.com/deep", "page", "skipped", "beyond the depth limit"),
        Item("https://ex.com/big.mp4", "asset", "skipped", "larger than the size cap (over 10 bytes)"),
        Item("https://cdn.com/x.js", "asset", "skipped", "asset on another site"),
        Item("https://ex.com/private", "page", "skipped", "disallowed by robots.txt"),
    ]
    text = CaptureReport(out="t", home="h", complete=True, items=items).summary()
    for flag in ("--depth", "--asset-cap", "--assets-any-host", "--ignore-robots"):
        assert flag in text, (flag, text)
