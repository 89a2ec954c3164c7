"""Round trips between the tree and WARC/WACZ (formats/warc.md §8.7): a capture recorded with
``--warc``, exported as a WACZ and imported back gives the same tree (every file byte for byte, the
same manifest records apart from the fields the spec names), with no network at all; and the gwtar
packed straight from our WACZ holds the same members as the gwtar of the original tree."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from archiver import cli, gwtar
from archiver.capture import capture
from archiver.fixture import FixtureServer
from tests.warc.conftest import no_network

#: The manifest fields that may differ after a round trip (formats/warc.md §8.7).
RECORD_METADATA = ("fetched", "warc")
PACK_METADATA = (*RECORD_METADATA, "depth", "referrer")


def _files(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        private = rel.startswith(("_archiver/warc/", "_archiver/crawl.sqlite", "_archiver/report"))
        if p.is_file() and not private and rel != "_archiver/manifest.jsonl":
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _manifest(root: Path, drop: tuple[str, ...]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(x) for x in (root / "_archiver/manifest.jsonl").read_text().splitlines()]
    header = {k: v for k, v in lines[0].items() if k != "created"}
    header["options"] = {k: v for k, v in header["options"].items() if k != "warc"}
    return header, [{k: v for k, v in r.items() if k not in drop} for r in lines[1:]]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    work = tmp_path_factory.mktemp("roundtrip")
    with FixtureServer() as server:
        capture([server.url], work / "t1", render=False, depth=10, delay=0, warc=True, progress=False)
        url = server.url
    assert cli.main(["pack", str(work / "t1"), "--format", "wacz", "-o", str(work / "w.wacz")]) == 0
    return url, work / "t1", work / "w.wacz"


def test_tree_to_wacz_to_tree_gives_the_same_tree(recorded: tuple[str, Path, Path], tmp_path: Path) -> None:
    url, t1, wacz = recorded
    t2 = tmp_path / "t2"
    with no_network() as tried:  # the fixture server is gone too: everything comes from the records
        code = cli.main(["capture", "--from-warc", str(wacz), url, "-o", str(t2), "--no-render",
                         "--depth", "10", "--delay", "0"])  # fmt: skip
    assert code == 0 and tried == []
    assert _files(t2) == _files(t1)
    assert _manifest(t2, RECORD_METADATA) == _manifest(t1, RECORD_METADATA)
    # what an import stores carries the WARC-Date of its record, not the time of the import
    records = [json.loads(x) for x in (t2 / "_archiver/manifest.jsonl").read_text().splitlines()[1:]]
    first = [json.loads(x) for x in (t1 / "_archiver/manifest.jsonl").read_text().splitlines()[1:]]
    same = sum(a.get("fetched") == b.get("fetched") for a, b in zip(records, first, strict=True))
    assert same >= len(records) - 3


def test_our_wacz_to_gwtar_equals_the_tree_to_gwtar(recorded: tuple[str, Path, Path], tmp_path: Path) -> None:
    _url, t1, wacz = recorded
    g1, g2 = tmp_path / "tree.gwtar.html", tmp_path / "wacz.gwtar.html"
    assert cli.main(["pack", str(t1), "--format", "gwtar", "-o", str(g1)]) == 0
    with no_network() as tried:
        assert cli.main(["pack", str(wacz), "--format", "gwtar", "--no-render", "-o", str(g2)]) == 0
    assert tried == []
    assert gwtar.verify(g2).ok
    x1, x2 = tmp_path / "x1", tmp_path / "x2"
    assert cli.main(["extract", str(g1), "-o", str(x1)]) == 0
    assert cli.main(["extract", str(g2), "-o", str(x2)]) == 0
    assert _files(x2) == _files(x1)
    h1, r1 = _manifest(x1, PACK_METADATA)
    h2, r2 = _manifest(x2, PACK_METADATA)
    assert r2 == r1
    assert h2["home"] == h1["home"]
    # pack imports at any depth (§8.6): the header says so, the rest of the options agree
    assert {**h2["options"], "depth": None} == {**h1["options"], "depth": None}
