"""The manifest and tree reading of formats/tree.md §8, on real files in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.errors import FormatError
from archiver.tree import (
    Header,
    ManifestWriter,
    Record,
    hash_file,
    infer_records,
    manifest_path,
    read_header,
    read_records,
    records,
    title_from_html,
)

HEADER = Header(home="https://ex.com/", created="2026-11-29T00:00:00Z", seeds=["https://ex.com/"])


def _record(path: str, sha: str = "0" * 64, **kw: object) -> Record:
    return Record(path=path, kind="page", media_type="text/html", size=1, sha256=sha, **kw)  # type: ignore[arg-type]


def test_round_trip_later_record_wins(tmp_path: Path) -> None:
    with ManifestWriter(tmp_path, HEADER) as w:
        w.add(_record("index.html", urls=["https://ex.com/"], title="Home", depth=0))
        w.add(_record("docs/index.html"))
        w.add(_record("index.html", sha="1" * 64, title="Home 2"))
    got = list(read_records(tmp_path))
    assert [r.path for r in got] == ["index.html", "docs/index.html"]
    assert got[0].sha256 == "1" * 64 and got[0].title == "Home 2"
    header = read_header(tmp_path)
    assert header is not None and header.version == 1 and header.home == "https://ex.com/"


def test_not_durable_writes_the_same_lines_visible_at_once(tmp_path: Path) -> None:
    """durable=False only skips the fsync per line: the bytes are the same, and each line is in the
    file (flushed to the kernel) as soon as add() returns."""
    lines = []
    for durable in (True, False):
        root = tmp_path / str(durable)
        with ManifestWriter(root, HEADER, durable=durable) as w:
            w.add(_record("a.html"))
            assert [r.path for r in read_records(root)] == ["a.html"]
        lines.append(manifest_path(root).read_bytes())
    assert lines[0] == lines[1]


def test_torn_last_line_is_ignored_and_cut_on_resume(tmp_path: Path) -> None:
    with ManifestWriter(tmp_path, HEADER) as w:
        w.add(_record("a.html"))
    path = manifest_path(tmp_path)
    with path.open("ab") as f:
        f.write(b'{"path":"b.html","kind":"pa')  # a crash mid-append
    assert [r.path for r in read_records(tmp_path)] == ["a.html"]
    with ManifestWriter(tmp_path, HEADER) as w:  # resume
        w.add(_record("c.html"))
    assert [r.path for r in read_records(tmp_path)] == ["a.html", "c.html"]


def test_compact_keeps_one_record_per_path(tmp_path: Path) -> None:
    with ManifestWriter(tmp_path, HEADER) as w:
        for i in range(3):
            w.add(_record("index.html", sha=str(i) * 64))
        w.compact()
        w.add(_record("z.html"))
    lines = manifest_path(tmp_path).read_bytes().splitlines()
    assert len(lines) == 3  # header, index.html, z.html
    assert next(r.sha256 for r in read_records(tmp_path)) == "2" * 64


def test_newer_format_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = manifest_path(tmp_path)
    path.parent.mkdir()
    path.write_text('{"format":"archiver-tree","version":99,"home":"https://ex.com/","created":"x"}\n')
    with pytest.raises(FormatError, match="newer than this archiver"):
        list(read_records(tmp_path))


def test_bad_record_names_its_line(tmp_path: Path) -> None:
    with ManifestWriter(tmp_path, HEADER) as w:
        w.add(_record("a.html"))
    with manifest_path(tmp_path).open("ab") as f:
        f.write(b'{"path": 3}\n')
    with pytest.raises(FormatError, match="line 3"):
        list(read_records(tmp_path))


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    path = manifest_path(tmp_path)
    path.parent.mkdir()
    path.write_text(
        '{"format":"archiver-tree","version":1,"home":"https://ex.com/","created":"x","future":1}\n'
        '{"path":"a.html","kind":"page","media_type":"text/html","size":1,"sha256":"ab","later":true}\n'
    )
    assert [r.path for r in read_records(tmp_path)] == ["a.html"]


def test_infer_records_for_a_plain_folder(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "index.html").write_bytes(b"<html><head><title> Hello &amp;\n world </title></head></html>")
    (tmp_path / "docs" / "caf\u00e9 menu.htm").write_bytes(b"<title>Menu</title>")
    (tmp_path / "style.css").write_bytes(b"body{}")
    (tmp_path / "_archiver" / "ex.com").mkdir(parents=True)
    (tmp_path / "_archiver" / "ex.com" / "a.png").write_bytes(b"\x89PNG")
    (tmp_path / "_archiver" / "crawl.sqlite").write_bytes(b"state")  # metadata, not content
    outside = tmp_path.parent / "outside-secret.txt"
    outside.write_text("secret")
    (tmp_path / "escape.txt").symlink_to(outside)
    got = list(records(tmp_path))
    assert [r.path for r in got] == [
        "_archiver/ex.com/a.png",
        "docs/caf\u00e9 menu.htm",
        "index.html",
        "style.css",
    ]
    by_path = {r.path: r for r in got}
    assert by_path["index.html"].title == "Hello & world"
    assert by_path["index.html"].kind == "page"
    assert by_path["style.css"].kind == "asset" and by_path["style.css"].media_type == "text/css"
    assert by_path["_archiver/ex.com/a.png"].media_type == "image/png"
    assert (by_path["style.css"].size, by_path["style.css"].sha256) == hash_file(tmp_path / "style.css")
    assert list(infer_records(tmp_path)) == got


def test_title_charset_and_absence() -> None:
    assert title_from_html(b'<meta charset="iso-8859-1"><title>Caf\xe9</title>') == "Caf\u00e9"
    assert title_from_html(b"<p>no title</p>") is None
    assert title_from_html(b"<title>   </title>") is None


PRIVATE_CASES = [
    ("_archiver/crawl.sqlite", True),
    ("_archiver/crawl.sqlite-wal", True),
    ("_archiver/crawl.sqlite-shm", True),
    ("_archiver/crawl.sqlite-journal", True),
    ("_archiver/crawl.sqlite-mj4f2a91", True),  # any side file SQLite names after the state
    ("_archiver/tmp", True),
    ("_archiver/tmp/", True),
    ("_archiver/tmp/write-1.tmp", True),
    ("_archiver/tmp/deep/fetch-3.part", True),
    ("_archiver//crawl.sqlite", True),
    ("./_archiver/tmp/x", True),
    ("_ARCHIVER/Crawl.SQLite", True),  # as a case-insensitive file system would find it
    ("_archiver/TMP/x", True),
    ("_archiver", False),
    ("_archiver/", False),
    ("_archiver/manifest.jsonl", False),
    ("_archiver/zim-edits.jsonl", False),
    ("_archiver/gwtar-index.json", False),
    ("_archiver/127.0.0.1/img/a.png", False),
    ("_archiver/ex.com/crawl.sqlite", False),  # a host's asset of that name is public
    ("_archiver/ex.com/tmp/x", False),
    ("_archiver/tmpfile", False),
    ("_archiver/crawl.sql", False),
    ("crawl.sqlite", False),
    ("tmp/write-1.tmp", False),
    ("docs/_archiver/crawl.sqlite", False),
    ("index.html", False),
    ("", False),
]


@pytest.mark.parametrize(("path", "private"), PRIVATE_CASES)
def test_is_private(path: str, private: bool) -> None:
    from archiver.tree import is_private

    assert is_private(path) is private


def test_infer_records_leaves_private_files_out(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_bytes(b"<title>Home</title>")
    (tmp_path / "_archiver" / "tmp").mkdir(parents=True)
    (tmp_path / "_archiver" / "tmp" / "write-1.tmp").write_bytes(b"half written")
    (tmp_path / "_archiver" / "crawl.sqlite").write_bytes(b"state")
    (tmp_path / "s.db").symlink_to(tmp_path / "_archiver" / "crawl.sqlite")
    (tmp_path / "w.tmp").symlink_to(tmp_path / "_archiver" / "tmp" / "write-1.tmp")
    assert [r.path for r in infer_records(tmp_path)] == ["index.html"]


def test_symlinked_folders_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "_archiver" / "tmp").mkdir(parents=True)
    (tmp_path / "_archiver" / "crawl.sqlite").write_bytes(b"state")
    (tmp_path / "_archiver" / "tmp" / "x").write_bytes(b"partial")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.html").write_text("<title>A</title>")
    (tmp_path / "state").symlink_to("_archiver")  # into the private files
    (tmp_path / "again").symlink_to("docs")  # a second path to the same page
    (tmp_path / "docs" / "loop").symlink_to("..")  # a loop
    assert [r.path for r in infer_records(tmp_path)] == ["docs/a.html"]


def _linked_manifest(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """A tree whose manifest is a symbolic link to a manifest outside it with a torn last line."""
    outside = tmp_path / "outside.jsonl"
    with ManifestWriter(tmp_path / "elsewhere", HEADER) as w:
        w.add(_record("a.html"))
    data = manifest_path(tmp_path / "elsewhere").read_bytes() + b'{"path":"b.ht'
    outside.write_bytes(data)
    root = tmp_path / "tree"
    manifest_path(root).parent.mkdir(parents=True)
    manifest_path(root).symlink_to(outside)
    return root, outside, data


def test_a_manifest_that_is_a_symbolic_link_is_never_followed(tmp_path: Path) -> None:
    """A tree is hostile input: its manifest a link to a file elsewhere was read (its records
    served as the tree's) and, when a capture resumed the tree, cut at its last newline and
    appended to: a write outside the tree. Now every reader and the writer refuse it."""
    root, outside, data = _linked_manifest(tmp_path)
    for read in (read_header, lambda r: list(read_records(r)), lambda r: list(records(r))):
        with pytest.raises(FormatError, match="symbolic link"):
            read(root)
    with pytest.raises(FormatError, match="symbolic link"), ManifestWriter(root, HEADER) as w:
        w.add(_record("c.html"))
    assert outside.read_bytes() == data


def test_a_manifest_line_longer_than_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manifest of one endless line was read whole into memory; lines are read up to
    tree.LINE_LIMIT (16 MiB; made small here)."""
    import archiver.tree

    with ManifestWriter(tmp_path, HEADER) as w:
        w.add(_record("a.html", title="x" * 5000))
    monkeypatch.setattr(archiver.tree, "LINE_LIMIT", 4096)
    with pytest.raises(FormatError, match="line 2 is longer than 4096 bytes"):
        list(read_records(tmp_path))
    assert read_header(tmp_path) is not None  # the header's line is short
    (tmp_path / "_archiver" / "manifest.jsonl").write_bytes(b"{" + b" " * 5000 + b"}\n")
    with pytest.raises(FormatError, match="line 1 is longer than 4096 bytes"):
        read_header(tmp_path)
