"""Issue 5's acceptance through the command line, on a real gwtar packed with ``--add-fec-data``:
``archiver verify`` names the damaged members and exits 1 (0 when intact); ``archiver repair`` gives
back the file byte for byte after random flips, a zeroed 64 KiB run and damage inside the FEC tail,
and beyond the redundancy exits 1 with one line and leaves the input as it was."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from archiver import cli, gwtar
from archiver.par2 import plan
from archiver.par2.layout import tail_layout
from archiver.par2.packets import TYPE_MAIN, TYPE_RECVSLIC

from .conftest import flip, random_offsets, sha256, zero


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """Two pages and two media files, packed by ``archiver pack --add-fec-data``: (path,
    totalArchiveSize, sha256 as written)."""
    folder = tmp_path_factory.mktemp("cli-fec")
    tree = folder / "tree"
    (tree / "media").mkdir(parents=True)
    rnd = random.Random(5)
    (tree / "index.html").write_text(
        '<!DOCTYPE html><title>FEC</title><img src="media/small.png"><a href="about.html">about</a>'
    )
    (tree / "about.html").write_text("<!DOCTYPE html><title>About</title><p>about</p>")
    (tree / "media" / "big.bin").write_bytes(rnd.randbytes(700_000))
    (tree / "media" / "small.png").write_bytes(rnd.randbytes(200_000))
    out = folder / "site.gwtar.html"
    assert cli.main(["pack", str(tree), "--format", "gwtar", "-o", str(out), "--add-fec-data"]) == 0
    with gwtar.open(out) as g:
        total = g.total_archive_size
        assert g.trailer_size > 0
    return out, total, sha256(out)


@pytest.fixture
def fecd(packed: tuple[Path, int, str], tmp_path: Path) -> tuple[Path, int, str]:
    src, total, written = packed
    path = tmp_path / src.name
    shutil.copyfile(src, path)
    return path, total, written


def _span(path: Path, member: str) -> tuple[int, int]:
    with gwtar.open(path) as g:
        m = next(m for m in g.members if m.path == member)
        return m.offset, m.offset + m.size


def _verify(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["verify", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _repair(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = cli.main(["repair", str(path)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_intact_verifies_clean_and_needs_no_repair(
    fecd: tuple[Path, int, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _, written = fecd
    assert _verify(path, capsys)[0] == 0
    code, text = _repair(path, capsys)
    assert code == 0 and "intact" in text and sha256(path) == written


def test_random_flips(fecd: tuple[Path, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, total, written = fecd
    start, end = _span(path, "media/big.bin")
    flip(path, random_offsets(start, end, 16) + random_offsets(0, total, 16, seed=3))
    code, text = _verify(path, capsys)
    assert code == 1 and ": in media/big.bin" in text and "FEC: damaged, repairable" in text, text
    code, text = _repair(path, capsys)
    assert code == 0 and text.count("\n") == 1 and "repaired" in text, text
    assert sha256(path) == written


def test_a_zeroed_64k_run(fecd: tuple[Path, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, _, written = fecd
    start, _ = _span(path, "media/small.png")
    zero(path, start + 1000, 65536)
    code, text = _verify(path, capsys)
    # the damaged slices are named with the members they overlap: small.png's, and a neighbour's when
    # a slice boundary falls before small.png starts (it moves with the header's size)
    damaged = next(line for line in text.splitlines() if "FEC: slices" in line)
    assert code == 1 and "media/small.png" in damaged.split(": in ", 1)[1], text
    assert "FEC: damaged, repairable" in text, text
    assert _repair(path, capsys)[0] == 0 and sha256(path) == written


def test_damage_in_the_tail(fecd: tuple[Path, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, total, written = fecd
    p = plan(total)
    at = {
        (s.ptype, s.exponent): total + s.offset for s in tail_layout(p, path.name).slots if s.kind == "packet"
    }
    flip(path, [at[(TYPE_RECVSLIC, 0)] + 100, at[(TYPE_MAIN, None)] + 70, total + 100])
    code, text = _verify(path, capsys)
    assert code == 1 and "FEC" in text, text
    code, text = _repair(path, capsys)
    assert code == 0 and "FEC data rebuilt" in text, text
    assert sha256(path) == written


def test_beyond_the_redundancy(fecd: tuple[Path, int, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, total, _ = fecd
    p = plan(total)
    assert p.slice_count > p.recovery_count + 3
    flip(path, [i * p.slice_size + p.slice_size // 2 for i in range(1, p.recovery_count + 3)])
    damaged = sha256(path)
    code, text = _verify(path, capsys)
    assert code == 1 and "not repairable" in text, text
    code, text = _repair(path, capsys)
    assert code == 1 and text.count("\n") == 1 and "not repairable" in text, text
    assert sha256(path) == damaged and [q.name for q in path.parent.iterdir()] == [path.name]
