"""The FEC plan and the canonical tail layout (pure): the vectors, the honest-tail bound, the tar
framing, and the names."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.errors import UsageError
from archiver.par2 import layout
from archiver.par2.packets import TYPE_MAIN, TYPE_RECVSLIC

PLAN_VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "formats" / "vectors" / "fec" / "plan.json").read_text()
)["rows"]


@pytest.mark.parametrize(
    "row", PLAN_VECTORS, ids=[f"{r['protected_length']}@{r['redundancy']}" for r in PLAN_VECTORS]
)
def test_plan_vectors(row: dict) -> None:  # type: ignore[type-arg]
    p = layout.plan(row["protected_length"], row["redundancy"])
    assert (p.slice_size, p.slice_count, p.recovery_count) == (
        row["slice_size"],
        row["slice_count"],
        row["recovery_count"],
    )
    t = layout.tail_layout(p, "page.gwtar.html")
    assert t.size == row["tail_size"]
    assert [m.name for m in t.members] == row["members"]


@settings(max_examples=300)  # with test_tail_table's decade-by-decade grid below
@given(
    length=st.integers(min_value=100_000, max_value=1_000_000_000),
    percent=st.integers(min_value=1, max_value=100),
)
def test_tail_is_honest(length: int, percent: int) -> None:
    """Issue 5: for protected sizes from 100 KB to 1 GB the tail is at most
    (redundancy + 5 %) of the protected size + 64 KB."""
    r = percent / 100
    p = layout.plan(length, r)
    name = "a-long-archive-name-of-eighty-bytes-" + "x" * 33 + ".gwtar.html"
    assert len(name) == 80
    assert layout.tail_size(p, name) <= (r + 0.05) * length + 64 * 1024  # = tail_layout(p, name).size
    if r >= 0.10:  # at the default redundancy and above, 32 scattered errors are always repairable
        assert p.recovery_count >= 32
    # and what the plan promises holds: slices cover the region, recovery ≥ redundancy
    assert (
        p.slice_size % 4 == 0 and (p.slice_count - 1) * p.slice_size < length <= p.slice_count * p.slice_size
    )
    assert p.recovery_count >= r * p.slice_count - 1e-6
    assert p.slice_count <= layout.MAX_SLICES


@settings(max_examples=200)
@given(length=st.integers(min_value=1, max_value=10**12), percent=st.integers(min_value=1, max_value=100))
def test_layout_covers_every_byte(length: int, percent: int) -> None:
    p = layout.plan(length, percent / 100)
    t = layout.tail_layout(p, "x.gwtar.html")
    at = 0
    for slot in t.slots:
        assert slot.offset == at
        at = slot.end
    assert at == t.size == layout.tail_size(p, "x.gwtar.html") and t.size % 512 == 0
    assert layout.tail_size(p) >= t.size  # None: the bound for the longest name
    exps = [s.exponent for s in t.slots if s.exponent is not None]
    assert exps == list(range(p.recovery_count))
    for m in t.members:
        assert m.size < 8**11  # fits a ustar size field


def test_blocks_are_spread_through_the_recovery_member() -> None:
    p = layout.Plan(1_000_000, 10_000, 100, 37)
    slots = layout.member_layout(p, "a.bin", (0, 37))
    kinds = ["B" if s.ptype == TYPE_MAIN else "r" for s in slots if s.ptype in (TYPE_MAIN, TYPE_RECVSLIC)]
    assert kinds.count("B") == (37).bit_length() == 6
    positions = [i for i, k in enumerate(kinds) if k == "B"]
    assert positions[0] == 0 and all(b - a >= 6 for a, b in itertools.pairwise(positions))


def test_plan_rejects_bad_arguments() -> None:
    for bad in (0, -5, 1.5):
        with pytest.raises(UsageError, match="positive number of bytes"):
            layout.plan(bad)  # type: ignore[arg-type]
    for r in (0, -0.1, 1.01, 10):
        with pytest.raises(UsageError, match=r"not a fraction in \(0, 1\]"):
            layout.plan(1000, r)


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("page.gwtar.html", "page.gwtar.html"),
        ("Site_2026-01-01+v2.zim", "Site_2026-01-01+v2.zim"),
        ("café.gwtar.html", "archive.gwtar.html"),  # non-ASCII
        ("has space.zim", "archive.zim"),
        (".hidden.gwtar.html", "archive.gwtar.html"),  # par2 would write a hidden file
        ("x" * 81 + ".bin", "archive.bin"),  # too long for a ustar name with the vol suffix
        ("weird name", "archive"),
        ("a/b", "archive"),
    ],
)
def test_set_name_for(name: str, want: str) -> None:
    assert layout.set_name_for(name) == want


@pytest.mark.parametrize(
    ("first", "count", "total", "want"),
    [
        (0, 2, 2, "a.vol0+2.par2"),
        (0, 37, 37, "a.vol00+37.par2"),
        (0, 200, 200, "a.vol000+200.par2"),
        (66, 67, 200, "a.vol066+067.par2"),
    ],
)
def test_vol_name_matches_par2cmdline(first: int, count: int, total: int, want: str) -> None:
    assert layout.vol_name("a", first, count, total) == want


def test_creator_text_round_trip() -> None:
    assert layout.parse_creator_text(layout.creator_text(200)) == 200
    assert layout.parse_creator_text("Created by par2cmdline version 0.8.1.") is None


def test_tar_header_reads_back_with_tarfile_and_gnu_tar(tmp_path: Path) -> None:
    header = layout.tar_header("page.gwtar.html.vol000+200.par2", 1234)
    blob = header + b"x" * 1234 + bytes(-1234 % 512) + bytes(1024)
    with tarfile.open(fileobj=io.BytesIO(blob)) as t:
        (m,) = t.getmembers()
    assert (m.name, m.size, m.mode, m.mtime, m.uid, m.gid, m.type) == (
        "page.gwtar.html.vol000+200.par2", 1234, 0o644, 0, 0, 0, tarfile.REGTYPE,
    )  # fmt: skip
    (tmp_path / "t.tar").write_bytes(blob)
    listing = subprocess.run(
        ["tar", "tvf", str(tmp_path / "t.tar")], capture_output=True, text=True, check=True
    )
    assert "page.gwtar.html.vol000+200.par2" in listing.stdout and listing.stderr == ""
    with pytest.raises(ValueError, match="ustar"):
        layout.tar_header("x" * 101, 1)


@pytest.mark.parametrize("length", [100_000, 1_000_000, 10_000_000, 100_000_000, 1_000_000_000])
@pytest.mark.parametrize("percent", [1, 5, 10, 25, 50, 100])
def test_tail_table(length: int, percent: int) -> None:
    """Issue 5's table, decade by decade from 100 KB to 1 GB: the planned tail (the same number the
    real par2 runs of test_fec.test_tail_size_is_honest_and_as_planned write) is at most
    (redundancy + 5 %) of the protected size + 64 KB, for the longest set name."""
    r = percent / 100
    assert layout.tail_size(layout.plan(length, r)) <= (r + 0.05) * length + 64 * 1024
