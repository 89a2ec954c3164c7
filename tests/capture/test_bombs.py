"""Compression bombs against a live capture (issue 22, point 1): a page, an image and a stylesheet
each sent as 512 MiB of zeros coded ``br``, ``gzip`` and ``deflate`` (tests/bombs.py, a loopback
server of this test). The capture runs in a child process whose peak RSS (VmHWM, /proc) may rise by
less than 64 MB, without rendering, rendered in Chromium (its requests go through the same fetcher)
and recording WARC; every bomb ends as the recorded outcome "larger than the size cap".

Before the fix the fetcher let httpx decode a whole received chunk at once (``aiter_bytes``): the
809 bytes of the ``br`` bomb became 512 MiB in one piece, and the capture's peak rose by 1 GB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.tree import read_records
from tests import bombs

LIMIT = 64 << 20
ASSET_CAP = 2 << 20  # pages have their own cap, 64 MiB (archiver/capture/responses.py PAGE_CAP)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with bombs.bomb_server() as url:
        yield url


def _check(out: Path, url: str, code: int, rise: int, err: str) -> None:
    assert code == 0, err
    assert rise < LIMIT, f"the capture's peak RSS rose by {rise >> 20} MiB"
    report = json.loads((out / "_archiver" / "report.json").read_text())
    items = {i["url"]: i for i in report["items"]}
    for path in bombs.bomb_paths():
        item = items[url.rstrip("/") + path]
        assert item["outcome"] == "skipped", item
        assert item["reason"].startswith("larger than the size cap"), item
    assert items[url]["outcome"] == "ok"
    assert [r.path for r in read_records(out)] == ["index.html"]


@pytest.mark.parametrize("mode", ["no-render", "warc"])
def test_bombs_stop_at_the_size_cap_unrendered(server: str, tmp_path: Path, mode: str) -> None:
    out = tmp_path / "tree"
    args: list[object] = ["capture", server, "-o", out, "--no-render", "--delay", "0"]
    args += ["--asset-cap", ASSET_CAP]
    if mode == "warc":  # the recorder reads the body as received and decodes it for the crawler
        args.append("--warc")
    code, rise, err = bombs.peak_rise(args, tmp_path / "peak.json")
    _check(out, server, code, rise, err)


@pytest.mark.browser
def test_bombs_stop_at_the_size_cap_rendered(server: str, tmp_path: Path) -> None:
    out = tmp_path / "tree"
    args: list[object] = ["capture", server, "-o", out, "--delay", "0", "--asset-cap", ASSET_CAP]
    code, rise, err = bombs.peak_rise(args, tmp_path / "peak.json")
    _check(out, server, code, rise, err)
