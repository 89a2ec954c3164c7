"""The reader (archiver.zim.open), ls and extract: ranges, search, suggestions, round trips, safety."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archiver.errors import FormatError, UsageError
from archiver.tree import read_records
from archiver.zim import extract, icon, ls, open, pack
from archiver.zim.write import ItemSpec, RedirectSpec, write_zim

from .conftest import MINI, MakeTree, page, tree_files


def _word(path: str) -> str:
    return "mini" + hashlib.sha256(path.encode()).hexdigest()[:6]


def test_search_finds_a_word_of_one_deep_page_only(mini_zim: Path) -> None:
    with open(mini_zim) as z:
        assert z.search(_word("docs/intro/index.html"), 10) == [("docs/intro/index.html", "Introduction")]
        assert z.search(_word("search/index__q-84c0b0.html"), 10) == [
            ("search/index__q-84c0b0.html", "Search: cats")
        ]
        assert z.search("nosuchwordanywhere", 10) == []
        assert len(z.search("unique", 50)) == 7  # every page says "Unique word"


def test_suggestions_find_a_page_by_title_prefix(mini_zim: Path) -> None:
    with open(mini_zim) as z:
        assert z.suggest("Introd", 5) == [("docs/intro/index.html", "Introduction")]
        assert ("café menu/index.html", "Café menu") in z.suggest("Caf", 5)
        assert ("greatwork.html", "A great work") in z.suggest("great", 5)
        # assets are not front articles: never suggested
        assert all(not p.startswith("_archiver/") for p, _ in z.suggest("logo", 20))


def test_entry_reads_like_http_ranges(mini_zim: Path) -> None:
    data = (MINI / "_archiver/mini.example/fonts/field.woff2").read_bytes()
    with open(mini_zim) as z:
        e = z.get("_archiver/mini.example/fonts/field.woff2")
        assert (e.size, e.mimetype, e.is_redirect, e.redirect_target) == (
            len(data),
            "font/woff2",
            False,
            None,
        )
        assert e.read() == data
        assert e.read(1000, 500) == data[1000:1500]
        assert e.read(len(data) - 10) == data[-10:]
        assert e.read(len(data) + 5, 10) == b""
        assert e.read(0, 0) == b""
        assert b"".join(e.chunks(1000)) == data
        with pytest.raises(ValueError):
            e.read(-1)
        with pytest.raises(KeyError):
            z.get("nope.html")
        assert z.has("what?.html") and not z.has("what%3F.html")


def test_open_refuses_what_is_not_a_zim(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zim"
    bad.write_bytes(b"not a zim at all")
    with pytest.raises(FormatError, match="not a readable ZIM file"):
        open(bad)
    with pytest.raises(UsageError, match="no such file"):
        open(tmp_path / "missing.zim")


def test_round_trip_tree_zim_tree(mini_zim: Path, tmp_path: Path) -> None:
    out = tmp_path / "back"
    written = extract(mini_zim, out)
    assert tree_files(out) == tree_files(MINI)
    assert written == len(tree_files(MINI)) + 1  # and the manifest
    assert [(r.path, r.sha256, r.title) for r in read_records(out)] == [
        (r.path, r.sha256, r.title) for r in read_records(MINI)
    ]


def test_round_trip_keeps_redirect_aliases(make_tree: MakeTree, tmp_path: Path) -> None:
    extra = {"a.html": {"urls": ["https://ex.test/a.html", "https://ex.test/alpha"]}}
    tree = make_tree({"index.html": page("Home"), "a.html": page("A")}, extra=extra)
    first = pack(tree, tmp_path / "one.zim")
    extract(first.path, tmp_path / "back")
    again = pack(tmp_path / "back", tmp_path / "two.zim")
    assert first.redirects == again.redirects == 1
    rows = [(e.path, e.is_redirect, e.redirect_target) for e in ls(again.path)]
    assert ("alpha/index.html", True, "a.html") in rows


def test_extract_refuses_a_non_empty_folder_unless_forced(mini_zim: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        extract(mini_zim, out)
    assert extract(mini_zim, out, force=True) > 0
    assert (out / "keep.txt").read_text() == "mine" and (out / "index.html").is_file()


def _hostile(path: Path, names: list[str]) -> Path:
    def item(p: str) -> ItemSpec:
        return ItemSpec(
            path=p,
            title="",
            mimetype="text/html",
            size=3,
            front=False,
            compress=True,
            chunks=lambda: [b"bad"],
        )

    write_zim(
        path,
        items=[item(n) for n in names],
        redirects=lambda: [RedirectSpec("r.html", names[0])],
        main=names[0],
        metadata=lambda: {"Title": "hostile"},
        illustration=icon.generated_png("x"),
        index_language="eng",
    )
    return path


@pytest.mark.parametrize(
    ("names", "why"),
    [
        (["ok.html", "../evil.html"], "'..' segment"),
        (["ok.html", "/abs.html"], "not a relative path"),
        (["ok.html", "a//b.html"], "empty, '.' or '..' segment"),
        (["a", "a/b.html"], "'a' is both a file and a folder"),
    ],
)
def test_extract_refuses_unsafe_paths_before_writing(tmp_path: Path, names: list[str], why: str) -> None:
    zim = _hostile(tmp_path / "hostile.zim", names)
    out = tmp_path / "out"
    with pytest.raises(FormatError, match=why):
        extract(zim, out)
    assert not out.exists() or list(out.iterdir()) == []
    assert not (tmp_path / "evil.html").exists()


def test_extract_never_writes_through_a_symlink(mini_zim: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "docs").symlink_to(outside)
    with pytest.raises(FormatError, match="not a folder"):
        extract(mini_zim, out, force=True)
    assert list(outside.iterdir()) == []


def test_ls_lists_items_and_redirects(mini_zim: Path) -> None:
    rows = {e.path: e for e in ls(mini_zim)}
    assert rows["index.html"].title == "Mini home" and rows["index.html"].mimetype == "text/html"
    assert (
        rows["_archiver/mini.example/img/a b.png"].size
        == (MINI / "_archiver/mini.example/img/a b.png").stat().st_size
    )
