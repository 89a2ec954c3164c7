"""Conversions keep everything (issue 15 point 1): ``pack X.zim --format gwtar`` works directly (our
ZIMs, zimwriterfs output, the pre-2021 layout, split ZIMs; the main page is the ZIM's main entry), and
ZIM → tree → ZIM and ZIM → gwtar → ZIM keep every entry and every redirect, each redirect with the
same target (and title), because extract writes a redirect as a stub page with a manifest record.
Attacks: the counts and targets are compared entry by entry, a damaged ZIM is refused with nothing
left beside the output, and a capture's own stubs stay pages."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.cli import main
from archiver.tree import read_records
from archiver.zim import extract, icon, pack
from archiver.zim.read import open_archive
from archiver.zim.source import STORED_MANIFEST, TreeSource
from archiver.zim.write import ItemSpec, RedirectSpec, write_zim

from .conftest import DAY, MakeTree, page
from .others import oldlayout, zimwriterfs

ROOT = Path(__file__).resolve().parents[2]

Items = dict[str, tuple[str, bytes]]
Redirects = dict[str, tuple[str, str]]


def content(zim: Path) -> tuple[Items, Redirects, str | None]:
    """(items: path → (MIME type, bytes), redirects: path → (target, own title), main page)."""
    items: Items = {}
    redirects: Redirects = {}
    with open_archive(zim) as r:
        for e in r.iter_entries():
            if e.is_redirect:
                redirects[e.path] = (e.redirect_target or "", e.title if e.title != e.path else "")
            else:
                items[e.path] = (e.mimetype, e.read())
        return items, redirects, r.main_path


def _ours(make_tree: MakeTree, tmp_path: Path) -> Path:
    """A ZIM archiver packed from a tree whose manifest has an alias (one redirect, implied)."""
    extra = {"a.html": {"urls": ["https://ex.test/a.html", "https://ex.test/alpha"]}}
    files = {"index.html": page("Home", '<a href="a.html">a</a>'), "a.html": page("A"), "s.css": b"p{}"}
    return pack(make_tree(files, extra=extra), tmp_path / "ours.zim", today=DAY).path


def _extra_redirects(make_tree: MakeTree, tmp_path: Path) -> Path:
    """Our ZIM's items (its stored manifest too) written again with the project's writer, with
    redirects no manifest knows: titled, into a folder, a chain, next to the implied alias."""
    items, redirects, _ = content(_ours(make_tree, tmp_path))

    def spec(path: str, mime: str, data: bytes) -> ItemSpec:
        return ItemSpec(
            path=path, title="", mimetype=mime, size=len(data), front=mime == "text/html",
            compress=True, chunks=lambda: [data],
        )  # fmt: skip

    more = [
        *(RedirectSpec(p, t, title) for p, (t, title) in redirects.items()),
        RedirectSpec("old/a.html", "a.html", "The old A"),
        RedirectSpec("home", "index.html"),
        RedirectSpec("older", "old/a.html", "Two hops"),
    ]
    out = tmp_path / "extra.zim"
    write_zim(
        out, items=[spec(p, m, d) for p, (m, d) in items.items()], redirects=lambda: more,
        main="index.html", metadata=lambda: {"Title": "Extra", "Language": "eng", "Name": "extra"},
        illustration=icon.generated_png("x"), index_language="eng",
    )  # fmt: skip
    return out


def _zimwriterfs(tmp_path: Path) -> Path:
    return zimwriterfs(tmp_path)


def _old(tmp_path: Path) -> Path:
    oldlayout.write(tmp_path / "old.zim")
    return tmp_path / "old.zim"


@pytest.fixture(params=["ours", "extra redirects", "zimwriterfs", "old layout"])
def source_zim(request: pytest.FixtureRequest, make_tree: MakeTree, tmp_path: Path) -> Path:
    kind = request.param
    if kind == "ours":
        return _ours(make_tree, tmp_path)
    if kind == "extra redirects":
        return _extra_redirects(make_tree, tmp_path)
    if kind == "zimwriterfs":
        return _zimwriterfs(tmp_path)
    return _old(tmp_path)


def _same(original: Path, copy: Path) -> None:
    items, redirects, main_page = content(original)
    items2, redirects2, main2 = content(copy)
    assert redirects or "zw.zim" in original.name, "the source ZIM must have redirects"
    assert redirects2 == redirects  # every redirect, the same target and title, none made an item
    had_manifest = STORED_MANIFEST in items
    if not had_manifest:  # a ZIM of another tool gets the manifest extract made for it
        assert items2.pop(STORED_MANIFEST)[0] == "application/jsonl"
    else:
        items.pop(STORED_MANIFEST)
        items2.pop(STORED_MANIFEST)
    assert sorted(items2) == sorted(items)  # every entry, no more
    for path, (mime, data) in items.items():
        assert items2[path] == (mime, data), path
    assert main2 == main_page


def test_zim_tree_zim_keeps_every_entry_and_redirect(source_zim: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    _, redirects, _ = content(source_zim)
    written = extract(source_zim, tree)
    records = {r.path: r for r in read_records(tree)}
    for path, (target, _) in redirects.items():  # a stub on disk (or an alias of a record)
        if (tree / path).is_file():
            assert records[path].status == 301 and records[path].kind == "page"
            assert b'<meta name="archiver-redirect"' in (tree / path).read_bytes()
        else:
            assert any(target == r.path and r.urls for r in records.values()), path
    assert written >= len(records) - 1
    again = pack(tree, tmp_path / "again.zim", today=DAY)
    assert again.redirects == len(redirects)
    _same(source_zim, again.path)
    # and once more: the tree comes back the same, manifest and all
    second = tmp_path / "tree2"
    extract(again.path, second)
    assert _files(second) == _files(tree)


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def test_zim_gwtar_zim_keeps_every_entry_and_redirect(
    source_zim: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    archive = out / "site.gwtar.html"
    assert main(["pack", str(source_zim), "--format", "gwtar", "-o", str(archive)]) == 0, capfd.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["site.gwtar.html"]  # the private tree is gone
    assert main(["verify", str(archive)]) == 0
    _, _, zim_main = content(source_zim)
    with gwtar.open(archive) as g:
        members = {m.path: m for m in g.members}
        if zim_main and zim_main.endswith(".html"):
            assert g.main == zim_main
        else:  # A/Main_Page: the gwtar opens on a page that leads to it
            assert g.main == "index.html"
            assert f'content="{zim_main}"'.encode() in g.read(members["index.html"])
        assert members[zim_main].media_type == "text/html" and members[zim_main].kind == "page"
    back = tmp_path / "back.zim"
    assert main(["pack", str(archive), "--format", "zim", "-o", str(back)]) == 0
    _same(source_zim, back)


def test_a_split_zim_packs_to_gwtar_by_its_base_name(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    whole = _extra_redirects(make_tree, tmp_path)
    data = whole.read_bytes()
    base = tmp_path / "split" / "x.zim"
    base.parent.mkdir()
    for k, start in enumerate(range(0, len(data), 20000)):
        base.with_name(f"x.zima{chr(97 + k)}").write_bytes(data[start : start + 20000])
    archive = tmp_path / "x.gwtar.html"
    assert main(["pack", str(base), "--format", "gwtar", "-o", str(archive), "--json"]) == 0
    assert '"main": "index.html"' in capfd.readouterr().out
    back = tmp_path / "back.zim"
    assert main(["pack", str(archive), "--format", "zim", "-o", str(back)]) == 0
    _same(whole, back)


def test_a_damaged_zim_is_refused_and_nothing_is_left(
    make_tree: MakeTree, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    zim = _ours(make_tree, tmp_path)
    data = bytearray(zim.read_bytes())
    data[-1] ^= 0x20  # the MD5 checksum no longer matches
    out = tmp_path / "out"
    out.mkdir()
    (out / "d.zim").write_bytes(bytes(data))
    capfd.readouterr()
    assert main(["pack", str(out / "d.zim"), "--format", "gwtar", "-o", str(out / "d.gwtar.html")]) == 1
    err = capfd.readouterr().err
    assert len(err.splitlines()) == 1 and "checksum" in err
    assert sorted(p.name for p in out.iterdir()) == ["d.zim"]


def test_a_capture_stub_stays_a_page(make_tree: MakeTree, tmp_path: Path) -> None:
    # tree.md §9.1's stub (no archiver-redirect marker) is a page of the capture, not a ZIM redirect;
    # and a marked stub whose target the tree does not hold stays a page too
    stub = (
        b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Moved</title>'
        b'<meta http-equiv="refresh" content="0; url=index.html"></head>\n'
        b'<body><p>This page moved to <a href="index.html">index.html</a>.</p></body></html>\n'
    )
    from archiver.zim.source import redirect_stub

    files = {
        "index.html": page("Home"),
        "moved.html": stub,
        "gone.html": redirect_stub("gone.html", "nowhere.html"),
    }
    extra = {"moved.html": {"status": 301}, "gone.html": {"status": 301}}
    tree = make_tree(files, extra=extra)
    source = TreeSource(tree)
    assert sorted(e.path for e in source.entries()) == ["gone.html", "index.html", "moved.html"]
    assert list(source.redirects()) == []


def test_extract_keeps_the_stored_manifest_and_appends_stub_records(
    make_tree: MakeTree, tmp_path: Path
) -> None:
    zim = _extra_redirects(make_tree, tmp_path)
    items, redirects, _ = content(zim)
    stored = items[STORED_MANIFEST][1]
    tree = tmp_path / "tree"
    assert extract(zim, tree) == len(items) + 3  # the items, and a stub for each unknown redirect
    manifest = (tree / STORED_MANIFEST).read_bytes()
    assert manifest.startswith(stored)  # byte for byte, then the stubs' records in path order
    added = [r for r in read_records(tree) if r.status == 301]
    assert [(r.path, r.title) for r in added] == [
        ("home", None),
        ("old/a.html", "The old A"),
        ("older", "Two hops"),
    ]
    assert not (tree / "alpha").exists()  # the alias the manifest implies needs no stub
    assert set(redirects) == {"alpha/index.html", "home", "old/a.html", "older"}
    assert (tree / "older").read_bytes().count(b'content="old/a.html"') == 1  # a chain stays a chain
