"""ZIMs archiver does not write, made at test time: zimwriterfs output of the mini tree, and the
tools that write the old layout and the damaged corpus (tools/zim_oldlayout.py, tools/zim_corpus.py)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"


def tool(name: str) -> ModuleType:
    """A module of tools/ by its name."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


oldlayout = tool("zim_oldlayout")


def zimwriterfs(tmp_path: Path, source: Path = MINI, **metadata: str) -> Path:
    """The mini tree (or ``source``, a copy of it; without its manifest) packed by Debian's
    zimwriterfs, with ``metadata`` (zimwriterfs option → value) over defaults that follow the openZIM
    rules. No redirects: Debian's zimwriterfs 3 refuses every line of a --redirects file, or crashes
    on it."""
    if not shutil.which("zimwriterfs"):
        pytest.fail("zimwriterfs is not installed (bash tools/bootstrap installs zim-tools)")
    site = tmp_path / "site"
    shutil.copytree(source, site)
    (site / "_archiver" / "manifest.jsonl").unlink()
    (site / "ill48.png").write_bytes(oldlayout._PNG_48)
    values = {"language": "eng", "title": "Mini", "description": "d", "creator": "c", "publisher": "p",
              "name": "mini", **metadata}  # fmt: skip
    zim = tmp_path / "zw.zim"
    options = [f"--{k}={v}" for k, v in values.items()]
    subprocess.run(
        ["zimwriterfs", "--welcome=index.html", "--illustration=ill48.png", *options, str(site), str(zim)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return zim
