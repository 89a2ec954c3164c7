"""The version store (formats/history.md §1–§4), written as the mistakes and attacks it must survive:
recording is idempotent and stores each file's bytes once (hard links); an earlier version reads back
byte for byte after the tree moved on; a file changed behind the manifest's back, a symlink, a
version manifest naming ``../``, a blob whose bytes lie and a kill in the middle of a recording are
refused or survived, with nothing written outside the store and nothing half-written left."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archiver.errors import FormatError
from archiver.tree import is_private, read_header, read_records
from archiver.versions import held, keeper, store
from tests.versions.helpers import page, settle, two_versions, write_tree

V1 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one.</p>"),
    "_archiver/site.localhost/css/site.css": "body{color:#111}",
}
V2 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one.</p><p>Step two.</p>"),
    "docs/new.html": page("New", "<p>Fresh.</p>"),
    "_archiver/site.localhost/css/site.css": "body{color:#222}",
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120
    )


def _no_temporaries(root: Path) -> None:
    assert not [p for p in root.rglob("*") if p.name.startswith(".tmp-") or "archiver-tmp" in p.name]


@pytest.fixture
def two(tmp_path: Path) -> Path:
    return two_versions(tmp_path / "site", V1, V2)


def test_recording_writes_only_its_manifest_and_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    modes = {p: os.stat(root / p).st_mode for p in V1}
    first = store.record(root)
    assert (first.new, first.files, first.bytes_added) == (True, 3, 0)
    again = store.record(root)
    assert (again.new, again.version.id) == (False, first.version.id)
    # the tree is the store of its newest version: no blob, each file read from the tree
    assert not [p for p in (store.store_dir(root) / "blobs").rglob("*") if p.is_file()]
    assert json.loads((store.store_dir(root) / "store.json").read_text())["version"] == 2
    for r in read_records(root):
        assert store.source(root, r) == root / r.path
        assert os.stat(root / r.path).st_mode == modes[r.path]
    assert [v.id for v in store.versions(root)] == ["20261130T090000Z"]
    _no_temporaries(root)
    assert is_private("_archiver/.versions/blobs/sha256/ab/x") and is_private("_archiver/.versions")
    assert _cli("verify", str(root)).returncode == 0


@pytest.mark.parametrize("sha", ["../../../../outside", "zz", "A" * 64])
def test_a_record_whose_sha256_is_not_one_is_refused_before_anything_is_stored(
    tmp_path: Path, sha: str
) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    manifest = root / "_archiver/manifest.jsonl"
    lines = manifest.read_text().splitlines()
    record = json.loads(lines[1])
    record["sha256"] = sha
    manifest.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    with pytest.raises(FormatError, match="is not a SHA-256"):
        store.record(root)
    assert not (root / "_archiver/.versions/blobs").exists()  # the record is the manifest's first
    assert not (tmp_path / "outside").exists()
    _no_temporaries(root)


def test_an_earlier_version_reads_back_byte_for_byte(two: Path, tmp_path: Path) -> None:
    vs = store.versions(two)
    assert [v.id for v in vs] == ["20261130T090000Z", "20261201T090000Z"]
    assert (two / "docs/intro.html").read_text() == V2["docs/intro.html"]  # the tree shows the newest
    out = tmp_path / "november"
    done = _cli("extract", str(two), "--version", "2026-11-30", "-o", str(out))
    assert done.returncode == 0, done.stderr
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == sorted([*V1, "_archiver/manifest.jsonl"])
    for path, content in V1.items():
        assert (out / path).read_text() == content
    assert [r.sha256 for r in read_records(out)] == [
        hashlib.sha256(c.encode()).hexdigest() for c in V1.values()
    ]
    listed = _cli("ls", str(two), "--versions", "--json")
    assert listed.returncode == 0, listed.stderr
    docs = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(d["version"], d["pages"], d["files"]) for d in docs] == [
        ("20261130T090000Z", 2, 3),
        ("20261201T090000Z", 3, 4),
    ]
    before = _cli("extract", str(two), "--version", "2026-11-29", "-o", str(tmp_path / "x"))
    assert before.returncode == 2 and "no version at or before 2026-11-29" in before.stderr
    assert not (tmp_path / "x").exists()
    assert _cli("verify", str(two)).returncode == 0


def _v1_record(root: Path, path: str) -> store.Held:
    v1 = store.versions(root)[0]
    r = next(r for r in store.version_records(v1) if r.path == path)
    return store.Held(r.path, r.sha256, r.size)


def test_a_file_the_tree_holds_edited_in_place_is_named_by_verify(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    with open(root / "docs/intro.html", "r+b") as f:  # same size, other bytes
        f.write(b"<!doctype")
    checked = _cli("verify", str(root))
    assert checked.returncode == 1
    assert (
        ".versions/20261130T090000Z.jsonl: docs/intro.html: versions: its file docs/intro.html in the "
        "tree (no blob stored) does not hold the bytes its record says"
    ) in checked.stdout + checked.stderr
    out = tmp_path / "out"
    done = _cli("extract", str(root), "--version", "20261130T090000Z", "-o", str(out))
    assert done.returncode == 1 and not out.exists()
    with pytest.raises(FormatError, match="does not hold the bytes"):
        store.read_blob(root, _v1_record(root, "docs/intro.html"))
    # a capture replacing it later stores no blob of bytes that lie
    k = keeper.for_tree(root)
    assert k is not None and "docs/intro.html" in k.pending
    k.keep("docs/intro.html")
    assert k.kept == 0 and not store.blob_path(root, _v1_record(root, "docs/intro.html").sha256).exists()
    _no_temporaries(root)


def test_a_symlink_in_the_tree_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "site"
    secret = tmp_path / "secret.txt"
    secret.write_text(V1["docs/intro.html"])  # same bytes as the record: only the link gives it away
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    (root / "docs/intro.html").unlink()
    (root / "docs/intro.html").symlink_to(secret)
    r = _v1_record(root, "docs/intro.html")
    with pytest.raises(FormatError, match="is not a regular file"):
        store.read_blob(root, r)
    checked = _cli("verify", str(root))
    assert checked.returncode == 1 and "docs/intro.html" in checked.stdout + checked.stderr
    out = tmp_path / "out"
    assert _cli("extract", str(root), "--version", "20261130T090000Z", "-o", str(out)).returncode == 1
    assert not out.exists()
    k = keeper.for_tree(root)
    assert k is not None
    k.keep("docs/intro.html")  # the capture about to replace it stores nothing read through the link
    assert k.kept == 0 and not store.blob_path(root, r.sha256).exists()
    _no_temporaries(root)


def test_a_tree_of_many_folders_and_repeated_bytes_is_stored_once_each(tmp_path: Path) -> None:
    """More folders than a keeper keeps open at once, nested ones, and files with the same bytes in
    different folders: recording stores nothing; when the tree moves on each file's blob is its old
    inode, each distinct content stored once, nothing left behind; the first version reads back."""
    root = tmp_path / "site"
    files: dict[str, str | bytes] = {"index.html": page("Home", "<p>Welcome.</p>")}
    for i in range(keeper.KEPT_FDS + 6):
        files[f"d{i}/deep/er/page.html"] = page(f"Page {i}", f"<p>{i}</p>")
        files[f"d{i}/same.css"] = "body{color:#333}"  # one content in every folder
    write_tree(root, files, "2026-11-30T09:00:00Z")
    inodes = {p: os.stat(root / p).st_ino for p in files}
    first = store.record(root)
    assert (first.new, first.files, first.bytes_added) == (True, len(files), 0)
    assert not (store.store_dir(root) / "blobs").exists()
    before = dict(files)
    for i in range(keeper.KEPT_FDS + 6):  # every page and style changed: each kept first
        files[f"d{i}/deep/er/page.html"] = page(f"Page {i}", f"<p>{i} changed</p>")
        files[f"d{i}/same.css"] = "body{color:#444}"
    write_tree(root, files, "2026-12-01T09:00:00Z")
    blobs = [p for p in (store.store_dir(root) / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == len(set(before.values())) - 1  # all but index.html, which the tree holds
    for path, content in before.items():
        blob = store.blob_path(root, hashlib.sha256(str(content).encode()).hexdigest())
        if path == "index.html":
            assert not blob.exists() and os.stat(root / path).st_ino == inodes[path]
        elif not path.endswith("same.css"):  # the first of them was linked; the others share its bytes
            assert os.stat(blob).st_ino == inodes[path]
    second = store.record(root)
    assert second.new and second.files == len(files)
    _no_temporaries(root)
    assert _cli("verify", str(root)).returncode == 0
    out = tmp_path / "out"
    assert _cli("extract", str(root), "--version", first.version.id, "-o", str(out)).returncode == 0
    for path, content in before.items():
        assert (out / path).read_text() == content


def test_a_symlinked_folder_in_the_tree_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    elsewhere = tmp_path / "elsewhere"
    (root / "docs").rename(elsewhere)  # the same bytes, reached through a link to another folder
    (root / "docs").symlink_to(elsewhere, target_is_directory=True)
    r = _v1_record(root, "docs/intro.html")
    with pytest.raises(FormatError, match="cannot be read"):
        store.read_blob(root, r)
    checked = _cli("verify", str(root))
    assert checked.returncode == 1 and "docs/intro.html" in checked.stdout + checked.stderr
    k = keeper.for_tree(root)
    assert k is not None
    k.keep("docs/intro.html")
    assert k.kept == 0 and not store.blob_path(root, r.sha256).exists()
    assert [p.name for p in elsewhere.iterdir()] == ["intro.html"]  # nothing stored from there
    _no_temporaries(root)


def _hostile_version(two: Path, edit: object) -> Path:
    manifest = store.store_dir(two) / "20261130T090000Z.jsonl"
    os.chmod(manifest, 0o644)
    lines = manifest.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[2])
    edit(record)  # type: ignore[operator]
    lines[2] = json.dumps(record).encode() + b"\n"
    manifest.write_bytes(b"".join(lines))
    return manifest


@pytest.mark.parametrize(
    "path", ["../../outside.html", "/etc/passwd", "docs/../../x.html", "_archiver/crawl.sqlite"]
)
def test_a_version_manifest_naming_a_path_outside_is_refused(two: Path, tmp_path: Path, path: str) -> None:
    _hostile_version(two, lambda r: r.update(path=path))
    checked = _cli("verify", str(two))
    assert checked.returncode == 1
    assert path in checked.stdout + checked.stderr
    out = tmp_path / "out"
    done = _cli("extract", str(two), "--version", "20261130T090000Z", "-o", str(out))
    assert done.returncode == 1, done.stderr
    assert not out.exists() and not (tmp_path / "outside.html").exists()
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_blob_whose_bytes_lie_is_found(two: Path, tmp_path: Path) -> None:
    r = _v1_record(two, "docs/intro.html")  # kept in the store when V2 replaced it
    blob = store.blob_path(two, r.sha256)
    # the blob is the old file's inode: replace it by another file (as a damaged copy would)
    os.unlink(blob)
    blob.write_text("not the page")
    checked = _cli("verify", str(two))
    assert checked.returncode == 1
    assert "does not hold the bytes its name and record say" in checked.stdout + checked.stderr
    done = _cli("extract", str(two), "--version", "20261130T090000Z", "-o", str(tmp_path / "out"))
    assert done.returncode == 1 and not (tmp_path / "out").exists()


def test_a_blob_that_is_a_symlink_is_found(two: Path, tmp_path: Path) -> None:
    r = _v1_record(two, "docs/intro.html")  # kept when V2 replaced it
    blob = store.blob_path(two, r.sha256)
    os.unlink(blob)
    target = tmp_path / "elsewhere.html"
    target.write_text(V1["docs/intro.html"])
    blob.symlink_to(target)
    checked = _cli("verify", str(two))
    assert checked.returncode == 1 and "docs/intro.html" in checked.stdout + checked.stderr


def test_a_kill_during_a_recording_leaves_whole_versions_only(tmp_path: Path) -> None:
    root = tmp_path / "site"
    files = {f"p/{i}.html": page(f"P{i}", f"<p>{i} " + "x" * 2000 + "</p>") for i in range(3000)}
    write_tree(root, {"index.html": page("Home", ""), **files}, "2026-11-30T09:00:00Z")
    code = f"from pathlib import Path; from archiver.versions import store; store.record(Path({str(root)!r}))"
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not store.store_dir(root).exists():
        time.sleep(0.01)
    time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for manifest in store.store_dir(root).glob("*.jsonl"):  # a version is there whole, or not at all
        assert len(manifest.read_bytes().splitlines()) == 3002
    done = store.record(root)
    assert done.files in (0, 3001)
    assert [v.recorded for v in store.versions(root)] == [True]
    _no_temporaries(root)
    assert _cli("verify", str(root)).returncode == 0


def _opened(root: Path, r: store.Held, tree: store.TreeState) -> store.Opened:
    opened = store.open_checked(root, r, tree)
    os.close(opened.fd)
    return opened


def test_a_tree_file_is_hashed_again_only_when_it_may_have_changed(
    tmp_path: Path, hashes: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """formats/history.md §3: a tree file checked is remembered by its identity (bounded) while it
    settled; one just written, edited in place (its mtime put back) or forgotten is hashed again."""
    root = tmp_path / "site"
    files = {f"p{i}.html": page(f"P{i}", f"<p>{i}</p>" * (i + 1)) for i in range(3)}
    write_tree(root, files, "2026-11-30T09:00:00Z")
    store.record(root)
    rs = {p: _v1_record(root, p) for p in files}
    tree = store.TreeState(root)
    assert not _opened(root, rs["p0.html"], tree).settled  # just written: not remembered
    _opened(root, rs["p0.html"], tree)
    assert len(hashes) == 2
    settle(root)
    monkeypatch.setattr(held, "CHECKED_MAX", 2)
    for p in ("p0.html", "p0.html", "p1.html", "p1.html", "p0.html"):
        assert _opened(root, rs[p], tree).settled
    assert len(hashes) == 4  # p0 and p1 once each
    _opened(root, rs["p2.html"], tree)  # the least recently used (p1) forgotten
    _opened(root, rs["p0.html"], tree)
    assert len(hashes) == 5
    _opened(root, rs["p1.html"], tree)
    assert len(hashes) == 6
    target = root / "p0.html"
    before = target.stat()
    data = target.read_bytes()
    target.write_bytes(data.replace(b"<p>0</p>", b"<p>X</p>"))
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(FormatError, match="does not hold the bytes"):
        _opened(root, rs["p0.html"], tree)
    assert len(hashes) == 8  # hashed, looked for again, hashed: refused


def test_extract_hashes_each_tree_file_once(two: Path, tmp_path: Path, hashes: list[int]) -> None:
    """extract checks the version whole, then links its files: the check's hashes serve both."""
    settle(two)
    v1 = store.versions(two)[0]
    held_by_tree = [r for r in store.version_records(v1) if store.source(two, r) == two / r.path]
    assert held_by_tree  # the tree still holds some of version 1's files
    assert store.extract(two, v1, tmp_path / "out") == len(V1)
    assert sorted(hashes) == sorted(r.size for r in held_by_tree)


