"""The end of a crawl: point every link at what the tree finally holds (formats/tree.md §6).

A relative link to something that was not stored (skipped, failed, refused …) becomes its absolute
URL, so it still works from disk; an absolute link to something stored after all (reached by a
shorter path, retried on a later run) becomes relative; a link written before a §4.5 clash moved its
target follows the move. Runs when the frontier is empty, from the links the state recorded for every
document, so the tree does not depend on the order in which the crawl met things.

With ``drop_candidates`` (the WARC import, formats/warc.md §8.4: an archive answers the same on every
run, and a browser records only the ``srcset`` candidate it picked), a ``srcset`` candidate that was
not stored is left out of its attribute when another candidate of it was stored, instead of becoming
its absolute URL: a browser offline, whatever its viewport or pixel density, then picks a stored one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

import msgspec

from archiver import urls
from archiver.capture.policy import Hint, redact, split_fragment
from archiver.capture.state import Row
from archiver.capture.writer import TreeWriter
from archiver.errors import FormatError, URLError
from archiver.tree import Record, own_parent

if TYPE_CHECKING:
    from archiver.capture.crawlstate import CrawlState
    from archiver.urls import Hygiene

__all__ = ["final_records", "public", "relink", "resolve_href"]


#: The largest document relinked: a page is at most responses.PAGE_CAP (64 MiB) unless --asset-cap
#: is larger, a stylesheet at most --asset-cap; a larger file in a tree is left as it is.
MAX_DOCUMENT = 256 << 20


def relink(
    state: CrawlState,
    out: Path,
    hygiene: Hygiene,
    writer: TreeWriter,
    *,
    drop_candidates: bool = False,
    rows: Iterable[Row] | None = None,
) -> None:
    """Point every link at what the tree finally holds: a relative link to something that was not
    stored (skipped, failed, refused …) becomes its absolute URL, so it still works from disk;
    an absolute link to something stored after all (reached by a shorter path, retried on a later
    run) becomes relative. Only documents with such links are rewritten (atomically), and their
    records updated. Runs when the frontier is empty, so the result does not depend on the order
    in which the crawl happened to meet things. ``drop_candidates``: see the module docstring.
    ``rows``: the state's rows when the caller has read them already (relinking changes no row)."""
    stored: dict[str, str] = {}  # key → tree path of every stored file (stubs included)
    merged: list[Row] = []
    for r in state.rows() if rows is None else rows:
        if r.state == "done" and r.path:
            stored[r.key] = r.path
        elif r.state == "merged" and r.final_url:
            merged.append(r)
    for r in merged:
        if r.final_url in stored:
            stored[r.key] = stored[r.final_url]
    moves = state.moves()  # a file moved by a §4.5 clash: links written before the move are stale
    moved = set(moves.values())
    dirty: set[str] = set()
    for src, key, local in state.links():
        if local != (key in stored) or (local and key in moved):
            dirty.add(src)
    if not dirty:
        return
    by_path = state.paths_map()
    own: set[str] = set()
    for src in sorted(dirty):
        record = state.record(src)
        text = None if record is None else _document(out, src, record, own)
        if record is None or text is None:
            continue
        _relink_one(state, out, hygiene, writer, src, record, text, stored, by_path, moves, drop_candidates)


def _document(out: Path, src: str, record: Record, own: set[str]) -> str | None:
    """The text of the tree document ``src``: in the tree's own folders, a regular file (no link
    followed, no FIFO waited on) of at most :data:`MAX_DOCUMENT` bytes, UTF-8 as the capture wrote
    it; else None, and it is left as it is. (Not its record's size: a run stopped between a record
    and its file leaves the old file, which the next run relinks.) A tree resumed from elsewhere is
    input: a sparse terabyte under a page's name was read whole (MemoryError), a page behind a
    folder linked out of the tree was read there, bytes not UTF-8 ended the run in a traceback."""
    from archiver import safefs  # here: not an import of a capture's start

    if not own_parent(out, src, own):
        return None
    try:  # a regular file (no link followed, no FIFO waited on), refused by its size unread
        data = safefs.read_regular(out / src, MAX_DOCUMENT)
    except FormatError:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _relink_one(
    state: CrawlState,
    out: Path,
    hygiene: Hygiene,
    writer: TreeWriter,
    src: str,
    record: Record,
    text: str,
    stored: dict[str, str],
    by_path: dict[str, str],
    moves: dict[str, str] | None = None,
    drop_candidates: bool = False,
) -> None:
    # the parsers only when a document is to be rewritten (an unchanged re-capture rewrites none)
    from archiver.capture import rewrite_html
    from archiver.css_refs import rewrite_stylesheet

    links: dict[str, bool] = {}
    unstored: set[str] = set()  # references (as written) to what the tree does not hold

    def change(ref: str, hint: Hint) -> str | None:
        if hint == "absolute" or urls.ref_action(ref) == "keep":
            return None
        text = ref.strip()
        _head, fragment = split_fragment(text)
        if "://" in text or text.startswith("//"):
            try:
                key = urls.dedup_key(urls.canonicalize(text), hygiene)
            except URLError:
                return None
            if key in stored:
                links[key] = True
                return urls.rel(src, stored[key]) + ("" if "#" in key else fragment)
            links[key] = False
            unstored.add(ref)
            return None
        target = resolve_href(src, text)
        key = by_path.get(target) if target else None
        if key is None and target and moves and target in moves:
            key = moves[target]  # written before a clash moved the file
            if key in stored:
                links[key] = True
                return urls.rel(src, stored[key]) + ("" if "#" in key else fragment)
        if key is None:
            return None
        if key in stored:
            links[key] = True
            return None
        links[key] = False
        unstored.add(ref)
        return key + ("" if "#" in key else fragment)

    if record.media_type == "text/css":
        new_text = rewrite_stylesheet(
            text, lambda ref, role: change(ref, "stylesheet" if role == "import" else "embed")
        ).text
    else:
        drop = unstored.__contains__ if drop_candidates else None
        new_text = rewrite_html.rewrite(
            rewrite_html.parse(text), change, noscript="keep", drop_candidate=drop
        ).html
    if new_text != text:
        data = new_text.encode("utf-8")
        record.size, record.sha256 = len(data), hashlib.sha256(data).hexdigest()
        # the record first, committed, then the file: a run stopped between the two leaves the old
        # file under the new record, and the next run (its links not yet set: still to relink)
        # rewrites it and sets the same record. The other way round, the next run found the file
        # relinked already, nothing to change, and kept the old record: a manifest naming other bytes
        state.put_record(record, durable=True)
        writer.write(src, data, sha256=record.sha256)
    state.set_links(src, links)


