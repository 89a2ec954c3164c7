"""Outside tools read what we write: GNU tar (both extraction recipes of the issue), Python's tarfile,
par2; and reference-layout files built with GNU tar verify."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from archiver.gwtar import PackResult, pack, rules, verify
from archiver.gwtar import open as open_gwtar
from tests.gwtar.corpus import MINI, STUB_LOADER, fec_file
from tests.gwtar.v1ref import SAMPLE_HTML, build_v1, sample_assets

pytestmark = pytest.mark.interop


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _expected_tree() -> dict[str, bytes]:
    return _files(MINI)


@pytest.mark.parametrize(
    "recipe",
    [
        "perl -ne'print $_ if $x; $x=1 if /<!-- GWTAR END/' < {f} | tar x",
        "tail -c +$(({overhead}+1)) {f} | tar x",
    ],
)
def test_gnu_tar_extracts_the_body(tmp_path: Path, mini_gwtar: PackResult, recipe: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    command = recipe.format(f=mini_gwtar.path, overhead=mini_gwtar.overhead)
    subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=out, check=True)
    got = _files(out)
    assert got.pop(rules.INDEX_PATH).startswith(b'{"format":"archiver-gwtar-index"')
    assert got == _expected_tree()


def test_gnu_tar_lists_members_in_order(mini_gwtar: PackResult) -> None:
    listing = subprocess.run(
        ["bash", "-c", f"tail -c +{mini_gwtar.overhead + 1} '{mini_gwtar.path}' | tar tv --full-time"],
        check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    with open_gwtar(mini_gwtar.path) as g:
        names = [m.path for m in g.members] + [rules.INDEX_PATH]
    assert len(listing) == len(names)
    for line, name in zip(listing, names, strict=True):
        assert line.startswith("-rw-r--r-- 0/0") and "2026-11-29 12:00:00" in line and line.endswith(name)


def test_tarfile_walk_agrees_with_manifest_and_index(mini_gwtar: PackResult) -> None:
    with open_gwtar(mini_gwtar.path) as g, open(mini_gwtar.path, "rb") as f:
        f.seek(g.overhead)
        with tarfile.open(fileobj=f, mode="r:") as t:
            infos = t.getmembers()
        by_name = {i.name: i for i in infos}
        for m in g.members:
            assert by_name[m.path].offset_data == m.offset and by_name[m.path].size == m.size
        sizes = [e["size"] for e in g.assets.values()]
        v1 = [g.overhead + o for o in rules.v1_data_offsets(sizes)]
        assert [i.offset_data for i in infos[: len(v1)]] == v1
        assert all(i.offset - (g.overhead if i is infos[0] else 0) >= 0 for i in infos)
        assert infos[-1].name == rules.INDEX_PATH


def test_long_names_extract_with_gnu_tar(tmp_path: Path) -> None:
    root = tmp_path / "long"
    deep = "/".join(["dossier-très-profond"] * 10)
    (root / deep).mkdir(parents=True)
    (root / "index.html").write_text("<p>hi</p>")
    (root / deep / ("é" * 70 + ".html")).write_text("<p>deep</p>")
    result = pack(root, tmp_path / "long.gwtar.html", loader=STUB_LOADER)
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        ["bash", "-c", f"tail -c +{result.overhead + 1} '{result.path}' | tar x"], cwd=out, check=True
    )
    assert (out / deep / ("é" * 70 + ".html")).read_text() == "<p>deep</p>"


@pytest.mark.parametrize("variant", [{}, {"folder": "doc/x"}, {"zero_not_first": True}])
def test_reference_layout_built_by_gnu_tar_verifies(tmp_path: Path, variant: dict) -> None:
    path = build_v1(tmp_path, "page", SAMPLE_HTML, sample_assets(), tool="gnu", **variant)
    report = verify(path)
    assert report.ok, report.lines()
    with open_gwtar(path) as g:
        assert g.read("0") == SAMPLE_HTML


def test_reference_fec_tail_is_recognised(tmp_path: Path) -> None:
    path = fec_file(tmp_path)
    report = verify(path)
    assert report.fec and report.ok, report.lines()
    assert any(n.startswith("FEC tail present (") for n in report.notes)
    assert report.overhead is not None
    listing = subprocess.run(["bash", "-c", f"tail -c +{report.overhead + 1} '{path}' | tar ti"],
                             capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    assert listing[:3] == ["fec.html", "fec/fec-asset-1.png", "fec.gwtar.html.par2"]
    assert len(listing) == 4 and listing[3].startswith("fec.gwtar.html.vol") and listing[3].endswith(".par2")


def test_our_file_with_a_par2_tail(tmp_path: Path, mini_gwtar: PackResult) -> None:
    path = tmp_path / "mini.gwtar.html"
    shutil.copy(mini_gwtar.path, path)
    create = ["par2", "create", "-q", "-q", "-b20", "-r10", "-n1", "mini.gwtar.html.par2", "mini.gwtar.html"]
    subprocess.run(create, cwd=tmp_path, check=True, stdout=subprocess.DEVNULL)
    pars = sorted(p.name for p in tmp_path.glob("*.par2"))
    subprocess.run(["tar", "cf", "tail.tar", "--format=ustar", *pars], cwd=tmp_path, check=True)
    with path.open("ab") as f:
        f.write((tmp_path / "tail.tar").read_bytes())
    report = verify(path)
    assert report.fec and report.ok, report.lines()
    with open_gwtar(path) as g:
        assert g.trailer_offset == mini_gwtar.total_archive_size and g.trailer_size > 0
