"""Running a capture's event loop, and stopping it on a signal as Ctrl-C stops it.

Ctrl-C (SIGINT) cancels the capture's main task (:func:`asyncio.run` does that): the work in flight
is abandoned (what is not finished is not recorded), the claims still held go back to the frontier
(:meth:`.crawlstate.CrawlState.release`), the tree is finalized as an interrupted run leaves it (the
manifest rewritten from the state and marked incomplete; no report), and the command exits 130
(``archiver: interrupted``). With ``terminate`` (every capture) SIGTERM and SIGHUP do exactly the
same: a capture stopped by its service manager leaves the tree an interrupted run leaves, and a
worker of a shared crawl (formats/crawl-state.md §6.3) hands its leases back at once instead of
leaving them to expire; a signal the process was told to ignore
(``nohup``) stays ignored. A second signal while the first one's clean-up runs stops at once
(``KeyboardInterrupt`` where the program is), as a second Ctrl-C does.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Coroutine
from types import FrameType
from typing import Any, Generic, TypeVar

from archiver import stopsignals

__all__ = ["STOP_SIGNALS", "run"]

T = TypeVar("T")

#: The signals that stop a shared crawl's worker as Ctrl-C does.
STOP_SIGNALS = stopsignals.STOP_SIGNALS


class _Boxed(Generic[T]):
    """The result of the main task, behind a constant ``repr``: :func:`asyncio.run` asks for its
    SIGINT handler back with ``signal.getsignal`` and ``signal.signal``, which try the handler (a
    partial holding the main task) as a ``signal.Handlers`` member and format the failure with
    ``%r``: the task's repr, which reprs its result. A capture's report lists every URL: that repr
    cost ~6 ms of an unchanged re-capture of a thousand pages (two of them, thrown away)."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<result>"


async def _boxed(main: Coroutine[Any, Any, T]) -> _Boxed[T]:
    return _Boxed(await main)


def run(main: Coroutine[Any, Any, T], *, terminate: bool = False) -> T:
    """``asyncio.run(main)``; with ``terminate``, SIGTERM and SIGHUP cancel ``main`` as SIGINT does
    and end in :class:`KeyboardInterrupt` (see the module docstring)."""
    if not terminate or threading.current_thread() is not threading.main_thread():
        return asyncio.run(_boxed(main)).value
    received: list[int] = []

    async def guarded() -> _Boxed[T]:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        assert task is not None

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if received:
                raise KeyboardInterrupt(signal.Signals(signum).name)
            received.append(signum)
            loop.call_soon_threadsafe(task.cancel)

        # in place of the default handlers and the command's own (stopsignals: the CLI's "SIGTERM as
        # Ctrl-C" raised KeyboardInterrupt wherever it landed, skipping this orderly stop: an
        # import stopped by SIGTERM left a spooled body in _archiver/tmp), never of an ignored one
        with stopsignals.installed(on_signal, STOP_SIGNALS):
            return _Boxed(await main)

    try:
        return asyncio.run(guarded()).value  # a run that ended before the cancel reached it stands
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt(signal.Signals(received[0]).name) from None
        raise
