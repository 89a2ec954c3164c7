"""Search across every mount (formats/serve.md §8): ``/~/api/search?q=&limit=&offset=`` (JSON) and
``/~/search?q=`` (the index page's search box), on the bare host only. Each mount's own index
(formats/search.md §4, §8: a tree's ``_archiver/search/``, a gwtar's members, a ZIM's entries) is
opened on the first query that needs it (its manifest decoded once) and kept while the manifests
kept stay under :data:`CACHE_BYTES` (the least recently used index goes first); a tree's index is
opened again when its manifest changes on disk. What queries decode from the indexes (shards,
each term's documents and impacts) is kept by :class:`archiver.search.engine.Engine` under
:data:`ENGINE_BYTES`, and the ranking is the engine's (formats/search.md §6.5: the core's ranking,
top-k by a global bound); a query asked again over the same open indexes is answered from the
results kept for it (:data:`ANSWER_BYTES`). A mount without an index, or whose index turns out
damaged, is skipped and named in ``skipped`` (the others still answer). Results are ranked
together (formats/search.md §6.3) and link to the page on its mount's own origin."""

from __future__ import annotations

import concurrent.futures
import gc
import hashlib
import html
import json
import multiprocessing
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from archiver import forks
from archiver.errors import FormatError, StoreError
from archiver.search import archive, query, store, table, tables
from archiver.search.engine import Engine
from archiver.search.snippet import Snippet
from archiver.serve.mounts import Mount
from archiver.serve.paths import _href

__all__ = ["MAX_LIMIT", "Searcher", "results_page"]

MAX_LIMIT = 100
MAX_OFFSET = 10_000
#: Bytes of manifests (as stored) the open indexes may hold between queries, all mounts together.
CACHE_BYTES = 32 << 20
#: Bytes (estimated) of decoded shards and term data kept between queries, all mounts together,
#: in each server process (formats/serve.md §8, Memory).
ENGINE_BYTES = 512 << 20
#: Text chunks (about 2 KiB each) and fragment rows an open index keeps between queries.
KEPT_CHUNKS = 256
KEPT_FRAGMENTS = 4096
#: Answers kept for a query asked again (formats/serve.md §8, Repeated queries): their estimated
#: bytes, all entries together, in each server process.
ANSWER_BYTES = 8 << 20

Read = Callable[[str], bytes]
#: How a table build the cache folder refused (full, read-only) answers, before the folder's line.
_NOT_KEPT = "not kept: "
#: An answer kept (:func:`_kept`): its total, and each result's fields as a tuple.
Kept = tuple[int, tuple[tuple[Any, ...], ...]]


def _tree_read(root: str) -> Read:
    checked: set[str] = set()  # the index's folders found to be the tree's own (no link out of it)

    def read(path: str) -> bytes:
        parts = path.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise KeyError(path)
        try:
            return store.read_in_tree(root, parts, checked)
        except (FileNotFoundError, NotADirectoryError):
            raise KeyError(path) from None

    return read


