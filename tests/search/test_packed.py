"""The search index inside a gwtar and a ZIM (formats/search.md §8, gwtar.md §5.4, zim.md §11): pack
carries it under the tree's paths (built at pack time when the tree has none; ``--no-search-index``
leaves it out), ``verify`` names a damaged index file, ``archiver search`` ranks trees, gwtar and ZIM
files together reading only the files a query needs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.search import archive, store
from archiver.zim.read import open_archive

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"
SITE = ROOT / "testdata" / "site"
PREFIX = "_archiver/search/"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SITE, tmp_path / "site"))


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    return Path(shutil.copytree(MINI, tmp_path / "mini"))


def _pack(src: Path, out: Path, fmt: str, *extra: str) -> None:
    done = run("pack", str(src), "--format", fmt, "-o", str(out), *extra)
    assert done.returncode == 0, done.stderr


def _gwtar_index(path: Path) -> dict[str, bytes]:
    with gwtar.open(path) as g:
        return {m.path: g.read(m) for m in g.members if m.path.startswith(PREFIX)}


def _zim_index(path: Path) -> dict[str, bytes]:
    with open_archive(path) as z:
        return {p: bytes(z.get(p).read()) for p in z.entries() if p.startswith(PREFIX)}


def test_pack_builds_the_index_into_gwtar_and_zim_of_a_tree_without_one(mini: Path, tmp_path: Path) -> None:
    assert not store.has_index(mini)
    _pack(mini, tmp_path / "m.gwtar.html", "gwtar", "--search-index")
    _pack(mini, tmp_path / "m.zim", "zim", "--search-index")
    in_gwtar, in_zim = _gwtar_index(tmp_path / "m.gwtar.html"), _zim_index(tmp_path / "m.zim")
    want = {f"{PREFIX}{n}" for n in ("manifest.js", "index.html", "search.js", "t/0.js", "d/0.js", "x/0.js")}
    assert want <= set(in_gwtar) and in_gwtar == in_zim  # the same files under the same paths
    assert not (mini / "_archiver" / "search").exists()  # nothing written into the input tree
    _pack(mini, tmp_path / "plain.gwtar.html", "gwtar")  # by default none is built (it costs CPU)
    assert _gwtar_index(tmp_path / "plain.gwtar.html") == {}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left
    # the site index lists them, so the loader finds them like any member
    with gwtar.open(tmp_path / "m.gwtar.html") as g:
        at, size = int(g.meta["index"]["offset"]), int(g.meta["index"]["size"])
        with open(tmp_path / "m.gwtar.html", "rb") as f:
            f.seek(g.overhead + at)
            index = json.loads(f.read(size))
    assert want <= {m["path"] for m in index["members"]}
    # an index built in memory from the tree has the same bytes
    files: dict[str, bytes] = {}
    store.build_index(mini, files.__setitem__)
    assert in_gwtar[f"{PREFIX}manifest.js"] == files["manifest"]


def test_pack_takes_the_trees_own_index_and_no_search_index_leaves_it_out(mini: Path, tmp_path: Path) -> None:
    assert run("index", str(mini)).returncode == 0
    own = {
        f"{PREFIX}{p.relative_to(mini / '_archiver' / 'search').as_posix()}": p.read_bytes()
        for p in (mini / "_archiver" / "search").rglob("*")
        if p.is_file()
    }
    _pack(mini, tmp_path / "m.gwtar.html", "gwtar")
    assert _gwtar_index(tmp_path / "m.gwtar.html") == own
    _pack(mini, tmp_path / "n.gwtar.html", "gwtar", "--no-search-index")
    _pack(mini, tmp_path / "n.zim", "zim", "--no-search-index")
    assert _gwtar_index(tmp_path / "n.gwtar.html") == {} and _zim_index(tmp_path / "n.zim") == {}
    # a gwtar without the index is still valid, and search says what is missing in one line
    assert run("verify", str(tmp_path / "n.gwtar.html"), "--no-links").returncode == 0
    done = run("search", str(tmp_path / "n.gwtar.html"), "-q", "great")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"archiver: {tmp_path / 'n.gwtar.html'}: has no search index")


def test_pack_writes_its_own_search_page_beside_an_older_index(mini: Path, tmp_path: Path) -> None:
    """A tree indexed by an older archiver keeps its index data, but its search page and script are
    the packing archiver's (the older script does not work inside the gwtar loader)."""
    tree = tmp_path / "tree"
    shutil.copytree(mini, tree)
    assert run("index", str(tree)).returncode == 0
    (tree / "_archiver" / "search" / "search.js").write_text("/* an older search page script */\n")
    (tree / "_archiver" / "search" / "index.html").write_text("<!doctype html><title>old</title>\n")
    _pack(tree, tmp_path / "m.gwtar.html", "gwtar")
    packed = _gwtar_index(tmp_path / "m.gwtar.html")
    from archiver.search import page

    for name, data in page.files().items():
        assert packed[PREFIX + name] == data
    shard = tree / "_archiver" / "search" / "t" / "0.js"
    assert packed[f"{PREFIX}t/0.js"] == shard.read_bytes()
    assert run("verify", str(tmp_path / "m.gwtar.html"), "--no-links").returncode == 0


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
def test_verify_names_a_damaged_index_member(mini: Path, tmp_path: Path, fmt: str) -> None:
    # the mistake: a tree's index damaged on disk, packed as it is; verify of the archive names the shard
    assert run("index", str(mini)).returncode == 0
    shard = mini / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    out = tmp_path / ("m.gwtar.html" if fmt == "gwtar" else "m.zim")
    _pack(mini, out, fmt, "--search-index")
    verified = run("verify", str(out), "--no-links")
    assert verified.returncode == 1, verified.stdout
    assert "_archiver/search/t/0.js" in verified.stdout
    assert "search index: its SHA-256 does not match the manifest's" in verified.stdout
    searched = run("search", str(out), "-q", "great")
    assert searched.returncode == 1 and "_archiver/search/t/0.js" in searched.stderr


