"""archiver.gwtar.extract and ls: the tree comes back, hostile members are refused."""

from __future__ import annotations

import filecmp
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver import tar
from archiver.errors import FormatError, UsageError
from archiver.gwtar import PackResult, extract, ls, pack
from tests.gwtar.corpus import MINI, STUB_LOADER, _member, build, raw_v1


def _tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_extract_gives_back_the_tree(tmp_path: Path, mini_gwtar: PackResult) -> None:
    out = tmp_path / "out"
    assert extract(mini_gwtar.path, out) == 15
    assert _tree_files(out) == _tree_files(MINI)
    cmp = filecmp.dircmp(out, MINI)
    assert not cmp.left_only and not cmp.right_only
    assert (out / "index.html").stat().st_mtime == 1795953600  # created, 2026-11-29T12:00:00Z


def test_ls(mini_gwtar: PackResult) -> None:
    members = ls(mini_gwtar.path)
    assert [m.path for m in members][:2] == ["index.html", "_archiver/mini.example/css/main__q-269fc2.css"]
    assert members[-1].path == "_archiver/manifest.jsonl"


def test_never_overwrites_without_force(tmp_path: Path, mini_gwtar: PackResult) -> None:
    out = tmp_path / "out"
    (out / "docs").mkdir(parents=True)
    (out / "docs" / "index.html").write_text("mine")
    with pytest.raises(UsageError, match="use --force"):
        extract(mini_gwtar.path, out)
    assert _tree_files(out) == {"docs/index.html": b"mine"}  # nothing else written
    assert extract(mini_gwtar.path, out, force=True) == 15
    assert (out / "docs" / "index.html").read_bytes() == (MINI / "docs" / "index.html").read_bytes()
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a folder"):
        extract(mini_gwtar.path, tmp_path / "file")


def test_refuses_to_write_through_a_symlink(tmp_path: Path, mini_gwtar: PackResult) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    os.symlink(elsewhere, out / "docs")
    with pytest.raises(FormatError, match="symbolic link"):
        extract(mini_gwtar.path, out, force=True)
    assert list(elsewhere.iterdir()) == []


def test_hostile_corpus_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    cases = build(tmp_path / "corpus", big=False)
    refused = [c for c in cases if c.extract_refused]
    assert len(refused) == 7
    for case in refused:
        out = tmp_path / "x" / case.name
        with pytest.raises(FormatError, match="refusing to extract member"):
            extract(tmp_path / "corpus" / "broken" / f"{case.name}.gwtar.html", out)
        assert not out.exists()
    assert not (tmp_path / "etc").exists()
    for case in cases:  # every other broken file: a FormatError or a (checked) extraction, never a traceback
        out = tmp_path / "y" / case.name
        try:
            extract(tmp_path / "corpus" / "broken" / f"{case.name}.gwtar.html", out)
        except FormatError as e:
            assert "\n" not in str(e)


def test_links_inside_the_folder_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "links.gwtar.html"
    path.write_bytes(raw_v1([_member("sub/link.png", typeflag=b"2", linkname="../page/page-asset-1.png"),
                             _member("hard.png", typeflag=b"1", linkname="page/page-asset-1.png"),
                             _member("folder/", typeflag=b"5")]))  # fmt: skip
    out = tmp_path / "out"
    assert extract(path, out, keep_symlinks=True) == 4
    assert os.readlink(out / "sub" / "link.png") == "../page/page-asset-1.png"
    assert (out / "sub" / "link.png").read_bytes() == (out / "hard.png").read_bytes() == bytes(range(200))
    assert (out / "folder").is_dir()


def test_damaged_member_is_not_written(tmp_path: Path, mini_gwtar: PackResult) -> None:
    data = bytearray(mini_gwtar.path.read_bytes())
    data[mini_gwtar.overhead + 600] ^= 1
    path = tmp_path / "damaged.gwtar.html"
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="SHA-256 does not match"):
        extract(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing at all, temporary files included
    assert list(tmp_path.iterdir()) == [path]


# -- round trip: tree → gwtar → extract gives the identical tree

NAME = (
    st.lists(
        st.sampled_from([*"abcxyz09-_. é日ß#?%&+=,;@~'", "e\u0301", "\U0001f600"]), min_size=1, max_size=16
    )
    .map("".join)
    .filter(lambda s: s not in (".", ".."))
)
PATHS = st.lists(st.lists(NAME, min_size=1, max_size=14), min_size=0, max_size=10)


def _make_tree(
    root: Path, paths: list[list[str]], contents: list[bytes], linked: list[bool]
) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    for parts, data in zip(paths, contents, strict=False):
        if parts[0] in ("_archiver", "index.html"):
            continue
        rel = "/".join(parts)
        prefixes = {"/".join(parts[:i]) for i in range(1, len(parts))}
        if (
            rel in files
            or rel in folders
            or prefixes & set(files)
            or any(len(p.encode()) > 255 for p in parts)
        ):
            continue
        files[rel] = data
        folders |= prefixes
    links = [f for f, keep in zip(sorted(files), linked, strict=False) if keep]
    body = "".join(f'<img src="{quote(f)}">' for f in links)
    files["index.html"] = f"<!DOCTYPE html><title>t</title>{body}".encode()
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A folder in RAM when the machine has one (fsync is free there): the property checks bytes and
    names, not durability, and runs 200 packs and extractions."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="gwtar-rt-") as d:
            yield Path(d)
    else:
        yield tmp_path


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    PATHS, st.lists(st.binary(max_size=1500), min_size=10, max_size=10), st.lists(st.booleans(), max_size=10)
)
def test_round_trip(
    fast_tmp: Path, paths: list[list[str]], contents: list[bytes], linked: list[bool]
) -> None:
    work = Path(tempfile.mkdtemp(dir=fast_tmp))
    files = _make_tree(work / "tree", paths, contents, linked)
    result = pack(work / "tree", work / "t.gwtar.html", loader=STUB_LOADER)
    assert result.members == len(files)
    assert extract(result.path, work / "out") == len(files)
    assert _tree_files(work / "out") == files
    if any(not tar.fits_ustar(p) for p in files):
        assert b"././@PaxHeader" in result.path.read_bytes()
