"""``pack --format gwtar --all-versions`` (formats/gwtar.md §13), written as the facts it must hold
and the attacks it must refuse: a file unchanged across versions is stored once; each version extracted
from the gwtar equals ``archiver extract TREE --version`` of the same id byte for byte; a hostile
versions table (a manifest naming ``../``, content that is not in the tar, a blob whose name lies, a
table naming a manifest outside the archive) is a verify problem (exit 1) and refused by extract; a
gwtar packed without the flag is what it was."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.gwtar import versions as gv
from archiver.gwtar.loader import loader_source
from archiver.gwtar.read import GwtarReader
from archiver.gwtar.sources import tree_source
from archiver.gwtar.write import write_archive
from archiver.versions import store
from tests.versions.helpers import page, write_tree

BIG = bytes(random.Random(25).getrandbits(8) for _ in range(300_000))  # an asset no version changes
V1 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one.</p>"),
    "docs/old.html": page("Old", "<p>Soon gone.</p>"),
    "_archiver/site.localhost/big.bin": BIG,
    "_archiver/site.localhost/css/site.css": "body{color:#111}",
}
V2 = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one.</p><p>Step two.</p>"),
    "docs/new.html": page("New", "<p>Fresh.</p>"),
    "_archiver/site.localhost/big.bin": BIG,
    "_archiver/site.localhost/css/site.css": "body{color:#222}",
}
V3 = {
    "index.html": page("Home", "<p>Welcome back.</p>"),
    "docs/intro.html": page("Intro", "<p>Step one.</p>"),  # back to V1's bytes
    "docs/new.html": page("New", "<p>Fresh.</p>"),
    "_archiver/site.localhost/big.bin": BIG,
    "_archiver/site.localhost/css/site.css": "body{color:#222}",
}
IDS = ["20261129T090000Z", "20261130T090000Z", "20261201T090000Z"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def three(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for files, when in zip(
        (V1, V2, V3), ("2026-11-29T09:00:00Z", "2026-11-30T09:00:00Z", "2026-12-01T09:00:00Z"), strict=True
    ):
        write_tree(root, files, when)
        store.record(root)
    assert [v.id for v in store.versions(root)] == IDS
    return root


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_every_version_is_in_one_file_and_each_content_once(three: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain.gwtar.html"
    out = tmp_path / "all.gwtar.html"
    assert _cli("pack", str(three), "--format", "gwtar", "-o", str(plain)).returncode == 0
    r = _cli("pack", str(three), "--format", "gwtar", "--all-versions", "-o", str(out))
    assert r.returncode == 0, r.stderr
    with GwtarReader(out) as reader:
        members = list(reader.iter_members())
        table = gv.table(reader)
    assert [e.id for e in table] == IDS
    big = hashlib.sha256(BIG).hexdigest()
    assert [m.path for m in members if m.sha256 == big] == ["_archiver/site.localhost/big.bin"]
    blobs = sorted(m.path for m in members if m.path.startswith(gv.BLOBS))
    # only the contents no newest file holds: V1's old.html and css, V2's index.html and intro.html
    # (V1's intro.html is V3's again: stored once, as the newest member)
    old_only = {
        hashlib.sha256(V1["docs/old.html"].encode()).hexdigest(),
        hashlib.sha256(V1["_archiver/site.localhost/css/site.css"].encode()).hexdigest(),
        hashlib.sha256(V2["docs/intro.html"].encode()).hexdigest(),
        hashlib.sha256(V1["index.html"].encode()).hexdigest(),
    }
    assert blobs == sorted(gv.BLOBS + h for h in old_only)
    extra = out.stat().st_size - plain.stat().st_size
    print(f"plain {plain.stat().st_size} B, all versions {out.stat().st_size} B (+{extra} B)")
    assert extra < 30_000  # 3 manifests, 4 small blobs, the table, the diff page: never a 2nd BIG
    # the newest version is the ordinary members: a plain extract gives the newest tree
    r = _cli("verify", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("ls", str(out), "--versions", "--json")
    assert [json.loads(line)["version"] for line in r.stdout.splitlines()] == IDS


@pytest.mark.parametrize("when", [*IDS, "2026-11-30", "20261201100000"])
def test_extract_version_equals_the_trees(three: Path, tmp_path: Path, when: str) -> None:
    out = tmp_path / "all.gwtar.html"
    assert gwtar.pack(three, out, all_versions=True).members > 0
    a, b = tmp_path / "from-gwtar", tmp_path / "from-tree"
    r = _cli("extract", str(out), "--version", when, "-o", str(a))
    assert r.returncode == 0, r.stderr
    r = _cli("extract", str(three), "--version", when, "-o", str(b))
    assert r.returncode == 0, r.stderr
    assert _tree_bytes(a) == _tree_bytes(b)


def test_before_the_first_version_is_a_usage_error(three: Path, tmp_path: Path) -> None:
    out = tmp_path / "all.gwtar.html"
    gwtar.pack(three, out, all_versions=True)
    r = _cli("extract", str(out), "--version", "2026-01-01", "-o", str(tmp_path / "x"))
    assert r.returncode == 2 and "the first is 2026-11-29" in r.stderr
    assert not (tmp_path / "x").exists()


def _hostile(three: Path, tmp_path: Path, edit: str) -> Path:
    """An archive whose every member hash is right (so only the versions' checks can catch it), its
    versions made hostile by ``edit``."""
    out = tmp_path / "hostile.gwtar.html"
    work = tmp_path / "work"
    work.mkdir()
    source = tree_source(three, main=None, created=None)
    gv.add_versions(source, three, work)
    manifest = f"{gv.PREFIX}{IDS[0]}.jsonl"
    lines = Path(source.files[manifest]).read_bytes().splitlines(keepends=True)
    if edit == "dotdot":
        rec = json.loads(lines[1])
        rec["path"] = "../../escaped.html"
        lines[1] = json.dumps(rec).encode() + b"\n"
    elif edit == "absent":
        rec = json.loads(lines[1])
        rec["sha256"] = "ab" * 32
        lines[1] = json.dumps(rec).encode() + b"\n"
    elif edit == "header-nested":  # an unknown field of 5,000 nested arrays: msgspec's RecursionError
        lines[0] = lines[0].rstrip()[:-1] + b', "x": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    elif edit == "record-nested":
        lines[1] = lines[1].rstrip()[:-1] + b', "x": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"
    if edit in ("dotdot", "absent", "header-nested", "record-nested"):
        bad = work / "bad.jsonl"
        bad.write_bytes(b"".join(lines))
        source.files[manifest] = bad
        source.specs[manifest] = gv.MemberSpec(manifest, bad.stat().st_size, "application/jsonl")
        source.expected[manifest] = None  # past the check of what add_versions read
    elif edit.startswith("table"):
        doc = json.loads(Path(source.files[gv.TABLE]).read_bytes())
        first = doc["versions"][0]
        if edit == "table":
            first["manifest"] = "../../etc/passwd"
        elif edit == "table-tree-manifest":  # an earlier version passed off as the newest state
            first["manifest"] = "_archiver/manifest.jsonl"
        elif edit == "table-month":
            first["id"], first["manifest"] = "20261399T000000Z", f"{gv.PREFIX}20261399T000000Z.jsonl"
        elif edit == "table-date":
            first["date"] = "\r\n<script>alert(1)</script>"
        data = json.dumps(doc).encode()
        if edit == "table-inf":
            data = data.replace(b'"files": ', b'"files": 1e400, "x": ', 1)
        elif edit == "table-nested":
            data = b"[" * 100_000 + b"]" * 100_000
        bad = work / "bad.json"
        bad.write_bytes(data)
        source.files[gv.TABLE] = bad
        source.specs[gv.TABLE] = gv.MemberSpec(gv.TABLE, bad.stat().st_size, "application/json")
        source.expected[gv.TABLE] = None
    elif edit == "blob":
        blob = next(p for p in source.specs if p.startswith(gv.BLOBS))
        liar = work / "liar"
        liar.write_bytes(b"not what the name says")
        source.files[blob] = liar
        source.specs[blob] = gv.MemberSpec(blob, liar.stat().st_size, "application/octet-stream")
        source.expected[blob] = None
    write_archive(source, out, loader=loader_source())
    return out


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("dotdot", "not a plain relative path"),
        ("absent", "its bytes are not in the archive"),
        ("table", "as its manifest"),
        ("blob", "name is not the SHA-256 of its bytes"),
        # before: a traceback (exit 70) for the next three; the last two read as good versions
        ("table-nested", "versions table: maximum recursion depth"),
        ("table-inf", "versions table: cannot convert float infinity"),
        ("table-month", "'20261399T000000Z' is not a version id"),
        ("table-date", "version 20261129T090000Z is dated"),
        ("table-tree-manifest", "as its manifest"),
        # before (dab4b1c): a traceback, exit 70, from verify and extract --version
        ("header-nested", "line 1 is not a manifest header: maximum recursion depth"),
        ("record-nested", "line 2: maximum recursion depth"),
    ],
)
def test_hostile_versions_are_refused(three: Path, tmp_path: Path, edit: str, says: str) -> None:
    out = _hostile(three, tmp_path, edit)
    r = _cli("verify", str(out))
    assert r.returncode == 1 and says in r.stdout + r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    if edit in ("dotdot", "absent", "header-nested", "record-nested") or edit.startswith("table"):
        target = tmp_path / "out" / "x"
        target.parent.mkdir()
        r = _cli("extract", str(out), "--version", IDS[0], "-o", str(target))
        assert r.returncode == 1, r.stderr
        assert r.stderr.startswith("archiver: ") and "Traceback" not in r.stderr
        assert list(target.parent.iterdir()) == [] and not (tmp_path / "escaped.html").exists()


def test_a_gwtar_without_versions_is_unchanged(three: Path, tmp_path: Path) -> None:
    """The store is private: packing without --all-versions gives the bytes of the same tree
    without any history."""
    bare = tmp_path / "bare"
    shutil.copytree(three, bare, symlinks=True)
    shutil.rmtree(bare / "_archiver" / ".versions")
    a, b = tmp_path / "a.gwtar.html", tmp_path / "b.gwtar.html"
    gwtar.pack(three, a)
    gwtar.pack(bare, b)
    assert a.read_bytes() == b.read_bytes()
    with GwtarReader(a) as reader:
        assert not gv.has_versions(reader)
    r = _cli("ls", str(a), "--versions")
    assert r.returncode == 1 and "--all-versions" in r.stderr


def test_all_versions_refuses_what_has_no_versions(three: Path, tmp_path: Path) -> None:
    r = _cli(
        "pack",
        str(three),
        "--format",
        "gwtar",
        "--all-versions",
        "--single-page",
        "-o",
        str(tmp_path / "x.html"),
    )
    assert r.returncode == 2 and not (tmp_path / "x.html").exists()
    r = _cli("pack", str(three), "--format", "zim", "--all-versions", "-o", str(tmp_path / "x.zim"))
    assert r.returncode == 2 and not (tmp_path / "x.zim").exists()


def test_all_versions_is_reproducible(three: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.gwtar.html", tmp_path / "b.gwtar.html"
    gwtar.pack(three, a, all_versions=True)
    gwtar.pack(three, b, all_versions=True)
    assert a.read_bytes() == b.read_bytes()
    assert not [p for p in tmp_path.iterdir() if "archiver-tmp" in p.name or p.name.endswith(".tmp")]


def test_a_newest_state_not_recorded_yet_is_the_last_version(tmp_path: Path) -> None:
    """The tree now (not in the store yet) is the newest version: its manifest is the tree's own, and
    extracting it gives the tree's files and manifest."""
    root = tmp_path / "site"
    write_tree(root, V1, "2026-11-29T09:00:00Z")
    store.record(root)
    write_tree(root, V2, "2026-11-30T09:00:00Z")
    out = tmp_path / "all.gwtar.html"
    gwtar.pack(root, out, all_versions=True)
    with GwtarReader(out) as reader:
        assert [(e.id, e.manifest) for e in gv.table(reader)] == [
            (IDS[0], f"{gv.PREFIX}{IDS[0]}.jsonl"),
            (IDS[1], "_archiver/manifest.jsonl"),
        ]
    r = _cli("extract", str(out), "--version", IDS[1], "-o", str(tmp_path / "now"))
    assert r.returncode == 0, r.stderr
    want = {k: v for k, v in _tree_bytes(root).items() if not k.startswith("_archiver/.versions/")}
    assert _tree_bytes(tmp_path / "now") == want


@pytest.mark.parametrize("edit", ["dotdot", "lying-blob", "missing-blob"])
def test_pack_refuses_a_hostile_store(three: Path, tmp_path: Path, edit: str) -> None:
    """A version manifest naming ``../``, a blob whose bytes are not its name's, a blob gone: pack
    fails with one line, exit 1, and writes nothing."""
    first = store.versions(three)[0]
    rec = [json.loads(line) for line in first.manifest.read_bytes().splitlines()]
    blob = store.blob_path(three, hashlib.sha256(V1["docs/old.html"].encode()).hexdigest())
    if edit == "dotdot":
        rec[1]["path"] = "../../escaped.html"
        first.manifest.chmod(0o644)
        first.manifest.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rec))
    elif edit == "lying-blob":
        blob.chmod(0o644)
        blob.write_bytes(b"<p>Not what was captured.</p>")
    else:
        blob.unlink()
    out = tmp_path / "x.gwtar.html"
    r = _cli("pack", str(three), "--format", "gwtar", "--all-versions", "-o", str(out))
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("archiver: ") and len(r.stderr.splitlines()) == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]


