"""archiver.gwtar.pack on trees: reproducible, atomic, faithful to the tree and its manifest."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import random
import tarfile
import threading
from pathlib import Path

import pytest

from archiver import tree
from archiver.errors import EnvironmentProblem, FormatError, UsageError
from archiver.gwtar import PackResult, layout, loader_source, pack, parse, verify
from archiver.gwtar import body as body_module
from archiver.gwtar import open as open_gwtar
from tests.gwtar.corpus import MINI, STUB_LOADER


def test_pack_twice_gives_identical_bytes(tmp_path: Path, mini_gwtar: PackResult) -> None:
    again = pack(MINI, tmp_path / "again.gwtar.html", loader=STUB_LOADER)
    assert again.path.read_bytes() == mini_gwtar.path.read_bytes()
    assert again == PackResult(**{**mini_gwtar.__dict__, "path": again.path})


def test_plain_writes_give_the_same_bytes_as_copy_file_range(
    tmp_path: Path, mini_gwtar: PackResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "copy_file_range")
    plain = pack(MINI, tmp_path / "plain.gwtar.html", loader=STUB_LOADER)
    assert plain.path.read_bytes() == mini_gwtar.path.read_bytes()


def test_members_are_the_tree_and_its_manifest(mini_gwtar: PackResult) -> None:
    records = {r.path: r for r in tree.read_records(MINI)}
    with open_gwtar(mini_gwtar.path) as g:
        assert g.main == "index.html" and g.meta is not None
        assert g.meta["home"] == "https://mini.example/" and g.meta["created"] == "2026-11-29T12:00:00Z"
        assert g.meta["title"] == "Mini home" and g.meta["source"] == "tree"
        paths = [m.path for m in g.members]
        assert sorted(paths) == sorted([*records, "_archiver/manifest.jsonl"])
        for m in g.members:
            data = g.read(m)
            assert hashlib.sha256(data).hexdigest() == m.sha256
            assert data == (MINI / m.path).read_bytes()
            if m.path in records:
                r = records[m.path]
                assert (m.size, m.media_type, m.kind, m.title, list(m.urls)) == (
                    r.size, r.media_type, r.kind, r.title, r.urls)  # fmt: skip
        assert [m.key for m in g.members if m.key] == list(g.assets)
    assert mini_gwtar.pages == 7 and mini_gwtar.members == 15 and mini_gwtar.listed == 8
    assert oct(mini_gwtar.path.stat().st_mode & 0o777) == "0o644"


def test_first_render_order_on_mini(mini_gwtar: PackResult) -> None:
    with open_gwtar(mini_gwtar.path) as g:
        assert list(g.assets) == [
            "0",
            "_archiver/mini.example/css/main__q-269fc2.css",
            "_archiver/mini.example/css/base.css",  # @import of main.css
            "_archiver/mini.example/fonts/field.woff2",  # @font-face of base/main
            "_archiver/mini.example/img/a b.png",  # a background in main.css, before the <img>s
            "_archiver/mini.example/img/logo__q-951eba.png",
            "_archiver/mini.example/img/hash#1.png",
            "_archiver/cdn.mini.example/img/diagram.svg",
        ]
        tar_order = [m.path for m in g.members]
        assert tar_order[8:14] == sorted(tar_order[8:14])  # other pages in tree path order


def test_tree_without_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "plain"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<title>Plain</title><img src='sub/a.png'>")
    (root / "sub" / "a.png").write_bytes(b"png")
    (root / "_archiver").mkdir()
    (root / "_archiver" / "crawl.sqlite").write_bytes(b"state")  # never packed
    (root / "_archiver" / "gwtar-index.json").write_bytes(b"{}")  # left by an earlier extraction
    os.utime(root / "sub" / "a.png", (1767225600, 1767225600))
    os.utime(root / "index.html", (1767225000, 1767225000))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    result = pack(root, tmp_path / "p.gwtar.html", loader=STUB_LOADER)
    with open_gwtar(result.path) as g:
        assert [m.path for m in g.members] == ["index.html", "sub/a.png"]
        assert g.meta is not None and g.meta["created"] == "2026-01-01T00:00:00Z" and g.meta["home"] is None
        assert g.member("index.html").title == "Plain"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    again = pack(root, tmp_path / "q.gwtar.html", loader=STUB_LOADER)
    with open_gwtar(again.path) as g:
        assert g.meta is not None and g.meta["created"] == "1970-01-01T00:00:00Z"
    explicit = pack(root, tmp_path / "r.gwtar.html", loader=STUB_LOADER, created="2030-05-06T07:08:09Z")
    with open(explicit.path, "rb") as f:
        f.seek(explicit.overhead)
        with tarfile.open(fileobj=f) as t:
            info = t.next()
        assert (
            info is not None and info.mtime == 1904281689
        )  # 2030-05-06T07:08:09Z and (info.uid, info.gid, info.mode) == (0, 0, 0o644)


def test_main_and_single_page(tmp_path: Path, mini_tree: Path) -> None:
    result = pack(mini_tree, tmp_path / "docs.gwtar.html", main="docs/intro/index.html", single_page=True,
                  loader=STUB_LOADER)  # fmt: skip
    with open_gwtar(result.path) as g:
        assert g.main == "docs/intro/index.html" and g.assets["0"]["basename"] == "docs/intro/index"
        assert [m.kind for m in g.members].count("page") == 1
        assert all(m.key is not None for m in g.members)
    assert verify(result.path).ok
    with pytest.raises(UsageError, match="no such page"):
        pack(mini_tree, tmp_path / "x.gwtar.html", main="nope.html", loader=STUB_LOADER)
    with pytest.raises(UsageError, match="must be an HTML page"):
        pack(
            mini_tree,
            tmp_path / "x.gwtar.html",
            main="_archiver/mini.example/css/base.css",
            loader=STUB_LOADER,
        )


def _no_output(folder: Path) -> None:
    assert sorted(p.name for p in folder.iterdir()) == ["tree"], "no output and no temporary file is left"


def test_lying_manifest_hash_fails_and_leaves_nothing(tmp_path: Path, mini_tree: Path) -> None:
    (mini_tree / "greatwork.html").write_bytes((mini_tree / "greatwork.html").read_bytes().upper())
    with pytest.raises(FormatError, match="does not match the manifest"):
        pack(mini_tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    _no_output(tmp_path)


def test_changed_size_or_missing_file_fails_and_leaves_nothing(tmp_path: Path, mini_tree: Path) -> None:
    with (mini_tree / "greatwork.html").open("ab") as f:
        f.write(b"more")
    with pytest.raises(FormatError, match="expected 1065"):
        pack(mini_tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    _no_output(tmp_path)
    (mini_tree / "greatwork.html").unlink()
    with pytest.raises(FormatError, match="not a file in the tree"):
        pack(mini_tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    _no_output(tmp_path)


def test_failure_mid_copy_removes_the_temporary_file(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = body_module._Body.member
    calls = []

    def failing(self: body_module._Body, i: int, path: Path, size: int, head: bytes, **kw: bool) -> None:
        calls.append(path)
        if len(calls) == 5:
            raise OSError(28, "No space left on device")
        original(self, i, path, size, head, **kw)

    monkeypatch.setattr(body_module._Body, "member", failing)
    with pytest.raises(OSError, match="No space"):
        pack(mini_tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    _no_output(tmp_path)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [10, 2 << 20])
def test_a_file_swapped_for_a_fifo_after_the_walk_stops_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """The attack: a file of the tree replaced by a FIFO between the walk and its copy held the pack
    for good (the open of a FIFO waits for a writer). Now it is an error naming the file, and
    nothing is left."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "index.html").write_text("<p>hi</p>")
    (tree / "big.bin").write_bytes(b"x" * size)
    original = body_module._Body.member

    def swapping(self: body_module._Body, i: int, path: Path, size: int, head: bytes, **kw: bool) -> None:
        if str(path).endswith("big.bin"):
            os.unlink(path)
            os.mkfifo(path)
        original(self, i, path, size, head, **kw)

    monkeypatch.setattr(body_module._Body, "member", swapping)
    with pytest.raises(FormatError) as e:
        pack(tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    assert str(e.value.subject).endswith("big.bin")
    _no_output(tmp_path)


def test_long_names_use_pax_after_the_listed_members(tmp_path: Path) -> None:
    root = tmp_path / "long"
    deep = "/".join(["folder-with-a-long-name"] * 12)
    (root / deep).mkdir(parents=True)
    (root / "index.html").write_text("<p>hi</p>")
    (root / deep / "page.html").write_text("<p>deep</p>")
    (root / deep / ("n" * 120 + ".png")).write_bytes(b"x" * 700)
    result = pack(root, tmp_path / "long.gwtar.html", loader=STUB_LOADER)
    assert verify(result.path).ok
    with open_gwtar(result.path) as g, open(result.path, "rb") as f:
        f.seek(g.overhead)
        with tarfile.open(fileobj=f) as t:
            found = {i.name: i.offset_data for i in t}
        for m in g.members:
            assert found[m.path] == m.offset


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        pack(tmp_path / "missing", tmp_path / "o.gwtar.html", loader=STUB_LOADER)
    with pytest.raises(UsageError, match="is a folder"):
        pack(MINI, tmp_path, loader=STUB_LOADER)
    with pytest.raises(UsageError, match="folder does not exist"):
        pack(MINI, tmp_path / "no" / "o.gwtar.html", loader=STUB_LOADER)
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(UsageError, match="neither a tree"):
        pack(tmp_path / "x.txt", tmp_path / "o.gwtar.html", loader=STUB_LOADER)
    with pytest.raises(UsageError, match="already a gwtar"):
        pack(
            MINI / ".." / ".." / "gwtar" / "v1" / "reference.gwtar.html", tmp_path / "o.gwtar.html", loader=""
        )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match=r"no HTML page to open first .* --main PATH"):
        pack(empty, tmp_path / "o.gwtar.html", loader=STUB_LOADER)
    with pytest.raises(UsageError, match="RFC 3339"):
        pack(MINI, tmp_path / "o.gwtar.html", loader=STUB_LOADER, created="yesterday")


