"""The page stage of a capture (formats/tree.md §9): fetch through the transport (:mod:`.transport`:
the live network of :mod:`.fetch`, or another source), render (:mod:`.render`; the browser's requests
come back to :mod:`.responses` and are answered from what was already fetched, or fetched once),
rewrite (:mod:`.rewrite_html`, every reference through :class:`.linker.Linker` and
:meth:`archiver.capture.policy.Scope.decide`), write at its tree path (:mod:`.treepaths`,
:mod:`.writer`); a page whose bytes equal an earlier page's is a hard link to it. A page that
redirects or is no HTML leaves a redirect stub (:mod:`.redirects`)."""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

from archiver import markup_guard
from archiver.capture import rewrite_html, searchbox
from archiver.capture.conditional import request_headers, validator
from archiver.capture.fetched import HTML_ACCEPT
from archiver.capture.stage import Stage
from archiver.capture.state import Row
from archiver.capture.textcodec import decode_html
from archiver.capture.writer import now
from archiver.errors import CaptureError
from archiver.tree import Record
from archiver.urls import RESERVED_DIR

if TYPE_CHECKING:
    from archiver.capture.fetch import FetchResult

__all__ = ["HTML_ACCEPT", "SEARCH_PAGE", "page"]

#: where the pages' own search boxes submit (archiver.search.store.INDEX_DIR, not imported here: the
#: search package costs ~80 ms to import, 5 % of a small capture, and most runs do not build an index)
SEARCH_PAGE = f"{RESERVED_DIR}/search/index.html"
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


async def page(stage: Stage, row: Row) -> None:
    """The page stage of ``row`` (see the module docstring)."""
    c = stage.context
    key = row.key
    # a page is asked conditionally unless it is to be rendered again (formats/history.md §6.1)
    previous = None if c.options.rerender else stage.previous(row)
    conditional = request_headers(previous.etag, previous.last_modified) if previous else None
    result = await stage.responses.get(
        key, row.referrer, accept=HTML_ACCEPT, page=True, conditional=conditional
    )
    if result.outcome not in ("ok", "redirected"):
        await stage.fail(row, result)
        return
    if result.status == 304 and previous is not None:
        await _kept(stage, row, previous, result)
        return
    path, _owner = c.tree.assign(key, "page")
    # a dedup key is its own dedup key (tests/test_urls_properties.py checks it)
    final = key if result.final_url == key else c.key(result.final_url)
    is_html = (result.media_type in _HTML_TYPES) or (
        result.media_type is None
        and result.read()[:512].lstrip().lower().startswith((b"<!doctype", b"<html"))
    )
    if final != key:
        final_path = c.tree.local_path(final, "page") if is_html else None
        if final_path != path:
            from archiver.capture import redirects  # only an answer that is no page at its own path

            await redirects.page_redirect(stage, row, result, path, final, is_html)
            return
    if not is_html:
        from archiver.capture import redirects

        await redirects.not_html(stage, row, result, path)
        return
    text = decode_html(result.read(), result.charset)
    rendered = False
    note = ""
    if c.renderer is not None:
        try:
            text = await c.renderer.render(result.final_url, key)
            rendered = True
        except CaptureError as e:
            note = f"{e.message}; stored as fetched, unrendered"
    if markup_guard.needs_check(text):  # formats/tree.md §9.5: checked in a child, off the loop
        try:
            await asyncio.to_thread(markup_guard.vet, text)
        except markup_guard.CostlyMarkup as e:
            await stage.finish(key, state="failed", outcome="failed", reason=str(e), status=result.status)
            return
    doc = rewrite_html.parse(text)
    scanned = rewrite_html.scan(doc)  # one walk for the base, the title and the rewrite: no CSS query
    base = rewrite_html.base_url(doc, result.final_url, scanned)
    stage.budget.charge_links(text, base, row.depth)
    linker = stage.linker(path, base, row.depth, key)
    # the href to the search page, remembered by the page's folder (TreePaths.rel): not worked out per page
    search = searchbox.Target(c.tree.rel(path, SEARCH_PAGE), result.final_url)
    noscript = "drop" if rendered else "unwrap"
    out = rewrite_html.rewrite(doc, linker, noscript=noscript, search=search, scanned=scanned)
    data = out.html.encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    first = c.state.blob_path(sha)
    await stage.write(path, data, link_from=first if first and first != path else None, sha256=sha)
    c.bytes_written += len(data)
    chain = {c.key(u) for u in result.redirects}
    same = {u for u in chain | {key} if c.tree.local_path(u, "page") == path}
    record = Record(
        path=path,
        kind="page",
        media_type="text/html",
        size=len(data),
        sha256=sha,
        urls=[final, *sorted(same - {final})],
        title=out.title,
        status=result.status,
        fetched=result.fetched or now(),
        depth=row.depth,
        referrer=row.referrer,
        redirects=sorted({k for k, p in c.state.redirected_to(final) if p != path}),
        warc=result.warc,
        etag=validator(result.headers.get("etag")),
        last_modified=validator(result.headers.get("last-modified")),
    )
    outcome = "redirected" if result.redirects else "ok"
    new = sorted(linker.new.values(), key=lambda n: (n.priority, n.key))
    await stage.finish(
        key,
        state="done",
        outcome=outcome,
        reason=note,
        status=result.status,
        final_url=result.final_url,
        record=record,
        blob=(sha, path),
        new=new,
        links=(path, linker.links),
    )
    c.pages_done += 1


async def _kept(stage: Stage, row: Row, previous: Record, result: FetchResult) -> None:
    """A page whose conditional request was answered 304: its previous file stands, not rendered or
    rewritten again; its links are those the previous run recorded for it (the state's ``links``
    and ``found``, kept), and every URL they name is in the frontier already: a re-capture puts
    every URL the tree knew back in it (formats/history.md §6.1)."""
    c = stage.context
    record = stage.kept(previous, row, result)
    await stage.finish(
        row.key,
        state="done",
        outcome="ok",
        status=result.status,
        final_url=result.final_url,
        record=record,
        blob=(record.sha256, record.path),
        new=[],
    )
    c.pages_done += 1
