"""The requests' timer (archiver/capture/deadline.py): one timer a loop, shared by every request and
kept between them, still ends each request at its own total deadline and each read at its own read
deadline, however the deadlines under way differ."""

from __future__ import annotations

import asyncio
import time

import pytest

from archiver.capture.deadline import Deadline
from archiver.capture.http1_parse import ReadTimeout


def test_a_shorter_deadline_does_not_wait_for_the_timer_of_a_longer_one() -> None:
    async def go() -> float:
        with Deadline(30, 30):  # the loop's timer armed 30 s ahead, and left so
            pass
        started = time.monotonic()
        with pytest.raises(TimeoutError), Deadline(0.1, 30):
            await asyncio.sleep(5)
        return time.monotonic() - started

    assert asyncio.run(go()) < 1


def test_a_read_deadline_cancels_the_read_and_the_request_goes_on() -> None:
    async def go() -> list[str]:
        seen = []
        loop = asyncio.get_running_loop()
        with Deadline(10, 0.1) as deadline:
            deadline.read_at = loop.time() + 0.1  # a read waiting, as Connection.read_some does
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                seen.append(f"read timed out: {deadline.read_timed_out()}")
            deadline.read_at = None
            await asyncio.sleep(0.3)  # no read waiting: longer than a read may wait, not cancelled
            seen.append("went on")
            deadline.read_at = loop.time() + 0.1
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                seen.append(f"again: {deadline.read_timed_out()}")
        return seen

    assert asyncio.run(go()) == ["read timed out: True", "went on", "again: True"]


def test_a_read_deadline_left_unhandled_is_a_read_timeout() -> None:
    async def go() -> None:
        with Deadline(10, 0.1) as deadline:
            deadline.read_at = asyncio.get_running_loop().time() + 0.1
            await asyncio.sleep(5)

    with pytest.raises(ReadTimeout):
        asyncio.run(go())


def test_requests_under_way_together_each_end_at_their_own_deadline() -> None:
    async def one(total: float, sleep: float) -> str:
        started = time.monotonic()
        try:
            with Deadline(total, 30):
                await asyncio.sleep(sleep)
        except TimeoutError:
            return f"timed out after {round(time.monotonic() - started, 1)}"
        return "done"

    async def go() -> list[str]:
        return list(await asyncio.gather(one(5, 0.2), one(0.3, 5), one(0.6, 5), one(5, 0.4)))

    assert asyncio.run(go()) == ["done", "timed out after 0.3", "timed out after 0.6", "done"]


def test_a_cancellation_from_elsewhere_stays_one() -> None:
    async def go() -> None:
        with Deadline(10, 10):
            task = asyncio.current_task()
            assert task is not None
            asyncio.get_running_loop().call_later(0.05, task.cancel)
            await asyncio.sleep(5)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(go())


def test_one_loop_one_timer() -> None:
    async def go() -> int:
        loop = asyncio.get_running_loop()
        armed = 0
        call_at = loop.call_at

        def counted(when: float, callback, *args):  # type: ignore[no-untyped-def]
            nonlocal armed
            armed += 1
            return call_at(when, callback, *args)

        loop.call_at = counted  # type: ignore[method-assign]
        try:
            for _ in range(50):
                with Deadline(10, 5):
                    await asyncio.sleep(0)
        finally:
            del loop.call_at  # type: ignore[method-assign]
        return armed

    assert asyncio.run(go()) == 1
