"""``archiver verify TREE`` checks the tree, as its message promises: manifest sizes and hashes,
files that escape or are missing, links that do not resolve; problems and warnings as for a ZIM."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.tree_verify import verify_tree

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return Path(shutil.copytree(MINI, tmp_path / "mini", symlinks=True))


def test_a_sound_tree_is_ok(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = verify_tree(tree)
    assert report.ok and report.files == 14 and report.links > 50 and report.warnings == []
    assert main(["verify", str(tree)]) == 0
    assert capsys.readouterr().out == f"{tree}: OK (14 files, {report.links} links)\n"


def test_changed_missing_and_linked_out_files_are_problems(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / "greatwork.html").write_bytes((tree / "greatwork.html").read_bytes() + b"<!-- changed -->")
    (tree / "what?.html").unlink()
    secret = tmp_path / "secret.css"
    secret.write_text("body{}")
    css = tree / "_archiver" / "mini.example" / "css" / "base.css"
    css.unlink()
    os.symlink(secret, css)  # a listed file swapped for a link out of the tree
    report = verify_tree(tree)
    shown = [str(p) for p in report.problems]
    assert any(s.startswith("greatwork.html: is ") for s in shown), shown
    assert "what?.html: is missing" in shown
    assert any("base.css: is reached through a symbolic link" in s for s in shown)
    assert any("broken: 'what?.html' is not in the archive" in s for s in shown), shown  # index links it
    assert main(["verify", str(tree)]) == 1
    assert capsys.readouterr().out.rstrip().endswith(f"INVALID (14 files, {report.links} links)")


def test_unlisted_files_and_no_manifest_are_warnings(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tree / "extra.txt").write_text("not captured")
    report = verify_tree(tree)
    assert report.ok and [str(w) for w in report.warnings] == ["1 file(s) not in the manifest: extra.txt"]
    assert main(["verify", "--strict", str(tree)]) == 1
    (tree / "_archiver" / "manifest.jsonl").unlink()
    capsys.readouterr()
    assert main(["verify", "--json", str(tree)]) == 0
    doc = json.loads(capsys.readouterr().out)
    (entry,) = doc["files"]
    assert entry["format"] == "tree" and entry["ok"] and entry["manifest"] is False


def test_verify_r_covers_trees_zims_and_gwtars(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "shelf"
    folder.mkdir()
    shutil.move(tree, folder / "mini")
    assert main(["pack", str(folder / "mini"), "--format", "zim", "-o", str(folder / "m.zim")]) == 0
    assert main(["pack", str(folder / "mini"), "--format", "gwtar", "-o", str(folder / "m.gwtar.html")]) == 0
    capsys.readouterr()
    assert main(["verify", "-r", str(folder)]) == 0
    out = capsys.readouterr().out
    for name in ("mini: OK (14 files", "m.zim: OK (", "m.gwtar.html: OK ("):
        assert name in out, out