def test_search_ranks_a_tree_a_gwtar_and_a_zim_together(site: Path, tmp_path: Path) -> None:
    _pack(site, tmp_path / "s.gwtar.html", "gwtar", "--search-index")
    _pack(site, tmp_path / "s.zim", "zim", "--search-index")
    archives = [str(site), str(tmp_path / "s.gwtar.html"), str(tmp_path / "s.zim")]
    done = run("search", *archives, "-q", "field", "--json", "--limit", "6")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # the same site three times: each page comes three times in a row, with the same score
    assert [r["archive"] for r in doc["results"][:3]] == archives
    assert len({(r["path"], r["score"]) for r in doc["results"][:3]}) == 1
    alone = json.loads(run("search", str(site), "-q", "field", "--json", "--limit", "2").stdout)
    assert doc["total"] == 3 * alone["total"]
    text = run("search", str(tmp_path / "s.gwtar.html"), "-q", "field", "--limit", "1")
    assert f"{tmp_path / 's.gwtar.html'}#/" in text.stdout


def test_a_query_reads_only_the_members_it_needs(tmp_path: Path) -> None:
    pages = tmp_path / "t"
    pages.mkdir()
    for i in range(400):  # enough distinct words for several term shards
        words = " ".join(f"w{i}x{k}" for k in range(40))
        (pages / f"p{i:03}.html").write_text(f"<title>Page {i}</title><p>{words} common</p>")
    out = tmp_path / "t.gwtar.html"
    _pack(pages, out, "gwtar", "--search-index")
    read: list[str] = []
    with gwtar.open(out) as g:

        def load(name: str) -> bytes:
            read.append(name)
            return g.read(name)

        index = archive.archive_index(load, "t")
        assert len(index.shards) > 3
        from archiver.search import query

        found = query.search([index], "w7x3", limit=1)
    assert found.results[0].path == "p007.html"
    shards = [n for n in read if n.startswith(f"{PREFIX}t/")]
    assert len(shards) == 1, read


@pytest.mark.parametrize("fmt", ["gwtar", "zim"])
def test_index_of_an_archive_packed_without_one_goes_beside_it(mini: Path, tmp_path: Path, fmt: str) -> None:
    name = "m.gwtar.html" if fmt == "gwtar" else "m.zim"
    with_index, without = tmp_path / "with" / name, tmp_path / name
    with_index.parent.mkdir()
    _pack(mini, with_index, fmt, "--search-index")
    _pack(mini, without, fmt, "--no-search-index")
    before = without.read_bytes()
    assert run("search", str(without), "-q", "great").returncode == 2
    done = run("index", str(without))
    assert done.returncode == 0, done.stderr
    side = tmp_path / f"{name}.search"
    assert without.read_bytes() == before  # the archive is never changed
    inside = (_gwtar_index if fmt == "gwtar" else _zim_index)(with_index)
    assert (side / "manifest.js").read_bytes() == inside[f"{PREFIX}manifest.js"]  # the same index
    assert run("index", str(without)).returncode == 0  # again: replaced whole, nothing left over
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["mini", "with", name, f"{name}.search"])
    both = json.loads(run("search", str(without), str(with_index), "-q", "great", "--json").stdout)
    assert both["total"] >= 2 and len({r["score"] for r in both["results"][:2]}) == 1


def test_a_zim_stores_the_compressed_index_files_as_they_are(site: Path, tmp_path: Path) -> None:
    """Format 3's shards, fragment groups and text files are already compressed (§4.1): the ZIM
    holds them in uncompressed clusters (their bytes verbatim in the file), so libzim spends no
    zstd pass on them; the manifest and the search page, plain text, are compressed."""
    assert run("index", str(site)).returncode == 0
    _pack(site, tmp_path / "s.zim", "zim")
    raw = (tmp_path / "s.zim").read_bytes()
    folder = site / "_archiver" / "search"
    packed = [f for f in folder.rglob("*.js") if f.parent != folder]
    assert len(packed) >= 3
    for f in packed:
        assert f.read_bytes() in raw, f
    assert (folder / "search.js").read_bytes() not in raw  # compressed: plain JavaScript
    assert _zim_index(tmp_path / "s.zim")[PREFIX + "manifest.js"] == (folder / "manifest.js").read_bytes()


def test_a_symlinked_index_file_is_not_taken_the_index_is_built_again(mini: Path, tmp_path: Path) -> None:
    """The walk's sizes spare pack a look at each index file, but only for plain files: an index file
    that is a symbolic link (here to other bytes inside the tree) makes pack build the index again,
    as a missing one does, rather than pack what the link points to (a tree without a manifest: the
    one pack walks)."""
    (mini / "_archiver" / "manifest.jsonl").unlink()
    done = run("index", str(mini))
    assert done.returncode == 0, done.stderr
    chunk = mini / "_archiver" / "search" / "x" / "0.js"
    genuine = chunk.read_bytes()
    (mini / "other.js").write_bytes(b"/* not the index */" + b" " * (len(genuine) - 19))
    chunk.unlink()
    chunk.symlink_to(mini / "other.js")
    gwtar.pack(mini, tmp_path / "m.gwtar.html", search_index=True)
    assert _gwtar_index(tmp_path / "m.gwtar.html")[f"{PREFIX}x/0.js"] == genuine
