"""The search index builder (formats/search.md §4–§5). Pure: no network, no filesystem, no clock.

Documents arrive one at a time (:meth:`Builder.add`); their fragments (path, title, headings, text
for snippets) leave through the ``emit`` callback as soon as a group is full, so the texts of the
archive are never held together. What grows with the archive is the term dictionary and its
postings, kept as compact arrays of 32-bit numbers, and written in sorted term ranges by
:meth:`Builder.finish`, which emits the shards and returns the manifest. Same documents in the same
order → the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from archiver.errors import FormatError
from archiver.search.prepare import (
    _SHORT,
    _SHORT_BYTES,
    CHUNK_CHARS,
    DIGITS,
    MAX_POSITIONS,
    Prepared,
    _digits,
)
from archiver.search.prepare import prepare as _prepare
from archiver.search.text import Page
from archiver.search.tokens import TOKENIZER

__all__ = [
    "CHUNK_CHARS",
    "DIGITS",
    "FORMAT",
    "MAX_POSITIONS",
    "VERSION",
    "VERSIONS",
    "Builder",
    "Prepared",
    "boilerplate",
    "order_key",
    "pack_numbers",
    "payload_of",
    "prepare",
    "unpack_numbers",
    "wrap",
]

FORMAT = "archiver-search"
#: The format version written (formats/search.md §1); readers read every version up to it.
VERSION = 3
#: The versions this archiver reads: 1 (postings as JSON numbers), 2 (postings as a string, §4.3),
#: 3 (every file but the manifest compressed, §4.1; the text table in the fragment groups, §4.4).
VERSIONS = (1, 2, 3)
#: Format 3 names a file's payload by the first 128 bits of its SHA-256 (32 hex digits; §4.2): enough
#: for any damage and any forgery, and half the bytes of the tables a query reads.
HASH_HEX = 32
#: Format 3: a compressed payload expands to at most this many bytes (a hostile file is refused).
MAX_EXPANDED = 64 << 20
#: Bounds of the manifest (formats/search.md §4.2, every version): its bytes, and the rows of its
#: ``shards`` and ``docs`` tables and its text files (``text`` rows, or format 3's ``text_files``).
#: No real index reaches them: 32 MiB is a million pages in format 3 (about 33 bytes a page: the
#: Python docs' is 18 KB for 541 pages) and 150,000 in format 2 (224 bytes a page); the generated
#: corpus has 0.36 shards, 0.09 groups and 1.19 text files a page, the docutils docs 0.57, 0.18 and
#: 4.4 (so 460,000, 1.4 million and 240,000 pages at the least, a search index of gigabytes). A
#: manifest past them is refused as it is opened (its bytes before they are parsed, its rows before
#: its tables are read): verify of a forged one of 1,000,000 shard rows took 13 s of CPU and 848 MB.
MAX_MANIFEST_BYTES = 32 << 20
MAX_SHARDS = 1 << 18
MAX_GROUPS = 1 << 18
MAX_TEXT_FILES = 1 << 20
#: Version 2's postings' digits (formats/search.md §4.3): :data:`archiver.search.prepare.DIGITS`.
_VALUE = {c: i for i, c in enumerate(DIGITS)}
#: Pages sampled, in the order given, to find the boilerplate blocks (§2.2).
BOILERPLATE_SAMPLE = 256
SHARD_BYTES = 16 << 10
GROUP_BYTES = 2 << 10  # format 3 counts the group's text table in it (about 100 bytes a row)
TEXT_BYTES = 4 << 10
_FIELDS = ("title", "headings", "body")

Emit = Callable[[str, bytes], None]
#: A file for :class:`Files` to make: its name, its JSON payload (or what gives it, called once the
#: files before it are made: a fragment group's text table holds their sizes and hashes), and the
#: table row that gets its size and hash, at this index and the next.
Job = tuple[str, "bytes | Callable[[], bytes]", list[Any], int]
#: Shards handed to :class:`Files` together (a fragment group goes with its text files).
_SHARDS_A_BATCH = 8


def order_key(term: str) -> bytes:
    """The order of terms in the shards: UTF-16 code units, the order of JavaScript's ``<``."""
    return term.encode("utf-16-be")