class Searcher:
    """The search over ``mounts``; archives are opened on the first query."""

    def __init__(self, mounts: list[Mount]) -> None:
        self.mounts = [m for m in mounts if m.kind in ("tree", "gwtar", "zim")]
        self._readers: dict[str, tuple[Read, Callable[[str], bool]] | None] = {}
        self._opened: list[Any] = []
        # mount name → (its index, [its manifest's bytes], the stamp it was opened at, its engine key)
        self._indexes: OrderedDict[str, tuple[query.Index, list[int], tuple[int, ...], int]] = OrderedDict()
        self.engine = Engine(ENGINE_BYTES)
        self._manifests: dict[str, str] = {}  # a tree mount's manifest path (a stat a query)
        self._serial = 0
        #: Postings tables (formats/search.md §6.5) by identity (:func:`table_identity`: the mount's
        #: and its index's), and each mount's identity.
        self._tables: dict[str, table.Table] = {}
        self._use_tables = False
        self.identity: dict[str, str] = {}
        self.prepared: dict[str, Any] = {}
        # (text, limit, offset) → (the engine keys of the indexes it ranked, its results as _kept
        # makes them, their bytes)
        self._answers: OrderedDict[tuple[str, int, int], tuple[tuple[int, ...], Kept, int]] = OrderedDict()
        self._answer_bytes = 0
        self._log = os.environ.get("ARCHIVER_SEARCH_LOG") or None

    def _stamp(self, m: Mount) -> tuple[int, ...]:
        """What says a tree's index changed on disk (its manifest's identity); archives named on the
        command line are assumed not to change while served (formats/serve.md §4)."""
        if m.kind != "tree":
            return ()
        where = self._manifests.get(m.name)
        if where is None:
            where = self._manifests[m.name] = os.path.join(
                os.path.realpath(m.path), store.INDEX_DIR, "manifest.js"
            )
        try:
            st = os.stat(where)
        except OSError:
            return (-1,)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _index(self, m: Mount, reader: tuple[Read, Callable[[str], bool]]) -> query.Index:
        stamp = self._stamp(m)
        known = self._indexes.get(m.name)
        if known is not None and known[2] == stamp:
            self._indexes.move_to_end(m.name)
            return known[0]
        sizes: list[int] = []
        read = reader[0]

        identity: list[str] = []

        def counted(path: str, read: Read = read, sizes: list[int] = sizes) -> bytes:
            data = read(path)
            if not sizes:  # the manifest, read first and kept decoded
                sizes.append(len(data))
                identity.append(hashlib.sha256(data).hexdigest())
            return data

        index = archive.archive_index(counted, f"{m.name}/{store.INDEX_DIR}")
        if known is not None:
            self.engine.forget(known[3])  # a tree indexed again: what was decoded from it goes
        self._serial += 1
        ident = self.identity[m.name] = table_identity(m, identity[0])
        got = self._tables.get(ident)
        if got is None and self._use_tables:
            got = tables.open_table(ident, index.documents)  # built by another server
            if got is not None:
                self._tables[ident] = got
        if got is not None:
            self.engine.tables[self._serial] = got
        self._indexes[m.name] = (index, sizes, stamp, self._serial)
        self._indexes.move_to_end(m.name)
        return index

    def _key(self, m: Mount) -> int:
        return self._indexes[m.name][3]

    def cached(self) -> tuple[int, int]:
        """(indexes kept, bytes of index files they hold)."""
        return len(self._indexes), sum(sum(x[1]) for x in self._indexes.values()) + self.engine.bytes

    def _trim(self) -> None:
        """Drop the least recently used indexes until the cache holds at most CACHE_BYTES of files
        (the last one used stays, whatever its size)."""
        total = sum(sum(x[1]) for x in self._indexes.values())
        while total > CACHE_BYTES and len(self._indexes) > 1:
            _, (_, sizes, _, key) = self._indexes.popitem(last=False)
            self.engine.forget(key)
            total -= sum(sizes)

    def _reader(self, m: Mount) -> tuple[Read, Callable[[str], bool]] | None:
        if m.name not in self._readers:
            found = reader_for(m.kind, m.path, getattr(m, "reader", None), self._opened)
            self._readers[m.name] = found
        return self._readers[m.name]

    def prepare(self, jobs: int = 2) -> dict[str, Any]:
        """Give every mount with a format 3 index its postings table (formats/search.md §6.5, Tables),
        before serving: opened from the cache folder, else built there (``jobs`` processes at once, a
        ZIM's in this one) and opened. A damaged index gets none (its queries say the damage). When a
        gwtar or ZIM was opened for it, every reader and index is closed again (each server process
        opens its own); trees' indexes stay open, parsed once for every worker."""
        started = time.monotonic()
        self._use_tables = True
        todo: list[tuple[Mount, str]] = []
        for m in self.mounts:
            reader = self._reader(m)
            if reader is None:
                continue
            try:
                index = self._index(m, reader)
            except FormatError:
                continue
            ident = self.identity[m.name]
            if ident not in self._tables and index.version >= 3:  # (_index opened it when it could)
                todo.append((m, ident))
        problems: dict[str, str] = {}
        pool = [x for x in todo if x[0].kind != "zim"]
        if len(pool) > 1 and jobs > 1:
            context = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
            try:
                with concurrent.futures.ProcessPoolExecutor(
                    min(jobs, len(pool)), mp_context=context, initializer=forks.leave_to_parent
                ) as ex:
                    with forks.held():  # the workers start here: Ctrl-C is the parent's (forks.py)
                        futures = {
                            m.name: ex.submit(_build_table, m.kind, str(m.path), m.name, ident)
                            for m, ident in pool
                        }
                    problems = {name: f.result() for name, f in futures.items()}
            except (OSError, RuntimeError):  # BrokenProcessPool is a RuntimeError (and its module,
                # imported on first use, may be what failed: EMFILE, then AttributeError here)
                problems = {}  # no worker processes here: built in this one below
        refused = next((v for v in problems.values() if v.startswith(_NOT_KEPT)), "")
        for m, ident in todo:
            if m.name not in problems:  # once the cache folder refused a table, it is not asked again
                problems[m.name] = refused or self._build_here(m, ident)
                refused = refused or (problems[m.name] if problems[m.name].startswith(_NOT_KEPT) else "")
            got = tables.open_table(ident, self._indexes[m.name][0].documents)
            if got is not None:
                self._tables[ident] = got
                self.engine.tables[self._indexes[m.name][3]] = got
        if self._opened or any(m.kind == "zim" for m in self.mounts):
            self.close()  # a gwtar's or ZIM's reader: each server process opens its own
        self._use_tables = True  # (trees' indexes stay open: the workers start with them parsed)
        if refused:  # said once: the mounts are served, their search reads each index without a table
            print(f"archiver serve: {refused.removeprefix(_NOT_KEPT)} (the search tables are not kept:"
                  " search reads the indexes without them)", file=sys.stderr, flush=True)  # fmt: skip
        self.prepared = {
            "tables": len(self._tables),
            "built": sum(1 for v in problems.values() if not v),
            "seconds": round(time.monotonic() - started, 3),
            "bytes": sum(t.bytes for t in self._tables.values()),
        }
        return self.prepared

    def _build_here(self, m: Mount, ident: str) -> str:
        try:
            return "" if tables.build_file(self._indexes[m.name][0], ident) else "no table"
        except StoreError as e:
            return f"{_NOT_KEPT}{e}"
        except FormatError as e:
            return e.message

    def search(self, text: str, limit: int, offset: int, origin: Callable[[Mount], str]) -> dict[str, Any]:
        """The answer to ``text`` over every mount (formats/serve.md §8). With ``ARCHIVER_SEARCH_LOG``
        set to a file, each query appends one JSON line to it: the process, its CPU and wall time
        (ms), the collections of each generation of the cyclic collector during it, the total and
        the query (formats/serve.md §8, Per-query log; read when the searcher is made)."""
        if self._log is None:
            return self._search(text, limit, offset, origin)
        before = [g["collections"] for g in gc.get_stats()]
        cpu, wall = time.process_time(), time.perf_counter()
        doc = self._search(text, limit, offset, origin)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        collected = [g["collections"] - b for g, b in zip(gc.get_stats(), before, strict=True)]
        line = {"pid": os.getpid(), "cpu_ms": round(cpu * 1000, 3), "wall_ms": round(wall * 1000, 3)}
        line |= {"gc": collected, "total": doc["total"], "q": text}
        with open(self._log, "a", encoding="utf-8") as f:  # one short line: one write (O_APPEND)
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
        return doc

    def _search(self, text: str, limit: int, offset: int, origin: Callable[[Mount], str]) -> dict[str, Any]:
        indexes, used, skipped = [], [], []
        for m in self.mounts:
            reader = self._reader(m)
            if reader is None:
                skipped.append({"mount": m.name, "reason": "no search index (archiver index or pack it)"})
                continue
            try:
                indexes.append(self._index(m, reader))
            except FormatError as e:
                skipped.append({"mount": m.name, "reason": f"damaged index: {e.subject}: {e.message}"})
                continue
            used.append(m)
        limit, offset = max(1, min(limit, MAX_LIMIT)), max(0, min(offset, MAX_OFFSET))
        doc: dict[str, Any] = {"query": text, "total": 0, "offset": offset, "limit": limit, "results": []}
        if text.strip() and indexes:
            found = self._ranked(text, limit, offset, indexes, used, skipped, doc)
            self._trim()
            for index in indexes:  # the text chunks and fragments shown stay few (no page's whole text)
                if len(index._chunks) > KEPT_CHUNKS:
                    index._chunks.clear()
                if len(index._fragments) > KEPT_FRAGMENTS:
                    index.forget_documents()
            if found is not None:
                doc["total"] = found.total
                doc["results"] = [_result(used[r.archive], r, origin) for r in found.results]
        doc["skipped"] = skipped
        return doc

    def _ranked(
        self,
        text: str,
        limit: int,
        offset: int,
        indexes: list[query.Index],
        used: list[Mount],
        skipped: list[dict[str, str]],
        doc: dict[str, Any],
    ) -> query.Results | None:
        """The answer over ``indexes`` (``used``: their mounts), kept or ranked. A mount whose index
        file turns out damaged is left out (named in ``skipped``, its open index and what the engine
        kept of it dropped, so it is read again, and said again, at the next query) and the others
        are ranked again without it; ``doc["error"]`` only when none is left (formats/serve.md §8)."""
        while indexes:
            keys = tuple(self._key(m) for m in used)
            found = self._answer((text, limit, offset), keys)
            if found is not None:
                return found
            try:
                found = self.engine.search(indexes, keys, text, limit=limit, offset=offset)
            except FormatError as e:
                reason = f"damaged index: {e.subject}: {e.message}"
                a = query.damaged_index(indexes, e)
                if a < 0:  # names no mount's file: nothing is left out, nothing answered
                    doc["error"] = reason
                    self._indexes.clear()
                    self.engine.clear()
                    return None
                m = used.pop(a)
                del indexes[a]
                skipped.append({"mount": m.name, "reason": reason})
                known = self._indexes.pop(m.name, None)
                if known is not None:
                    self.engine.forget(known[3])
                if not indexes:
                    doc["error"] = reason
                continue
            # kept under the indexes it was ranked over: without a damaged mount, it is given again
            # only after that mount's damage was met again by the same query
            self._keep_answer((text, limit, offset), keys, found)
            return found
        return None

    def _answer(self, key: tuple[str, int, int], keys: tuple[int, ...]) -> query.Results | None:
        """The results kept for ``key`` when they were ranked over the same opened indexes (a tree
        indexed again, or a mount skipped or opened again, gives other keys: ranked afresh)."""
        got = self._answers.get(key)
        if got is None:
            return None
        if got[0] != keys:
            self._drop_answer(key)
            return None
        self._answers.move_to_end(key)
        return _unkept(got[1], key[1], key[2])

    def _keep_answer(self, key: tuple[str, int, int], keys: tuple[int, ...], found: query.Results) -> None:
        size = 200 + len(key[0]) + 8 * len(keys)
        size += sum(300 + len(r.path) + len(r.title) + len(r.snippet.text) for r in found.results)
        if size > ANSWER_BYTES // 4:
            return
        self._drop_answer(key)
        self._answers[key] = (keys, _kept(found), size)
        self._answer_bytes += size
        while self._answer_bytes > ANSWER_BYTES:
            self._drop_answer(next(iter(self._answers)))

    def _drop_answer(self, key: tuple[str, int, int]) -> None:
        got = self._answers.pop(key, None)
        if got is not None:
            self._answer_bytes -= got[2]

    def close(self) -> None:
        self._answers.clear()
        self._answer_bytes = 0
        for g in self._opened:
            g.close()
        self._opened.clear()
        self._readers.clear()
        self._indexes.clear()
        self.engine.clear()
        self._use_tables = False