def test_loader_source(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem, match="loader is missing"):
        loader_source([tmp_path / "js" / "loader.js"])
    (tmp_path / "loader.js").write_text("window.stop();\n")
    assert loader_source([tmp_path / "nope.js", tmp_path / "loader.js"]) == "window.stop();\n"


def test_a_loader_that_cannot_be_embedded_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="</script"):
        pack(MINI, tmp_path / "o.gwtar.html", loader="x = '</script>';")
    assert list(tmp_path.iterdir()) == []


def test_header_meta_matches_pack_result(mini_gwtar: PackResult) -> None:
    data = mini_gwtar.path.read_bytes()
    ph = parse.parse_header(data[: mini_gwtar.overhead])
    assert ph.problems == [] and ph.meta is not None
    assert ph.meta["members"] == 15 and ph.meta["pages"] == 7
    offset, size, _ = parse.index_location(ph.meta)  # type: ignore[misc]
    assert mini_gwtar.index_offset == mini_gwtar.overhead + offset
    index = json.loads(data[mini_gwtar.index_offset : mini_gwtar.index_offset + size])
    assert index["format"] == "archiver-gwtar-index" and len(index["members"]) == 15


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_large_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool) -> None:
    if not kernel_copy:
        monkeypatch.delattr(os, "copy_file_range")
    root = tmp_path / "big"
    (root / "m").mkdir(parents=True)
    big = os.urandom(1 << 20) * 3 + b"tail"  # more than one 1 MiB chunk, not a multiple of 512
    clip = os.urandom(1 << 16) * 80  # 5 MiB: "large", so it goes last
    (root / "index.html").write_text('<video src="m/clip.mp4"></video><img src="m/big.png">')
    (root / "m" / "big.png").write_bytes(big)
    (root / "m" / "clip.mp4").write_bytes(clip)
    (root / "m" / "small.txt").write_bytes(b"s")
    result = pack(root, tmp_path / "big.gwtar.html", loader=STUB_LOADER)
    assert verify(result.path).ok
    with open_gwtar(result.path) as g:
        assert [m.path for m in g.members] == ["index.html", "m/big.png", "m/clip.mp4", "m/small.txt"]
        assert list(g.assets) == ["0", "m/big.png", "m/clip.mp4"]
        assert hashlib.sha256(g.read("m/big.png")).hexdigest() == hashlib.sha256(big).hexdigest()
        with g.open_member("m/clip.mp4") as f:
            assert f.read() == clip


