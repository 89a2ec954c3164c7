"""The progress line of a capture on a terminal (redrawn twice a second, ended by a newline)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, TextIO

from archiver.capture.report import size_text

if TYPE_CHECKING:
    from archiver.capture.crawl import Crawler

__all__ = ["Progress"]


class Progress:
    def __init__(self, crawler: Crawler, stream: TextIO) -> None:
        self.crawler = crawler
        self.stream = stream
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            self.draw()

    def draw(self, final: bool = False) -> None:
        c = self.crawler
        elapsed = max(time.monotonic() - c.started, 1e-6)
        pages = c.pages_done
        queued = c.state.count("pending", "page")
        rate = pages / elapsed
        eta = f"{int(queued / rate) // 60}:{int(queued / rate) % 60:02d}" if rate > 0 and queued else "-"
        line = (
            f"pages {pages} done, {queued} queued · assets {c.assets_done} · {size_text(c.bytes_written)}"
            f" · {rate:.1f} pages/s · ETA {eta}"
        )
        self.stream.write("\r\x1b[2K" + line + ("\n" if final else ""))
        self.stream.flush()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
            self.draw(final=True)
