"""The WARC replay transport: a capture answered from the records of WARC and WACZ files, with no
network at all (formats/warc.md §8).

:class:`Archive` reads every record of its inputs once (:func:`archiver.warc.read.iter_records`:
structure and digests checked; a damaged file is refused before anything is written), and keeps an
index of the records that answer URLs (:mod:`.replay_rules`) in a SQLite file: one small row per
record, so memory does not grow with the archive. :class:`ReplayTransport` is the
:class:`archiver.capture.transport.Transport` a crawl gets from :meth:`Archive.factory`: each fetch
looks the URL's dedup key up, reads the chosen record at its offset, removes the chunking, undoes
the content coding and gives the crawler a :class:`~archiver.capture.fetch.FetchResult` as the
live fetcher would (redirects followed inside the archive, size caps, robots.txt from the archive).
A URL the archive does not hold is the outcome ``failed``, "not in the archive": nothing is ever
fetched live, and the live :class:`~archiver.capture.fetch.Fetcher` is never built.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import IO, Any, Literal

from archiver import urls
from archiver.capture import robots as robots_mod
from archiver.capture.fetch import _KEPT_HEADERS, SPOOL_LIMIT, FetchPolicy, FetchResult, redirect_step
from archiver.capture.policy import redact
from archiver.errors import FormatError, URLError
from archiver.warc import replay_rules as rules
from archiver.warc.read import Finding, iter_records, record_at
from archiver.warc.replay_rules import Entry
from archiver.warc.sources import sources_of

__all__ = ["Archive", "ReplayTransport"]

_ERROR_BODY_LIMIT = 1 << 20
_REDIRECT = frozenset({301, 302, 303, 307, 308})
_COLUMNS = [f.name for f in fields(Entry)]


class Archive:
    """The index of the records of ``paths`` (WARC and WACZ files), built once into the SQLite file
    ``db``; :attr:`seeds` are the pages to start from (formats/warc.md §8.5)."""

    def __init__(self, paths: list[Path], db: Path) -> None:
        self.sources, wacz_pages = sources_of(paths)
        self.db_path = db
        self.db = sqlite3.connect(db, isolation_level=None)
        self._files: dict[int, contextlib.ExitStack] = {}
        self._open: dict[int, IO[bytes]] = {}
        self.first_page = ""
        try:
            self.db.executescript(
                "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
                "CREATE TABLE rec (seq INTEGER PRIMARY KEY, " + ", ".join(_COLUMNS) + ");"
            )
            self._build()
            for index in ("key, date", "record_id", "digest"):
                self.db.execute(f"CREATE INDEX i_{index[:3]} ON rec ({index})")
        except BaseException:
            self.db.close()
            raise
        self.seeds: list[str] = wacz_pages or ([self.first_page] if self.first_page else [])

    def _build(self) -> None:
        seq = 0
        for number, source in enumerate(self.sources):
            findings: list[Finding] = []
            rows = []
            with source.open() as f:
                gz = _is_gzip(f)
                for rec in iter_records(f, findings):
                    if gz and rec.length is None:
                        continue  # reported below
                    entry = rules.entry_of(rec.headers, rec.uri, rec.status, rec.mime, number, rec.offset)
                    if entry is None:
                        continue
                    first = not self.first_page and number == 0 and entry.type == "response"
                    if first and entry.status == 200 and entry.html:
                        self.first_page = entry.uri
                    seq += 1
                    rows.append((seq, *(getattr(entry, c) for c in _COLUMNS)))
                    if len(rows) >= 10_000:
                        self._insert(rows)
            self._insert(rows)
            bad = [x for x in findings if not x.warning or "gzip member of their own" in x.message]
            if bad:
                raise FormatError(f"cannot import a damaged WARC: {bad[0]}", subject=source.label)

    def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" * (len(_COLUMNS) + 1))
        self.db.executemany(f"INSERT INTO rec VALUES ({marks})", rows)
        rows.clear()

    def close(self) -> None:
        for stack in self._files.values():
            stack.close()
        self._files.clear()
        self._open.clear()
        self.db.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def factory(self, policy: FetchPolicy, guard: object, tmp_dir: Path) -> ReplayTransport:
        """A :data:`archiver.capture.transport.TransportFactory`: the crawl's transport (its address
        guard is not needed: no address is ever connected to)."""
        del guard
        return ReplayTransport(self, policy, tmp_dir)

    # ---- the index

    def _entries(self, sql: str, *args: object) -> list[Entry]:
        return [Entry(*row[1:]) for row in self.db.execute(sql, args)]

    def candidates(self, key: str) -> list[Entry]:
        """The records of ``key``, newest first (a later record of the same date wins the tie)."""
        return self._entries("SELECT * FROM rec WHERE key = ? ORDER BY date DESC, seq DESC LIMIT 100", key)

    def original(self, revisit: Entry) -> Entry | None:
        """The response (or resource) a revisit stands for, by :func:`.replay_rules.revisit_plan`."""
        head = "SELECT * FROM rec WHERE type != 'revisit' AND "
        for step in rules.revisit_plan(revisit):
            if step[0] == "uri-date":
                try:
                    key = urls.dedup_key(urls.canonicalize(step[1]))
                except URLError:
                    continue
                found = self._entries(
                    head + "key = ? AND date = ? ORDER BY uri = ? DESC, seq DESC LIMIT 1",
                    key,
                    step[2],
                    step[1],
                )
            elif step[0] == "id":
                found = self._entries(head + "record_id = ? LIMIT 1", step[1])
            elif step[0] == "digest":
                found = self._entries(
                    head + "digest = ? ORDER BY uri = ? DESC, date DESC, seq DESC LIMIT 1", step[1], step[2]
                )
            else:
                found = self._entries(
                    head + "key = ? AND date <= ? ORDER BY date DESC, seq DESC LIMIT 1", step[1], step[2]
                )
            if found:
                return found[0]
        return None

    def record(self, e: Entry) -> tuple[dict[str, str], Iterator[bytes]]:
        """The WARC header and the block of the record of ``e``."""
        f = self._open.get(e.source)
        if f is None:
            stack = contextlib.ExitStack()
            f = self._open[e.source] = stack.enter_context(self.sources[e.source].open())
            self._files[e.source] = stack
        f.seek(e.offset)
        try:
            return record_at(f, e.offset)
        except ValueError as err:
            raise FormatError(f"cannot read a record: {err}", subject=self.sources[e.source].label) from None


def _is_gzip(f: IO[bytes]) -> bool:
    magic = f.read(2)
    f.seek(0)
    return magic == b"\x1f\x8b"


class _Skip(Exception):
    def __init__(self, outcome: Literal["skipped", "failed"], reason: str) -> None:
        super().__init__(reason)
        self.outcome: Literal["skipped", "failed"] = outcome
        self.reason = reason


class ReplayTransport:
    """Answers a crawl's fetches from an :class:`Archive` (see the module docstring)."""

    def __init__(self, archive: Archive, policy: FetchPolicy, tmp_dir: Path | None) -> None:
        self.archive = archive
        self.policy = policy
        self.tmp_dir = tmp_dir
        self.requests = 0  # records read
        self._robots: dict[str, robots_mod.Robots] = {}
        self._as_stored: set[str] = set()  # URLs whose body was stored decoded under its coding

    async def __aenter__(self) -> ReplayTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._robots.clear()

    # ---- robots.txt: the archive's, else everything allowed

    def _rules(self, url: str) -> robots_mod.Robots:
        origin = url.split("://", 1)[0].lower() + "://" + urls.host_of(url)
        rules_ = self._robots.get(origin)
        if rules_ is None:
            result = self._fetch(
                f"{origin}/robots.txt", robots_mod.MAX_BYTES, check_robots=False, prefix=True
            )
            if result.outcome in ("ok", "redirected") and result.status and 200 <= result.status < 300:
                text = result.read()[: robots_mod.MAX_BYTES].decode("utf-8", "replace")
                rules_ = robots_mod.parse(text, self.policy.robots_agent)
            else:
                rules_ = robots_mod.Robots.allow_everything()
            result.discard()
            self._robots[origin] = rules_
        return rules_

    def robots_allows(self, url: str) -> bool | None:
        """The archive's robots.txt verdict on ``url`` (True when it holds none, or robots.txt is
        ignored); always known."""
        if not self.policy.obey_robots:
            return True
        try:
            return self._rules(url).allowed(_target(url))
        except (URLError, FormatError):
            return True

    # ---- fetching

    async def fetch(
        self,
        url: str,
        *,
        referrer: str | None = None,
        cap: int | Literal["default"] | None = "default",
        accept: str = "*/*",
        stop_at: Callable[[str], bool] | None = None,
    ) -> FetchResult:
        """``url``'s answer as recorded (see the module docstring); never raises for what the
        archive holds or lacks, except a record that became unreadable (:class:`FormatError`).
        Redirects are followed to their end whatever ``stop_at`` says: a record costs no request."""
        del referrer, accept, stop_at
        size_cap = self.policy.size_cap if cap == "default" else cap
        return self._fetch(url, size_cap, check_robots=True)

    def _fetch(self, url: str, cap: int | None, *, check_robots: bool, prefix: bool = False) -> FetchResult:
        chain: list[str] = []
        current = url
        seen = {url}
        while True:
            result = self._one(url, current, cap, check_robots, prefix)
            result.redirects = chain
            if result.status not in _REDIRECT or result.outcome != "ok":
                if chain and result.outcome == "ok":
                    result.outcome = "redirected"
                return result
            step = redirect_step(url, current, result, chain, seen, self.policy.max_redirects)
            if isinstance(step, FetchResult):
                return step
            current = step

    def _one(self, url: str, current: str, cap: int | None, check_robots: bool, prefix: bool) -> FetchResult:
        scheme = current.split(":", 1)[0].lower()
        if scheme not in ("http", "https"):
            return FetchResult(url, current, "skipped", None, f"unsupported scheme {scheme}")
        try:
            key = urls.dedup_key(current)
            if (
                check_robots
                and self.policy.obey_robots
                and not self._rules(current).allowed(_target(current))
            ):
                return FetchResult(url, current, "skipped", None, "disallowed by robots.txt (the archive's)")
        except URLError as e:
            return FetchResult(url, current, "failed", None, f"bad URL: {e}")
        reason = "not in the archive"
        for entry in self.archive.candidates(key):
            source = entry
            if entry.type == "revisit":
                found = self.archive.original(entry)
                if found is None:
                    reason = "a revisit record whose original is not in the archive"
                    continue
                source = found
            return self._answer(url, current, source, cap, prefix, captured=entry.date)
        return FetchResult(url, current, "failed", None, reason)

    def _answer(
        self, url: str, current: str, e: Entry, cap: int | None, prefix: bool, *, captured: str = ""
    ) -> FetchResult:
        self.requests += 1
        warc_headers, block = self.archive.record(e)
        if e.type == "resource":
            status: int | None = 200
            fields_ = {"content-type": warc_headers.get("content-type", "application/octet-stream")}
            payload: Iterator[bytes] = block
        else:
            head, payload = _split_http(block)
            if head is None:
                return FetchResult(
                    url,
                    current,
                    "failed",
                    None,
                    f"the record's HTTP header is longer than {rules.MAX_HTTP_HEADER} bytes or missing",
                )
            status, fields_ = rules.parse_http_head(head)
        media, charset = rules.media_of(fields_.get("content-type"))
        kept = {k: v for k, v in fields_.items() if k in _KEPT_HEADERS}
        result = FetchResult(url, current, "ok", status, "", media, charset, kept)
        if captured:  # the WARC-Date of the record that answered (a revisit's own), to the second
            result.fetched = captured[:19] + "Z"
        if status in _REDIRECT:
            return result
        failure = rules.failure_of(status)
        ok = failure is None
        limit = cap if ok else min(cap or _ERROR_BODY_LIMIT, _ERROR_BODY_LIMIT)
        coding = fields_.get("content-encoding", "")
        length = fields_.get("content-length", "")
        if (
            ok
            and not prefix
            and limit is not None
            and not coding
            and length.isdigit()
            and int(length) > limit
        ):
            return FetchResult(
                url, current, "skipped", status, f"larger than the size cap ({int(length)} > {limit} bytes)"
            )
        chunked = e.type != "resource" and "chunked" in fields_.get("transfer-encoding", "").lower()
        try:
            self._read_body(result, payload, coding, chunked, limit, cut=prefix or not ok)
        except _Skip as skip:
            return FetchResult(url, current, skip.outcome, status, skip.reason)
        if failure is not None:
            result.outcome, result.reason = failure
        return result

    def _read_body(
        self,
        result: FetchResult,
        payload: Iterator[bytes],
        coding: str,
        chunked: bool,
        limit: int | None,
        *,
        cut: bool,
    ) -> None:
        """The body into ``result`` (memory, or a spool file past :data:`SPOOL_LIMIT`). Past ``limit``
        a body is skipped, or with ``cut`` kept up to ``limit``."""
        dechunk = rules.Dechunker() if chunked else None
        decoder = rules.BodyDecoder(coding, result.media_type)
        if decoder.error:
            raise _Skip("failed", decoder.error)
        buffer = bytearray()
        spool: Any = None
        size = 0

        def pieces() -> Iterator[bytes]:
            for raw in payload:
                yield from decoder.feed(dechunk.feed(raw) if dechunk else raw)
            if dechunk:
                yield from decoder.feed(dechunk.close())
            yield from decoder.close()

        try:
            for piece in pieces():
                size += len(piece)
                if limit is not None and size > limit:
                    if not cut:
                        raise _Skip("skipped", f"larger than the size cap (over {limit} bytes)")
                    piece = piece[: len(piece) - (size - limit)]
                    size = limit
                if spool is None:
                    buffer += piece
                    if len(buffer) > SPOOL_LIMIT:
                        spool = self._spool_file()
                        spool.write(buffer)
                        buffer = bytearray()
                else:
                    spool.write(piece)
                if limit is not None and size >= limit and cut:
                    break
            if not cut and (decoder.error or (dechunk and dechunk.bad)):
                raise _Skip("failed", f"the recorded body cannot be decoded: {decoder.error or dechunk.bad}")
        except BaseException:
            if spool is not None:
                spool.close()
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(spool.name)
            raise
        result.size = size
        if spool is not None:
            spool.close()
            result.file = Path(spool.name)
        else:
            result.body = bytes(buffer)
        if decoder.as_stored:
            self._as_stored.add(result.final_url)

    @property
    def notes(self) -> list[str]:
        """What the capture's report says once about this import (formats/warc.md §8.4)."""
        if not self._as_stored:
            return []
        n = len(self._as_stored)
        return [
            f"{n} response{'s' if n > 1 else ''} stored already decoded under {'their' if n > 1 else 'its'} "
            f"Content-Encoding (as ArchiveWeb.page and wabac.js write them), e.g. "
            f"{redact(min(self._as_stored))}: taken as stored"
        ]

    def _spool_file(self) -> Any:
        if self.tmp_dir is not None:
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
        return tempfile.NamedTemporaryFile(dir=self.tmp_dir, prefix="fetch-", suffix=".part", delete=False)


def _split_http(block: Iterator[bytes]) -> tuple[bytes | None, Iterator[bytes]]:
    """The HTTP header of a block (None when there is none within the bound) and the payload after it."""
    pending = bytearray()
    for chunk in block:
        pending += chunk
        end, width = pending.find(b"\r\n\r\n"), 4
        if end < 0:
            end, width = pending.find(b"\n\n"), 2
        if end >= 0:
            head, rest = bytes(pending[: end + width]), bytes(pending[end + width :])

            def payload(rest: bytes = rest) -> Iterator[bytes]:
                if rest:
                    yield rest
                yield from block

            return head, payload()
        if len(pending) > rules.MAX_HTTP_HEADER:
            return None, iter(())
    return (bytes(pending) if pending else None), iter(())


def _target(url: str) -> str:
    rest = url.split("://", 1)[-1]
    slash = rest.find("/")
    return "/" if slash < 0 else rest[slash:].split("#", 1)[0]