def test_default_loader_is_js_loader_verbatim(tmp_path: Path) -> None:
    """With js/loader.js in the checkout, pack embeds it unchanged (and it meets formats/gwtar.md §7)."""
    text = loader_source()
    assert layout.loader_problem(text) is None
    result = pack(MINI, tmp_path / "real.gwtar.html")
    header = result.path.read_bytes()[: result.overhead].decode("ascii")
    assert f"<script>\n{text}\n</script>\n<noscript>" in header
    assert verify(result.path).ok


def _mixed_tree(root: Path) -> dict[str, bytes]:
    """Many small files (their batches cross 1 MiB buffer boundaries) around a few large ones."""
    rng = random.Random(7)
    files: dict[str, bytes] = {"index.html": b'<!DOCTYPE html><title>t</title><img src="a/big-0.png">'}
    edges = [0, 1, 511, 512, 513]
    for i in range(400):
        files[f"s/{i % 9}/f{i}.txt"] = rng.randbytes(edges[i] if i < len(edges) else rng.randrange(13_000))
    assert sum(len(d) for d in files.values()) > 2 << 20  # small files fill the 1 MiB buffer twice
    for i in range(3):
        files[f"a/big-{i}.png"] = rng.randbytes((1 << 20) * (i + 1) + 17 * i)
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return files