def test_recording_what_was_just_written_stores_the_bytes_a_read_back_would(tmp_path: Path) -> None:
    """recapture.finish hands record() the manifest it has just written: the version manifest is
    byte for byte the one record() writes reading the manifest back, and a bad path is refused."""
    roots = [tmp_path / "read", tmp_path / "given"]
    for root in roots:
        write_tree(root, V1, "2026-11-30T09:00:00Z")
    given = roots[1]
    header = read_header(given)
    assert header is not None
    records = list(read_records(given))
    done = [store.record(roots[0]), store.record(given, (header, records))]
    assert [d.files for d in done] == [3, 3]
    assert done[0].version.manifest.read_bytes() == done[1].version.manifest.read_bytes()
    bad = tmp_path / "bad"
    write_tree(bad, V1, "2026-11-30T09:00:00Z")
    records[0].path = "../outside"
    with pytest.raises(FormatError, match="not a plain relative path"):
        store.record(bad, (header, records))


def test_the_manifest_read_as_a_list_is_what_read_records_yields(tmp_path: Path) -> None:
    """store.manifest_records decodes each line once: the same records as tree.read_records in the
    same order (a later record for a path replaces it where it first was; a blank line skipped, a
    torn last line ignored), and a bad line is named as that reader names it."""
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    manifest = root / "_archiver" / "manifest.jsonl"
    lines = manifest.read_bytes().splitlines(keepends=True)
    again = json.loads(lines[1])
    again["title"] = "Replaced"
    lines[2:2] = [b"\n", json.dumps(again).encode() + b"\n"]
    manifest.write_bytes(b"".join(lines) + b'{"path": "torn')
    got = store.manifest_records(root)
    assert got == list(read_records(root))
    assert [r.path for r in got] == list(dict.fromkeys(json.loads(x)["path"] for x in lines[1:] if x.strip()))
    assert len(got) == 3
    assert got[0].title == "Replaced"
    manifest.write_bytes(b"".join(lines[:3]) + b"{not json}\n")
    with pytest.raises(FormatError, match="line 4: ") as mine:
        store.manifest_records(root)
    with pytest.raises(FormatError) as theirs:
        list(read_records(root))
    assert str(mine.value) == str(theirs.value)


