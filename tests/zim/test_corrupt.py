"""Damaged and crafted ZIM files, one per class of corruption (tools/zim_corpus.py), through every
command: ``verify`` calls each INVALID with a line naming the damage, and ``ls``, ``extract``,
``pack`` and ``serve`` refuse each with one clear line: never a traceback, never exit 0, nothing left
at the output. Written as attacks: every file but ``checksum`` has a correct MD5, so only a check of
the structure itself catches it, and libzim is never handed a pointer that lies."""

from __future__ import annotations

import hashlib
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archiver.cli import main
from archiver.errors import FormatError
from archiver.zim import verify
from archiver.zim.read import open_archive
from archiver.zim.structure import Source, check

from .others import tool

ROOT = Path(__file__).resolve().parents[2]

#: What ``verify`` must say for each class (a fragment of the problem line).
EXPECTED = {
    "header_truncated": "less than a ZIM header",
    "file_truncated": "truncated",
    "checksum": "checksum does not match",
    "dirent_pointer": "directory entry pointer",
    "dirent_cluster": "cluster 7 is out of range",
    "dirent_blob": "blob 999 is out of range",
    "cluster_pointer": "cluster 1: its pointer",
    "mime_index": "MIME type index",
    "redirect_index": "redirect to entry",
    "main_page": "main page index",
    "blob_misaligned": "misaligned",
    "blob_oversized": "beyond the cluster",
    "dirents_unsorted": "not sorted by path",
    "titles_unsorted": "not sorted by title",
    "title_pointer": "title listing: position 0",
}


corpus_tool = tool("zim_corpus")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory, mini_zim: Path) -> dict[str, Path]:
    return corpus_tool.build(tmp_path_factory.mktemp("corrupt"), mini_zim)


def test_the_corpus_has_every_class_and_the_base_is_sound(corpus: dict[str, Path], mini_zim: Path) -> None:
    assert set(corpus) == set(EXPECTED) == set(corpus_tool.CLASSES)
    with Source([mini_zim]) as src:
        assert check(src) == []
    assert verify(mini_zim).ok


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verify_names_the_damage(
    corpus: dict[str, Path], name: str, capfd: pytest.CaptureFixture[str]
) -> None:
    report = verify(corpus[name])
    assert not report.ok
    assert any(EXPECTED[name] in str(p) for p in report.problems), report.problems
    assert main(["verify", str(corpus[name])]) == 1
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert out.rstrip().endswith("INVALID (0 entries)") or "INVALID" in out.splitlines()[-1]


@pytest.mark.parametrize("command", ["ls", "extract", "pack-zim", "pack-gwtar"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_readers_refuse_with_one_line(
    corpus: dict[str, Path], name: str, command: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    zim = str(corpus[name])
    out_path = tmp_path / "out"
    argv = {
        "ls": ["ls", zim],
        "extract": ["extract", zim, "-o", str(out_path)],
        "pack-zim": ["pack", zim, "--format", "zim", "-o", str(out_path)],
        "pack-gwtar": ["pack", zim, "--format", "gwtar", "-o", str(out_path)],
    }[command]
    code = main(argv)
    out, err = capfd.readouterr()
    assert code in (1, 2), (code, out, err)
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1 and err.startswith("archiver: "), err
    assert not out_path.exists() or not any(out_path.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["out"])


@pytest.mark.parametrize("name", ["mime_index", "checksum", "header_truncated", "dirent_pointer"])
def test_serve_refuses_at_start(corpus: dict[str, Path], name: str) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "archiver", "serve", str(corpus[name]), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode in (1, 2)
    assert "Traceback" not in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_no_check_reads_a_file_whose_only_fault_is_its_checksum(
    corpus: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(FormatError, match="checksum"):
        open_archive(corpus["checksum"])
    with open_archive(corpus["checksum"], check="structure") as reader:
        assert reader.main_path == "index.html"
    with pytest.raises(FormatError, match="MIME type index"):
        open_archive(corpus["mime_index"], check="structure")


def _mutate(data: bytes, seed: int, flips: int) -> bytes:
    """``flips`` random bytes of the base ZIM changed, the checksum recomputed."""
    (checksum_at,) = struct.unpack_from("<Q", data, 72)
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(flips):
        out[rng.randrange(checksum_at)] = rng.randrange(256)
    out[checksum_at : checksum_at + 16] = hashlib.md5(out[:checksum_at]).digest()
    return bytes(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), flips=st.integers(1, 6))
def test_random_damage_never_escapes_as_a_crash(
    mini_zim: Path, tmp_path_factory: pytest.TempPathFactory, seed: int, flips: int
) -> None:
    # bytes flipped anywhere (dirents, pointers, compressed clusters) with a valid MD5: every reader
    # path gives a report or a FormatError, never another exception
    path = tmp_path_factory.mktemp("fuzz") / "f.zim"
    path.write_bytes(_mutate(mini_zim.read_bytes(), seed, flips))
    report = verify(path)
    assert report.ok or report.problems
    try:
        with open_archive(path) as reader:
            for entry in reader.iter_entries():
                entry.read()
            _ = reader.metadata, reader.main_path
    except FormatError:
        pass
