"""A capture's progress: a plain line every ``--progress-every`` seconds when stderr is a log (before:
nothing at all until the end), and an ETA on the terminal that moves smoothly (before: queued pages
divided by the rate since the start, recomputed twice a second, jumping by minutes on one slow page)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from archiver.capture.progress import TAU, Rate, eta_text, smooth_eta
from archiver.fixture import FixtureConfig, FixtureServer

ROOT = Path(__file__).resolve().parents[2]


def test_rate_is_measured_over_the_window() -> None:
    rate = Rate(window=10)
    for t in range(31):  # 2 pages/s for 20 s, then nothing for 10 s
        r = rate.add(float(t), min(t, 20) * 2)
    assert r == 0.0 or r < 0.5  # the last 10 s saw no page: not the average since the start (1.33)
    rate = Rate(window=10)
    assert rate.add(0.0, 0) == 0.0
    assert rate.add(1.0, 3) == 3.0


@given(
    st.floats(0, 1e5), st.one_of(st.none(), st.floats(0, 1e6)), st.floats(0.01, 60)
)  # fmt: skip
def test_smoothed_eta_moves_at_most_its_share_towards_the_measure(
    prev: float, measured: float | None, dt: float
) -> None:
    shown = smooth_eta(prev, measured, dt)
    expected = max(prev - dt, 0.0)
    assert shown is not None
    if measured is None:
        assert shown == expected
    else:
        share = 1 - math.exp(-dt / TAU)
        assert abs(shown - expected) <= abs(measured - expected) * share + 1e-6


def test_one_slow_page_does_not_make_the_eta_jump() -> None:
    # 300 pages queued at 2 pages/s: 150 s. One page that takes 30 s halves the window's rate; the
    # raw ETA doubles at once, the shown one moves by a few seconds per half-second tick
    eta = smooth_eta(None, 150.0, 0.5)
    for _ in range(4):
        before = eta
        eta = smooth_eta(eta, 300.0, 0.5)
        assert eta is not None and before is not None and eta - before < 4.0
    assert eta_text(3725.0) == "1:02:05" and eta_text(65.4) == "1:05" and eta_text(None) == "-"


def _capture(tmp_path: Path, server: FixtureServer, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", "capture", server.url, "-o", str(tmp_path / "t"), "--no-render",
         "--delay", "0", "--concurrency", "2", "--depth", "1", *extra],
        capture_output=True, text=True, timeout=240, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_a_log_gets_a_plain_progress_line_every_few_seconds(tmp_path: Path) -> None:
    with FixtureServer(FixtureConfig(latency=0.15)) as server:
        proc = _capture(tmp_path, server, "--progress-every", "0.5")
        assert proc.returncode in (0, 3), proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.startswith("archiver: progress: ")]
        assert len(lines) >= 2, proc.stderr
        assert "\r" not in proc.stderr and "\x1b" not in proc.stderr
        assert all(" done, " in line and " queued" in line and "ETA" in line for line in lines)
        quiet = _capture(tmp_path / "q", server, "--progress-every", "0")
        assert "progress:" not in quiet.stderr
