"""The timer of the fetcher's requests (:class:`Deadline`, re-exported by :mod:`.http1`): the total
timeout of a request and the read timeout of each of its reads, on one timer a loop (:class:`_Watch`)
shared by every request and kept between them."""

from __future__ import annotations

import asyncio
import weakref

from archiver.capture.http1_parse import ReadTimeout

__all__ = ["Deadline"]


class _Watch:
    """The one timer of a loop's deadlines (:class:`Deadline`): armed for the earliest moment one of
    them is to be checked, and kept from one request to the next. A timer armed and cancelled for
    each request cost ~25 K instructions of the ~260 K of a conditional GET answered 304 (the
    handle, the loop's heap, its timeout each turn); this one fires about once per read timeout
    while requests go on, and checks the deadlines then under way."""

    __slots__ = ("active", "handle", "loop", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.active: set[Deadline] = set()
        self.handle: asyncio.TimerHandle | None = None
        self.when = 0.0

    def need(self, due: float) -> None:
        """Check the deadlines under way no later than ``due``."""
        if self.handle is None or due < self.when:
            if self.handle is not None:
                self.handle.cancel()
            self.when = due
            self.handle = self.loop.call_at(due, self._fire)

    def _fire(self) -> None:
        self.handle = None
        now = self.loop.time()
        for deadline in list(self.active):
            deadline._check(now)


_WATCHES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch] = weakref.WeakKeyDictionary()
_last_watch: _Watch | None = None  # the last loop's: a run has one


def _watch_of(loop: asyncio.AbstractEventLoop) -> _Watch:
    global _last_watch
    watch = _last_watch
    if watch is None or watch.loop is not loop:
        watch = _WATCHES.get(loop)
        if watch is None:
            watch = _WATCHES[loop] = _Watch(loop)
        _last_watch = watch
    return watch


class Deadline:
    """The timer of a request (``with Deadline(total, read):`` around it, inside a task): the
    request ends within ``total`` seconds, and a read that waits for bytes within ``read`` seconds
    of its start (:meth:`.http1.Connection.read_some`). An asyncio timeout for the request and another for
    each read cost a fifth of the CPU of a conditional GET answered 304 on loopback. Here moving a
    read's deadline touches no timer, and the timer is the loop's one (:class:`_Watch`), shared by
    every request and kept between them: when it fires, each deadline under way checks whether it
    has passed and else asks to be checked again, never later than a read could still end
    (``read`` seconds from then).

    A total deadline that passes cancels the task, and leaving the ``with`` turns that into
    :class:`TimeoutError`; a read's raises :class:`ReadTimeout` in the read itself, as a stream's
    own timeout did (the WARC recorder writes what was read, ``WARC-Truncated: time``). A
    cancellation from elsewhere stays one, as with ``asyncio.timeout``."""

    __slots__ = ("_cancelling", "_loop", "_task", "_watch", "fired", "read", "read_at", "total_at")

    def __init__(self, total: float, read: float) -> None:
        self.read = read
        self.total_at = total
        self.read_at: float | None = None  # while a read waits: when it times out
        self.fired: str | None = None  # "total" or "read" once the timer cancelled the task for it

    def __enter__(self) -> Deadline:
        loop = self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a Deadline is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        now = loop.time()
        self.total_at += now
        # min() and max() of two are spelled out on a request's path: the builtins parse their
        # arguments (key, default) at every call, ~1.3 K instructions each, 8 a conditional GET
        due = now + self.read
        watch = self._watch = _watch_of(loop)
        watch.active.add(self)
        watch.need(due if due < self.total_at else self.total_at)
        return self

    def _arm(self, now: float) -> None:
        due = now + self.read if self.read_at is None else self.read_at
        if not due < self.total_at:  # min(total_at, due)
            due = self.total_at
        self._watch.active.add(self)
        self._watch.need(due)

    def _check(self, now: float) -> None:
        if now >= self.total_at:
            self.fired = "total"
        elif self.read_at is not None and now >= self.read_at:
            self.fired = "read"
        else:
            self._arm(now)
            return
        self._watch.active.discard(self)  # checked no more until read_timed_out() arms it again
        self._task.cancel()

    def read_timed_out(self) -> bool:
        """After a read raised :class:`asyncio.CancelledError`: was it this read's deadline (the
        cancellation taken back, the timer armed again for the rest of the request)?"""
        if self.fired != "read":
            return False
        self.fired = None
        if self._task.uncancel() > self._cancelling:  # cancelled from elsewhere too: stays cancelled
            return False
        self._arm(self._loop.time())
        return True

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        self._watch.active.discard(self)
        if self.fired is None:
            return
        fired, self.fired = self.fired, None
        if self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
            if fired == "read":
                raise ReadTimeout("timed out reading") from error
            raise TimeoutError from error
