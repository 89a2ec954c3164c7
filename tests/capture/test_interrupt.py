"""archiver.capture.interrupt: with ``terminate`` (a shared crawl's worker), SIGTERM and SIGHUP cancel
the capture's main task as Ctrl-C does, its clean-up runs, and the run ends in KeyboardInterrupt (the
CLI's exit 130); without it (a single-process capture) the handlers are left as they are."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from archiver.capture import interrupt


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_cancels_the_run_after_its_clean_up(sig: signal.Signals) -> None:
    steps: list[str] = []

    async def main() -> str:
        try:
            os.kill(os.getpid(), sig)
            await asyncio.sleep(30)
            return "not interrupted"
        finally:
            await asyncio.sleep(0)  # the clean-up may still await (cancel tasks, close the browser)
            steps.append("clean-up ran")

    with pytest.raises(KeyboardInterrupt, match=sig.name):
        interrupt.run(main(), terminate=True)
    assert steps == ["clean-up ran"]
    assert signal.getsignal(sig) == signal.SIG_DFL  # given back


def test_a_second_signal_during_the_clean_up_stops_at_once() -> None:
    steps: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.sleep(30)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("not reached")

    with pytest.raises(KeyboardInterrupt):
        interrupt.run(main(), terminate=True)
    assert steps == []


def test_without_terminate_or_when_ignored_the_handlers_stay() -> None:
    async def handler() -> object:
        return signal.getsignal(signal.SIGTERM)

    assert interrupt.run(handler(), terminate=False) == signal.SIG_DFL
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
    try:

        async def main() -> str:
            os.kill(os.getpid(), signal.SIGHUP)
            await asyncio.sleep(0.05)
            return "ran to the end"

        assert interrupt.run(main(), terminate=True) == "ran to the end"
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)
