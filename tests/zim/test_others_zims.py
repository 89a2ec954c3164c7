"""ZIM files archiver did not write: the pre-2021 namespace layout (``A/`` ``I/`` ``-/``, written by
tools/zim_oldlayout.py), split ZIMs opened by their base name, and zimwriterfs output whose metadata
breaks openZIM's style recommendations. zimcheck passes each; archiver never calls them invalid
(warnings are printed, ``--strict`` counts them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.zim import verify
from archiver.zim.read import open_archive

from .others import oldlayout, zimwriterfs

ROOT = Path(__file__).resolve().parents[2]


def _zimcheck_passes(path: Path) -> None:
    if not shutil.which("zimcheck"):
        pytest.fail("zimcheck is not installed (bash tools/bootstrap installs zim-tools)")
    run = subprocess.run(["zimcheck", "-A", str(path)], capture_output=True, text=True, timeout=120)
    assert "Overall Test Status: Pass" in run.stdout + run.stderr, run.stdout[-2000:]


@pytest.fixture
def old_zim(tmp_path: Path) -> Path:
    oldlayout.write(tmp_path / "old.zim")
    return tmp_path / "old.zim"


@pytest.fixture
def split_zim(tmp_path: Path, mini_zim: Path) -> Path:
    data = mini_zim.read_bytes()
    base = tmp_path / "split.zim"
    for k, start in enumerate(range(0, len(data), 30000)):
        base.with_name(f"split.zim{'abc'[k // 26]}{chr(97 + k % 26)}").write_bytes(
            data[start : start + 30000]
        )
    assert not base.exists() and len(list(tmp_path.glob("split.zima?"))) >= 2
    return base


@pytest.mark.interop
def test_old_layout_passes_zimcheck_and_verify(old_zim: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _zimcheck_passes(old_zim)
    report = verify(old_zim)
    assert report.ok and report.problems == [] and report.entries == 14 and report.redirects == 1
    assert report.links >= 6  # ../I/logo.png, ../-/style.css, Other, Old … all resolve
    assert main(["verify", "--strict", str(old_zim)]) == 0


def test_old_layout_through_ls_and_extract(
    old_zim: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls", str(old_zim)]) == 0
    listing = capfd.readouterr().out
    assert "A/Main_Page" in listing and "I/logo.png" in listing and "-/style.css" in listing
    assert main(["extract", str(old_zim), "-o", str(tmp_path / "x")]) == 0
    assert (tmp_path / "x" / "A" / "Main_Page").read_bytes().startswith(b"<!DOCTYPE html>")
    assert (tmp_path / "x" / "I" / "logo.png").read_bytes().startswith(b"\x89PNG")


def test_split_zim_by_its_base_name_in_every_command(
    split_zim: Path, mini_zim: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    with open_archive(split_zim) as reader:
        assert reader.main_path == "index.html" and reader.archive.is_multipart
    assert main(["verify", str(split_zim)]) == 0
    assert capfd.readouterr().out == f"{split_zim}: OK (15 entries)\n"
    assert main(["ls", str(split_zim)]) == 0
    assert capfd.readouterr().out.count("\n") == 15
    assert main(["extract", str(split_zim), "-o", str(tmp_path / "x")]) == 0
    assert (tmp_path / "x" / "index.html").is_file()
    assert main(["pack", str(split_zim), "--format", "zim", "-o", str(tmp_path / "again.zim")]) == 0
    assert verify(tmp_path / "again.zim").ok
    capfd.readouterr()
    assert main(["verify", "-r", str(split_zim.parent)]) == 0
    out = capfd.readouterr().out
    assert f"{split_zim}: OK" in out and "again.zim: OK" in out


def test_split_zim_is_missing_when_no_part_is_there(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls", str(tmp_path / "none.zim")]) == 2
    assert "no such file" in capfd.readouterr().err


@pytest.mark.interop
def test_zimwriterfs_metadata_style_is_a_warning(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # the kind of ZIM a user brings: zimwriterfs output with a two-letter language, a Name with a
    # space and a long title; zimcheck passes it, so verify must too (and --strict must not)
    zim = zimwriterfs(
        tmp_path, language="en", title="A title that is much longer than thirty characters", name="Mini Name"
    )
    _zimcheck_passes(zim)
    report = verify(zim)
    assert report.ok and {w.entry for w in report.warnings} >= {"M/Language", "M/Name", "M/Title"}
    assert main(["verify", str(zim)]) == 0
    out = capfd.readouterr().out
    assert "warning: M/Language" in out and "3 warning(s)" in out
    assert main(["verify", "--strict", str(zim)]) == 1
    assert main(["verify", "--json", str(zim)]) == 0


def test_serve_a_split_zim_by_its_base_name_and_in_a_folder(split_zim: Path) -> None:
    import httpx

    from archiver.serve import running

    for given in (split_zim, split_zim.parent):
        with running([given]) as base:
            home = httpx.get(f"{base}split/index.html", headers={"Host": base.split("//")[1].rstrip("/")})
            assert home.status_code == 200 and b"Mini home" in home.content, (given, home.status_code)


# ------------------------------------------------------------ issue 22 point 6: strangers' ZIMs


def _project_zimcheck_passes(path: Path) -> None:
    """zimcheck with the project's checks (every one but -I, which misfires on libzim >= 9.3 files:
    tests/zim/test_interop.py), for ZIMs archiver wrote."""
    from .test_interop import ZIMCHECK

    run = subprocess.run([*ZIMCHECK, str(path)], capture_output=True, text=True, timeout=120)
    assert "Overall Test Status: Pass" in run.stdout + run.stderr, run.stdout[-2000:]


def _new_layout_with_empty_flavour(path: Path) -> Path:
    from archiver.zim import icon
    from archiver.zim.write import ItemSpec, write_zim

    data = b'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>t</title></head></html>'
    write_zim(
        path,
        items=[ItemSpec(path="index.html", title="T", mimetype="text/html", size=len(data), front=True,
                        compress=False, chunks=lambda: [data])],
        redirects=list, main="index.html", illustration=icon.generated_png("x"), index_language="eng",
        metadata=lambda: {"Title": "t", "Name": "t_en_all", "Language": "eng", "Creator": "c",
                          "Publisher": "p", "Date": "2026-01-01", "Description": "d", "Flavour": ""},
    )  # fmt: skip
    return path


@pytest.mark.interop
@pytest.mark.parametrize("layout", ["old", "new"])
def test_an_empty_metadata_entry_is_a_warning(
    tmp_path: Path, layout: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """openZIM's test suite has a valid ZIM with an empty ``Flavour`` and zimcheck passes it: an old
    layout one was INVALID ("M/Flavour: is empty (ZIM forbids empty entries)"), a new layout one
    passed without a word. Both: a warning, exit 0 (``--strict``: 1)."""
    if layout == "old":
        zim = tmp_path / "flavour.zim"
        oldlayout.write(zim, entries=oldlayout.ENTRIES + oldlayout.EMPTY_FLAVOUR)
        _zimcheck_passes(zim)
    else:
        zim = _new_layout_with_empty_flavour(tmp_path / "flavour.zim")
    assert main(["verify", str(zim)]) == 0
    out = capfd.readouterr().out
    assert f"{zim}: warning: M/Flavour: is empty" in out and f"{zim}: OK, 1 warning(s)" in out, out
    assert main(["verify", "--strict", str(zim)]) == 1


@pytest.mark.interop
def test_old_layout_folders_converted_to_gwtar_and_zim_keep_their_links(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A stylesheet in a folder of the ``-`` namespace whose image is in a folder of ``I``
    (``-/s/style.css`` → ``../../I/s/cog-sprite.png``, mwoffliner's layout) and a page linking both:
    converted to gwtar, to ZIM and gwtar → ZIM, every link still resolves (verify with links) and
    zimcheck passes the ZIMs."""
    old = tmp_path / "old.zim"
    oldlayout.write(old, entries=oldlayout.ENTRIES + oldlayout.SPRITES)
    _zimcheck_passes(old)
    source = verify(old)
    assert source.ok and source.problems == [] and source.warnings == []
    gw, z1, z2 = tmp_path / "old.gwtar.html", tmp_path / "old2.zim", tmp_path / "old3.zim"
    assert main(["pack", str(old), "--format", "gwtar", "-o", str(gw)]) == 0
    assert main(["pack", str(old), "--format", "zim", "-o", str(z1)]) == 0
    assert main(["pack", str(gw), "--format", "zim", "-o", str(z2)]) == 0
    capfd.readouterr()
    assert main(["verify", "--strict", str(gw), str(z1), str(z2)]) == 0, capfd.readouterr().out
    for zim in (z1, z2):
        report = verify(zim)
        assert report.ok and report.warnings == [] and report.links >= source.links, report.problems
        with open_archive(zim) as r:
            css, sprite = r.get("-/s/style.css").read(), r.has("I/s/cog-sprite.png")
        assert b"url(../../I/s/cog-sprite.png)" in css and sprite
        _project_zimcheck_passes(zim)


