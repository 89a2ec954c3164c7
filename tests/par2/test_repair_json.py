"""``archiver repair --json`` names the damaged members of a gwtar, as ``verify --json`` does: a gwtar
packed with ``--add-fec-data``, a few bytes flipped inside one member; the JSON lists that member with
its byte range and the damaged slices, also when it cannot be repaired (issue 15)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from archiver import cli, gwtar

from .conftest import sha256


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("repair-json")
    tree = folder / "tree"
    (tree / "media").mkdir(parents=True)
    (tree / "index.html").write_text('<!DOCTYPE html><title>R</title><img src="media/a.png">')
    (tree / "about.html").write_text("<!DOCTYPE html><title>About</title><p>" + "about " * 3000)
    (tree / "media" / "a.png").write_bytes(random.Random(3).randbytes(150_000))
    out = folder / "site.gwtar.html"
    assert cli.main(["pack", str(tree), "--format", "gwtar", "-o", str(out), "--add-fec-data"]) == 0
    return out


def _damage(src: Path, dst: Path, member: str) -> tuple[int, int]:
    data = bytearray(src.read_bytes())
    with gwtar.open(src) as g:
        m = next(x for x in g.members if x.path == member)
    for at in (m.offset + 10, m.offset + m.size // 2):
        data[at] ^= 0xFF
    dst.write_bytes(bytes(data))
    return m.offset, m.end


def test_repair_json_names_the_damaged_member(
    packed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gwtar.html"
    start, end = _damage(packed, bad, "about.html")
    capsys.readouterr()
    assert cli.main(["verify", "--json", str(bad)]) == 1
    verified = json.loads(capsys.readouterr().out)["files"][0]
    assert {p["member"] for p in verified["problems"]} >= {"about.html"}
    fixed = tmp_path / "fixed.gwtar.html"
    assert cli.main(["repair", "--json", "-o", str(fixed), str(bad)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "repaired"
    named = doc["damaged_members"]
    assert [d["member"] for d in named] == ["about.html"]
    assert (named[0]["offset"], named[0]["end"]) == (start, end)
    assert named[0]["slices"] and all(isinstance(i, int) for i in named[0]["slices"])
    by_index = {s["index"]: s for s in doc["report"]["damaged_slices"]}
    assert set(named[0]["slices"]) == set(by_index)
    # a slice is PAR2's unit: it may also hold the end of the member before (here media/a.png), which
    # is intact (its SHA-256 matches) and so not named
    assert all("about.html" in s["members"] for s in by_index.values())
    # the FEC report's own list is what the damaged slices overlap (slice geometry, no hashing)
    assert "about.html" in doc["report"]["damaged_members"]
    assert sha256(fixed) == sha256(packed)


def test_unrepairable_json_names_it_too(
    packed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.gwtar.html"
    _damage(packed, bad, "media/a.png")
    capsys.readouterr()
    assert cli.main(["repair", "--json", "-o", str(tmp_path / "out.gwtar.html"), str(bad)]) == 0
    assert [d["member"] for d in json.loads(capsys.readouterr().out)["damaged_members"]] == ["media/a.png"]
    # far beyond the redundancy: not repairable, and the JSON still says where the damage is
    data = bytearray(packed.read_bytes())
    with gwtar.open(packed) as g:
        m = next(x for x in g.members if x.path == "media/a.png")
    data[m.offset : m.offset + 120_000] = bytes(120_000)
    worse = tmp_path / "worse.gwtar.html"
    worse.write_bytes(bytes(data))
    assert cli.main(["repair", "--json", str(worse)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["status"] == "unrepairable"
    assert [d["member"] for d in doc["damaged_members"]] == ["media/a.png"]
    assert worse.read_bytes() == bytes(data)
