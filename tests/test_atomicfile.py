"""archiver.atomicfile: a file replaced atomically under a temporary name no link redirects."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.atomicfile import create_new, write_atomic


@pytest.mark.parametrize("data", [b"new bytes\n", [b"a\n", b"b" * (3 << 20), b"\n"], []])
def test_the_target_is_replaced_and_no_temporary_file_is_left(tmp_path: Path, data: object) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    write_atomic(target, data)  # type: ignore[arg-type]
    expected = data if isinstance(data, bytes) else b"".join(data)  # type: ignore[arg-type]
    assert target.read_bytes() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_under_the_temporary_name_is_never_followed(tmp_path: Path, dangling: bool) -> None:
    victim = tmp_path / "victim"
    if not dangling:
        victim.write_bytes(b"precious")
    target = tmp_path / "f"
    (tmp_path / "f.tmp").symlink_to(victim)
    write_atomic(target, b"ours")
    assert target.read_bytes() == b"ours" and not target.is_symlink()
    if dangling:
        assert not victim.exists()  # before: created through the dangling link
    else:
        assert victim.read_bytes() == b"precious"


def test_a_folder_under_the_temporary_name_is_an_error_and_the_target_stays(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    (tmp_path / "f.tmp").mkdir()
    with pytest.raises(FileExistsError):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"


def test_create_new_removes_a_leftover_and_makes_a_fresh_file(tmp_path: Path) -> None:
    leftover = tmp_path / "x"
    leftover.write_bytes(b"a killed run's")
    fd = create_new(leftover)
    os.close(fd)
    assert leftover.read_bytes() == b""


def test_a_full_disk_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    """A write refused half-way (RLIMIT_FSIZE, SIGXFSZ ignored: EFBIG, as ENOSPC would be)."""
    target = tmp_path / "f"
    target.write_bytes(b"old")
    code = (
        "import resource, signal, sys\n"
        "from archiver.atomicfile import write_atomic\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 16, 1 << 16))\n"
        "try:\n"
        "    write_atomic(sys.argv[1], [b'x' * 4096] * 1000)\n"
        "except OSError as e:\n"
        "    print(e.errno)\n"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.stdout.strip() == "27"  # EFBIG
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]