def test_batched_small_files_and_kernel_copies_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "tree"
    files = _mixed_tree(root)
    first = pack(root, tmp_path / "a.gwtar.html", loader=STUB_LOADER)
    assert verify(first.path).ok
    body = io.BytesIO(first.path.read_bytes()[first.overhead : first.total_archive_size])
    with tarfile.open(fileobj=body) as t:  # Python's tarfile, walking from overhead
        got = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.name in files}  # type: ignore[union-attr]
    assert got == files
    # the kernel refuses part-way through a large file: plain writes finish it, same bytes
    real = os.copy_file_range
    calls = []

    def refusing(src: int, dst: int, count: int, offset_src: int | None = None) -> int:
        calls.append(count)
        if len(calls) == 2:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return real(src, dst, min(count, 1 << 19), offset_src)

    monkeypatch.setattr(os, "copy_file_range", refusing)
    second = pack(root, tmp_path / "b.gwtar.html", loader=STUB_LOADER)
    assert len(calls) == 2 and second.path.read_bytes() == first.path.read_bytes()
    monkeypatch.delattr(os, "copy_file_range")
    third = pack(root, tmp_path / "c.gwtar.html", loader=STUB_LOADER)
    assert third.path.read_bytes() == first.path.read_bytes()


def test_short_reads_of_small_files_give_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small file read in one call is hashed whole; when the kernel gives fewer bytes (a short
    read, or none at first), the rest is read across the batch buffers and hashed in pieces: the
    same archive either way, and a file that gives nothing is reported as shrunk."""
    root = tmp_path / "tree"
    _mixed_tree(root)
    first = pack(root, tmp_path / "a.gwtar.html", loader=STUB_LOADER)
    real = os.preadv
    seen: set[int] = set()

    def short(fd: int, buffers: list[memoryview], offset: int) -> int:
        if offset == 0 and fd not in seen and threading.current_thread().name != "gwtar-hash":
            seen.add(fd)
            want = len(buffers[0])
            return 0 if want % 2 else real(fd, [buffers[0][: max(1, want // 3)]], offset)
        return real(fd, buffers, offset)

    monkeypatch.setattr(os, "preadv", short)
    second = pack(root, tmp_path / "b.gwtar.html", loader=STUB_LOADER)
    assert second.path.read_bytes() == first.path.read_bytes()
    assert seen
    monkeypatch.setattr(os, "preadv", lambda fd, buffers, offset: 0)
    with pytest.raises(FormatError, match="shrank"):
        pack(root, tmp_path / "c.gwtar.html", loader=STUB_LOADER)
    assert not (tmp_path / "c.gwtar.html").exists()


def test_an_error_in_the_hashing_thread_fails_the_pack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tree"
    _mixed_tree(root)
    real = body_module._check_unchanged

    def changed(fd: int, before: os.stat_result, path: Path | str) -> None:
        if str(path).endswith("big-1.png") and threading.current_thread().name == "gwtar-hash":
            raise FormatError("file changed while being packed", subject=str(path))
        real(fd, before, path)

    monkeypatch.setattr(body_module, "_check_unchanged", changed)
    with pytest.raises(FormatError, match="changed while being packed"):
        pack(root, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    _no_output(tmp_path)


def test_titles_read_while_copying_match_page_title(tmp_path: Path) -> None:
    """A tree without a manifest: page titles come from the bytes as they are copied (one read per
    file), and equal :func:`archiver.tree.page_title` of each file, whatever the page's size or where
    it falls in the 1 MiB batch buffers; the main page's title is in the header."""
    root = tmp_path / "t"
    (root / "p").mkdir(parents=True)
    rnd = random.Random(3)
    (root / "index.html").write_text('<meta charset="latin-1"><title>Caf\u00e9 &amp; home</title>', "latin-1")
    for i in range(40):  # 20–90 KiB each: several straddle a buffer boundary
        body = "<p>" + "x" * rnd.randint(20_000, 90_000)
        title = f"<title>\n  Page   {i} </title>" if i % 5 else ""
        (root / "p" / f"{i:02d}.html").write_text(f"<!doctype html>{title}{body}")
    big = b"<title>Big page</title>" + b"y" * (1536 * 1024)  # over 1 MiB: the kernel-copy path
    (root / "p" / "big.html").write_bytes(big)
    (root / "p" / "empty.html").write_bytes(b"")
    (root / "p" / "late.html").write_bytes(b"z" * (1 << 20) + b"<title>past the limit</title>")
    result = pack(root, tmp_path / "t.gwtar.html", loader=STUB_LOADER)
    assert verify(result.path).ok
    with open_gwtar(result.path) as g:
        assert g.meta is not None and g.meta["title"] == "Caf\u00e9 & home"
        titles = {m.path: m.title for m in g.members if m.kind == "page"}
    assert titles == {p: tree.page_title(root / p) for p in titles}
    assert titles["p/big.html"] == "Big page" and titles["p/07.html"] == "Page 7"
    assert titles["p/05.html"] is None and titles["p/empty.html"] is None and titles["p/late.html"] is None
    again = pack(root, tmp_path / "again.gwtar.html", loader=STUB_LOADER)
    assert again.path.read_bytes() == result.path.read_bytes()


def test_a_small_file_is_checked_by_its_one_read(tmp_path: Path, mini_tree: Path) -> None:
    """A small file is read in one call asking for a byte more than its size, without fstat: a file
    grown since the manifest, or a folder in its place, fails the pack with one line; the bytes and
    hashes are those of the files (verify)."""
    from archiver.gwtar.sources import tree_source
    from archiver.gwtar.write import write_archive

    good = pack(mini_tree, tmp_path / "ok.gwtar.html", loader=STUB_LOADER)
    assert verify(good.path, links=False).ok
    good.path.unlink()
    source = tree_source(mini_tree)
    small = next(p for p, s in source.specs.items() if 0 < s.size < 4096 and p != source.meta.main)
    folder = tmp_path / "tree" / "a-folder"
    folder.mkdir()
    source.files[small] = folder
    with pytest.raises(FormatError, match="not a regular file"):
        write_archive(source, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]
    grown = tmp_path / "tree" / "grown.bin"
    grown.write_bytes(b"x" * (source.specs[small].size + 1))
    source.files[small] = grown
    with pytest.raises(FormatError, match=r"is \d+ bytes, expected \d+ \(changed\?\)"):
        write_archive(source, tmp_path / "out.gwtar.html", loader=STUB_LOADER)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]
