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
from archiver.tree import is_private, read_records
from archiver.versions import store
from tests.versions.helpers import page, write_tree

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
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    store.record(root)
    write_tree(root, V2, "2026-12-01T09:00:00Z")
    store.record(root)
    return root


def test_recording_links_each_file_once_and_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    first = store.record(root)
    assert (first.new, first.files, first.bytes_added) == (True, 3, 0)  # hard links: no bytes copied
    again = store.record(root)
    assert (again.new, again.version.id) == (False, first.version.id)
    for r in read_records(root):
        blob = store.blob_path(root, r.sha256)
        assert os.stat(blob).st_ino == os.stat(root / r.path).st_ino
        # one inode: the tree's file keeps its mode (making the blob read-only made it read-only)
        assert os.stat(root / r.path).st_mode & 0o200
    assert [v.id for v in store.versions(root)] == ["20261130T090000Z"]
    _no_temporaries(root)
    assert is_private("_archiver/.versions/blobs/sha256/ab/x") and is_private("_archiver/.versions")


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


def test_a_file_changed_behind_the_manifests_back_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    (root / "docs/intro.html").write_text("tampered")
    with pytest.raises(FormatError, match="has changed since it was captured"):
        store.record(root)
    assert not list(store.store_dir(root).glob("*.jsonl"))
    _no_temporaries(root)


def test_a_symlink_in_the_tree_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "site"
    secret = tmp_path / "secret.txt"
    secret.write_text(V1["docs/intro.html"])  # same bytes as the record: only the link gives it away
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    (root / "docs/intro.html").unlink()
    (root / "docs/intro.html").symlink_to(secret)
    with pytest.raises(FormatError):
        store.record(root)
    assert not list(store.store_dir(root).glob("*.jsonl"))


def test_a_tree_of_many_folders_and_repeated_bytes_is_stored_once_each(tmp_path: Path) -> None:
    """More folders than a recording keeps open at once (it reopens them), nested ones, and files
    with the same bytes in different folders: every file's blob is its own inode, each distinct
    content stored once, nothing left behind; a second state of the tree stores only what changed."""
    root = tmp_path / "site"
    files: dict[str, str | bytes] = {"index.html": page("Home", "<p>Welcome.</p>")}
    for i in range(store._KEPT_FDS + 6):
        files[f"d{i}/deep/er/page.html"] = page(f"Page {i}", f"<p>{i}</p>")
        files[f"d{i}/same.css"] = "body{color:#333}"  # one content in every folder
    write_tree(root, files, "2026-11-30T09:00:00Z")
    first = store.record(root)
    assert (first.new, first.files, first.bytes_added) == (True, len(files), 0)
    blobs = [p for p in (store.store_dir(root) / "blobs").rglob("*") if p.is_file()]
    assert len(blobs) == len(set(files.values()))
    for r in read_records(root):
        blob = store.blob_path(root, r.sha256)
        if r.path.endswith("same.css"):  # the first of them was linked; the others share its bytes
            assert blob.read_bytes() == (root / r.path).read_bytes()
        else:
            assert os.stat(blob).st_ino == os.stat(root / r.path).st_ino
    files["d3/deep/er/page.html"] = page("Page 3", "<p>changed</p>")
    write_tree(root, files, "2026-12-01T09:00:00Z")
    second = store.record(root)
    assert second.new and second.files == len(files)
    later = [p for p in (store.store_dir(root) / "blobs").rglob("*") if p.is_file()]
    assert len(later) == len(blobs) + 1
    _no_temporaries(root)
    assert _cli("verify", str(root)).returncode == 0


def test_a_symlinked_folder_in_the_tree_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-30T09:00:00Z")
    elsewhere = tmp_path / "elsewhere"
    (root / "docs").rename(elsewhere)  # the same bytes, reached through a link to another folder
    (root / "docs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(FormatError, match="cannot be read"):
        store.record(root)
    assert not list(store.store_dir(root).glob("*.jsonl"))
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
    r = next(r for r in read_records(two) if r.path == "index.html")
    blob = store.blob_path(two, r.sha256)
    # the tree's index.html is the same inode: replace the blob by another file (as a damaged copy would)
    os.unlink(blob)
    blob.write_text("not the page")
    checked = _cli("verify", str(two))
    assert checked.returncode == 1
    assert "does not hold the bytes its name and record say" in checked.stdout + checked.stderr
    done = _cli("extract", str(two), "--version", "20261130T090000Z", "-o", str(tmp_path / "out"))
    assert done.returncode == 1 and not (tmp_path / "out").exists()


def test_a_blob_that_is_a_symlink_is_found(two: Path, tmp_path: Path) -> None:
    r = next(r for r in read_records(two) if r.path == "docs/new.html")
    blob = store.blob_path(two, r.sha256)
    os.unlink(blob)
    target = tmp_path / "elsewhere.html"
    target.write_text(V2["docs/new.html"])
    blob.symlink_to(target)
    checked = _cli("verify", str(two))
    assert checked.returncode == 1 and "docs/new.html" in checked.stdout + checked.stderr


def test_a_kill_during_a_recording_leaves_whole_versions_only(tmp_path: Path) -> None:
    root = tmp_path / "site"
    files = {f"p/{i}.html": page(f"P{i}", f"<p>{i} " + "x" * 2000 + "</p>") for i in range(3000)}
    write_tree(root, {"index.html": page("Home", ""), **files}, "2026-11-30T09:00:00Z")
    code = f"from pathlib import Path; from archiver.versions import store; store.record(Path({str(root)!r}))"
    proc = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (store.store_dir(root) / "blobs").exists():
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
