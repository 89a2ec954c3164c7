"""Conversions through the ZIM: gwtar → ZIM, and tree → ZIM → gwtar → tree, without loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver import gwtar
from archiver.errors import FormatError, UsageError
from archiver.tree import read_records
from archiver.zim import extract, open, pack, verify

from .conftest import MINI, MakeTree, page, tree_files

LOADER = "window.stop();"  # the gwtar loader's text does not matter to a conversion


def test_gwtar_to_zim_keeps_pages_assets_titles_and_aliases(make_tree: MakeTree, tmp_path: Path) -> None:
    files = {r.path: (MINI / r.path).read_bytes() for r in read_records(MINI)}
    extra = {"greatwork.html": {"urls": ["https://mini.example/greatwork.html", "https://mini.example/gw"]}}
    tree = make_tree(files, home="https://mini.example/", extra=extra)
    archive = gwtar.pack(tree, tmp_path / "site.gwtar.html", loader=LOADER).path
    direct = pack(tree, tmp_path / "direct.zim")
    converted = pack(archive, tmp_path / "converted.zim")
    assert converted.source_kind == "gwtar" and converted.main == "index.html"
    assert converted.redirects == direct.redirects == 1
    with open(direct.path) as a, open(converted.path) as b:
        assert set(a.entries()) == set(b.entries())
        for path in a.entries():
            x, y = a.get(path), b.get(path)
            if path == "_archiver/manifest.jsonl":
                continue  # compacted by pack, verbatim in the gwtar: same records, maybe other bytes
            assert (x.title, x.mimetype, x.is_redirect, x.redirect_target, x.read()) == (
                y.title, y.mimetype, y.is_redirect, y.redirect_target, y.read(),
            ), path  # fmt: skip
        assert a.article_count == b.article_count == 7
        assert b.suggest("A great", 5) == [("greatwork.html", "A great work")]
    assert verify(converted.path).ok


def test_tree_zim_gwtar_tree_round_trip(mini_zim: Path, tmp_path: Path) -> None:
    from_zim = tmp_path / "from-zim"
    extract(mini_zim, from_zim)
    archive = gwtar.pack(from_zim, tmp_path / "mini.gwtar.html", loader=LOADER).path
    back = tmp_path / "back"
    gwtar.extract(archive, back)
    assert tree_files(back) == tree_files(MINI)
    assert [(r.path, r.sha256, r.title) for r in read_records(back)] == [
        (r.path, r.sha256, r.title) for r in read_records(MINI)
    ]


def test_tree_gwtar_zim_tree_round_trip(tmp_path: Path) -> None:
    archive = gwtar.pack(MINI, tmp_path / "mini.gwtar.html", loader=LOADER).path
    zim = pack(archive, tmp_path / "mini.zim").path
    back = tmp_path / "back"
    extract(zim, back)
    assert tree_files(back) == tree_files(MINI)


def test_an_html_file_that_is_not_a_gwtar_is_refused(tmp_path: Path, make_tree: MakeTree) -> None:
    plain = tmp_path / "page.html"
    plain.write_bytes(page("Just a page"))
    with pytest.raises(FormatError):
        pack(plain, tmp_path / "x.zim")
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(UsageError, match=r"not a folder \(tree\), a \.zim or a \.gwtar\.html"):
        pack(other, tmp_path / "x.zim")
    assert not (tmp_path / "x.zim").exists()