def test_a_zimwriterfs_zim_holding_a_forged_search_index_is_refused_not_looped(tmp_path: Path) -> None:
    """zimwriterfs packs a tree whose search index was forged (a shard's postings a list holding a
    negative count, its SHA-256 resealed): before, `archiver search` on the ZIM looped forever at
    100 % CPU (killed here by the timeout). Now: the shard is named, exit 1, one line."""
    import hashlib
    import json
    import sys

    from archiver.search import build

    site = tmp_path / "indexed"
    shutil.copytree(ROOT / "testdata" / "trees" / "mini", site)
    subprocess.run(
        [sys.executable, "-m", "archiver", "index", str(site)], check=True, capture_output=True, timeout=120
    )
    folder = site / "_archiver" / "search"
    rows = json.loads(build.inflate(build.payload_of("t/0", (folder / "t" / "0.js").read_bytes())))
    term = rows[0][0]
    rows[0][1] = [0, -4, 0, 0]
    payload = build.deflate(json.dumps(rows, separators=(",", ":")).encode())
    (folder / "t" / "0.js").write_bytes(build.wrap("t/0", payload))
    manifest = json.loads(build.payload_of("manifest", (folder / "manifest.js").read_bytes()))
    manifest["shards"][0][2:4] = [len(build.wrap("t/0", payload)), hashlib.sha256(payload).hexdigest()]
    (folder / "manifest.js").write_bytes(build.manifest_bytes(manifest))
    zim = zimwriterfs(tmp_path, source=site)
    for args in (["search", str(zim), "-q", term], ["verify", str(zim)]):
        done = subprocess.run(
            [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1, done.stderr
        assert "postings are malformed" in done.stdout + done.stderr and "Traceback" not in done.stderr
