"""archiver.walk and the commands that walk folders, written as the attack: a folder nested 1,500 deep
(an unpacked tarball, a hostile tree). Before, Python 3.11's recursive ``os.walk``/``Path.rglob`` and
the tree's own recursive walk ended ``verify``, ``verify -r``, ``archiver index`` and ``pack --format
zim`` in a RecursionError traceback (exit 70). Now they walk with a stack and find the deep files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.walk import files_below, makedirs, rmtree, walk

ROOT = Path(__file__).resolve().parents[1]
DEPTH = 1500  # 3,000 characters of path: under PATH_MAX, over the recursion limit


def _make(root: Path, shape: list[tuple[int, str, str]]) -> None:
    """Folders, files and links from ``shape``: (parent index, kind, name)."""
    made = [root]
    for parent, kind, name in shape:
        at = made[parent % len(made)] / name
        if at.exists() or at.is_symlink():
            continue
        if kind == "dir":
            at.mkdir()
            made.append(at)
        elif kind == "file":
            at.write_text("x")
        else:
            at.symlink_to(made[0] if kind == "dirlink" else "nowhere")


@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.sampled_from(["dir", "file", "dirlink", "badlink"]),
                  st.sampled_from(["a", "b", "c", "d", "e"])),
        max_size=40,
    )
)  # fmt: skip
@settings(max_examples=100, deadline=None)
def test_walk_is_os_walk(tmp_path_factory: pytest.TempPathFactory, shape: list[tuple[int, str, str]]) -> None:
    root = tmp_path_factory.mktemp("w")
    _make(root, shape)
    assert list(walk(root)) == list(os.walk(root))
    assert sorted(files_below(root)) == sorted(str(p) for p in root.rglob("*") if p.is_file())


def test_pruning_dirnames_in_place_is_honoured(tmp_path: Path) -> None:
    (tmp_path / "keep" / "in").mkdir(parents=True)
    (tmp_path / "skip" / "in").mkdir(parents=True)
    seen = []
    for here, dirs, _files in walk(tmp_path):
        dirs[:] = [d for d in dirs if d != "skip"]
        seen.append(os.path.relpath(here, tmp_path))
    assert sorted(seen) == [".", "keep", "keep/in"]


@pytest.fixture(scope="module")
def deep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("deep") / "tree"
    root.mkdir()
    (root / "index.html").write_text("<html><body><a href='d/x.html'>x</a></body></html>")
    bottom = root / "/".join(["d"] * DEPTH)
    makedirs(bottom)  # os.makedirs and Path.mkdir(parents=True) recurse: archiver.walk's loops
    (bottom / "x.html").write_text("<html><body><p>abyssalword</p></body></html>")
    yield root
    # shutil.rmtree recurses too (pytest's own clean-up of its temporary folders ended in a
    # RecursionError): removed here
    rmtree(root / "d")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_the_walkers_find_a_file_1500_folders_deep(deep: Path) -> None:
    assert any(p.endswith("/x.html") for p in files_below(deep))


@pytest.mark.parametrize("command", ["verify", "verify-r", "index", "zim"])
def test_commands_walk_a_folder_nested_1500_deep(deep: Path, tmp_path: Path, command: str) -> None:
    args = {
        "verify": ["verify", str(deep)],
        "verify-r": ["verify", "-r", str(deep.parent)],
        "index": ["index", str(deep)],
        "zim": ["pack", str(deep), "-o", str(tmp_path / "deep.zim"), "--format", "zim"],
    }[command]
    done = _cli(*args)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "recursion" not in said.lower(), said[-2000:]
    # verify -r: a folder without a manifest is no tree (exit 2: nothing to verify); pack: libzim
    # itself refuses a 3,000-character path ("loss of data during title indexing"), in one line
    assert done.returncode in (0, 1, 2) and said.count("\n") <= 3, said[-2000:]
    if command == "index":
        found = _cli("search", str(deep), "-q", "abyssalword")
        assert found.returncode == 0 and "abyssalword" in found.stdout
