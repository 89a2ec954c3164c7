"""pack(): a tree (or a ZIM) in, a complete ZIM out, with the mapping of formats/zim.md."""

from __future__ import annotations

import json
import os
import random
import shutil
import zlib
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.errors import FormatError, UsageError
from archiver.media import COMPRESSED_TYPES
from archiver.tree import read_header, read_records
from archiver.zim import extract, icon, open, pack
from archiver.zim.metadata import png_size

from .conftest import DAY, MINI, SITE, MakeTree, page, tree_files
from .zimfile import cluster_compression


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_mini_tree_entries_titles_types_and_hints(mini_zim: Path) -> None:
    records = {r.path: r for r in read_records(MINI)}
    compression = cluster_compression(mini_zim)
    with open(mini_zim) as z:
        assert z.main_path == "index.html"
        assert set(z.entries()) == set(records) | {"_archiver/manifest.jsonl"}
        for path, record in records.items():
            entry = z.get(path)
            assert entry.read() == (MINI / path).read_bytes(), path
            assert entry.mimetype == record.media_type
            if record.kind == "page":
                assert entry.title == record.title
            want = "none" if record.media_type in COMPRESSED_TYPES else "zstd"
            assert compression[path] == want, path
        # front articles are exactly the pages; assets are not listed for suggestions
        assert z.article_count == sum(r.kind == "page" for r in records.values())
        assert z.has_fulltext_index and z.has_title_index
        meta = z.metadata
        assert meta["Title"] == "Mini home" and meta["Language"] == "eng"
        assert meta["Name"] == "mini.example_en_all" and meta["Creator"] == "mini.example"
        assert meta["Date"] == DAY.isoformat() and meta["Source"] == "https://mini.example/"
        assert meta["Scraper"].startswith("archiver ")
        assert meta["Tags"] == "_ftindex:yes;_pictures:yes;_videos:no;_details:yes"
        assert png_size(z.illustration or b"") == (48, 48)


def test_the_manifest_travels_compacted(mini_zim: Path) -> None:
    with open(mini_zim) as z:
        lines = z.get("_archiver/manifest.jsonl").read().splitlines()
    header = read_header(MINI)
    assert header is not None
    assert json.loads(lines[0])["home"] == header.home
    assert [json.loads(line)["path"] for line in lines[1:]] == [r.path for r in read_records(MINI)]


def test_defaults_come_from_the_main_page(make_tree: MakeTree, tmp_path: Path) -> None:
    favicon = (SITE / "favicon.ico").read_bytes()
    head = (
        '<meta name="description" content="Guides   for the field.">\n'
        '<link rel="icon" href="_archiver/ex.test/favicon.ico">\n'
    )
    title = "The Acme Field Guide to Everything You Can Find Outdoors"
    tree = make_tree(
        {"index.html": page(title, lang="fr-CA", head=head), "_archiver/ex.test/favicon.ico": favicon}
    )
    result = pack(tree, tmp_path / "out.zim", today=DAY)
    meta = result.metadata
    assert meta["Language"] == "fra" and meta["Name"] == "ex.test_fr_all"
    assert meta["Title"].endswith("…") and len(meta["Title"]) == 30
    assert meta["Description"] == "Guides for the field."
    with open(result.path) as z:
        png = z.illustration
    assert png is not None and png_size(png) == (48, 48)
    assert png == icon.scaled_png(favicon) and png != icon.generated_png(meta["Name"])
    assert result.illustration == "_archiver/ex.test/favicon.ico"
    assert result.warnings == []


