"""``archiver pack/verify/ls/extract`` on ZIM files, through the real command line: exit codes, text and
JSON output, and a clean stdout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from archiver.cli import main

from .conftest import MINI, MakeTree, page


def _pack(src: Path, out: Path, *flags: str) -> int:
    return main(["pack", str(src), "--format", "zim", "-o", str(out), *flags])


def test_pack_json_stdout_is_one_json_object(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # libzim prints progress on the C-level stdout; --json output must hold nothing else
    assert _pack(MINI, tmp_path / "mini.zim", "--json") == 0
    out, err = capfd.readouterr()
    data = json.loads(out)
    assert data["entries"] == 15 and data["main"] == "index.html" and "ZIM file is ready" not in out + err
    assert data["warnings"] == [] and data["skipped"] == []


def test_verify_exit_codes_lines_and_one_json_document(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.zim"
    assert _pack(MINI, good) == 0
    capfd.readouterr()
    assert main(["verify", str(good)]) == 0
    assert capfd.readouterr().out == f"{good}: OK (15 entries)\n"
    bad = tmp_path / "bad.zim"
    _pack(make_tree({"index.html": page("Home", '<img srcset="gone.png 2x">')}), bad)
    capfd.readouterr()
    assert main(["verify", str(bad)]) == 1
    lines = capfd.readouterr().out.splitlines()
    assert (
        lines[0].startswith(f"{bad}: index.html: <img srcset> 'gone.png': broken") and "INVALID" in lines[1]
    )
    gwtar = tmp_path / "mini.gwtar.html"
    assert main(["pack", str(MINI), "--format", "gwtar", "-o", str(gwtar)]) == 0
    capfd.readouterr()
    assert main(["verify", "--json", str(good), str(gwtar), str(bad)]) == 1
    doc = json.loads(capfd.readouterr().out)  # one document for every file, in the order given
    assert doc["ok"] is False
    assert [(f["path"], f["ok"]) for f in doc["files"]] == [
        (str(good), True),
        (str(gwtar), True),
        (str(bad), False),
    ]
    assert doc["files"][2]["problems"][0]["entry"] == "index.html"
    assert main(["verify", str(tmp_path / "missing.zim")]) == 2
    assert capfd.readouterr().out.endswith("missing.zim: UNREADABLE\n")


def test_pack_errors_are_one_line_with_the_family_code(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree({"index.html": page("Home")}, options={"incomplete": True})
    assert _pack(tree, tmp_path / "x.zim") == 2
    err = capfd.readouterr().err
    assert err.startswith("archiver: ") and "crawl is incomplete" in err and err.count("\n") == 1


def test_pack_says_what_it_left_out(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree({"index.html": page("Home"), "empty.txt": b""})
    assert _pack(tree, tmp_path / "x.zim") == 0
    err = capfd.readouterr().err.splitlines()
    assert (
        f"archiver: warning: {tmp_path / 'x.zim'}: left out empty.txt: empty: ZIM forbids empty entries"
        in err
    )


def test_warnings_say_so_and_name_the_flag(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # before: "archiver: x.zim: index.html has no usable <html lang>; … (set it explicitly)", a line
    # that reads like an error and names no flag
    tree = make_tree({"index.html": b"<!doctype html><html><title>T</title><body>x</body></html>"})
    assert _pack(tree, tmp_path / "x.zim") == 0
    err = capfd.readouterr().err.splitlines()
    assert err and all(line.startswith("archiver: warning: ") for line in err), err
    assert any("Language defaults to eng (set it with --metadata Language=CODE)" in line for line in err), err
    assert _pack(tree, tmp_path / "y.zim", "--metadata", "Language=fra") == 0
    assert "Language" not in capfd.readouterr().err


def test_ls_and_extract(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    zim = tmp_path / "mini.zim"
    _pack(MINI, zim)
    capfd.readouterr()
    assert main(["ls", "--json", str(zim)]) == 0
    rows = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    assert {"path": "index.html", "title": "Mini home", "media_type": "text/html", "size": 1062} in rows
    assert main(["extract", str(zim), "-o", str(tmp_path / "out")]) == 0
    assert capfd.readouterr().out.strip().endswith("15 files extracted into " + str(tmp_path / "out"))
    assert main(["extract", str(zim), "-o", str(tmp_path / "out")]) == 2
    shutil.rmtree(tmp_path / "out")
