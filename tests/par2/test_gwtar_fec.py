"""FEC on a real gwtar (archiver.gwtar.pack of testdata/trees/mini): still a gwtar for every reader
(gwtar verify, GNU tar, Chromium through the loader), and repairable by stock Debian par2."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.errors import EnvironmentProblem, UsageError
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.par2 import add_fec, check, find_protected_length, plan, repair
from archiver.par2.engine import ENV_VAR

from .conftest import flip, random_offsets, sha256

MINI = Path(__file__).resolve().parents[2] / "testdata" / "trees" / "mini"


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """mini packed and FEC'd once: (path, totalArchiveSize, sha256 as written). Tests copy it."""
    folder = tmp_path_factory.mktemp("gwtar")
    out = folder / "mini.gwtar.html"
    result = gwtar.pack(MINI, out, fec=0.10)  # what `archiver pack --add-fec-data` does
    assert result.fec is not None and result.size == out.stat().st_size
    assert result.size == result.total_archive_size + result.fec.fec_size
    return out, result.total_archive_size, sha256(out)


def test_pack_with_fec_equals_pack_then_add_fec(packed: tuple[Path, int, str], tmp_path: Path) -> None:
    """The writer's FEC tail (appended to its temp file before the one fsync and rename) is the tail
    add_fec gives the finished file: same bytes, and nothing but the output is left behind."""
    _, total, written = packed
    out = tmp_path / "mini.gwtar.html"
    result = gwtar.pack(MINI, out)
    assert result.fec is None and result.size == total == out.stat().st_size
    add_fec(out, result.total_archive_size)
    assert sha256(out) == written
    assert [p.name for p in tmp_path.iterdir()] == ["mini.gwtar.html"]


@pytest.fixture
def fecd(packed: tuple[Path, int, str], tmp_path: Path) -> tuple[Path, int, str]:
    src, total, written = packed
    path = tmp_path / src.name
    shutil.copyfile(src, path)
    return path, total, written


def test_gwtar_verify_sees_an_intact_fec_tail(fecd: tuple[Path, int, str]) -> None:
    path, total, _ = fecd
    with gwtar.open(path) as g:
        assert g.total_archive_size == total and g.trailer_size == path.stat().st_size - total
    report = gwtar.verify(path)
    assert report.problems == [] and report.fec
    assert any(n.startswith("FEC tail present (2 PAR2 files") for n in report.notes)
    assert check(path).ok
    assert find_protected_length(path) == total


def test_gnu_tar_still_extracts_the_body_and_lists_the_tail(
    fecd: tuple[Path, int, str], tmp_path: Path
) -> None:
    path, total, _ = fecd
    with gwtar.open(path) as g:
        overhead = g.overhead
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(
        [
            "bash",
            "-c",
            f'tail -c +$(({overhead}+1)) "$1" | head -c {total - overhead} | tar x -C "$2"',
            "-",
            str(path),
            str(out),
        ],
        check=True,
    )
    assert (out / "index.html").read_bytes() == (MINI / "index.html").read_bytes()
    listing = subprocess.run(
        ["bash", "-c", f'tail -c +$(({total}+1)) "$1" | tar t', "-", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert listing.stdout.split()[0] == "mini.gwtar.html.par2" and len(listing.stdout.split()) == 2


def test_verify_names_the_damaged_members_and_repair_restores(fecd: tuple[Path, int, str]) -> None:
    path, _, written = fecd
    with gwtar.open(path) as g:
        start = next(m for m in g.members if m.path == "index.html").offset
    flip(path, [start + 10])
    report = gwtar.verify(path)
    fec_lines = [p.message for p in report.problems if p.message.startswith("FEC: ")]
    assert any("damaged" in line and ": in index.html" in line for line in fec_lines), fec_lines
    assert fec_lines[-1].startswith("FEC: damaged, repairable: 1 damaged slices")
    assert repair(path).status == "repaired"
    assert sha256(path) == written
    assert gwtar.verify(path).problems == []


@pytest.mark.interop
def test_stock_debian_par2_repairs_32_random_flips(fecd: tuple[Path, int, str], tmp_path: Path) -> None:
    path, total, written = fecd
    assert plan(total).recovery_count >= 32
    flip(path, random_offsets(0, total, 32))
    fix = tmp_path / "fix"
    fix.mkdir()
    shutil.copyfile(path, fix / "damaged.gwtar.html")
    script = f"""
set -e
cd "{fix}"
ln -s damaged.gwtar.html mini.par2
/usr/bin/par2 r -q mini.par2 damaged.gwtar.html
{{ cat mini.gwtar.html; tail -c +$(({total} + 1)) damaged.gwtar.html; }} > restored.gwtar.html
"""
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sha256(fix / "restored.gwtar.html") == written


def _render(url: str) -> str:
    from playwright.sync_api import sync_playwright

    from archiver.capture import browser

    with sync_playwright() as pw:
        chromium = browser.launch(pw)
        try:
            page = chromium.new_page()
            page.goto(url)
            page.wait_for_function(
                "document.body && document.body.innerText.includes('mini0eb547')", timeout=30_000
            )
            return page.title()
        finally:
            chromium.close()


@pytest.mark.browser
def test_a_fecd_gwtar_renders_in_chromium(fecd: tuple[Path, int, str]) -> None:
    path, _, _ = fecd
    # Chromium runs in its own thread: Playwright's sync API refuses to start where an asyncio loop
    # runs, and a test elsewhere in the suite may leave one running in the main thread.
    with FixtureServer(FixtureConfig(root=path.parent, range=True)) as server, ThreadPoolExecutor(1) as pool:
        assert pool.submit(_render, server.url + path.name).result(timeout=120) == "Mini home"


def test_pack_with_bad_fec_settings_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad redundancy or a missing par2 program is reported before the body is written; no output
    and no temporary file is left."""
    with pytest.raises(UsageError, match="redundancy"):
        gwtar.pack(MINI, tmp_path / "a.gwtar.html", fec=1.5)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no-such-par2"))
    with pytest.raises(EnvironmentProblem, match="par2"):
        gwtar.pack(MINI, tmp_path / "b.gwtar.html", fec=0.10)
    assert list(tmp_path.iterdir()) == []
