"""Repair: stock Debian par2 with the documented recipe, and archiver's own repair (in place and to
OUT), each giving back the file exactly as written, FEC tail included."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from archiver.errors import FormatError, UsageError
from archiver.par2 import add_fec, check, plan, repair, repair_main
from archiver.par2.engine import Engine
from archiver.par2.layout import tail_layout
from archiver.par2.packets import TYPE_FILEDESC, TYPE_MAIN, TYPE_RECVSLIC

from .conftest import Gwtarish, copy, flip, random_offsets, sha256, zero


@pytest.fixture
def fecd(gwtarish: Gwtarish) -> tuple[Gwtarish, str]:
    """A FEC'd gwtar-like file and the sha256 of the file as written."""
    add_fec(gwtarish.path, gwtarish.total)
    return gwtarish, gwtarish.sha()


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _documented_recipe() -> str:
    text = (Path(__file__).resolve().parents[2] / "formats" / "fec.md").read_text()
    section = text[text.index("### Repair by hand") :]
    return section[section.index("```sh\n") + 6 : section.index("```\n", section.index("```sh\n") + 6)]


@pytest.mark.interop
def test_stock_debian_par2_repairs_with_the_documented_recipe(fecd: tuple[Gwtarish, str]) -> None:
    """formats/fec.md "Repair by hand", run word for word with /usr/bin/par2 on PATH."""
    g, written = fecd
    flip(g.path, random_offsets(0, g.total, 32))
    recipe = _documented_recipe()
    assert recipe.startswith("f=page.gwtar.html\n") and "par2 r page.par2 damaged.gwtar.html" in recipe
    done = subprocess.run(
        ["bash", "-e", "-c", recipe],
        cwd=g.path.parent,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Repair complete." in done.stdout
    assert sha256(g.path.parent / "fix" / "restored.gwtar.html") == written


@pytest.mark.interop
def test_debian_par2_as_archivers_engine(fecd: tuple[Gwtarish, str], debian: Engine) -> None:
    g, written = fecd
    flip(g.path, random_offsets(0, g.total, 8, seed=7))
    result = repair(g.path, engine=debian)
    assert result.status == "repaired" and g.sha() == written


def test_random_flips_in_place(fecd: tuple[Gwtarish, str]) -> None:
    g, written = fecd
    flip(g.path, random_offsets(0, g.total, 32))
    before = check(g.path)
    result = repair(g.path)
    assert result.status == "repaired" and result.exit_code == 0
    assert result.repaired_slices == len(before.damaged_slices) > 0 and not result.fec_rebuilt
    assert result.message == (
        f"repaired: {len(before.damaged_slices)} damaged slices rebuilt from "
        f"{before.recovery_slices} intact recovery slices"
    )
    assert g.sha() == written
    assert _listing(g.path.parent) == ["page.gwtar.html"]  # no temp files left


def test_random_flips_to_out(fecd: tuple[Gwtarish, str], tmp_path: Path) -> None:
    g, written = fecd
    flip(g.path, random_offsets(0, g.total, 32))
    damaged = g.sha()
    out = tmp_path / "elsewhere" / "fixed.gwtar.html"
    out.parent.mkdir()
    result = repair(g.path, out)
    assert result.status == "repaired" and result.out == out
    assert sha256(out) == written and g.sha() == damaged  # the input is left as it was
    assert result.message.endswith(f"; written to {out}")


def test_a_zeroed_64k_run(fecd: tuple[Gwtarish, str]) -> None:
    g, written = fecd
    start, _ = g.span("img/big.png")
    zero(g.path, start + 12345, 65536)
    assert repair(g.path).status == "repaired" and g.sha() == written


def test_damage_inside_the_fec_tail(fecd: tuple[Gwtarish, str]) -> None:
    """Tail packets dropped by their MD5, a tar header and padding: rebuilt byte for byte."""
    g, written = fecd
    p = plan(g.total)
    slots = tail_layout(p, g.path.name).slots
    at = {
        (s.ptype, s.exponent): g.total + s.offset for s in slots if s.kind == "packet"
    }  # last copy of each type wins
    flip(
        g.path,
        [
            at[(TYPE_RECVSLIC, 0)] + 80,
            at[(TYPE_RECVSLIC, p.recovery_count - 1)] + 9,  # its length field
            at[(TYPE_MAIN, None)] + 70,
            at[(TYPE_FILEDESC, None)] + 3,  # the magic
            g.total + 100,  # the first tar header
            g.path.stat().st_size - 5,  # the end-of-archive padding
        ],
    )
    report = check(g.path)
    assert report.damaged_slices == [] and len(report.tail_damage) == 6
    result = repair(g.path)
    assert result.status == "repaired" and result.fec_rebuilt
    assert result.message == "repaired: FEC data rebuilt"
    assert g.sha() == written


def test_damage_in_both_places(fecd: tuple[Gwtarish, str]) -> None:
    g, written = fecd
    flip(g.path, [*random_offsets(0, g.total, 10), g.total + 2000, g.path.stat().st_size - 20_000])
    result = repair(g.path)
    assert result.fec_rebuilt and result.repaired_slices == 10
    assert g.sha() == written


def test_beyond_the_redundancy_nothing_changes(
    fecd: tuple[Gwtarish, str], capsys: pytest.CaptureFixture[str]
) -> None:
    g, _ = fecd
    p = plan(g.total)
    flip(g.path, [i * p.slice_size + 3 for i in range(p.recovery_count + 3)])
    damaged = g.sha()
    assert repair_main(g.path) == 1
    out = capsys.readouterr().out
    assert out == (
        f"{g.path}: not repairable: {p.recovery_count + 3} damaged slices but only {p.recovery_count} "
        f"intact recovery slices; 3 more needed (about {3 * p.slice_size:,} bytes)\n"
    )
    assert g.sha() == damaged and _listing(g.path.parent) == ["page.gwtar.html"]


def test_intact_and_no_fec(
    fecd: tuple[Gwtarish, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g, written = fecd
    assert repair_main(g.path) == 0
    assert capsys.readouterr().out == f"{g.path}: intact: nothing to repair\n"
    out = tmp_path / "copy.gwtar.html"
    result = repair(g.path, out)
    assert result.status == "intact" and sha256(out) == written
    plain = copy(g.path, tmp_path / "plain.bin")
    with plain.open("r+b") as f:
        f.truncate(g.total)
    assert repair_main(plain, as_json=True) == 2
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "no_fec" and row["exit_code"] == 2 and row["report"]["has_fec"] is False


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert repair_main(tmp_path / "missing.gwtar.html") == 2
    assert capsys.readouterr().err == f"archiver: {tmp_path / 'missing.gwtar.html'}: no such file\n"
    with pytest.raises(UsageError):
        repair(tmp_path / "missing.gwtar.html")
    (tmp_path / "x.bin").write_bytes(b"x")
    assert repair_main(tmp_path / "x.bin", tmp_path / "no" / "such" / "out.bin") == 2
    assert capsys.readouterr().err.endswith("out.bin: the output's folder does not exist\n")


def test_json_output_of_a_repair(fecd: tuple[Gwtarish, str], capsys: pytest.CaptureFixture[str]) -> None:
    g, written = fecd
    flip(g.path, [5000, 6000])
    assert repair_main(str(g.path), as_json=True) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["status"] == "repaired" and row["repaired_slices"] >= 1
    assert row["report"]["damaged_slices"][0]["start"] <= 5000
    assert g.sha() == written


@pytest.mark.parametrize("tail_damaged", [False, True])
def test_a_failing_repair_leaves_the_original_untouched(
    fecd: tuple[Gwtarish, str], tmp_path: Path, tail_damaged: bool
) -> None:
    """A par2 that claims success but writes garbage: the result does not verify, nothing is replaced.
    With the tail damaged too, the garbage is caught before a new tail could vouch for it."""
    g, _ = fecd
    flip(g.path, [5000, g.total + 3000] if tail_damaged else [5000])
    damaged = g.sha()
    fake = tmp_path / "bin" / "par2"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nhead -c {g.total} /dev/zero > page.gwtar.html\nexit 0\n")
    fake.chmod(0o755)
    with pytest.raises(FormatError, match=r"still fails \d+ slice checks; nothing was changed"):
        repair(g.path, engine=Engine(fake, "env", "fake"))
    assert g.sha() == damaged and _listing(g.path.parent) == ["bin", "page.gwtar.html"]


def test_a_damaged_total_archive_size_field_is_repaired(fecd: tuple[Gwtarish, str]) -> None:
    """The length comes from the FEC data, not from the header digits it may have to repair."""
    g, written = fecd
    data = g.path.read_bytes()
    field = data.index(b'totalArchiveSize = parseInt("') + len(b'totalArchiveSize = parseInt("')
    flip(g.path, [field + 20], mask=0x01)  # one digit changes: the header now lies about the size
    report = check(g.path)
    assert report.protected_length == g.total and [d.index for d in report.damaged_slices] == [0]
    assert repair(g.path).status == "repaired" and g.sha() == written
