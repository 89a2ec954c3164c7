"""A re-capture's first pass (formats/history.md §6.3): before the crawl loop, every pending URL whose
previous bytes a conditional request may stand on (:meth:`.stage.Stage.previous`) is asked with its
validators, one lane a host (at most ``slots`` lanes: :func:`lanes_of`), through the run's
transport (so robots.txt, the address guard, politeness and the WARC recorder apply as to any
request). A trusted 304 is recorded as kept without a task, a claim or a transaction of its own:
the kept rows are finished :data:`BATCH` at a time in one state transaction
(:meth:`.stage.Stage.finish_kept`). Any other answer is remembered by the run's responses and the
URL goes through its own stage at once (``run``), which takes that answer instead of asking again.
A URL the previous run ended ``failed`` (a 404 …) is asked here too, unconditionally: failing again,
it is finished in the same transaction as the kept ones (what :meth:`.stage.Stage.fail` records);
answered, it goes through its stage. Any other URL that cannot be asked conditionally is left to
the crawl loop.

Nothing here decides what is stored: the records are those the page and asset stages write for a
304 (:meth:`.stage.Stage.kept`). An interruption loses only the batch not yet finished: its rows
are still pending, and the resumed run asks them again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator

from archiver.capture.conditional import request_headers
from archiver.capture.fetched import HTML_ACCEPT
from archiver.capture.hosts import key_host
from archiver.capture.stage import Failed, Kept, Stage
from archiver.capture.state import Row
from archiver.tree import Record

__all__ = ["BATCH", "Swept", "lanes_of", "sweep"]

#: rows read from the frontier, and kept rows finished in one transaction, at a time
BATCH = 256


class Swept:
    """What the first pass did, in counts (a plain class: a dataclass's generated methods were
    compiled from source at every start of a capture)."""

    __slots__ = ("failed", "kept", "left", "staged")

    def __init__(self) -> None:
        self.kept = 0  # answered 304: the previous bytes stand
        self.staged = 0  # any other answer: through the URL's own stage
        self.failed = 0  # failed in the previous run and again now: finished here
        self.left = 0  # not asked conditionally here: left to the crawl loop


#: a row asked, with the record its conditional request stands on (None: a row the previous run
#: ended failed, asked unconditionally)
Asked = tuple[Row, "Record | None"]

#: the state's pending rows of a kind in frontier order after a position (priority, depth, seq)
Pending = Callable[[str, "tuple[int, int, int] | None", int], list[Row]]


async def sweep(
    stage: Stage, pending: Pending, read: Callable[[list[str]], dict[str, Record]], slots: int,
    run: Callable[[Row], Awaitable[None]],
) -> Swept:  # fmt: skip
    """The first pass over the pending rows of ``stage``'s run (see the module docstring), read from
    the frontier a page at a time by ``pending``, their records by ``read`` (tree path → record):
    each row once, whatever became of those before."""
    c = stage.context
    out = Swept()
    for kind in ("page", "asset"):
        after = None
        while rows := pending(kind, after, BATCH):
            after = (rows[-1].priority, rows[-1].depth, rows[-1].seq)
            asked: list[Asked] = []
            # the rows' previous records in one read (a query each cost ~60 µs of a re-capture's
            # ~0.8 ms a URL)
            known = read([row.path for row in rows if row.path])
            for row in rows:
                rerender = kind == "page" and c.options.rerender
                previous = None if rerender or not row.path else stage.usable(row, known.get(row.path))
                if previous is not None or row.outcome == "failed":  # a known failure: asked again
                    asked.append((row, previous))
                else:
                    out.left += 1
            kept: list[Kept] = []
            failed: list[Failed] = []
            hosts, lanes = lanes_of(asked, slots)
            await asyncio.gather(*(_ask(stage, hosts, kept, failed, out, run) for _ in range(lanes)))
            stage.finish_kept(kept, failed)
            out.kept += len(kept)
            out.failed += len(failed)
    return out


def lanes_of(asked: list[Asked], slots: int) -> tuple[Iterator[list[Asked]], int]:
    """The rows of ``asked`` by host, in their order (each host's list in order of its first row),
    and how many lanes take them: one a host, at most ``slots``. A lane asks one host's rows one
    after another, then takes the next host not taken: the fetcher asks a host one request at a time
    (politeness), so a second lane on the same host only waits on its lock (a third more CPU a
    request and up to twice the wall time on a one-host site, ``slots`` 12 against 1)."""
    by_host: dict[str, list[Asked]] = {}
    for item in asked:
        by_host.setdefault(key_host(item[0].key), []).append(item)
    return iter(by_host.values()), max(1, min(slots, len(by_host)))


async def _ask(
    stage: Stage, hosts: Iterator[list[Asked]], kept: list[Kept], failed: list[Failed], out: Swept,
    run: Callable[[Row], Awaitable[None]],
) -> None:  # fmt: skip
    for row, previous in (item for rows in hosts for item in rows):
        ask = request_headers(previous.etag, previous.last_modified) if previous is not None else None
        page = row.kind == "page"
        accept = HTML_ACCEPT if page else "*/*"
        result = await stage.responses.get(row.key, row.referrer, accept=accept, page=page, conditional=ask)
        if previous is not None and result.status == 304 and result.outcome == "ok":
            kept.append((row, previous, result))
        elif previous is None and result.outcome not in ("ok", "redirected"):
            failed.append((row, result))  # what its stage would record (Stage.fail), with the kept
        else:  # remembered by the responses: the stage takes it from there
            out.staged += 1
            await run(row)
