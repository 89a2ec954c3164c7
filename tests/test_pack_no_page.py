"""``pack`` of a folder with no page: one exit code (2) and one line for every format, naming a real
flag (before: gwtar exit 1, ZIM exit 2 with the hint "name one with main=", not a flag)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.cli import main


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
@pytest.mark.parametrize("files", [{"a.txt": "hello"}, {"css/site.css": "body{}", "img/x.svg": "<svg/>"}])
def test_pack_of_a_folder_without_a_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, files: dict[str, str]
) -> None:
    src = tmp_path / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    out = tmp_path / f"out.{fmt}"
    assert main(["pack", str(src), "--format", fmt, "-o", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"archiver: {src}: no HTML page to open first (no index.html): name the page to open with --main PATH"
    ]
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["src"]


def test_wacz_of_a_folder_without_warc_is_the_same_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "src").mkdir()
    assert main(["pack", str(tmp_path / "src"), "--format", "wacz", "-o", str(tmp_path / "x.wacz")]) == 2
    assert len(capsys.readouterr().err.splitlines()) == 1
