"""The ``archiver`` command's first step (``python -m archiver`` and the console script): SIGTERM and
SIGHUP end it as Ctrl-C does from the moment it starts, before the command line's modules are
imported (~20 ms in which their default action ended the process silently, exit -15 or -1, where a
command stopped later exits 130 with one line). A signal ignored (``nohup``) stays ignored
(:mod:`archiver.stopsignals`); :func:`archiver.cli.entry` takes over from here."""

from __future__ import annotations

import sys

from archiver import stopsignals

__all__ = ["run"]


def run() -> int:
    """Hold the stop signals as Ctrl-C, then run the command (:func:`archiver.cli.entry`)."""
    stopsignals.take(stopsignals.as_interrupt, stopsignals.STOP_SIGNALS)
    try:
        from archiver.cli import entry

        return entry()
    except (KeyboardInterrupt, RuntimeError) as e:  # before the command's own handling or after it;
        if not stopsignals.interrupted(e):  # a RuntimeError: an interruption Python wrapped, or not
            raise
        print("archiver: interrupted", file=sys.stderr)
        return 130
