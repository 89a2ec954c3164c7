"""Compression bombs in a WARC (issue 22, point 1): the nine bombs of tests/bombs.py (512 MiB of zeros
as ``br``, ``gzip`` and ``deflate`` page, image and stylesheet) stored as sent, imported by
``capture --from-warc`` (unrendered and rendered: Chromium's requests are answered from the records
through the same decoder) and by ``pack X.warc.gz``, each in a child process whose peak RSS (VmHWM)
may rise by less than 64 MB. Every bomb ends "larger than the size cap"; the pack holds the home page
and none of them. (The import decoded in bounded steps before this change too: these hold it.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver.tree import read_records
from tests import bombs
from tests.warc.test_warc import run

LIMIT = 64 << 20
BASE = "http://bombs.test"


@pytest.fixture(scope="module")
def warc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bombs.bomb_warc(tmp_path_factory.mktemp("bombs") / "bombs.warc.gz", BASE)


def _outcomes(out: Path) -> dict[str, dict[str, str]]:
    report = json.loads((out / "_archiver" / "report.json").read_text())
    return {i["url"]: i for i in report["items"]}


@pytest.mark.parametrize("render", [False, pytest.param(True, marks=pytest.mark.browser)])
def test_capture_from_warc_stops_every_bomb_at_the_size_cap(warc: Path, tmp_path: Path, render: bool) -> None:
    out = tmp_path / "tree"
    args: list[object] = ["capture", "--from-warc", warc, "-o", out, "--asset-cap", 2 << 20]
    if not render:
        args.append("--no-render")
    code, rise, err = bombs.peak_rise(args, tmp_path / "peak.json")
    assert code == 0, err
    assert rise < LIMIT, f"the import's peak RSS rose by {rise >> 20} MiB"
    items = _outcomes(out)
    for path in bombs.bomb_paths():
        item = items[BASE + path]
        assert item["outcome"] == "skipped" and item["reason"].startswith("larger than the size cap"), item
    assert [r.path for r in read_records(out)] == ["index.html"]


def test_pack_of_a_bomb_warc_keeps_none_of_them(warc: Path, tmp_path: Path) -> None:
    packed = tmp_path / "bombs.gwtar.html"
    code, rise, err = bombs.peak_rise(
        ["pack", warc, "--format", "gwtar", "-o", packed], tmp_path / "peak.json"
    )
    assert code == 0, err
    assert rise < LIMIT, f"the pack's peak RSS rose by {rise >> 20} MiB"
    listing = run("ls", packed)
    assert listing.returncode == 0, listing.stderr
    rows = [line.split() for line in listing.stdout.splitlines()]
    names = {row[-1] for row in rows if len(row) == 3 and row[0].isdigit()}
    assert "index.html" in names
    assert not [n for n in names if "-br" in n or "-gzip" in n or "-deflate" in n], names
