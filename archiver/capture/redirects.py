"""What a page link leaves when it does not answer with an HTML page at its own path (formats/tree.md
§9.1): a *redirect stub* (a small ``<meta http-equiv=refresh>`` page recorded with the 3xx status)
at the redirecting URL's path, linking to the target's tree path when the target is captured (a page
of its own, its record listing the redirecting URL in ``redirects``; or an asset) or to the live URL
when it is outside the capture; and, for a link that answered with something other than HTML, the
bytes stored as an asset at a second path with a stub at the page path."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from archiver import urls
from archiver.capture.policy import redact
from archiver.capture.state import NewURL, Row
from archiver.capture.writer import now, stub_html
from archiver.tree import Record, WarcRef

if TYPE_CHECKING:
    from archiver.capture.fetch import FetchResult
    from archiver.capture.stage import Stage

__all__ = ["not_html", "page_redirect", "write_stub"]


async def not_html(stage: Stage, row: Row, result: FetchResult, page_path: str) -> None:
    """A link that looked like a page answered with something else: store it as an asset and
    leave a redirect stub at the page path."""
    asset_path = stage.context.tree.second(row.key, "asset")
    record, new, links = await stage.store_asset_bytes(row, result, asset_path)
    stub = await write_stub(
        stage, page_path, asset_path, asset_path, row.key, result.status or 200, result.warc
    )
    await stage.finish(
        row.key,
        state="done",
        outcome="ok",
        reason="not HTML: stored as an asset",
        status=result.status,
        final_url=result.final_url,
        record=record,
        extra=[stub],
        new=new,
        links=links,
    )
    stage.context.assets_done += 1


async def write_stub(
    stage: Stage,
    path: str,
    target_path: str | None,
    shown: str,
    key: str,
    status: int,
    warc: WarcRef | None = None,
) -> Record:
    href = urls.rel(path, target_path) if target_path else shown
    data = stub_html(href, shown)
    sha = hashlib.sha256(data).hexdigest()
    await stage.write(path, data, sha256=sha)
    stage.context.bytes_written += len(data)
    return Record(
        path=path,
        kind="page",
        media_type="text/html",
        size=len(data),
        sha256=sha,
        urls=[key],
        title="Moved",
        status=status,
        fetched=now(),
        warc=warc,
    )


async def page_redirect(
    stage: Stage, row: Row, result: FetchResult, path: str, final: str, is_html: bool
) -> None:
    c = stage.context
    chain_status = 301
    hop = result.redirect_warcs[0] if result.redirect_warcs else None  # this URL's own 3xx
    moved_to_root = final.split("://", 1)[-1].partition("/")[2] == "" and path != "index.html"
    note = f"redirected to {redact(final)}"
    if moved_to_root:
        note += " (to the site root: the page has probably moved away)"
    new: list[NewURL] = []
    if is_html and c.scope.page_in_scope(final) and c.fetcher_robots(final) is not False:
        final_path, owner = c.tree.assign(final, "page")
        new.append(
            NewURL(
                final,
                "page",
                row.depth,
                row.referrer,
                c.scope.priority(final),
                path=final_path,
                state="merged" if owner else "pending",
                final_url=owner,
                source=row.key,  # where the redirecting URL stood (formats/tree.md §8)
                step=0,
                inherit=True,
            )
        )
        stub = await write_stub(stage, path, final_path, final_path, row.key, chain_status, hop)
        target = c.state.record(final_path)
        if target is not None and row.key not in target.redirects:
            target.redirects = sorted({*target.redirects, row.key})
            c.state.put_record(target)
    elif not is_html and c.scope.want_asset(final):
        final_path, _ = c.tree.assign(final, "asset")
        new.append(NewURL(final, "asset", row.depth + 1, row.referrer, path=final_path,
                          source=row.key, inherit=True))  # fmt: skip
        stub = await write_stub(stage, path, final_path, final_path, row.key, chain_status, hop)
    else:
        stub = await write_stub(stage, path, None, result.final_url, row.key, chain_status, hop)
        note += " (outside the capture: the stub links to the live URL)"
    await stage.finish(
        row.key,
        state="done",
        outcome="redirected",
        reason=note,
        status=chain_status,
        final_url=final,
        record=stub,
        new=new,
    )
