"""Hostile ZIMs against ``archiver extract`` and ``ls`` (issue 14 points 1 and 7), built with the
project's writer: entry paths that climb out (``../x``, ``/abs``, ``a/../../b``), a path that is both
a file and a folder, names too long for the filesystem, control characters, names that differ only by
case or Unicode normalisation, an output folder holding a link out, a damaged file. Whatever the
entries, nothing is written outside DIR, and a refused or failed extraction leaves DIR as it was.
(A NUL cannot reach extract: libzim cuts a path at its first NUL.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.errors import FormatError
from archiver.zim import extract, icon
from archiver.zim.write import ItemSpec, write_zim
from tests.gwtar.test_extract_attack import snapshot


def hostile_zim(path: Path, names: list[str]) -> Path:
    def item(p: str) -> ItemSpec:
        data = p.encode("utf-8", "surrogateescape") + b"!"
        return ItemSpec(
            path=p, title="", mimetype="text/html", size=len(data), front=False, compress=False,
            chunks=lambda: [data],
        )  # fmt: skip

    write_zim(
        path,
        items=[item(n) for n in names],
        redirects=list,
        main=names[0],
        metadata=lambda: {"Title": "hostile"},
        illustration=icon.generated_png("x"),
        index_language="eng",
    )
    return path


def _world(tmp_path: Path, state: str) -> tuple[Path, Path]:
    sentinel, out = tmp_path / "sentinel", tmp_path / "out"
    sentinel.mkdir()
    (sentinel / "x").write_bytes(b"sentinel")
    if state != "missing":
        out.mkdir()
    if state == "content":
        (out / "keep.txt").write_bytes(b"mine")
        (out / "docs").symlink_to(sentinel)
    return sentinel, out


REFUSED = {
    "dotdot": ["ok.html", "../x"],
    "absolute": ["ok.html", "/abs.html"],
    "climb": ["ok.html", "a/../../b.html"],
    "file and folder": ["a", "a/b.html"],
    "through the user's link": ["ok.html", "docs/x"],
}


GRID = [
    (case, state)
    for case in REFUSED
    for state in ("missing", "empty", "content")
    if state == "content" or case != "through the user's link"  # that link is the content's
]


@pytest.mark.parametrize(("case", "state"), GRID)
def test_unsafe_paths_are_refused_and_dir_is_unchanged(tmp_path: Path, case: str, state: str) -> None:
    sentinel, out = _world(tmp_path, state)
    zim = hostile_zim(tmp_path / "hostile.zim", REFUSED[case])
    before, outside = snapshot(out), snapshot(sentinel)
    with pytest.raises(FormatError):
        extract(zim, out, force=True)
    assert snapshot(out) == before and os.path.lexists(out) == (state != "missing")
    assert snapshot(sentinel) == outside
    left = sorted(os.listdir(tmp_path))
    assert left == sorted(["hostile.zim", "sentinel", *(["out"] if state != "missing" else [])])


@pytest.mark.parametrize("case", ["dotdot", "absolute", "climb"])
def test_verify_calls_a_zim_with_paths_extract_refuses_invalid(
    tmp_path: Path, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """A ZIM whose entry paths climb out (``../x``, ``a/../../b.html``) or are absolute was OK to
    ``verify`` while ``extract`` refused it: verify now names the entry, INVALID, exit 1."""
    zim = hostile_zim(tmp_path / "hostile.zim", REFUSED[case])
    assert main(["verify", "--no-links", str(zim)]) == 1
    out = capfd.readouterr().out
    bad = REFUSED[case][1]
    assert f"{zim}: {bad}: entry path {bad!r}" in out and "extract refuses it" in out
    assert out.splitlines()[-1].startswith(f"{zim}: INVALID"), out


def test_a_name_too_long_rolls_back_with_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    _, out = _world(tmp_path, "content")
    zim = hostile_zim(tmp_path / "long.zim", ["a.html", "b.html", "z/" + "x" * 300 + ".html"])
    before = snapshot(out)
    assert main(["extract", str(zim), "-o", str(out), "--force"]) == 1
    err = capfd.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"archiver: {out}: file name too long while writing 'z/xxx")
    assert snapshot(out) == before


def test_odd_names_stay_inside_and_apart(tmp_path: Path) -> None:
    names = ["ok.html", "a\nb.html", "\x1b[31m.html", "A.html", "a.html", "\u00e9.html", "e\u0301.html"]
    _, out = _world(tmp_path, "missing")
    zim = hostile_zim(tmp_path / "odd.zim", names)
    assert extract(zim, out) == len(names)
    for name in names:
        assert (out / name).read_bytes() == name.encode() + b"!"
    assert sorted(os.listdir(tmp_path)) == ["odd.zim", "out", "sentinel"]


def test_ls_escapes_control_characters(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    zim = hostile_zim(tmp_path / "odd.zim", ["ok.html", "a\nb.html", "\x1b[31mred.html", "del\x7f.html"])
    assert main(["ls", str(zim)]) == 0
    out = capfd.readouterr().out
    assert "\x1b" not in out and "\x7f" not in out
    shown = sorted(line.split()[-1] for line in out.splitlines())
    assert shown == sorted(["ok.html", "a\\nb.html", "\\x1b[31mred.html", "del\\x7f.html"])


def test_a_damaged_zim_is_not_extracted(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    zim = hostile_zim(tmp_path / "d.zim", ["ok.html", "b.html"])
    data = bytearray(zim.read_bytes())
    at = data.index(b"ok.html!")
    data[at + 1] ^= 0x20  # "oK.html!": the content changes, libzim still reads it
    zim.write_bytes(bytes(data))
    out = tmp_path / "out"
    assert main(["extract", str(zim), "-o", str(out)]) == 1
    err = capfd.readouterr().err
    assert "checksum" in err and len(err.splitlines()) == 1
    assert not os.path.lexists(out)
