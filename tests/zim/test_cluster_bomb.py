"""A ZIM whose compressed cluster is a bomb as a whole, written as the attack
(tools/zim_corpus.cluster_bomb_blobs): eight zero blobs of 400 MiB in a zstd cluster of 170 KB,
``index.html`` (or the ``M/Title`` metadata entry) moved to the last one. Each blob is under the entry
bound (``MAX_ENTRY``, 512 MiB), so the entry check let it through; libzim decompresses the cluster from
its start up to the entry's end: ``verify`` took 4.1 GB of memory (under a limit, ``std::bad_alloc``).
Now archiver/zim/clusters.py reads the cluster's blob table itself and the entry is not read: one
line saying how far into its cluster it ends, memory as for any small file, every other entry as
before (formats/zim.md §7.1)."""

from __future__ import annotations

import os
import resource
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver import zim
from archiver.zim.clusters import MAX_REACH, MAX_TABLE, ClusterGuard, reach, table_size

from .others import serving, tool

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 1_500_000_000  # bytes of address space: the old code's 3.2 GB decompression fails under it
corpus = tool("zim_corpus")
MIB400 = 400 << 20


def _bomb(tmp: Path, mini: Path, name: str, **kw: object) -> Path:
    out = tmp / f"{name}.zim"
    entry = kw.pop("entry", b"index.html")
    sizes = kw.pop("sizes", [MIB400] * 8)
    pick = kw.pop("pick", 7)
    out.write_bytes(corpus.cluster_bomb_blobs(mini.read_bytes(), entry, sizes, pick, **kw))
    assert out.stat().st_size < 400_000
    return out


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory, mini_zim: Path) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("cluster-bombs")
    return {
        "blobs": _bomb(tmp, mini_zim, "blobs"),
        "wide": _bomb(tmp, mini_zim, "wide", width=8),
        "title": _bomb(tmp, mini_zim, "title", entry=b"Title", namespace=b"M"),
        "small": _bomb(tmp, mini_zim, "small", sizes=[1 << 20] * 4, pick=3),
    }


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _cli(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """The command's result and its peak RSS in KiB (a fresh child: its own figure)."""
    code = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(done.returncode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "archiver", *args], capture_output=True, text=True,
        timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_limited,
    )  # fmt: skip
    *lines, rss = done.stderr.rstrip("\n").split("\n")
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout, "\n".join(lines)), int(rss)


SAYS = "entry 'index.html' is not read: it ends 3355443236 bytes into its compressed cluster 2"


@pytest.mark.parametrize("kind", ["blobs", "wide"])
def test_verify_names_the_cluster_bomb_in_bounded_memory(bombs: dict[str, Path], kind: str) -> None:
    done, rss = _cli("verify", str(bombs[kind]))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    end = (8 if kind == "wide" else 4) * 9 + 8 * MIB400  # its table, then eight blobs
    says = f"entry 'index.html' is not read: it ends {end} bytes into its compressed cluster 2"
    assert says in done.stdout, done.stdout  # before: "cannot be read (std::bad_alloc)", 4.1 GB unlimited
    assert "more than archiver decompresses for one entry (536870912" in done.stdout
    assert rss < 300_000, rss  # KiB: before, the limit's 1.5 GB


@pytest.mark.parametrize("command", ["extract", "pack"])
def test_extract_and_pack_refuse_it_with_one_line(
    bombs: dict[str, Path], tmp_path: Path, command: str
) -> None:
    out = tmp_path / ("x" if command == "extract" else "x.gwtar.html")
    args = ["-o", str(out)] + ([] if command == "extract" else ["--format", "gwtar"])
    done, rss = _cli(command, str(bombs["blobs"]), *args)
    assert done.returncode == 1 and done.stderr.count("\n") == 0 and done.stderr, done.stderr
    assert SAYS in done.stderr
    assert list(tmp_path.iterdir()) == []
    assert rss < 300_000, rss


def test_a_metadata_entry_in_a_bomb_cluster_is_not_read(bombs: dict[str, Path]) -> None:
    done, rss = _cli("verify", str(bombs["title"]))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "entry 'M/Title' is not read: it ends 3355443236 bytes into its compressed cluster 2" in (
        done.stdout + done.stderr
    )
    assert rss < 300_000, rss


def test_serve_answers_it_500_before_any_header_and_the_rest_as_before(bombs: dict[str, Path]) -> None:
    with serving(bombs["blobs"], _limited) as (get, server):
        assert get("/blobs/index.html")[0] == 500  # before: a 200 head, then memory for the body
        status, body = get("/blobs/what%3F.html")
        assert status == 200 and body
        assert server.poll() is None


def test_a_sound_multi_blob_cluster_reads_as_before(bombs: dict[str, Path]) -> None:
    with zim.open(bombs["small"]) as reader:
        data = reader.get("index.html").read()
    assert data == bytes(1 << 20)


