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

        code = entry()
    except (KeyboardInterrupt, RuntimeError) as e:  # before the command's own handling or after it;
        if not stopsignals.interrupted(e):  # a RuntimeError: an interruption Python wrapped, or not
            raise
        print("archiver: interrupted", file=sys.stderr)
        code = 130
    if code == 130:
        _handled()
    return code


def _handled() -> None:
    """The interruption was handled: tell CPython so. CPython 3.11 marks a KeyboardInterrupt that
    leaves the code of an ``eval()`` or ``exec()`` of a string as never caught (the global
    ``_Py_UnhandledKeyboardInterrupt``, which only the start of the main module clears), and a
    process so marked kills itself with SIGINT once the interpreter is finalised: a Ctrl-C landing
    while a dataclass's or a namedtuple's methods were made, or a string annotation resolved (as a
    command imports its modules), ended in exit -2 after ``archiver: interrupted`` in place of 130
    (random-signal stress of ``extract``: 15 to 43 of 200 runs stopped in their first 120 ms). Where
    the mark is not a symbol (other Pythons) nothing is done."""
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, AttributeError, OSError, ValueError):
        pass
