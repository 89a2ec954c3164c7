"""The end of every URL a capture works on, and the asset stage (formats/tree.md §9).

Each completed URL is one state transaction (its outcome, its manifest record, the references it
revealed) followed by one manifest line (:meth:`Stage.finish`); a charged page that stores no page
gives its place back to the page budget. The **asset** stage fetches (or takes what the browser already
fetched, :mod:`.responses`), rewrites a stylesheet (:mod:`archiver.css_refs`, every reference through
:class:`.linker.Linker`) and writes the asset at its tree path (:mod:`.writer`: atomically; a large
body is moved from its temporary file). The page stage is :mod:`.page`; a page link that answers with
something else than an HTML page at its own path is :mod:`.redirects`. Each takes a :class:`Stage`:
the run's :class:`.context.Context`, its page budget and its responses, never the crawl loop."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from archiver import urls
from archiver.capture.budget import PageBudget
from archiver.capture.conditional import request_headers, validator
from archiver.capture.context import Context
from archiver.capture.linker import Linker
from archiver.capture.policy import redact
from archiver.capture.relink import public
from archiver.capture.responses import Responses
from archiver.capture.state import NewURL, Row, State
from archiver.capture.writer import Verified, hash_file, now, verified_as
from archiver.tree import Record

if TYPE_CHECKING:
    from archiver.capture.fetch import FetchResult

__all__ = ["Failed", "Kept", "Links", "Stage"]

#: what a stored document links to: its tree path, and each key it names → written as a local link
#: (True) or absolute (False); the state keeps it for the relinking at the end (tree.md §8)
Links = tuple[str, dict[str, bool]]
#: a URL whose conditional request was answered 304: its row, its previous record, the answer
Kept = tuple[Row, Record, "FetchResult"]
#: a URL that failed (its row, the answer), finished with the kept ones (:meth:`Stage.finish_kept`)
Failed = tuple[Row, "FetchResult"]


class Stage:
    """What the page and asset stages of one run work with (see the module docstring)."""

    def __init__(self, context: Context, budget: PageBudget, responses: Responses) -> None:
        self.context = context
        self.budget = budget
        self.responses = responses
        #: the state's :meth:`.state.State.verified`, read on the first :meth:`usable`
        self._verified: dict[str, Verified] | None = None

    def linker(self, from_path: str, base: str, depth: int, referrer: str) -> Linker:
        """The change callback of one document stored at ``from_path`` (:class:`.linker.Linker`)."""
        return Linker(self.context, self.budget, from_path, base, depth, referrer)

    async def write(
        self,
        path: str,
        data: bytes | None = None,
        source: Path | None = None,
        link_from: str | None = None,
        sha256: str | None = None,
    ) -> None:
        """Put bytes (or the file ``source``, moved) at tree path ``path`` atomically (``sha256``:
        theirs, when known: :meth:`.writer.TreeWriter.write`)."""
        self.context.writer.write(path, data, source, link_from, sha256)

    async def finish(
        self, key: str, *, record: Record | None = None, extra: list[Record] | None = None, **kwargs: Any
    ) -> None:
        """``key`` is done (``kwargs``: :meth:`.crawlstate.CrawlState.finish`'s): one transaction,
        then its manifest lines."""
        c = self.context
        with c.state.transaction():
            c.tree.flush()
            c.state.finish(key, record=record, extra_records=extra or [], **kwargs)
        if record is None or record.kind != "page":
            self.budget.release(key)
        manifest = c.manifest
        if manifest is not None:
            for line in [*(extra or []), *([record] if record else [])]:
                manifest.add(public(line))

    def finish_kept(self, kept: list[Kept], failed: list[Failed] = []) -> None:  # noqa: B006 (not mutated)
        """Finish URLs answered 304 (their previous bytes stand: :meth:`kept`) and URLs that failed
        (:meth:`fail`'s outcome) in one transaction, then the kept ones' manifest lines: what
        :meth:`finish` does for each, with one commit for all."""
        c = self.context
        records = [self.kept(previous, row, result) for row, previous, result in kept]
        encoded: list[bytes] | None = None
        with c.state.transaction():
            for row, result in failed:
                state = _failed_state(result)
                c.state.finish(
                    row.key, state=state, outcome=state, reason=result.reason, status=result.status
                )
            done = [(row.key, result.status, result.final_url, record)
                    for (row, _previous, result), record in zip(kept, records, strict=True)]  # fmt: skip
            if isinstance(c.state, State):  # three statements for all
                from archiver.capture.kept import finish_kept  # only answers 304 come here

                encoded = finish_kept(c.state, done)
            else:
                for key, status, final_url, record in done:
                    c.state.finish(key, state="done", outcome="ok", status=status, final_url=final_url,
                                   record=record, blob=(record.sha256, record.path))  # fmt: skip
        for row, _result in failed:
            self.budget.release(row.key)
        lines: list[bytes] = []
        for i, record in enumerate(records):
            if record.kind == "page":
                c.pages_done += 1
            else:
                self.budget.release(record.urls[0])
                c.assets_done += 1
            if c.manifest is not None:  # the state's encoding when the manifest shows the same record
                shown = public(record)
                lines.append(encoded[i] if encoded is not None and shown is record else _encode(shown))
        if c.manifest is not None:
            c.manifest.add_encoded(lines)  # one write for the batch

    def previous(self, row: Row) -> Record | None:
        """The record ``row``'s key left at its path in an earlier run, when a conditional request
        may stand on it (formats/history.md §6.1): a 2xx answer of that very URL (no redirect stub,
        not reached through a redirect) with a validator, whose file is there and hashes to it."""
        if not row.path:
            return None
        return self.usable(row, self.context.state.record(row.path))

    def usable(self, row: Row, record: Record | None) -> Record | None:
        """:meth:`previous` of ``row`` whose record at its path is ``record`` (read by the caller)."""
        if record is None or not record.urls or record.urls[0] != row.key:
            return None
        if not (record.etag or record.last_modified) or not (200 <= (record.status or 0) < 300):
            return None
        return record if self._holds(record) else None

    def _holds(self, record: Record) -> bool:
        """Whether the tree file at ``record.path`` holds the record's bytes: trusted without reading
        when its status (size, mtime, ctime, inode) is the one the state noted when its bytes were
        known to be these (formats/crawl-state.md §1, ``verified``: any write, rename, link or
        ``touch`` since changes its ctime), else read and hashed (:func:`_whole`), and noted."""
        full = os.path.join(self.context.out, record.path)
        if self._verified is None:
            state = self.context.state
            self._verified = state.verified() if isinstance(state, State) else {}
        noted = self._verified.get(record.path)
        if noted is not None and noted[0] == record.sha256 and noted[1] == record.size:
            try:
                if verified_as(record.sha256, os.stat(full)) == noted:
                    return True
            except OSError:
                return False
        st = _whole(full, record.size, record.sha256)
        if st is None:
            return False
        self.context.writer.verified[record.path] = verified_as(record.sha256, st)
        return True

    def kept(self, previous: Record, row: Row, result: FetchResult) -> Record:
        """The record of a URL whose conditional request was answered 304: the previous bytes,
        fetched now (the 304's own validators, when it sent any, replace the old ones)."""
        etag = validator(result.headers.get("etag")) or previous.etag
        date = validator(result.headers.get("last-modified")) or previous.last_modified
        return msgspec.structs.replace(
            previous, fetched=result.fetched or now(), depth=row.depth, referrer=row.referrer,
            warc=result.warc, etag=etag, last_modified=date, revalidated=True,
        )  # fmt: skip

    async def fail(self, row: Row, result: FetchResult) -> None:
        state = _failed_state(result)
        await self.finish(row.key, state=state, outcome=state, reason=result.reason, status=result.status)

    async def store_asset_bytes(
        self, row: Row, result: FetchResult, path: str
    ) -> tuple[Record, list[NewURL], Links]:
        """Write an asset (a stylesheet rewritten) at ``path``; its record, the URLs it revealed and
        its links."""
        c = self.context
        data: bytes | None = None
        is_css = row.stylesheet or result.media_type == "text/css" or urls.ext(row.key) == ".css"
        new: list[NewURL] = []
        links: dict[str, bool] = {}
        if is_css:  # the stylesheet parser only when there is one to rewrite
            from archiver.capture.textcodec import decode_css
            from archiver.css_refs import rewrite_stylesheet

            text = decode_css(result.read(), result.charset)
            linker = self.linker(path, result.final_url, row.depth, row.key)
            css = rewrite_stylesheet(
                text, lambda ref, role: linker(ref, "stylesheet" if role == "import" else "embed")
            )
            data = css.text.encode("utf-8")
            new = list(linker.new.values())
            links = linker.links
            size, sha = len(data), hashlib.sha256(data).hexdigest()
            await self.write(path, data, sha256=sha)
        elif result.file is not None:
            sha, size = hash_file(result.file)
            await self.write(path, source=result.file, sha256=sha)
            self.responses.spooled.pop(row.key, None)
            result.file = c.out / path
        else:
            data = result.body or b""
            size, sha = len(data), hashlib.sha256(data).hexdigest()
            await self.write(path, data, sha256=sha)
        c.bytes_written += size
        media = "text/css" if is_css else (result.media_type or _media_from_path(path))
        record = Record(
            path=path,
            kind="asset",
            media_type=media,
            size=size,
            sha256=sha,
            urls=[row.key],
            status=result.status,
            fetched=result.fetched or now(),
            depth=row.depth,
            referrer=row.referrer,
            warc=result.warc,
            etag=validator(result.headers.get("etag")),
            last_modified=validator(result.headers.get("last-modified")),
        )
        return record, new, (path, links)

    async def asset(self, row: Row) -> None:
        """The asset stage of ``row``."""
        previous = self.previous(row)
        conditional = request_headers(previous.etag, previous.last_modified) if previous else None
        result = await self.responses.get(row.key, row.referrer, conditional=conditional)
        if result.outcome not in ("ok", "redirected"):
            await self.fail(row, result)
            return
        path, _ = self.context.tree.assign(row.key, "asset")
        if result.status == 304 and previous is not None:  # the previous bytes stand
            record, new, links = self.kept(previous, row, result), [], None
        else:
            record, new, links = await self.store_asset_bytes(row, result, path)
        outcome = "redirected" if result.redirects else "ok"
        reason = f"redirected to {redact(result.final_url)}" if result.redirects else ""
        await self.finish(
            row.key,
            state="done",
            outcome=outcome,
            reason=reason,
            status=result.status,
            final_url=result.final_url,
            record=record,
            new=new,
            links=links,
        )
        self.context.assets_done += 1


_encode = msgspec.json.Encoder().encode


#: a file smaller than this is read whole by one call (a short read, never seen on a regular file
#: before its end, only makes it look changed: fetched again unconditionally)
_WHOLE_AT_ONCE = 1 << 20


def _whole(path: str, size: int, sha256: str) -> os.stat_result | None:
    """The status of the file at ``path`` when it has ``size`` bytes hashing to ``sha256`` (a
    conditional request stands on it), else None: one descriptor for the size and the bytes
    (through pathlib's stat and open, twice the CPU)."""
    try:  # never waits on a FIFO put under the file's name (a tree from elsewhere)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_size != size or not stat.S_ISREG(st.st_mode):
            return None
        if size < _WHOLE_AT_ONCE:  # one read past the size: a file that grew meanwhile says so
            data = os.read(fd, size + 1)
            ok = len(data) == size and hashlib.sha256(data).hexdigest() == sha256
        else:
            digest = hashlib.sha256()
            while chunk := os.read(fd, 1 << 20):
                digest.update(chunk)
            ok = digest.hexdigest() == sha256
        return st if ok else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _failed_state(result: FetchResult) -> str:
    """The state (and outcome) of a URL whose answer stores nothing."""
    return result.outcome if result.outcome in ("failed", "unconfirmed", "skipped", "refused") else "failed"


def _media_from_path(path: str) -> str:
    from archiver.media import media_type_for

    return media_type_for(path)
