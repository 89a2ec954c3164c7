"""A real small disk for the attacks on writers: a tmpfs of ``size`` bytes mounted on a folder (we run
as root), optionally read-only; where mounting is not allowed the same refusal comes from
RLIMIT_FSIZE on the command's process (EFBIG, SIGXFSZ ignored; read-only then from a folder without
write permission, which root would pass, hence only there). :func:`run` runs ``archiver`` on it."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Disk:
    path: Path
    preexec: Callable[[], None] | None  # None: a real tmpfs

    def run(self, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "archiver", *args], cwd=cwd, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env}, timeout=300, preexec_fn=self.preexec,
        )  # fmt: skip

    def contents(self) -> list[str]:
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*"))


def _file_size_limit(size: int) -> Callable[[], None]:
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@contextlib.contextmanager
def small_disk(folder: Path, size: int, *, read_only: bool = False) -> Iterator[Disk]:
    """``folder`` (made here) as a disk of ``size`` bytes, read-only after ``prepare`` if asked (call
    :meth:`Disk.contents` etc. inside the block; it is unmounted on the way out)."""
    folder.mkdir(parents=True, exist_ok=True)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    mounted = os.geteuid() == 0 and subprocess.run(mount, capture_output=True).returncode == 0
    try:
        if mounted and read_only:
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        elif read_only:
            folder.chmod(0o555)
        yield Disk(folder, None if mounted else _file_size_limit(size))
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)
        elif read_only:
            folder.chmod(0o755)
