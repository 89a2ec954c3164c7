"""Progress meters for long jobs (pack, verify): bytes, rate and ETA on a terminal, nothing elsewhere.

A meter draws on standard error only when standard error is a terminal and the caller did not ask for
machine-readable output (``--json``), so logs, pipes and CI stay quiet. Drawing is tqdm's job (a small,
well-kept library with rate smoothing and ETA); this module only decides *whether* to draw and gives
the library code one small interface, :class:`Meter`, so packers and readers never import tqdm and a
hidden meter costs one method call per chunk.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["Meter", "bytes_meter", "wanted"]


class Meter:
    """Counts bytes for a job; this base class draws nothing (the meter of a job nobody watches)."""

    def start(self, total: int | None) -> None:
        """The job now knows how many bytes it will process (``None``: unknown)."""

    def advance(self, n: int) -> None:
        """``n`` more bytes were processed."""


class _Drawn(Meter):
    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def start(self, total: int | None) -> None:
        self._bar.reset(total=total)

    def advance(self, n: int) -> None:
        self._bar.update(n)


def wanted(*, as_json: bool = False, stream: TextIO | None = None) -> bool:
    """Whether a meter should draw: a terminal on ``stream`` (standard error) and no ``--json``."""
    if as_json:
        return False
    target = sys.stderr if stream is None else stream
    try:
        return target.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False


@contextmanager
def bytes_meter(label: str, *, show: bool, stream: TextIO | None = None) -> Iterator[Meter]:
    """Yield a :class:`Meter`; when ``show``, it draws a byte meter labelled ``label`` on ``stream``.

    The meter is removed from the terminal when the block ends (the command prints its own result
    line), including when the block raises.
    """
    if not show:
        yield Meter()
        return
    from tqdm import tqdm  # imported only when a terminal will show it

    with tqdm(
        desc=label,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr if stream is None else stream,
        leave=False,
        mininterval=0.25,
        dynamic_ncols=True,
    ) as bar:
        yield _Drawn(bar)