def test_a_manifest_swapped_after_its_check_is_not_packed(
    three: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version manifest is read once: what is packed is what was checked. The attack renames a
    hostile manifest of the same size over the checked one between the check (``add_versions``) and
    the write (old code: the hostile bytes packed, a ``../`` path in the archive)."""
    first = store.versions(three)[0].manifest
    checked = first.read_bytes()
    hostile = checked.replace(b'"path":"docs/', b'"path":"../x/')
    assert len(hostile) == len(checked) and hostile != checked
    real = gv.add_versions

    def then_swap(source: object, root: Path, work: Path) -> None:
        real(source, root, work)
        swap = first.with_name("swap.tmp")
        swap.write_bytes(hostile)
        os.replace(swap, first)

    monkeypatch.setattr(gv, "add_versions", then_swap)
    out = tmp_path / "all.gwtar.html"
    gwtar.pack(three, out, all_versions=True)
    with GwtarReader(out) as reader:
        assert reader.read(f"{gv.PREFIX}{IDS[0]}.jsonl") == checked
    assert gwtar.verify(out, links=False).ok


def test_a_versions_table_said_to_be_a_terabyte_is_refused_unread(three: Path, tmp_path: Path) -> None:
    """A forged archive whose versions table member is 1 TiB (a sparse file costs nothing): it was
    read whole (``reader.read``) before it was parsed. Now refused by its size, nothing read."""
    import dataclasses

    out = tmp_path / "all.gwtar.html"
    gwtar.pack(three, out, all_versions=True)
    with GwtarReader(out) as reader:
        real = reader.member

        def forged(path: object) -> object:
            m = real(path)  # type: ignore[arg-type]
            return dataclasses.replace(m, size=1 << 40) if m.path == gv.TABLE else m

        def unread(*_args: object) -> bytes:
            raise AssertionError("the table was read")

        reader.member = forged  # type: ignore[method-assign]
        reader.read = unread  # type: ignore[method-assign]
        with pytest.raises(gv.FormatError, match="versions table: 1099511627776 bytes, more than"):
            gv.table(reader)
