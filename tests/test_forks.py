"""Forked workers leave the stop signals to their parent (archiver/forks.py)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import signal

from archiver import forks, safefs


def _handlers_and_mask() -> tuple[list[object], set[int]]:
    handlers = [signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)]
    return handlers, {int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])}


def test_a_worker_forked_inside_interruptible_ends_by_sigterm_ignores_sigint_and_blocks_nothing() -> None:
    context = multiprocessing.get_context("fork")
    with (
        safefs.interruptible(),
        concurrent.futures.ProcessPoolExecutor(
            2, mp_context=context, initializer=forks.leave_to_parent
        ) as pool,
    ):
        with forks.held():
            futures = [pool.submit(_handlers_and_mask) for _ in range(4)]
        parent_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        got = [f.result() for f in futures]
    assert not set(parent_mask) & forks.SIGNALS  # the parent's mask is as it was
    for handlers, mask in got:
        assert handlers == [signal.SIG_DFL, signal.SIG_DFL, signal.SIG_IGN]
        assert not mask & {int(s) for s in forks.SIGNALS}


def test_a_signal_held_while_forking_reaches_the_parent_when_the_block_ends() -> None:
    seen: list[int] = []
    old = signal.signal(signal.SIGHUP, lambda signum, frame: seen.append(signum))
    try:
        with forks.held():
            signal.raise_signal(signal.SIGHUP)
            assert seen == []
        assert seen == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, old)