def table_identity(m: Mount, manifest_sha256: str) -> str:
    """What a mount's postings table is named and checked by (formats/search.md §6.5, Tables): its
    index's manifest (which pins every shard's hash) and the mount itself (its kind and the real path
    of its tree or file). Two mounts of the same index each get their own table, built from their own
    shards: one whose shards are damaged gets none and is said to be damaged (before 2026-12 it was
    answered from the other's table, keyed by the manifest alone)."""
    where = os.fsencode(os.path.realpath(m.path))
    return hashlib.sha256(b"\0".join([manifest_sha256.encode(), m.kind.encode(), where])).hexdigest()


def reader_for(
    kind: str, path: str | Path, zim: Any, opened: list[Any]
) -> tuple[Read, Callable[[str], bool]] | None:
    """How to read a mount's index files (its own, else an archive's sidecar), or None (it has none).
    A gwtar opened is added to ``opened`` (to be closed)."""
    found: tuple[Read, Callable[[str], bool]] | None = None
    try:
        if kind == "tree":
            read = _tree_read(os.path.realpath(path))
            if store.has_index(Path(path)):
                found = (read, lambda p, read=read: _has(read, p))
        elif kind == "gwtar":
            from archiver.gwtar.read import GwtarReader

            g = GwtarReader(Path(path))
            opened.append(g)
            found = (archive.member_reads(g)[0], g.has)
        elif zim is not None:
            found = (archive.entry_reads(zim)[0], zim.has)
    except (FormatError, OSError):
        found = None
    if found is not None and not found[1](f"{archive.PREFIX}manifest.js"):
        found = None
    side = archive.sidecar(Path(path))
    if found is None and kind != "tree" and (side / "manifest.js").is_file():
        read = archive.sidecar_read(side)  # archiver index ARCHIVE (formats/search.md §8.1)
        found = (read, lambda p, read=read: _has(read, p))
    return found