#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, made once: ``json.dumps`` with
#: these arguments builds an encoder a call (a third of ``finish`` on 30,000 terms).
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: A JSON string of a str, quotes included, as the encoder above writes it (its C function).
_STRING: Callable[[str], str] = json.encoder.encode_basestring


def _dumps(value: Any) -> bytes:
    return _ENCODE(value).encode("utf-8")


def _packed_bytes(value: int) -> bytes:
    """Version 2's postings digits of one number, as ASCII bytes."""
    return _SHORT_BYTES[value] if value < 32768 else _digits(value).encode("ascii")


def pack_numbers(numbers: Iterable[int]) -> str:
    """Version 2's postings string of ``numbers`` (each ≥ 0)."""
    if not isinstance(numbers, (list, array)):
        numbers = list(numbers)
    if not numbers:
        return ""
    if max(numbers) < 32768:  # every number from the table, at C speed
        return "".join(map(_SHORT.__getitem__, numbers))
    return "".join([_SHORT[v] if v < 32768 else _digits(v) for v in numbers])


def unpack_numbers(text: str) -> list[int]:
    """The numbers of a postings string; ValueError when it is not one."""
    out: list[int] = []
    value = shift = 0
    try:
        for c in text:
            d = _VALUE[c]
            if d < 32:
                out.append(value | d << shift)
                value = shift = 0
            else:
                value |= (d - 32) << shift
                shift += 5
    except KeyError:
        raise ValueError(f"holds {c!r}, which is no postings digit") from None
    if shift:
        raise ValueError("ends inside a number")
    return out


def wrap(name: str, payload: bytes) -> bytes:
    """A file of the index: the JSON ``payload`` as one call of the page's registration function,
    ``archiverSearch("<name>",<payload>);`` and a newline (§4.1)."""
    return b"archiverSearch(" + _dumps(name) + b"," + payload + b");\n"


def deflate(payload: bytes) -> bytes:
    """Format 3's payload of every file but the manifest: the JSON ``payload`` compressed (zlib,
    RFC 1950) and carried as a base-64 JSON string (§4.1)."""
    return b'"' + base64.b64encode(zlib.compress(payload, 6)) + b'"'


def inflate(payload: bytes) -> bytes:
    """The JSON a format 3 payload carries; ValueError when it is not one."""
    if len(payload) < 2 or payload[:1] != b'"' or payload[-1:] != b'"':
        raise ValueError("is not a compressed payload (a base-64 string)")
    try:
        packed = base64.b64decode(payload[1:-1], validate=True)
        unpack = zlib.decompressobj()
        out = unpack.decompress(packed, MAX_EXPANDED)
    except (ValueError, zlib.error) as e:
        raise ValueError(f"cannot be decompressed ({e})") from None
    if unpack.unconsumed_tail:
        raise ValueError(f"expands to more than {MAX_EXPANDED} bytes")
    if not unpack.eof or unpack.unused_data:
        raise ValueError("cannot be decompressed (its stream is cut or followed by other bytes)")
    return out


def payload_of(name: str, data: bytes) -> bytes:
    """The JSON payload of a file :func:`wrap` wrote for ``name``; ValueError when it is not one."""
    head = b"archiverSearch(" + _dumps(name) + b","
    if not data.startswith(head) or not data.endswith(b");\n"):
        raise ValueError("is not an index file of this name (its wrapper is wrong)")
    return data[len(head) : -3]


