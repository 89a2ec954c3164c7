"""Whose place archiver's stop-signal handlers may take (the CLI's, :mod:`archiver.safefs`'s blocks,
a capture's loop: :mod:`archiver.capture.interrupt`).

A signal's handler is *replaceable* when it is the default one (``SIG_DFL``; for SIGINT Python's
``default_int_handler``) or one of archiver's own (marked by :func:`ours`): a signal the process was
told to ignore (``nohup`` gives SIGHUP ignored) stays ignored, and a program that calls archiver as a
library keeps its handlers. An inner block of archiver's replaces an outer one's (the command's
"SIGTERM as Ctrl-C" gives way to a capture's orderly stop) and gives it back."""

from __future__ import annotations

import signal
import threading

# Only ``signal`` and ``threading`` at run time: this module is imported before the handlers are
# taken (archiver.start), and every millisecond of import before then is one in which a stop signal
# kills the process by its default action; ``typing`` alone (it imports ``re``) cost ~4 ms, and
# ``contextlib`` ~3 ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from types import FrameType, TracebackType
    from typing import Any

    Handler = Callable[[int, FrameType | None], Any]

__all__ = ["STOP_SIGNALS", "as_interrupt", "installed", "interrupted", "ours", "replaceable", "take"]

#: The signals that stop a command as Ctrl-C does (SIGINT is Ctrl-C).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_MARK = "archiver_stop_handler"


def ours(handler: Handler) -> Handler:
    """Mark ``handler`` as archiver's own (replaceable by another of archiver's)."""
    setattr(handler, _MARK, True)
    return handler


def replaceable(handler: object) -> bool:
    """May archiver put its own handler in place of ``handler`` (see the module docstring)?"""
    return (
        handler is signal.SIG_DFL
        or handler is signal.default_int_handler
        or bool(getattr(handler, _MARK, False))
    )


def as_interrupt(signum: int, frame: FrameType | None) -> None:
    """The handler that makes a signal a Ctrl-C: :class:`KeyboardInterrupt` named for it."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def take(handler: Handler, signals: Iterable[signal.Signals]) -> dict[signal.Signals, Any]:
    """``handler`` (marked :func:`ours`) for each of ``signals`` whose handler is replaceable, from now
    on; returns the handlers it replaced, by signal. Main thread only (elsewhere nothing is taken)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    ours(handler)
    old = {}
    for s in signals:
        before = signal.getsignal(s)
        if replaceable(before):
            old[s] = before
            signal.signal(s, handler)
    return old


class installed:  # used as a function: ``with installed(handler, signals) as taken``
    """:func:`take` for the block: ``as`` gives the signals taken, whose handlers before are given
    back when the block ends. A class, not a ``contextlib`` generator: see the imports."""

    __slots__ = ("_handler", "_old", "_signals")

    def __init__(self, handler: Handler, signals: Iterable[signal.Signals]) -> None:
        self._handler = handler
        self._signals = tuple(signals)
        self._old: dict[signal.Signals, Any] = {}

    def __enter__(self) -> list[signal.Signals]:
        self._old = take(self._handler, self._signals)
        return list(self._old)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)


def interrupted(error: BaseException) -> bool:
    """Is ``error`` a wrapped interruption: a KeyboardInterrupt among its causes? Python turns one
    raised while a class is made (a ``__set_name__``, as a dataclass field or a msgspec Struct's
    has) into ``RuntimeError: Error calling __set_name__``: a Ctrl-C as a command imports its modules
    then ended in an internal error (exit 70) in the random-signal stress."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False
