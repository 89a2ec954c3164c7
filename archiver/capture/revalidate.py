"""A re-capture's first pass (formats/history.md §6.3): before the crawl loop, every pending URL whose
previous bytes a conditional request may stand on (:meth:`.stage.Stage.previous`) is asked with its
validators, ``slots`` requests at a time through the run's transport (so robots.txt, the address
guard, politeness and the WARC recorder apply as to any request). A trusted 304 is recorded as kept
without a task, a claim or a transaction of its own: the kept rows are finished :data:`BATCH` at a
time in one state transaction (:meth:`.stage.Stage.finish_kept`). Any other answer is remembered by
the run's responses and the URL goes through its own stage at once (``run``), which takes that
answer instead of asking again. A URL that cannot be asked conditionally is left to the crawl loop.

Nothing here decides what is stored: the records are those the page and asset stages write for a
304 (:meth:`.stage.Stage.kept`). An interruption loses only the batch not yet finished: its rows
are still pending, and the resumed run asks them again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from archiver.capture.conditional import request_headers
from archiver.capture.page import HTML_ACCEPT
from archiver.capture.stage import Kept, Stage
from archiver.capture.state import Row
from archiver.tree import Record

__all__ = ["BATCH", "Swept", "sweep"]

#: rows read from the frontier, and kept rows finished in one transaction, at a time
BATCH = 256


@dataclass
class Swept:
    kept: int = 0  # answered 304: the previous bytes stand
    staged: int = 0  # any other answer: through the URL's own stage
    left: int = 0  # not asked conditionally here: left to the crawl loop


#: the state's pending rows of a kind in frontier order after a position (priority, depth, seq)
Pending = Callable[[str, "tuple[int, int, int] | None", int], list[Row]]


async def sweep(stage: Stage, pending: Pending, slots: int, run: Callable[[Row], Awaitable[None]]) -> Swept:
    """The first pass over the pending rows of ``stage``'s run (see the module docstring), read from
    the frontier a page at a time by ``pending``: each row once, whatever became of those before."""
    c = stage.context
    out = Swept()
    for kind in ("page", "asset"):
        after = None
        while rows := pending(kind, after, BATCH):
            after = (rows[-1].priority, rows[-1].depth, rows[-1].seq)
            asked = []
            for row in rows:
                rerender = kind == "page" and c.options.rerender
                previous = None if rerender else stage.previous(row)
                if previous is None:
                    out.left += 1
                else:
                    asked.append((row, previous))
            kept: list[Kept] = []
            await asyncio.gather(*(_ask(stage, iter_, kept, out, run) for iter_ in _shared(asked, slots)))
            stage.finish_kept(kept)
            out.kept += len(kept)
    return out


def _shared(asked: list[tuple[Row, Record]], slots: int) -> list[Iterator[tuple[Row, Record]]]:
    """``slots`` consumers of one iterator over ``asked`` (each takes the next row when it is free)."""
    it = iter(asked)
    return [it] * max(1, min(slots, len(asked)))


async def _ask(
    stage: Stage, queue: Iterator[tuple[Row, Record]], kept: list[Kept], out: Swept,
    run: Callable[[Row], Awaitable[None]],
) -> None:  # fmt: skip
    for row, previous in queue:
        ask = request_headers(previous.etag, previous.last_modified)
        page = row.kind == "page"
        accept = HTML_ACCEPT if page else "*/*"
        result = await stage.responses.get(row.key, row.referrer, accept=accept, page=page, conditional=ask)
        if result.status == 304 and result.outcome == "ok":
            kept.append((row, previous, result))
        else:  # remembered by the responses: the stage takes it from there
            out.staged += 1
            await run(row)
