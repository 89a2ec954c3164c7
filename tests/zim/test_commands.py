"""The command-line shaped functions: exit codes, text and JSON output, and a clean stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver.zim.commands import extract_main, ls_main, pack_main, verify_main

from .conftest import MINI, MakeTree, page


def test_pack_json_stdout_is_one_json_object(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # libzim prints progress on the C-level stdout; --json output must hold nothing else
    code = pack_main(MINI, tmp_path / "mini.zim", as_json=True)
    out, err = capfd.readouterr()
    assert code == 0
    data = json.loads(out)
    assert data["entries"] == 15 and data["main"] == "index.html" and "ZIM file is ready" not in out + err


def test_verify_exit_codes_and_lines(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.zim"
    assert pack_main(MINI, good) == 0
    capfd.readouterr()
    assert verify_main(good) == 0
    assert ": ok;" in capfd.readouterr().out
    bad = tmp_path / "bad.zim"
    pack_main(make_tree({"index.html": page("Home", '<img srcset="gone.png 2x">')}), bad)
    capfd.readouterr()
    assert verify_main(bad, as_json=True) == 1
    report = json.loads(capfd.readouterr().out)
    assert report["ok"] is False and report["problems"][0]["entry"] == "index.html"
    assert verify_main(tmp_path / "missing.zim") == 2
    assert "archiver: " in capfd.readouterr().err


def test_pack_errors_are_one_line_with_the_family_code(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree({"index.html": page("Home")}, options={"incomplete": True})
    assert pack_main(tree, tmp_path / "x.zim") == 2
    err = capfd.readouterr().err
    assert err.startswith("archiver: ") and "crawl is incomplete" in err and err.count("\n") == 1


def test_ls_and_extract(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    zim = tmp_path / "mini.zim"
    pack_main(MINI, zim)
    capfd.readouterr()
    assert ls_main(zim, as_json=True) == 0
    rows = json.loads(capfd.readouterr().out)
    assert {
        "path": "index.html",
        "title": "Mini home",
        "mimetype": "text/html",
        "size": 1062,
        "redirect": None,
    } in rows
    assert extract_main(zim, tmp_path / "out") == 0
    assert capfd.readouterr().out.strip().endswith("15 files")
    assert extract_main(zim, tmp_path / "out") == 2