def boilerplate(pages: Iterable[Page]) -> frozenset[str]:
    """The blocks repeated on more than half of ``pages`` (at most :data:`BOILERPLATE_SAMPLE`, and
    at least 4 of them: a smaller archive has none), which are not indexed (§2.2)."""
    seen: Counter[str] = Counter()
    count = 0
    for page in pages:
        count += 1
        seen.update({text for _, text in page.blocks})
        if count >= BOILERPLATE_SAMPLE:
            break
    if count < 4:
        return frozenset()
    return frozenset(text for text, n in seen.items() if 2 * n > count)


def prepare(page: Page, skip: frozenset[str] = frozenset(), version: int = VERSION) -> Prepared:
    """The per-page work of indexing ``page`` (its blocks in ``skip`` left out; §5): what
    :func:`archiver.search.prepare.prepare` makes. Pure."""
    return _prepare(page, skip, version)


class Files:
    """The index's files made in the order given: each JSON payload compressed (format 3) and
    wrapped (§4.1), emitted, its size and hash written into its table row, each batch in the call.
    :class:`archiver.search.filethread.ThreadedFiles` makes them on a thread of its own instead; the
    rows are complete once :meth:`close` has returned (``abort``: the build is given up)."""

    def __init__(self, emit: Emit, version: int) -> None:
        self._emit = emit
        self._version = version

    def make(self, jobs: list[Job]) -> None:
        self._make(jobs)

    def _make(self, jobs: list[Job]) -> None:
        for name, payload, row, k in jobs:
            if callable(payload):
                payload = payload()
            if self._version >= 3:
                payload = deflate(payload)
            data = wrap(name, payload)
            self._emit(name, data)
            sha = hashlib.sha256(payload).hexdigest()
            row[k : k + 2] = len(data), sha[:HASH_HEX] if self._version >= 3 else sha

    def close(self, abort: bool = False) -> None:
        """Every row is complete (nothing to wait for here)."""


