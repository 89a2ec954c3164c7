"""``capture --from-warc``, ``pack X.warc.gz`` and ``merge`` onto a full or read-only disk: one line
naming the output, exit 1, no traceback, no temporary folder left, and the same command works once
there is room (tests/disks.py: a real tmpfs of a few KiB).

Before (dab4b1c): the records' index that ``--from-warc`` and ``pack`` of a WARC build beside the
output was refused in a traceback (exit 70: ``sqlite3.OperationalError: database or disk is full``;
read-only: ``OSError: [Errno 30]`` of the private folder); a crawl state the disk could not take
was "unreadable crawl state: disk I/O error" (as if the file were damaged); ``pack`` named its
temporary tree (``.OUT.archiver-tmp-…/tree/_archiver/crawl.sqlite``) and told the user to "run the
same command again to resume" what it had removed; ``merge`` named its removed staging folder
(``.OUT.merge-PID/_archiver/crawl.sqlite: unreadable crawl state: database or disk is full``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.disks import Disk, small_disk
from tests.warc.corpus import warcio_warc

SIZES = [16 << 10, 60 << 10, 100 << 10]


@pytest.fixture(scope="module")
def warc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return warcio_warc(tmp_path_factory.mktemp("warc") / "site.warc.gz", pages=3)


def _archiver(*args: str) -> subprocess.CompletedProcess[str]:
    return Disk(Path("/"), None).run(*args)


def _one_line(done: subprocess.CompletedProcess[str], out: Path) -> str:
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "unreadable" not in done.stderr, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and line.startswith(f"archiver: {out}"), line
    assert "archiver-tmp" not in line and ".merge-" not in line, line
    assert any(w in line for w in ("full", "read-only", "too large", "I/O error", "permission")), line
    return line


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("size", SIZES)
def test_capture_from_a_warc_onto_a_full_disk(warc: Path, tmp_path: Path, size: int, read_only: bool) -> None:
    with small_disk(tmp_path / "disk", size, read_only=read_only) as disk:
        out = disk.path / "c"
        _one_line(disk.run("capture", "--from-warc", str(warc), "-o", str(out), "--no-render"), out)
        assert not [n for n in disk.contents() if "archiver-tmp" in n]
        kept = tmp_path / "c"
        if out.exists():
            shutil.copytree(out, kept, symlinks=True)
    again = _archiver("capture", "--from-warc", str(warc), "-o", str(kept), "--no-render")
    assert again.returncode == 0, again.stderr
    assert _archiver("verify", str(kept)).returncode == 0


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("size", [*SIZES, 200 << 10])
def test_pack_of_a_warc_onto_a_full_disk(warc: Path, tmp_path: Path, size: int, read_only: bool) -> None:
    with small_disk(tmp_path / "disk", size, read_only=read_only) as disk:
        out = disk.path / "site.gwtar.html"
        line = _one_line(disk.run("pack", str(warc), "--format", "gwtar", "--no-render", "-o", str(out)), out)
        assert "resume" not in line and line.endswith("; nothing was written"), line
        assert disk.contents() == []


@pytest.fixture(scope="module")
def shard(warc: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("shard") / "s0"
    done = _archiver("capture", "--from-warc", str(warc), "-o", str(out), "--no-render")
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize("size", [8 << 10, 40 << 10, 80 << 10])
def test_merge_onto_a_full_disk(shard: Path, tmp_path: Path, size: int, read_only: bool) -> None:
    with small_disk(tmp_path / "disk", size, read_only=read_only) as disk:
        for out in (disk.path / "m", disk.path / "new" / "m"):
            line = _one_line(disk.run("merge", str(shard), "-o", str(out)), out)
            assert line.endswith("; nothing was written"), line
            assert disk.contents() == []
    with small_disk(tmp_path / "roomy", 4 << 20) as disk:  # room: the same command merges
        done = disk.run("merge", str(shard), "-o", str(disk.path / "m"))
        assert done.returncode == 0, done.stderr
        assert _archiver("verify", str(disk.path / "m")).returncode == 0