def resolve_href(src: str, href: str) -> str | None:
    """The tree path that relative ``href`` (as :func:`archiver.urls.rel` writes it) in the document
    at tree path ``src`` names; None when it leaves the tree or has a query."""
    href = href.split("#", 1)[0]
    if "?" in href or href.startswith("/"):
        return None
    parts = src.split("/")[:-1]
    for seg in href.split("/"):
        if seg == "..":
            if not parts:
                return None
            parts.pop()
        elif seg not in ("", "."):
            parts.append(unquote(seg))
    return "/".join(parts) or None


def final_records(state: CrawlState, rows: Iterable[Row] | None = None) -> Iterator[Record]:
    """The manifest records of the tree, from the state: one per path, sorted by path, each listing
    every URL merged into it (tree.md §3.3) and the smallest depth and referrer of its URLs' rows
    (settled over the crawl's discoveries when its frontier emptied, tree.md §8; a redirect stub
    keeps its own). ``rows``: the rows to take them from (default: the state's; a shard of a shared
    crawl gives its own)."""
    known_rows: dict[str, Row] = {}
    merged: dict[str, list[str]] = {}
    moved_here: dict[str, list[tuple[str, str | None]]] = {}  # target key → (redirecting key, path)
    for r in state.rows() if rows is None else rows:
        known_rows[r.key] = r
        if r.state == "merged" and r.final_url:
            merged.setdefault(r.final_url, []).append(r.key)
        if r.outcome == "redirected" and r.final_url:
            moved_here.setdefault(r.final_url, []).append((r.key, r.path))
    for record in state.records():
        first = record.urls[0] if len(record.urls) == 1 else None
        if first is not None and first not in merged and first not in moved_here:
            # the common case, one URL that nothing was merged into or redirected to: what the
            # general case below gives it (its urls as they are, the depth and referrer of its row)
            # without its sets and sorts (~15 K instructions a record of a re-capture)
            row = known_rows.get(first)
            if row is not None and not 300 <= (record.status or 200) < 400:
                record.depth, record.referrer = row.depth, row.referrer
            yield record
            continue
        if record.kind == "page" and not 300 <= (record.status or 200) < 400:
            # every URL that redirected to this page, also one whose stub was written while the
            # page was being stored (or by another worker): tree.md §9.1
            sources = {k for key in record.urls for k, p in moved_here.get(key, []) if p != record.path}
            if not sources <= set(record.redirects):
                record.redirects = sorted({*record.redirects, *sources})
        if record.urls:
            keys = set(record.urls)
            for k in list(keys):
                keys.update(merged.get(k, []))
            record.urls = [record.urls[0], *sorted(keys - {record.urls[0]})]
            known = [known_rows[k] for k in record.urls if k in known_rows]
            # a row beyond depth 0 without a referrer records no discovery (a shard's row for an
            # alias another worker met): the discoveries decide when there are any
            known = [r for r in known if r.referrer is not None or r.depth == 0] or known
            if known and not 300 <= (record.status or 200) < 400:
                top = min(known, key=lambda r: (r.depth, r.referrer or ""))
                record.depth, record.referrer = top.depth, top.referrer
        yield record


def public(record: Record) -> Record:
    """The record as the manifest shows it: secret query values redacted (tree.md §8.1); a copy
    when anything is, else ``record`` itself (a URL without a query has nothing to redact)."""
    referrer = record.referrer
    # "?" in any of them is "?" in them joined (one character: no join makes one): no generator
    # (every record of a re-capture, twice)
    if "?" not in "".join((referrer or "", *record.urls, *record.redirects)):
        return record
    return msgspec.structs.replace(
        record,
        urls=[redact(u) for u in record.urls],
        redirects=[redact(u) for u in record.redirects],
        referrer=redact(referrer) if referrer else None,
    )
