"""A tree's private files (tree.is_private: the capture's state, ``_archiver/tmp/``) are no ZIM
content: TreeSource.has() denies them (also through a symlink), and a packed ZIM holds no entry for
them, read back with libzim."""

from __future__ import annotations

from pathlib import Path

import pytest
from libzim.reader import Archive

from archiver.tree import is_private
from archiver.zim import pack
from archiver.zim.source import TreeSource

from .conftest import DAY, build_tree, page

PUBLIC = {
    "index.html": page("Home", '<img src="_archiver/ex.test/a.png">'),
    "_archiver/ex.test/a.png": b"\x89PNG a",
    "_archiver/ex.test/tmp/b.png": b"\x89PNG b",  # a host's own tmp folder is public
}
PRIVATE = {
    "_archiver/crawl.sqlite": b"SQLite format 3\x00 https://ex.test/?token=secret",
    "_archiver/crawl.sqlite-wal": b"wal https://ex.test/?session=secret",
    "_archiver/tmp/x": b"half a file",
    "_archiver/tmp/write-1.tmp": b"half a file",
}
LINKS = {"s.db": "_archiver/crawl.sqlite", "state": "_archiver", "w.html": "_archiver/tmp/x"}
DENIED = [
    *PRIVATE,
    "_ARCHIVER/tmp/x",
    "_archiver/TMP/x",
    "s.db",
    "w.html",
    "state/crawl.sqlite",
    "state/tmp/x",  # tree.infer_records follows a symlinked folder; has() looks at the real path
]


def _plain_tree(root: Path) -> Path:
    for rel, data in {**PUBLIC, **PRIVATE, "_ARCHIVER/tmp/x": b"half"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "_archiver" / "TMP").mkdir()
    (root / "_archiver" / "TMP" / "x").write_bytes(b"half")
    for name, target in LINKS.items():
        (root / name).symlink_to(target)
    return root


def _entry_paths(zim: Path) -> list[str]:
    archive = Archive(zim)
    return [archive._get_entry_by_id(i).path for i in range(archive.entry_count)]


def test_has_denies_private_paths_of_a_tree_without_manifest(tmp_path: Path) -> None:
    source = TreeSource(_plain_tree(tmp_path / "plain"))
    for path in PUBLIC:
        assert source.has(path), path
    for path in DENIED:
        if path.startswith("state/"):
            assert (source.root / path).is_file(), path  # on disk, reachable through the symlink
        assert not source.has(path), path
    assert source.head("_archiver/tmp/x") is None and source.head("s.db") is None
    assert source.has("state/ex.test/a.png")  # public, through the symlinked folder


def test_zim_of_a_tree_without_manifest_has_no_private_entry(tmp_path: Path) -> None:
    result = pack(_plain_tree(tmp_path / "plain"), tmp_path / "plain.zim", today=DAY)
    paths = _entry_paths(result.path)
    assert "index.html" in paths and "_archiver/ex.test/tmp/b.png" in paths
    for path in paths:
        assert not is_private(path), path
        assert path not in ("s.db", "w.html", "state/crawl.sqlite", "state/tmp/x"), path
    assert b"secret" not in result.path.read_bytes()


@pytest.mark.parametrize("via", ["path", "symlink"])
def test_a_manifest_naming_a_private_file_does_not_pack_it(tmp_path: Path, via: str) -> None:
    root = tmp_path / "t"
    if via == "path":
        build_tree(root, {**PUBLIC, **PRIVATE})
    else:  # the manifest names symlinks that lead to private files (build_tree writes through them)
        (root / "_archiver").mkdir(parents=True)
        (root / "s.db").symlink_to("_archiver/crawl.sqlite")
        (root / "state").symlink_to("_archiver")
        build_tree(root, {**PUBLIC, "s.db": PRIVATE["_archiver/crawl.sqlite"], "state/tmp/x": b"half a file"})
        assert (root / "s.db").is_symlink() and (root / "_archiver" / "tmp" / "x").is_file()
    source = TreeSource(root)
    for path in [*PRIVATE, "s.db", "state/tmp/x"]:
        assert not source.has(path), path
    result = pack(root, tmp_path / "t.zim", today=DAY)
    paths = _entry_paths(result.path)
    assert "index.html" in paths and "_archiver/ex.test/a.png" in paths
    assert not any(is_private(p) or p in ("s.db", "state/tmp/x") for p in paths), paths
    assert b"secret" not in result.path.read_bytes()
