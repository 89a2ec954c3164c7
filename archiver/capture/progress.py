"""A capture's progress: on a terminal, one line redrawn twice a second (ended by a newline); in a
log (stderr not a terminal), one plain line every ``every`` seconds (``--progress-every``, 30 by
default, 0 for none).

The rate is measured over the last :data:`WINDOW` seconds, not since the start, and the ETA is
smoothed (:func:`smooth_eta`): it counts down with the clock and moves towards the measured value
with a time constant of :data:`TAU` seconds, so one slow page does not make it jump by minutes.
:class:`Rate` and :func:`smooth_eta` are pure; :class:`Progress` is the thin loop that prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from typing import TYPE_CHECKING, TextIO

from archiver.capture.report import size_text

if TYPE_CHECKING:
    from archiver.capture.context import Context

__all__ = ["TAU", "WINDOW", "Progress", "Rate", "eta_text", "smooth_eta"]

WINDOW = 60.0
TAU = 20.0


class Rate:
    """Pages per second over the last ``window`` seconds of (time, pages done) samples."""

    def __init__(self, window: float = WINDOW) -> None:
        self.window = window
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, done: int) -> float:
        """Record a sample and return the rate (0 until two samples are apart in time)."""
        self.samples.append((now, done))
        while len(self.samples) > 2 and now - self.samples[1][0] >= self.window:
            self.samples.popleft()
        t0, d0 = self.samples[0]
        return (done - d0) / (now - t0) if now > t0 else 0.0


def smooth_eta(previous: float | None, measured: float | None, dt: float, tau: float = TAU) -> float | None:
    """The ETA shown after ``dt`` seconds: the previous one counted down by ``dt``, moved towards the
    ``measured`` one by the share ``1 - e^(-dt/tau)``. None when nothing can be said yet."""
    if measured is None:
        return None if previous is None else max(previous - dt, 0.0)
    if previous is None:
        return measured
    expected = max(previous - dt, 0.0)
    return expected + (measured - expected) * (1.0 - math.exp(-dt / tau))


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """Prints the progress of the run over ``context`` to ``stream``: redrawn on a terminal (``tty``),
    else a plain line every ``every`` seconds."""

    def __init__(self, context: Context, stream: TextIO, *, tty: bool = True, every: float = 30.0) -> None:
        self.context = context
        self.stream = stream
        self.tty = tty
        self.every = every
        self.task: asyncio.Task[None] | None = None
        self.rate = Rate()
        self.eta: float | None = None
        self.last = time.monotonic()

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        tick = 0.5 if self.tty else self.every
        while True:
            await asyncio.sleep(tick)
            self.draw()

    def line(self) -> str:
        c = self.context
        now = time.monotonic()
        pages = c.pages_done
        queued = c.state.count("pending", "page")
        rate = self.rate.add(now, pages)
        measured = queued / rate if rate > 0 and queued else (0.0 if not queued else None)
        self.eta = smooth_eta(self.eta, measured, now - self.last)
        self.last = now
        return (
            f"pages {pages} done, {queued} queued · assets {c.assets_done} · {size_text(c.bytes_written)}"
            f" · {rate:.1f} pages/s · ETA {eta_text(self.eta if queued else None)}"
        )

    def draw(self, final: bool = False) -> None:
        line = self.line()
        if self.tty:
            self.stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
        elif not final:
            self.stream.write(f"archiver: progress: {line}\n")
        self.stream.flush()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.draw(final=True)
