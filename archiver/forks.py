"""Worker processes forked by archiver leave the stop signals to their parent.

A fork copies the parent's signal handlers: Python's SIGINT handler (:class:`KeyboardInterrupt`)
and, inside :func:`archiver.safefs.interruptible`, the one that turns SIGTERM and SIGHUP into
:class:`KeyboardInterrupt` too. A pool's worker then printed a traceback when the pool ended it
(``Pool.terminate`` sends SIGTERM) and when the user pressed Ctrl-C (the terminal sends SIGINT to
the whole process group), under the parent's one-line message. The parent decides: it catches the
signal, ends its pool and says so once.

:func:`held` blocks the signals while the workers are forked, so that one arriving before a worker
has run :func:`leave_to_parent` waits for it; :func:`leave_to_parent` (a pool's ``initializer``)
makes SIGTERM and SIGHUP end the worker at once, silently, and SIGINT do nothing, then unblocks them.
:func:`cpus` is what a pool is sized by.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

__all__ = ["SIGNALS", "cpus", "held", "leave_to_parent"]


def cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one, else every CPU): a
    pool's size, one worker a CPU."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: The signals a worker leaves to its parent.
SIGNALS = frozenset({signal.SIGTERM, signal.SIGHUP, signal.SIGINT})


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Fork workers inside this block: they start with :data:`SIGNALS` blocked. One that comes to
    the parent meanwhile is delivered when the block ends, as it would have been."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def leave_to_parent() -> None:
    """In a forked worker, first thing: SIGTERM and SIGHUP by default (the worker ends), SIGINT
    ignored (the parent ends the pool), then unblocked (:func:`held`)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