def _build_table(kind: str, path: str, name: str, identity: str) -> str:
    """Build one mount's postings table in a worker process: '' when done, else why not."""
    opened: list[Any] = []
    try:
        found = reader_for(kind, path, None, opened)
        if found is None:
            return "no index"
        index = archive.archive_index(found[0], f"{name}/{store.INDEX_DIR}")
        return "" if tables.build_file(index, identity) else "no table for this index"
    except StoreError as e:
        return f"{_NOT_KEPT}{e}"
    except FormatError as e:
        return f"{e.subject}: {e.message}"
    finally:
        for g in opened:
            g.close()


def _kept(found: query.Results) -> Kept:
    """``found`` as tuples of strings and numbers only: the collector stops walking a tuple that holds
    no container, where each kept :class:`~archiver.search.query.Result`, its snippet and its marks
    would be walked at every collection (formats/search.md §6.5, The collector)."""
    rows = tuple(
        (
            r.archive,
            r.doc,
            r.score,
            r.path,
            r.title,
            r.snippet.text,
            tuple(tuple(m) for m in r.snippet.marks),
            r.snippet.before,
            r.snippet.after,
        )
        for r in found.results
    )
    return found.total, rows


def _unkept(kept: Kept, limit: int, offset: int) -> query.Results:
    total, rows = kept
    out = query.Results(total, offset, limit)
    for a, doc, score, path, title, text, marks, before, after in rows:
        cut = Snippet(text, list(marks), before, after)
        out.results.append(query.Result(a, doc, score, path, title, cut))
    return out