class Builder:
    """Build one index; ``emit(name, data)`` receives every file but the manifest, which
    :meth:`finish` returns (to be written last, under the name ``manifest``). ``files`` (format 3):
    what makes the files, in the same order (a :class:`Files` of ``emit`` by default; the tree's
    build gives a :class:`~archiver.search.filethread.ThreadedFiles`); :meth:`abort` ends it when
    the build is given up."""

    def __init__(
        self,
        emit: Emit,
        *,
        skip: frozenset[str] = frozenset(),
        shard_bytes: int = SHARD_BYTES,
        group_bytes: int = GROUP_BYTES,
        text_bytes: int = TEXT_BYTES,
        version: int = VERSION,
        files: Files | None = None,
    ) -> None:
        if version not in VERSIONS:
            raise ValueError(f"no search index format {version}")
        self._version = version  # 1: what the last release wrote (the compatibility tests build it)
        self._files = files if files is not None and version >= 3 else Files(emit, version)
        self._jobs: list[Job] = []  # format 3: the files of the open group, handed over with it
        self._skip = skip
        self._shard_bytes = shard_bytes
        self._group_bytes = group_bytes
        #: each term's postings; format 3: as written (§4.3), the documents as gaps, already packed
        self._postings: dict[str, Any] = {}
        self._last_doc: dict[str, int] = {}  # format 3: each term's last document
        self._docs = 0
        self._tokens = 0
        self._group: list[bytes] = []
        self._group_first = 0
        self._group_size = 0
        self._groups: list[list[Any]] = []
        self._text_bytes = text_bytes
        self._texts: list[list[Any]] = []
        self._text: list[bytes] = []
        self._text_first: tuple[int, int] = (0, 0)
        self._text_last: tuple[int, int] = (0, 0)
        self._text_size = 0
        self._text_files = 0
        self._lengths = array("I")  # format 3: each document's (length, title length), §4.2
        self._group_texts: list[list[Any]] = []  # format 3: the text files of the open group

    def _file(self, name: str, payload: bytes | Callable[[], bytes], row: list[Any]) -> list[Any]:
        """File ``name`` holding the JSON ``payload`` (compressed in format 3), its size and SHA-256
        written into the last two places of ``row`` (filled with None here) once made: by the
        next :meth:`_hand_over` (at once before format 3); returns ``row``."""
        k = len(row)
        row += (None, None)
        self._jobs.append((name, payload, row, k))
        if self._version < 3:
            self._hand_over()
        return row

    def _hand_over(self) -> None:
        if self._jobs:
            self._files.make(self._jobs)
            self._jobs = []

    def abort(self) -> None:
        """Give the build up: no more files are made (a thread making them has ended)."""
        self._jobs = []
        self._files.close(abort=True)

    def add(self, path: str, page: Page) -> int:
        """Index one document; returns its number."""
        return self.add_prepared(path, prepare(page, self._skip, self._version))

    def add_prepared(self, path: str, prepared: Prepared) -> int:
        """Index one document that :func:`prepare` made ready (in this process or in a worker, with
        this builder's ``skip`` and version); returns its number."""
        doc = self._docs
        self._docs += 1
        length, title_length = prepared.length, prepared.title_length
        self._tokens += length
        self._lengths.extend((length, title_length))
        numbers, offsets = prepared.numbers, prepared.offsets
        get = self._postings.get
        if self._version >= 3:  # the postings as written: the gap from the term's previous document
            last = self._last_doc
            digits = memoryview(numbers)
            packed = _packed_bytes
            for term, start, end in zip(prepared.terms, offsets, offsets[1:], strict=False):
                postings = get(term)
                if postings is None:
                    postings = self._postings[term] = bytearray(packed(doc))
                else:
                    postings += packed(doc - last[term])
                last[term] = doc
                postings += digits[start:end]
        else:
            for term, start, end in zip(prepared.terms, offsets, offsets[1:], strict=False):
                postings = get(term)
                if postings is None:
                    postings = self._postings[term] = array("I")
                postings.append(doc)
                postings.extend(numbers[start:end])
        record = [path, prepared.title, prepared.headings, prepared.starts]
        if self._version < 3:
            self._add_fragment(doc, record)
        for k, chunk in enumerate(prepared.chunks):
            self._add_text(doc, k, chunk)
        if self._version >= 3:  # a group's text files are listed in it: they close with it
            self._add_fragment(doc, record)
        return doc

    def _add_text(self, doc: int, chunk: int, text: str) -> None:
        data = f"[{doc},{chunk},{_STRING(text)}]".encode()  # _dumps([doc, chunk, text]), a third of the time
        if not self._text:
            self._text_first = (doc, chunk)
        self._text.append(data)
        self._text_last = (doc, chunk)
        self._text_size += len(data)
        if self._text_size >= self._text_bytes:
            self._close_text()

    def _close_text(self) -> None:
        if not self._text:
            return
        number = self._text_files
        self._text_files += 1
        payload = b"[" + b",".join(self._text) + b"]"
        first, last = self._text_first, self._text_last
        if self._version >= 3:
            self._group_texts.append(self._file(f"x/{number}", payload, [number, *first, *last]))
            self._group_size += 100  # a row of the group's text table counts towards its size
        else:
            self._texts.append(self._file(f"x/{number}", payload, [*first, *last]))
        self._text, self._text_size = [], 0

    def _add_fragment(self, doc: int, record: list[Any]) -> None:
        data = _dumps(record)
        self._group.append(data)
        self._group_size += len(data)
        if self._group_size >= self._group_bytes:
            self._close_group(doc)

    def _close_group(self, last: int) -> None:
        if not self._group:
            return
        docs = b"[" + b",".join(self._group) + b"]"
        name, row = f"d/{len(self._groups)}", [self._group_first, last]
        if self._version >= 3:
            self._close_text()
            texts = self._group_texts  # their rows are complete once their files are made, first
            self._groups.append(
                self._file(name, lambda: b'{"docs":' + docs + b',"text":' + _dumps(texts) + b"}", row)
            )
            self._group_texts = []
            self._hand_over()
        else:
            self._groups.append(self._file(name, docs, row))
        self._group, self._group_size, self._group_first = [], 0, last + 1

    def _entry(self, term: str) -> bytes:
        flat = self._postings[term]
        if self._version >= 3:  # already as written (add_prepared)
            # _dumps([term, pack_numbers(numbers)]): its digits need no escape
            return b"[" + _STRING(term).encode() + b',"' + flat + b'"]'
        out: list[int] = []
        previous_doc = 0
        i = 0
        while i < len(flat):
            doc, t, h, b, length, title_length, n = flat[i : i + 7]
            positions = flat[i + 7 : i + 7 + n]
            out.extend((doc - previous_doc, t, h, b, length, title_length, n))
            previous = 0
            for p in positions:
                out.append(p - previous)
                previous = p
            previous_doc = doc
            i += 7 + n
        return _dumps([term, out if self._version == 1 else pack_numbers(out)])

    def finish(self) -> dict[str, Any]:
        """Emit the last fragment group and every term shard; return the manifest (§4.2)."""
        self._close_group(self._docs - 1)
        self._close_text()
        shards: list[list[Any]] = []
        batch: list[bytes] = []
        first = last = ""
        size = 0

        def close() -> None:
            nonlocal batch, size
            row = self._file(f"t/{len(shards)}", b"[" + b",".join(batch) + b"]", [first, last])
            shards.append(row)
            row.append(len(batch))  # after the size and hash
            if len(shards) % _SHARDS_A_BATCH == 0:
                self._hand_over()
            batch, size = [], 0

        for term in sorted(self._postings, key=order_key):
            entry = self._entry(term)
            if not batch:
                first = term
            batch.append(entry)
            last = term
            size += len(entry) + 1
            if size >= self._shard_bytes:
                close()
        if batch:
            close()
        self._hand_over()
        self._files.close()  # every row is complete
        self._postings.clear()
        self._last_doc.clear()
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "version": self._version,
            "tokenizer": TOKENIZER,
            "documents": self._docs,
            "avgdl": round(self._tokens / self._docs, 3) if self._docs else 0,
            "fields": list(_FIELDS),
            "shards": shards,
            "docs": self._groups,
        }
        if self._version >= 3:
            manifest["text_files"] = self._text_files  # their table is in the fragment groups (§4.4)
            manifest["lengths"] = pack_numbers(self._lengths)
        else:
            manifest["text"] = self._texts
        return manifest


