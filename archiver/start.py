"""The ``archiver`` command's first step (``python -m archiver`` and the console script): SIGTERM and
SIGHUP end it as Ctrl-C does from the moment it starts, before the command line's modules are
imported (~20 ms in which their default action ended the process silently, exit -15 or -1, where a
command stopped later exits 130 with one line). A signal ignored (``nohup``) stays ignored
(:mod:`archiver.stopsignals`); :func:`archiver.cli.entry` takes over from here."""

from __future__ import annotations

import signal
import sys
from types import FrameType

from archiver import stopsignals

__all__ = ["run"]


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def run() -> int:
    """Hold the stop signals as Ctrl-C, then run the command (:func:`archiver.cli.entry`)."""
    stopsignals.ours(_stop)
    for s in stopsignals.STOP_SIGNALS:
        if stopsignals.replaceable(signal.getsignal(s)):
            signal.signal(s, _stop)
    try:
        from archiver.cli import entry

        return entry()
    except KeyboardInterrupt:  # before the command's own handling (its imports) or after it
        print("archiver: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as e:  # an interruption Python wrapped (stopsignals.interrupted)
        if not stopsignals.interrupted(e):
            raise
        print("archiver: interrupted", file=sys.stderr)
        return 130