def test_a_manifest_as_its_version_holds_it_is_that_version_and_an_edit_is_not(tmp_path: Path) -> None:
    """An unchanged re-capture's begin: the tree's manifest byte for byte its version's records (the
    header but for options.version) is that version, compared without decoding a record; any other
    manifest of the same start is compared as before (one changed record: a new version)."""
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    first = store.record(root)
    manifest = root / "_archiver" / "manifest.jsonl"
    rest = first.version.manifest.read_bytes().partition(b"\n")[2]
    assert manifest.read_bytes().partition(b"\n")[2] == rest  # what record() left: the fast path
    again = store.record(root)
    assert (again.new, again.version.id) == (False, first.version.id)
    lines = manifest.read_bytes().splitlines(keepends=True)
    doc = json.loads(lines[1])
    doc["title"] = "Edited"
    manifest.write_bytes(b"".join([lines[0], json.dumps(doc).encode() + b"\n", *lines[2:]]))
    edited = store.record(root)
    assert edited.new and edited.version.id != first.version.id


def test_the_tree_state_never_waits_on_a_manifest_that_is_no_file(tmp_path: Path) -> None:
    """TreeState (what a memento's tree file is checked against, in serve) read the tree's manifest
    with a blocking open: a FIFO under its name held the server's request for good. A manifest that
    is not a regular file (a FIFO, a link) now tells it nothing, at once."""
    root = tmp_path / "t"
    (root / "_archiver").mkdir(parents=True)
    os.mkfifo(root / "_archiver" / "manifest.jsonl")
    code = (
        "import sys; from pathlib import Path; from archiver.versions.held import TreeState\n"
        f"print(TreeState(Path({str(root)!r})).sha256('index.html'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, "None\n"), done.stderr[-500:]