def bounds_problem(manifest: Any) -> str:
    """Why ``manifest`` (its JSON value) holds more rows or text files than the format allows (""
    when it does not, or when its tables are not lists: the reader says they are malformed)."""
    if not isinstance(manifest, dict):
        return ""
    for key, most in (("shards", MAX_SHARDS), ("docs", MAX_GROUPS), ("text", MAX_TEXT_FILES)):
        rows = manifest.get(key)
        if isinstance(rows, list) and len(rows) > most:
            return f"its {key} table has {len(rows)} rows, more than the format allows ({most})"
    try:
        files = int(manifest.get("text_files", 0))
    except (TypeError, ValueError, OverflowError):
        return ""
    if files > MAX_TEXT_FILES:
        return f"says {files} text files, more than the format allows ({MAX_TEXT_FILES})"
    return ""


def manifest_bytes(manifest: dict[str, Any]) -> bytes:
    """The manifest file (``manifest.js``); a FormatError for an index past the format's bounds
    (:func:`bounds_problem`), which every reader would refuse."""
    data = wrap("manifest", _dumps(manifest))
    why = bounds_problem(manifest) or (
        f"is {len(data)} bytes, more than {MAX_MANIFEST_BYTES}" if len(data) > MAX_MANIFEST_BYTES else ""
    )
    if why:
        raise FormatError(f"the site is too large for one search index: its manifest {why}")
    return data
