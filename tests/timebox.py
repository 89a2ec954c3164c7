"""An attack run in a child Python under a generous time limit: a guard against a hang (the old
code's time grew faster than its input), never a timing check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANG = 60  # seconds


def child(*args: str, timeout: float = HANG) -> subprocess.CompletedProcess[str]:
    """``python ARGS…`` (``-c CODE …`` or ``-m archiver …``) with this checkout's archiver."""
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
