"""A link that looks like a page but answers with something else (tree.md §9.1): the bytes are stored
as an asset and a redirect stub at the page path leads to them; neither overwrites the other."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records

PAYLOAD = bytes(range(256)) * 64


def test_a_page_link_answering_bytes_keeps_the_bytes_and_a_stub(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text('<!DOCTYPE html><title>Home</title><a href="/report">report</a>')
    (site / "report").write_bytes(PAYLOAD)
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture([server.url], out, render=False, depth=3, delay=0, progress=False)
        url = server.url + "report"
    assert report.outcome(url).reason == "not HTML: stored as an asset"  # type: ignore[union-attr]
    records = {r.path: r for r in read_records(out)}
    assets = [r for r in records.values() if r.kind == "asset"]
    assert len(assets) == 1, records
    asset = assets[0]
    assert (out / asset.path).read_bytes() == PAYLOAD
    stubs = [r for r in records.values() if r.title == "Moved"]  # tree.md §9.1: a stub of status 200
    assert len(stubs) == 1 and stubs[0].path != asset.path
    stub_text = (out / stubs[0].path).read_text()
    assert "Moved" in stub_text
    # the stub leads to the asset, and the home page's link reaches the stub or the asset
    href = unquote(stub_text.split("url=", 1)[1].split('"', 1)[0])
    target = (out / stubs[0].path).parent / href
    assert target.resolve() == (out / asset.path).resolve()
