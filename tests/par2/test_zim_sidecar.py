"""ZIM and FEC: the experiment that decides between a tail and sidecars (readers reject trailing bytes),
then sidecar .par2 files: written next to the ZIM, checked, repaired, usable with plain par2."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from libzim.reader import Archive
from libzim.writer import Creator, Hint, Item, StringProvider

from archiver.par2 import add_sidecar, check, repair, sidecar_files

from .conftest import flip, sha256, zero


class _Page(Item):  # type: ignore[misc]
    def __init__(self, path: str, title: str, content: bytes | str, mime: str) -> None:
        super().__init__()
        self._path, self._title, self._content, self._mime = path, title, content, mime

    def get_path(self) -> str:
        return self._path

    def get_title(self) -> str:
        return self._title

    def get_mimetype(self) -> str:
        return self._mime

    def get_contentprovider(self) -> StringProvider:
        return StringProvider(self._content)

    def get_hints(self) -> dict[Hint, int]:
        return {Hint.FRONT_ARTICLE: True, Hint.COMPRESS: False}


def make_zim(path: Path) -> Path:
    """A tiny ZIM written with libzim directly (the ZIM packer is another module's job)."""
    with Creator(str(path)).config_indexing(False, "eng") as c:
        c.set_mainpath("index.html")
        for key, value in {
            "Title": "Tiny", "Language": "eng", "Name": "tiny", "Creator": "archiver tests",
            "Publisher": "archiver tests", "Date": "2026-01-01", "Description": "FEC sidecar test",
        }.items():  # fmt: skip
            c.add_metadata(key, value)
        c.add_item(_Page("index.html", "Home", "<html><body><p>hello sidecar</p></body></html>", "text/html"))
        c.add_item(_Page("big.bin", "big", os.urandom(300_000), "application/octet-stream"))
    return path


@pytest.fixture
def zim(tmp_path: Path) -> Path:
    return make_zim(tmp_path / "tiny.zim")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(zim_path: Path) -> tuple[subprocess.Popen[str], int]:
    port = _free_port()
    proc = subprocess.Popen(
        ["kiwix-serve", "--address=127.0.0.1", f"--port={port}", str(zim_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, port


def _get(url: str, deadline: float) -> int | None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return int(r.status)
        except urllib.error.HTTPError as e:
            return int(e.code)
        except OSError:
            time.sleep(0.1)
    return None


@pytest.mark.interop
def test_zim_readers_reject_trailing_bytes(zim: Path, tmp_path: Path) -> None:
    """Why ZIM gets sidecars: libzim, kiwix-serve and zimcheck all refuse a ZIM with bytes appended."""
    assert Archive(str(zim)).check()  # the control: the plain ZIM is fine
    tailed = tmp_path / "tailed.zim"
    shutil.copyfile(zim, tailed)
    with tailed.open("ab") as f:
        f.write(os.urandom(4096))
    with pytest.raises(RuntimeError, match="bad size or corrupted"):
        Archive(str(tailed))
    zimcheck = subprocess.run(["zimcheck", "-A", str(tailed)], capture_output=True, text=True, timeout=60)
    assert zimcheck.returncode != 0
    # kiwix-serve: serves the plain ZIM, refuses the tailed one
    good, port = _serve(zim)
    try:
        assert _get(f"http://127.0.0.1:{port}/tiny/index.html", time.monotonic() + 20) == 200
    finally:
        good.terminate()
        good.wait(timeout=10)
    bad, port = _serve(tailed)
    try:
        out, _ = bad.communicate(timeout=20)
    finally:
        if bad.poll() is None:
            bad.terminate()
            bad.wait(timeout=10)
    assert bad.returncode != 0 and "Unable to add the ZIM file" in out


def test_sidecars_leave_the_zim_alone(zim: Path) -> None:
    before = sha256(zim)
    result = add_sidecar(zim)
    assert sha256(zim) == before and result.kind == "sidecar"
    files = sidecar_files(zim)
    assert (
        [f.name for f in files]
        == list(result.files)
        == [
            "tiny.zim.par2",
            f"tiny.zim.vol{0:0{len(str(result.recovery_slices))}d}+{result.recovery_slices}.par2",
        ]
    )
    assert Archive(str(zim)).check()
    report = check(zim)
    assert report.ok and report.kind == "sidecar" and report.canonical and report.problems == []


@pytest.mark.interop
def test_plain_par2_verifies_and_repairs_sidecars(zim: Path) -> None:
    """No recipe needed: the ZIM is exactly the protected bytes, so par2 is used the ordinary way."""
    add_sidecar(zim)
    written = sha256(zim)
    verify = subprocess.run(
        ["/usr/bin/par2", "v", "-q", "tiny.zim.par2"], cwd=zim.parent, capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stdout
    flip(zim, [100, 50_000, 200_000])
    fix = subprocess.run(
        ["/usr/bin/par2", "r", "-q", "tiny.zim.par2"], cwd=zim.parent, capture_output=True, text=True
    )
    assert fix.returncode == 0, fix.stdout
    assert sha256(zim) == written
    (zim.parent / "tiny.zim.1").unlink()  # par2 keeps the damaged copy


def test_archiver_repairs_a_zim_and_its_sidecars(zim: Path, tmp_path: Path) -> None:
    add_sidecar(zim)
    written = {p.name: sha256(p) for p in [zim, *sidecar_files(zim)]}
    zero(zim, 20_000, 30_000)
    vol = sidecar_files(zim)[1]
    flip(vol, [5000, vol.stat().st_size - 10])
    report = check(zim)
    assert report.damaged_slices and report.tail_damage and report.repairable
    assert {d.file for d in report.tail_damage} == {vol.name}
    result = repair(zim)
    assert result.status == "repaired" and result.fec_rebuilt
    assert {p.name: sha256(p) for p in [zim, *sidecar_files(zim)]} == written
    assert Archive(str(zim)).check()
    assert sorted(p.name for p in zim.parent.iterdir()) == sorted(written)


def test_repair_a_zim_to_out_brings_its_sidecars(zim: Path, tmp_path: Path) -> None:
    add_sidecar(zim)
    written = sha256(zim)
    flip(zim, [1234])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = repair(zim, out_dir / "fixed.zim")
    assert result.status == "repaired" and sha256(out_dir / "fixed.zim") == written
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(
        ["fixed.zim", *(f.name.replace("tiny.zim", "fixed.zim") for f in sidecar_files(zim))]
    )
    assert check(out_dir / "fixed.zim").ok


def test_a_truncated_zim_is_repaired_from_its_sidecars(zim: Path) -> None:
    add_sidecar(zim)
    written = sha256(zim)
    with zim.open("r+b") as f:
        f.truncate(zim.stat().st_size - 5000)
    report = check(zim)
    assert report.damaged_slices and report.repairable
    assert report.problems[0].startswith("the file is") or any("the file is" in p for p in report.problems)
    assert repair(zim).status == "repaired" and sha256(zim) == written


def test_bytes_appended_to_a_zim_are_removed(zim: Path) -> None:
    add_sidecar(zim)
    written = sha256(zim)
    with zim.open("ab") as f:
        f.write(b"junk")
    report = check(zim)
    assert report.damaged_slices == [] and report.problems[0].startswith("the file is") and report.repairable
    result = repair(zim)
    assert result.message == "repaired: extra bytes removed" and sha256(zim) == written