def _has(read: Read, path: str) -> bool:
    try:
        read(path)
    except KeyError:
        return False
    except OSError:  # there, but not to be read (a FIFO, too large): opening the index says so
        return True
    return True


def _result(m: Mount, r: query.Result, origin: Callable[[Mount], str]) -> dict[str, Any]:
    segments = r.path.split("/")
    if m.kind == "gwtar":  # the loader's address of the page inside the file
        url = origin(m) + _href(m.name) + "#/" + _href(*segments).lstrip("/")
    else:
        url = origin(m) + _href(m.name, *segments)
    return {
        "mount": m.name,
        "kind": m.kind,
        "path": r.path,
        "title": r.title,
        "url": url,
        "score": r.score,
        "snippet": r.snippet.text,
        "marks": [list(k) for k in r.snippet.marks],
    }


def results_page(doc: dict[str, Any], style: str) -> bytes:
    """The bare host's results page for the index page's search box."""
    items = []
    for r in doc["results"]:
        text, at, out = r["snippet"], 0, []
        for a, b in r["marks"]:
            out += [html.escape(text[at:a]), "<mark>", html.escape(text[a:b]), "</mark>"]
            at = b
        out.append(html.escape(text[at:]))
        items.append(
            f'<li><a href="{html.escape(r["url"])}">{html.escape(r["title"] or r["path"])}</a>'
            f"<br><small>{html.escape(r['mount'])} · {html.escape(r['path'])}</small>"
            f"<p>{''.join(out)}</p></li>"
        )
    if doc["query"].strip() and not doc["results"]:
        items.append("<li>No results.</li>")
    notes = "".join(f"<li>{html.escape(s['mount'])}: {html.escape(s['reason'])}</li>" for s in doc["skipped"])
    if doc.get("error") and all(s["reason"] != doc["error"] for s in doc["skipped"]):
        notes += f"<li>{html.escape(doc['error'])}</li>"
    more = ""
    shown = doc["offset"] + len(doc["results"])
    if shown < doc["total"]:
        from urllib.parse import urlencode

        target = html.escape(urlencode({"q": doc["query"], "offset": shown}))
        more = f'<p><a href="/~/search?{target}">More results</a></p>'
    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Search every archive</title>'
        f"{style}</head><body><h1>Search every archive</h1>{search_form(doc['query'])}"
        f'<p id="status">{doc["total"]} results</p><ol id="results">{"".join(items)}</ol>{more}'
        + (f"<p>Not searched:</p><ul>{notes}</ul>" if notes else "")
        + '<p><a href="/">all archives</a></p></body></html>\n'
    )
    return text.encode("utf-8")


def search_form(value: str = "") -> str:
    return (
        '<form method="get" action="/~/search" role="search"><input id="q" name="q" type="search" '
        f'value="{html.escape(value)}" placeholder="Search every archive" autofocus> '
        "<button>Search</button></form>"
    )