def test_every_entry_of_a_libzim_file_passes(mini_zim: Path) -> None:
    """A file libzim wrote (compressed clusters among them) is read through the guard unchanged."""
    from libzim.reader import Archive

    archive = Archive(mini_zim)
    guard = ClusterGuard([mini_zim])
    compressed = 0
    try:
        for i in range(archive.all_entry_count):
            assert guard.check(i) is None
        compressed = len(guard._tables)
    finally:
        guard.close()
    assert compressed >= 1  # the text entries' cluster was decoded and checked


# -- the pure rules --------------------------------------------------------------------------------


def _table(offsets: list[int], width: int = 4) -> bytes:
    return b"".join(o.to_bytes(width, "little") for o in offsets)


@pytest.mark.parametrize(
    ("head", "width", "expected"),
    [
        (_table([8]), 4, 8),
        (_table([16], 8), 8, 16),
        (_table([6]), 4, "its blob table size 6 is misaligned"),
        (_table([0]), 4, "its blob table size 0 is misaligned"),
        (_table([MAX_TABLE]), 4, MAX_TABLE),
        (
            _table([MAX_TABLE + 4]),
            4,
            f"its blob table of {MAX_TABLE + 4} bytes is larger than archiver reads",
        ),
    ],
)
def test_table_size_vectors(head: bytes, width: int, expected: int | str) -> None:
    got = table_size(head, width)
    assert got == expected if isinstance(expected, int) else str(got).startswith(expected)


@pytest.mark.parametrize(
    ("offsets", "blob", "expected"),
    [
        ([12, 12, 20], 0, 12),
        ([12, 12, 20], 1, 20),
        ([12, 12, 20], 2, "blob 2 is out of range (the cluster holds 2)"),
        ([12, 30, 20], 1, "blob 1's offsets (30, 20) are out of order"),
        ([12, 4, 20], 0, "blob 0's offsets (12, 4) are out of order"),
        ([8, 8 + MAX_REACH + 1], 0, 8 + MAX_REACH + 1),
    ],
)
def test_reach_vectors(offsets: list[int], blob: int, expected: int | str) -> None:
    assert reach(_table(offsets), 4, blob) == expected


@given(st.lists(st.integers(0, 1 << 20), min_size=1, max_size=50), st.data(), st.sampled_from([4, 8]))
def test_reach_is_the_end_of_the_blob(sizes: list[int], data: st.DataObject, width: int) -> None:
    offsets = [width * (len(sizes) + 1)]
    for size in sizes:
        offsets.append(offsets[-1] + size)
    blob = data.draw(st.integers(0, len(sizes) - 1))
    assert reach(_table(offsets, width), width, blob) == offsets[blob + 1]
    assert table_size(_table(offsets, width)[:width], width) == offsets[0]
    assert struct.calcsize("<Q") == 8


def _last_cluster_at(data: bytes) -> int:
    clusters, pointers = struct.unpack_from("<I", data, 28)[0], struct.unpack_from("<Q", data, 48)[0]
    return struct.unpack_from("<Q", data, pointers + 8 * (clusters - 1))[0]


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda b, at: b[: at + 1] + b"JUNK" + b[at + 5 :], "its zstd data is damaged"),
        (
            lambda b, at: b[: at + 7] + bytes([17, 0, 0]) + b[at + 10 :],
            "its zstd data ends inside its blob table",
        ),
    ],
    ids=["not-zstd", "raw-block-cut"],
)
def test_a_damaged_compressed_cluster_is_named_not_read(
    tmp_path: Path, mini_zim: Path, damage: object, says: str
) -> None:
    from libzim.reader import Archive

    data = corpus.cluster_bomb_blobs(mini_zim.read_bytes(), b"index.html", [1 << 20] * 4, 3)
    path = tmp_path / "damaged.zim"
    path.write_bytes(damage(data, _last_cluster_at(data)))  # type: ignore[operator]
    index = Archive(path).get_entry_by_path("index.html").get_item()._index
    guard = ClusterGuard([path])
    try:
        why = guard.check(index)
    finally:
        guard.close()
    assert why is not None and why.startswith("its compressed cluster 2: ") and says in why, why


def test_an_entry_read_after_its_reader_closed_is_still_refused(bombs: dict[str, Path]) -> None:
    # the entry carries the guard (it keeps it open): a reader's close() does not let libzim at the bomb
    code = (
        "import sys\nfrom archiver import zim\nfrom archiver.errors import FormatError\n"
        "r = zim.open(sys.argv[1]); e = r.get('index.html'); r.close()\n"
        "try:\n    e.read(0, 10)\nexcept FormatError as x:\n    print(x.message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(bombs["blobs"])], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_limited,
    )  # fmt: skip
    assert "entry 'index.html' is not read: it ends 3355443236 bytes" in done.stdout, (
        done.stdout + done.stderr
    )
