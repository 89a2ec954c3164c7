"""A tree's private files (tree.is_private: the capture's state, ``_archiver/tmp/``) are never packed
into a gwtar: not by the walk of a tree without a manifest, not through a symlink that leads there,
not when a manifest names them. Checked with our reader and with GNU tar on the tar body."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from archiver import tree, urls
from archiver.gwtar import PackResult, pack, rules
from archiver.gwtar import open as open_gwtar
from tests.gwtar.corpus import STUB_LOADER

PUBLIC = {
    "index.html": b"<title>Home</title><img src='_archiver/ex.com/a.png'>",
    "_archiver/ex.com/a.png": b"png",
    "_archiver/ex.com/tmp/b.png": b"png b",  # a host's own tmp folder is public
}
PRIVATE = {
    "_archiver/crawl.sqlite": b"SQLite format 3\x00 https://ex.com/?token=secret",
    "_archiver/crawl.sqlite-wal": b"wal https://ex.com/?session=secret",
    "_archiver/tmp/write-1.tmp": b"half a file",
}
LINKS = {"s.db": "_archiver/crawl.sqlite", "state": "_archiver", "w.tmp": "_archiver/tmp/write-1.tmp"}
SECRET_FREE = ("crawl.sqlite", "write-1.tmp", "s.db", "w.tmp", "state")


def _tree(root: Path, *, manifest: bool) -> Path:
    for rel, data in {**PUBLIC, **PRIVATE}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    for name, target in LINKS.items():
        (root / name).symlink_to(target)
    if manifest:
        header = tree.Header(home="https://ex.com/", created="2026-11-30T00:00:00Z")
        with tree.ManifestWriter(root, header) as w:
            for rel in [*PUBLIC, *PRIVATE, "s.db", "w.tmp", "_archiver/CRAWL.sqlite-shm"]:
                full = root / rel
                if rel.endswith("-shm"):
                    full.write_bytes(b"shm")
                data = full.read_bytes()
                w.add(
                    tree.Record(
                        path=rel,
                        kind="page" if rel.endswith(".html") else "asset",
                        media_type="text/html" if rel.endswith(".html") else "application/octet-stream",
                        size=len(data),
                        sha256=hashlib.sha256(data).hexdigest(),
                        urls=[f"https://ex.com/{rel}"],
                    )
                )
    return root


def _gnu_tar_names(result: PackResult) -> list[str]:
    out = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"tail -c +{result.overhead + 1} '{result.path}' | tar tf -"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return out.splitlines()


@pytest.mark.parametrize("manifest", [False, True], ids=["walked", "manifest"])
def test_private_files_are_not_packed(tmp_path: Path, manifest: bool) -> None:
    root = _tree(tmp_path / "site", manifest=manifest)
    result = pack(root, tmp_path / "site.gwtar.html", loader=STUB_LOADER)
    expected = sorted([*PUBLIC, *(["_archiver/manifest.jsonl"] if manifest else [])])
    with open_gwtar(result.path) as g:
        names = [m.path for m in g.members]
        assert sorted(names) == expected
        for m in g.members:
            assert g.read(m) == (root / m.path).read_bytes()
    listed = _gnu_tar_names(result)
    assert sorted(listed) == sorted([*expected, rules.INDEX_PATH])
    for name in listed:
        assert not tree.is_private(name) and not name.endswith(SECRET_FREE), name
    body = result.path.read_bytes()
    assert b"secret" not in body and b"half a file" not in body
    assert result.members == len(expected)


def test_symlink_to_a_public_file_is_still_packed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "site", manifest=False)
    (root / "alias.png").symlink_to("_archiver/ex.com/a.png")
    os.symlink(root / "_archiver" / "crawl.sqlite-wal", root / "abs.db")  # absolute, still private
    result = pack(root, tmp_path / "site.gwtar.html", loader=STUB_LOADER)
    with open_gwtar(result.path) as g:
        assert sorted(m.path for m in g.members) == sorted([*PUBLIC, "alias.png"])
        assert g.read(g.member("alias.png")) == b"png"


def test_one_definition_of_the_private_names() -> None:
    """tree.PRIVATE_NAMES is urls.PRIVATE_NAMES (defined there, so urls needs no import of tree);
    urls.RESERVED_NAMES is built from it and keeps exactly the names tree.md §4.4 lists; the gwtar
    exclusions are the same names."""
    assert tree.PRIVATE_NAMES is urls.PRIVATE_NAMES and tree.STATE_NAME is urls.STATE_NAME
    reserved = urls.RESERVED_NAMES
    assert reserved == {
        "manifest.jsonl",
        "crawl.sqlite",
        "crawl.sqlite-wal",
        "crawl.sqlite-shm",
        "tmp",
        "report.json",
        "warc",
        ".versions",  # formats/history.md: no canonical host is dot-first, so no LocalPath moves
    }
    assert reserved - {tree.MANIFEST_NAME} <= tree.PRIVATE_NAMES
    assert {f"_archiver/{n}" for n in tree.PRIVATE_NAMES} == rules.EXCLUDED - {rules.INDEX_PATH}
    assert all(tree.is_private(p) for p in rules.EXCLUDED - {rules.INDEX_PATH})