def test_generated_illustration_and_language_warning(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree({"index.html": b"<!DOCTYPE html><title>No lang</title><p>hello</p>"})
    result = pack(tree, tmp_path / "out.zim", today=DAY)
    assert result.metadata["Language"] == "eng"
    assert any("no usable <html lang>" in w for w in result.warnings)
    assert result.illustration == "generated"
    with open(result.path) as z:
        assert z.illustration == icon.generated_png(result.metadata["Name"])


def test_user_metadata_wins_and_bad_values_write_nothing(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree({"index.html": page("Home")})
    icon_file = tmp_path / "icon.ico"
    icon_file.write_bytes((SITE / "favicon.ico").read_bytes())
    result = pack(
        tree,
        tmp_path / "ok.zim",
        metadata={
            "title": "My title",
            "long-description": "A longer text\nover two lines.",
            "language": "deu,eng",
            "tags": "wiki;_videos:yes",
            "flavour": "maxi",
            "illustration": str(icon_file),
            "X-Custom": "1",
        },
    )
    meta = result.metadata
    assert meta["Title"] == "My title" and meta["Language"] == "deu,eng" and meta["Flavour"] == "maxi"
    assert meta["LongDescription"] == "A longer text\nover two lines." and meta["X-Custom"] == "1"
    assert meta["Tags"] == "wiki;_videos:yes;_ftindex:yes;_pictures:no;_details:yes"
    out = tmp_path / "bad.zim"
    with pytest.raises(UsageError) as e:
        pack(tree, out, metadata={"title": "x" * 31, "language": "english", "date": "2026-13-01"})
    assert "Title: has 31 characters" in str(e.value) and "Language: 'english'" in str(e.value)
    assert not out.exists() and _leftovers(tmp_path) == []
    with pytest.raises(UsageError, match="unknown metadata key"):
        pack(tree, out, metadata={"colour": "red"})


def test_incomplete_crawl_is_refused_unless_allowed(make_tree: MakeTree, tmp_path: Path) -> None:
    by_option = make_tree({"index.html": page("Home")}, options={"incomplete": True})
    by_marker = make_tree({"index.html": page("Home")})
    (by_marker / "_archiver" / "INCOMPLETE").write_bytes(b"")
    for tree in (by_option, by_marker):
        out = tmp_path / f"{tree.name}.zim"
        with pytest.raises(UsageError, match="crawl is incomplete"):
            pack(tree, out)
        assert not out.exists()
        result = pack(tree, out, allow_incomplete=True)
        assert result.incomplete
        with open(out) as z:
            assert z.metadata["X-Archiver-Incomplete"] == "yes"
    complete = make_tree({"index.html": page("Home")})
    with open(pack(complete, tmp_path / "c.zim").path) as z:
        assert "X-Archiver-Incomplete" not in z.metadata


def _many_pages(n: int) -> dict[str, bytes]:
    files = {"index.html": page("Home", "".join(f'<a href="p/{i:03}.html">{i}</a>' for i in range(n)))}
    files |= {f"p/{i:03}.html": page(f"Page {i}", f"text number{i} " * 50) for i in range(n)}
    return files


def test_a_failure_mid_pack_leaves_no_zim(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree(_many_pages(60))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "site.zim"
    # a file changed after the manifest was written: its size no longer matches, 50 entries in
    (tree / "p/050.html").write_bytes(b"<p>changed</p>")
    with pytest.raises(FormatError, match=r"p/050\.html.* 14 bytes on disk, the manifest says"):
        pack(tree, out)
    assert not out.exists() and list(out_dir.iterdir()) == []
    # an earlier good ZIM at the output path survives a failed re-pack untouched
    good = make_tree({"index.html": page("Good")})
    pack(good, out)
    before = out.read_bytes()
    with pytest.raises(FormatError):
        pack(tree, out)
    assert out.read_bytes() == before and _leftovers(out_dir) == []


def test_same_size_different_bytes_is_caught_after_finalise(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree(_many_pages(5))
    original = (tree / "p/003.html").read_bytes()
    (tree / "p/003.html").write_bytes(original.replace(b"Page 3", b"Page X"))
    out = tmp_path / "site.zim"
    with pytest.raises(FormatError, match=r"p/003\.html' SHA-256 differs"):
        pack(tree, out)
    assert not out.exists() and _leftovers(tmp_path) == []


def test_empty_files_are_skipped_and_reported(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree({"index.html": page("Home"), "_archiver/ex.test/empty.css": b""})
    result = pack(tree, tmp_path / "out.zim")
    assert result.skipped == [("_archiver/ex.test/empty.css", "empty: ZIM forbids empty entries")]
    with open(result.path) as z:
        assert not z.has("_archiver/ex.test/empty.css")
        manifest = z.get("_archiver/manifest.jsonl").read().decode()
    assert "empty.css" not in manifest


def test_redirects_from_manifest_aliases(make_tree: MakeTree, tmp_path: Path) -> None:
    files = {"index.html": page("Home"), "docs/index.html": page("Docs"), "_archiver/ex.test/a.png": b"png"}
    extra = {
        "docs/index.html": {
            "urls": ["https://ex.test/docs/", "https://ex.test/documentation"],
            "redirects": ["https://ex.test/old/docs.html", "https://ex.test/docs/index.html"],
        },
        "_archiver/ex.test/a.png": {
            "urls": ["https://ex.test/a.png"],
            "redirects": ["https://ex.test/b.png"],
        },
        # an alias whose path is already an entry is not a redirect
        "index.html": {"urls": ["https://ex.test/", "https://ex.test/docs"]},
    }
    tree = make_tree(files, extra=extra)
    result = pack(tree, tmp_path / "out.zim")
    assert result.redirects == 3
    with open(result.path) as z:
        for alias, target in [
            ("documentation/index.html", "docs/index.html"),
            ("old/docs.html", "docs/index.html"),
            ("_archiver/ex.test/b.png", "_archiver/ex.test/a.png"),
        ]:
            entry = z.get(alias)
            assert entry.is_redirect and entry.redirect_target == target
            assert entry.read() == z.get(target).read()
        assert z.get("documentation/index.html").title == "Docs"
        assert not z.get("docs/index.html").is_redirect
        assert z.entry_count == 3 + 1 + 3  # items, stored manifest, redirects


def test_libzim_chatter_stays_off_stdout(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree({"index.html": page("Home")})
    print("before", flush=True)
    pack(tree, tmp_path / "out.zim")
    print("after", flush=True)
    out, _ = capfd.readouterr()
    assert out == "before\nafter\n"


def test_tree_without_manifest(tmp_path: Path) -> None:
    tree = tmp_path / "plain"
    shutil.copytree(MINI, tree)
    (tree / "_archiver" / "manifest.jsonl").unlink()
    result = pack(tree, tmp_path / "plain.zim")
    with open(result.path) as z:
        assert not z.has("_archiver/manifest.jsonl")
        assert z.get("docs/intro/index.html").title == "Introduction"
        assert z.main_path == "index.html"
        assert z.entry_count == len([p for p in MINI.rglob("*") if p.is_file()]) - 1


def test_zim_to_zim_keeps_entries_titles_redirects_metadata(make_tree: MakeTree, tmp_path: Path) -> None:
    files = {"index.html": page("Home"), "a.html": page("Alpha"), "_archiver/ex.test/x.png": b"\x89PNG...."}
    tree = make_tree(files, extra={"a.html": {"urls": ["https://ex.test/a.html", "https://ex.test/alpha"]}})
    first = pack(tree, tmp_path / "one.zim", metadata={"flavour": "maxi"})
    second = pack(first.path, tmp_path / "two.zim")
    assert second.source_kind == "zim"
    with open(first.path) as a, open(second.path) as b:
        assert list(a.entries()) == list(b.entries())
        for path in a.entries():
            x, y = a.get(path), b.get(path)
            assert (x.title, x.mimetype, x.is_redirect, x.redirect_target, x.read()) == (
                y.title, y.mimetype, y.is_redirect, y.redirect_target, y.read(),
            )  # fmt: skip
        assert a.article_count == b.article_count == 2
        ma, mb = a.metadata, b.metadata
        assert {k: v for k, v in ma.items() if k != "Scraper"} == {
            k: v for k, v in mb.items() if k != "Scraper"
        }
        assert a.illustration == b.illustration


def test_bad_inputs_are_named(tmp_path: Path, make_tree: MakeTree) -> None:
    with pytest.raises(UsageError, match="no such file or folder"):
        pack(tmp_path / "missing", tmp_path / "x.zim")
    tree = make_tree({"index.html": page("Home")})
    with pytest.raises(UsageError, match="output's folder does not exist"):
        pack(tree, tmp_path / "nope" / "x.zim")
    with pytest.raises(UsageError, match="is a folder"):
        pack(tree, tmp_path)
    with pytest.raises(UsageError, match=r"main page 'nope\.html' is not in the source"):
        pack(tree, tmp_path / "x.zim", main="nope.html")
    no_index = make_tree({"a/b.html": page("B")})
    assert pack(no_index, tmp_path / "y.zim").main == "a/b.html"
    bad = make_tree({"index.html": page("Home")}, extra={"index.html": {"path": "../up.html"}})
    (bad / "../up.html").write_bytes(page("Home"))
    with pytest.raises(FormatError, match=r"'\.\.' segment"):
        pack(bad, tmp_path / "z.zim")
    assert os.listdir(tmp_path).count("z.zim") == 0


def test_zim_source_redirect_chains_survive_and_loops_do_not(tmp_path: Path) -> None:
    from archiver.zim.write import ItemSpec, RedirectSpec, write_zim

    html = b"<!DOCTYPE html><html lang=en><title>x</title><p>x</p></html>"

    def item(path: str) -> ItemSpec:
        return ItemSpec(
            path=path, title=f"T {path}", mimetype="text/html", size=len(html), front=True, compress=True,
            chunks=lambda: [html],
        )  # fmt: skip

    source = tmp_path / "chain.zim"
    write_zim(
        source,
        items=[item("index.html"), item("c.html")],
        redirects=lambda: [
            RedirectSpec("a.html", "b.html", "A"),  # a → b → c: b is listed after a
            RedirectSpec("b.html", "c.html", "B"),
            RedirectSpec("l1.html", "l2.html"),  # a loop: libzim already drops it
            RedirectSpec("l2.html", "l1.html"),
        ],
        main="index.html",
        metadata=lambda: {"Title": "chain", "Language": "eng"},
        illustration=icon.generated_png("chain"),
        index_language="eng",
    )
    result = pack(source, tmp_path / "again.zim")
    assert result.redirects == 2
    with open(result.path) as z:
        assert [(p, z.get(p).redirect_target) for p in z.entries()] == [
            ("a.html", "b.html"),
            ("b.html", "c.html"),
            ("c.html", None),
            ("index.html", None),
        ]
        assert z.get("a.html").read() == html


def test_a_symlink_leaving_the_tree_is_refused(make_tree: MakeTree, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"not for the archive")
    tree = make_tree({"index.html": page("Home"), "notes.txt": b"not for the archive"})
    (tree / "notes.txt").unlink()
    (tree / "notes.txt").symlink_to(secret)
    with pytest.raises(FormatError, match="symlink that leaves the tree"):
        pack(tree, tmp_path / "out.zim")
    assert not (tmp_path / "out.zim").exists()


def test_what_does_not_compress_is_stored_the_same_from_every_source(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    """formats/zim.md §3.2: the type decides, else a sample of the bytes; the same bytes give the
    same clusters whether they come from a tree, a ZIM or a gwtar, and come back unchanged."""
    noise = random.Random(4).randbytes
    files = {
        "index.html": page("Home", '<a href="data/big.bin">data</a>'),
        "data/big.bin": noise((1 << 20) + 5000),  # streamed from the source: sampled by range
        "data/mid.bin": noise(40_000),  # read whole by pack: sampled from memory
        "data/tiny.bin": noise(2000),  # small: compressed without looking
        "data/zeros.bin": bytes((1 << 20) + 7000),  # streamed, compresses
        "data/table.dat": b"".join(b"%08d;%08d\n" % (i, i * i) for i in range(4000)),
        "data/report.docx": zlib.compress(noise(30_000), 9),  # an unknown type holding deflate
        "notes.txt": noise(30_000),  # text: always compressed
        "photo.png": bytes(30_000),  # a compressed type: never, whatever its bytes
    }
    want = {
        "index.html": "zstd", "data/big.bin": "none", "data/mid.bin": "none", "data/tiny.bin": "zstd",
        "data/zeros.bin": "zstd", "data/table.dat": "zstd", "data/report.docx": "none",
        "notes.txt": "zstd", "photo.png": "none", "_archiver/manifest.jsonl": "zstd",
    }  # fmt: skip
    tree = make_tree(files)
    zim = pack(tree, tmp_path / "tree.zim", today=DAY).path
    assert cluster_compression(zim) == want
    back = tmp_path / "back"
    extract(zim, back)
    assert tree_files(back) == tree_files(tree)
    again = pack(zim, tmp_path / "again.zim", today=DAY).path
    archive = gwtar.pack(tree, tmp_path / "t.gwtar.html", loader="window.stop();").path
    converted = pack(archive, tmp_path / "gwtar.zim", today=DAY).path
    assert cluster_compression(again) == cluster_compression(converted) == want
    with open(again) as a, open(converted) as b:
        for path in files:
            assert a.get(path).read() == b.get(path).read() == files[path], path
