"""Attacks on ``archiver extract`` of a gwtar (issue 14 point 1): whatever the members are (chains of
links through links, ``.`` and ``..`` hops, absolute targets, hard links, a link to a folder that a
later member writes through, the same name twice), nothing extract creates resolves outside DIR,
nothing beside DIR changes (a sentinel folder is compared byte for byte), and a refused extraction
leaves DIR exactly as it was.

The tar bodies are built here, block by block, with a tiny header builder (not the project's
encoder), and wrapped as a v1 gwtar the way tests/gwtar/corpus.py does.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.errors import ArchiverError, FormatError
from archiver.gwtar import extract, verify
from tests.gwtar.corpus import raw_v1

MTIME = 1795953600


def header(
    name: str, *, size: int = 0, typeflag: bytes = b"0", linkname: str = "", size_field: bytes | None = None,
    mtime_field: bytes | None = None,
) -> bytes:  # fmt: skip
    """One ustar header block, every field laid out by hand; ``size_field``/``mtime_field`` put raw
    bytes (e.g. base-256) in those fields."""

    def octal(value: int, width: int) -> bytes:
        return b"%0*o\x00" % (width - 1, value)

    raw = name.encode("utf-8", "surrogateescape")
    block = (
        raw[:100].ljust(100, b"\x00")
        + octal(0o644, 8)
        + octal(0, 8)
        + octal(0, 8)
        + (size_field if size_field is not None else octal(size, 12))
        + (mtime_field if mtime_field is not None else octal(MTIME, 12))
        + b" " * 8
        + typeflag
        + linkname.encode("utf-8", "surrogateescape")[:100].ljust(100, b"\x00")
        + b"ustar\x0000"
        + b"\x00" * 32 * 2
        + octal(0, 8) * 2
        + b"\x00" * 155
        + b"\x00" * 12
    )
    assert len(block) == 512
    return block[:148] + b"%06o\x00 " % sum(block) + block[156:]


def member(kind: str, name: str, target: str = "", data: bytes = b"") -> bytes:
    if kind == "file":
        return header(name, size=len(data)) + data + bytes(-len(data) % 512)
    flag = {"dir": b"5", "symlink": b"2", "hardlink": b"1"}[kind]
    return header(name, typeflag=flag, linkname=target)


def snapshot(root: Path) -> dict[str, tuple[object, ...]]:
    """Everything under ``root``, never following a link: type, bytes, link target, mode."""
    out: dict[str, tuple[object, ...]] = {}
    if not os.path.lexists(root):
        return out
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir", p.stat().st_mode)
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode)
    return out


def inside(root: Path, path: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top + os.sep)


# member names: mostly plain segments (so that many sequences extract and their links get judged),
# sometimes a "." or ".." hop; link targets: hops are common, and absolute paths into the sentinel
NAME = st.lists(st.sampled_from(["a", "b", "c"] * 6 + [".", ".."]), min_size=1, max_size=3).map("/".join)
HOPS = st.lists(st.sampled_from(["a", "b", "c", ".", "..", ".."]), min_size=1, max_size=5).map("/".join)
TARGET = st.one_of(
    NAME, HOPS, st.sampled_from(["@S", "@S/f", "@S/d", "/", ".", "..", "../sentinel", "../sentinel/f"])
)
MEMBER = st.tuples(st.sampled_from(["file", "dir", "symlink", "symlink", "hardlink"]), NAME, TARGET)


def _world(base: Path, dir_state: str) -> tuple[Path, Path]:
    sentinel, out = base / "sentinel", base / "out"
    (sentinel / "d").mkdir(parents=True)
    (sentinel / "f").write_bytes(b"sentinel file")
    (sentinel / "d" / "g").write_bytes(b"deeper")
    if dir_state != "missing":
        out.mkdir()
    if dir_state == "content":
        (out / "keep.txt").write_bytes(b"mine")
        (out / "a").mkdir()
        (out / "a" / "kept").write_bytes(b"mine too")
        os.symlink(sentinel, out / "c")  # the user's own link out: extract must never write through it
    return sentinel, out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    members=st.lists(MEMBER, min_size=1, max_size=6),
    keep=st.booleans(),
    dir_state=st.sampled_from(["missing", "empty", "content"]),
)
def test_no_member_sequence_escapes_dir(
    members: list[tuple[str, str, str]], keep: bool, dir_state: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        sentinel, out = _world(base, dir_state)
        blocks = [
            member(kind, name, target.replace("@S", str(sentinel)), data=f"{i}:{name}".encode())
            for i, (kind, name, target) in enumerate(members)
        ]
        archive = base / "attack.gwtar.html"
        archive.write_bytes(raw_v1(blocks))
        before_out, before_sentinel = snapshot(out), snapshot(sentinel)
        before_names = sorted(os.listdir(base))
        kwargs = {"keep_symlinks": True} if keep else {}
        unsafe = [p for p in verify(archive).problems if "unsafe" in p.message]
        try:
            extract(archive, out, force=dir_state == "content", **kwargs)
            assert not unsafe, f"verify found {unsafe[0].message!r}, yet extract succeeded"
        except ArchiverError as e:
            assert "\n" not in str(e)
            assert snapshot(out) == before_out, "a refused extraction changed DIR"
            assert os.path.lexists(out) == (dir_state != "missing")
        else:
            after = snapshot(out)
            for rel, what in after.items():
                if before_out.get(rel) == what and rel in ("c", "keep.txt", "a", "a/kept"):
                    continue  # the user's own entries
                assert inside(out, out / rel), f"{rel} -> {what} resolves outside DIR"
        assert snapshot(sentinel) == before_sentinel, "something outside DIR changed"
        assert set(os.listdir(base)) - {"out"} == set(before_names) - {"out"}, "a temporary file was left"


CHAINS = [
    # s -> . ; t -> s/s/s/..  : lexically inside, really DIR/.. (the chain escape)
    [("symlink", "s", "."), ("symlink", "t", "s/s/s/..")],
    # a link to a folder, then a member written through it
    [("symlink", "a", "@S"), ("file", "a/pwned", "")],
    [("dir", "a", ""), ("symlink", "a/up", ".."), ("symlink", "a/out", "up/a/up/../sentinel")],
    # absolute and hard links
    [("symlink", "abs", "@S/f")],
    [("hardlink", "h", "@S/f")],
    [("symlink", "l", "page.html"), ("hardlink", "h", "l")],
    # the same name twice: a file, then a link over it, or a link, then a file through it
    [("file", "x", ""), ("symlink", "x", "@S/f")],
    [("symlink", "b/a", "a"), ("file", "b/a", "")],
]


@pytest.mark.parametrize("chain", CHAINS, ids=range(len(CHAINS)))
@pytest.mark.parametrize("keep", [False, True])
def test_known_escapes_are_refused_and_leave_nothing(tmp_path: Path, chain: list, keep: bool) -> None:
    sentinel, out = _world(tmp_path, "missing")
    blocks = [member(k, n, t.replace("@S", str(sentinel)), b"payload") for k, n, t in chain]
    archive = tmp_path / "attack.gwtar.html"
    archive.write_bytes(raw_v1(blocks))
    before = snapshot(sentinel)
    with pytest.raises(FormatError, match="refusing to extract"):
        extract(archive, out, **({"keep_symlinks": True} if keep else {}))
    assert not os.path.lexists(out)
    assert snapshot(sentinel) == before
    assert sorted(os.listdir(tmp_path)) == ["attack.gwtar.html", "sentinel"]


def test_links_that_stay_inside_are_kept_with_keep_symlinks(tmp_path: Path) -> None:
    _, out = _world(tmp_path, "missing")
    blocks = [
        member("dir", "a"),
        member("symlink", "a/up", ".."),
        member("symlink", "a/page", "up/page.html"),
        member("symlink", "dangling", "nothing/here"),
    ]
    archive = tmp_path / "links.gwtar.html"
    archive.write_bytes(raw_v1(blocks))
    with pytest.raises(FormatError, match="symbolic link"):
        extract(archive, out)  # refused by default
    assert not os.path.lexists(out)
    assert extract(archive, out, keep_symlinks=True) == 5
    assert (out / "a" / "page").read_bytes() == (out / "page.html").read_bytes()
    assert os.readlink(out / "dangling") == "nothing/here"


def test_a_late_hash_mismatch_leaves_an_existing_dir_as_it_was(tmp_path: Path) -> None:
    """Merging (--force) into a folder with content, where a good member comes before the damaged one
    and another would replace the user's file: nothing is replaced, nothing added."""
    _, out = _world(tmp_path, "content")
    blocks = [member("file", "keep.txt", data=b"theirs"), member("file", "new.txt", data=b"new")]
    archive = tmp_path / "damaged.gwtar.html"
    data = bytearray(raw_v1(blocks))
    at = data.index(bytes(range(200)))  # the listed asset, whose SHA-256 the manifest records
    data[at + 7] ^= 0xFF
    archive.write_bytes(bytes(data))
    before = snapshot(out)
    with pytest.raises(FormatError, match="SHA-256 does not match"):
        extract(archive, out, force=True)
    assert snapshot(out) == before
    data[at + 7] ^= 0xFF
    archive.write_bytes(bytes(data))
    assert extract(archive, out, force=True) == 4
    assert (out / "keep.txt").read_bytes() == b"theirs" and (out / "a" / "kept").read_bytes() == b"mine too"
    assert not [n for n in os.listdir(out) if "archiver-tmp" in n]
