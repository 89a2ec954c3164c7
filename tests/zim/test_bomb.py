"""A ZIM whose entry is a decompression bomb, written as the attack (tools/zim_corpus.cluster_bomb):
the sound mini ZIM with ``index.html`` moved to a zstd cluster of 170 KB that claims a 3 GiB blob.
libzim hands an entry out whole, so ``verify`` and ``extract`` asked it for 3 GiB: under a 2.5 GB
address-space limit, std::bad_alloc, a traceback, exit 70 (without a limit: 3 GiB of memory; a
cluster with 8-byte offsets may claim any size). Now an entry over ``zim.structure.MAX_ENTRY`` is not
read: one line naming it, exit 1, nothing written; ``serve`` answers it 500 before any header and
every other entry as before."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from .others import serving, tool

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 2_500_000_000  # bytes of address space for the command: the old code's 3 GiB read fails
corpus = tool("zim_corpus")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory, mini_zim: Path) -> Path:
    out = tmp_path_factory.mktemp("bomb") / "bomb.zim"
    out.write_bytes(corpus.cluster_bomb(mini_zim.read_bytes(), b"index.html", 3 << 30))
    assert out.stat().st_size < 400_000
    return out


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=_limited,
    )  # fmt: skip


SAYS = "entry 'index.html' is 3221225472 bytes, more than archiver reads of one ZIM entry"


def test_verify_names_the_bomb(bomb: Path) -> None:
    done = _cli("verify", str(bomb))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert SAYS in done.stdout


@pytest.mark.parametrize("command", ["extract", "pack"])
def test_extract_and_pack_refuse_it_with_one_line(bomb: Path, tmp_path: Path, command: str) -> None:
    out = tmp_path / ("x" if command == "extract" else "x.gwtar.html")
    args = ["-o", str(out)] + ([] if command == "extract" else ["--format", "gwtar"])
    done = _cli(command, str(bomb), *args)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert SAYS in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_serve_answers_the_bomb_500_and_the_rest_as_before(bomb: Path) -> None:
    with serving(bomb, _limited) as (get, server):
        assert get("/bomb/index.html")[0] == 500  # before: a 200 head, then a body never sent
        status, body = get("/bomb/what%3F.html")
        assert status == 200 and body
        assert server.poll() is None
