"""``archiver pack TREE --version DATE`` (formats/history.md §3): a packer writes the version in force
at a date, not only the newest state. Written as what a user would get wrong or an attacker would
try: the earlier version's words (not the newest's) are in the gwtar and in the ZIM, the ZIM's Date
is the version's day, a date before the first version and conflicting flags are refused in one line
(exit 2), a store whose blob lies is refused (exit 1) with no output file and nothing left beside it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.versions import store
from tests.versions.helpers import page, two_versions

V1 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one, the walrus version.</p>"),
}
V2 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one, the pelican version.</p>"),
    "docs/new.html": page("New", "<p>Fresh.</p>"),
}
FIRST = "20261130T090000Z"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def two(tmp_path: Path) -> Path:
    return two_versions(tmp_path / "site", V1, V2)


def _left_beside(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p.name != "site")


def test_a_gwtar_of_the_first_version_holds_its_words(two: Path, tmp_path: Path) -> None:
    out = tmp_path / "v1.gwtar.html"
    done = _cli("pack", str(two), "--format", "gwtar", "--version", "2026-11-30", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert f"version {FIRST}" in done.stdout
    back = tmp_path / "back"
    assert _cli("extract", str(out), "-o", str(back)).returncode == 0
    assert "walrus" in (back / "docs/intro.html").read_text()
    assert not (back / "docs/new.html").exists()  # added by the second version only
    assert _left_beside(out) == ["back", "v1.gwtar.html"]  # the version's working tree is gone


def test_a_zim_of_the_first_version_is_dated_that_day(two: Path, tmp_path: Path) -> None:
    from libzim.reader import Archive

    out = tmp_path / "v1.zim"
    done = _cli("pack", str(two), "--format", "zim", "--version", FIRST, "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert '"version": "20261130T090000Z"' in done.stdout
    zim = Archive(out)
    assert bytes(zim.get_metadata("Date")).decode() == "2026-11-30"
    paths = [zim._get_entry_by_id(i).path for i in range(zim.all_entry_count)]
    body = next(
        bytes(zim.get_entry_by_path(p).get_item().content).decode()
        for p in paths
        if p.endswith("docs/intro.html")
    )
    assert "walrus" in body and "pelican" not in body
    assert not any(p.endswith("docs/new.html") for p in paths)
    assert _left_beside(out) == ["v1.zim"]


def test_the_newest_version_packs_the_tree_itself(two: Path, tmp_path: Path) -> None:
    out = tmp_path / "now.gwtar.html"
    done = _cli("pack", str(two), "--format", "gwtar", "--version", "2026-12-02", "-o", str(out))
    assert done.returncode == 0, done.stderr
    back = tmp_path / "back"
    assert _cli("extract", str(out), "-o", str(back)).returncode == 0
    assert "pelican" in (back / "docs/intro.html").read_text()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--version", "2026-11-01"], "no version at or before 2026-11-01"),
        (["--version", "not a date"], "not a date"),
        (["--version", FIRST, "--all-versions"], "--all-versions"),
    ],
)
def test_a_wrong_version_is_one_line_and_exit_2(
    two: Path, tmp_path: Path, extra: list[str], said: str
) -> None:
    out = tmp_path / "x.gwtar.html"
    done = _cli("pack", str(two), "--format", "gwtar", *extra, "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_wacz_takes_no_version_and_a_plain_gwtar_has_none(two: Path, tmp_path: Path) -> None:
    wacz = _cli("pack", str(two), "--format", "wacz", "--version", FIRST, "-o", str(tmp_path / "x.wacz"))
    assert wacz.returncode == 2 and "wacz" in wacz.stderr
    gw = tmp_path / "now.gwtar.html"
    assert _cli("pack", str(two), "--format", "gwtar", "-o", str(gw)).returncode == 0
    again = _cli("pack", str(gw), "--format", "zim", "--version", FIRST, "-o", str(tmp_path / "x.zim"))
    assert again.returncode == 1 and "has no versions" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.zim").exists()


def test_an_all_versions_gwtar_packs_and_lists_one_version(two: Path, tmp_path: Path) -> None:
    every = tmp_path / "all.gwtar.html"
    assert _cli("pack", str(two), "--format", "gwtar", "--all-versions", "-o", str(every)).returncode == 0
    listed = _cli("ls", str(every), "--version", "2026-11-30")
    assert listed.returncode == 0, listed.stderr
    assert "docs/intro.html" in listed.stdout and "docs/new.html" not in listed.stdout
    out = tmp_path / "v1.zim"
    done = _cli("pack", str(every), "--format", "zim", "--version", FIRST, "-o", str(out))
    assert done.returncode == 0, done.stderr
    from libzim.reader import Archive

    zim = Archive(out)
    assert bytes(zim.get_metadata("Date")).decode() == "2026-11-30"
    paths = [zim._get_entry_by_id(i).path for i in range(zim.all_entry_count)]
    intro = next(p for p in paths if p.endswith("docs/intro.html"))
    assert "walrus" in bytes(zim.get_entry_by_path(intro).get_item().content).decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["all.gwtar.html", "site", "v1.zim"]


def test_ls_of_a_tree_at_a_date_lists_that_version(two: Path) -> None:
    first = _cli("ls", str(two), "--version", FIRST, "--json")
    assert first.returncode == 0, first.stderr
    assert "docs/intro.html" in first.stdout and "docs/new.html" not in first.stdout
    now = _cli("ls", str(two), "--version", "2026-12-05")
    assert "docs/new.html" in now.stdout
    early = _cli("ls", str(two), "--version", "2020-01-01")
    assert early.returncode == 2 and len(early.stderr.strip().splitlines()) == 1


def test_a_blob_that_lies_refuses_the_version_and_leaves_nothing(two: Path, tmp_path: Path) -> None:
    first = store.versions(two)[0]  # a file of it kept in the store when V2 replaced it
    r = next(r for r in store.version_records(first) if store.blob_path(two, r.sha256).exists())
    blob = store.blob_path(two, r.sha256)
    os.unlink(blob)
    blob.write_text("<script>not the page</script>")
    out = tmp_path / "v1.zim"
    done = _cli("pack", str(two), "--format", "zim", "--version", FIRST, "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert "does not hold the bytes" in done.stderr and "Traceback" not in done.stderr
    assert _left_beside(out) == []
