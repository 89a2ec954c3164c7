"""Reading a gwtar header back (formats/gwtar.md; research §5 items 1–4): its fields, the v1
``assets`` manifest in the order the v1 loader walks it, the extension-1 metadata and the site index's
location, and every problem found on the way (:class:`~archiver.gwtar.rules.Problem`). The inverse of
:func:`archiver.gwtar.layout.plan`.

Pure: no network, no filesystem, no clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver import tar
from archiver.gwtar.rules import (
    BUNDLE_VERSION,
    END_MARK,
    MAGIC,
    MAGIC_COMMENT,
    META_ID,
    OFFSET_DIGITS,
    OVERHEAD_DIGITS,
    TOTAL_DIGITS,
    Problem,
    is_array_index,
)

__all__ = ["ParsedHeader", "bundle_location", "index_location", "js_order", "parse_header"]

_MAX_SAFE = 2**53 - 1  # JavaScript numbers are exact up to here


@dataclass
class ParsedHeader:
    """The fields of a gwtar header and the problems found in it. ``fatal`` means the file cannot be
    read as a gwtar at all (no magic, no terminator, unreadable numeric fields or manifest).
    ``manifest`` lists ``(key, entry)`` in the order the v1 loader walks them (:func:`js_order`)."""

    overhead: int | None = None
    total: int | None = None
    end: int | None = None
    manifest: list[tuple[str, dict[str, Any]]] | None = None
    manifest_is_array: bool = False
    meta: dict[str, Any] | None = None
    extension: bool = False
    problems: list[Problem] = field(default_factory=list)
    fatal_problem: Problem | None = None

    @property
    def fatal(self) -> bool:
        return self.fatal_problem is not None

    def fail(self, message: str, offset: int | None = None, *, fatal: bool = False) -> None:
        problem = Problem(None, offset, message)
        self.problems.append(problem)
        if fatal and self.fatal_problem is None:
            self.fatal_problem = problem


def js_order(pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``Object.entries`` order of an object given as (key, value) pairs in text order: array-index
    keys first in numeric order, then the others in text order; a repeated key keeps its first
    position and its last value."""
    values: dict[str, Any] = {}
    for key, value in pairs:
        values[key] = value  # dict keeps the first insertion position, the last value
    ints = sorted((k for k in values if is_array_index(k)), key=int)
    return [(k, values[k]) for k in ints] + [(k, v) for k, v in values.items() if not is_array_index(k)]


_OVERHEAD_RE = re.compile(rb'let overhead = parseInt\("([^"\n]{0,64})"\)')
_TOTAL_RE = re.compile(rb'let totalArchiveSize = parseInt\("([^"\n]{0,64})"\)')
_META_OPEN = f'<script type="application/json" id="{META_ID}">'.encode()
_EXT_LINE = b"<!-- archiver gwtar "
_V1_KEY = re.compile(r".+-asset-[0-9]+\.[0-9A-Za-z]+")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _number_field(
    ph: ParsedHeader, data: bytes, regex: re.Pattern[bytes], name: str, width: int
) -> int | None:
    m = regex.search(data)
    if m is None:
        ph.fail(f"no '{name} = parseInt(\"…\")' field in the header", fatal=True)
        return None
    raw = m.group(1)
    text = raw.decode("ascii", "replace")
    if not raw.isdigit() or not raw.isascii():
        ph.fail(f"{name} is not a decimal number: {text!r}", m.start(1), fatal=True)
        return None
    if len(raw) != width:
        ph.fail(f"{name} has {len(raw)} digits, v1 fixes {width}: {text!r}", m.start(1))
    return int(raw)


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_SAFE


def _parse_json(text: bytes) -> Any:
    pairs_seen: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):  # each key met again (keys.count of each key was quadratic:
            seen: set[str] = set()  # 40,000 keys and one twice took 9 s of CPU)
            for k in keys:
                if k in seen:
                    pairs_seen.append(k)
                seen.add(k)
        return _Pairs(pairs)

    value = json.loads(text.decode("utf-8"), object_pairs_hook=hook)
    return value, sorted(set(pairs_seen))


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs in text order."""


def _plain(value: Any) -> Any:
    if isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_header(data: bytes) -> ParsedHeader:
    """Parse the header at the start of ``data`` (the file's first bytes, at least up to and including
    ``<!-- GWTAR END``). Never raises: every problem is in the result (research §5 items 1–4)."""
    ph = ParsedHeader()
    if not data.startswith(MAGIC) and MAGIC_COMMENT not in data[:1024]:
        ph.fail("not a gwtar: no '<!-- Gwtar self-extracting HTML archive, v1 -->' in the first 1 KB", 0,
                fatal=True)  # fmt: skip
        return ph
    if not data.startswith(b"<html>"):
        ph.fail("the file does not start with '<html>'", 0)
    end_at = data.find(END_MARK)
    if end_at < 0:
        ph.fail("no '<!-- GWTAR END' line: the header is truncated or too large", len(data), fatal=True)
        return ph
    ph.end = end_at + len(END_MARK)
    head = data[: ph.end]
    ph.extension = _EXT_LINE in head[:1024]

    ph.overhead = _number_field(ph, head, _OVERHEAD_RE, "overhead", OVERHEAD_DIGITS)
    ph.total = _number_field(ph, head, _TOTAL_RE, "totalArchiveSize", TOTAL_DIGITS)
    if ph.overhead is not None and ph.overhead != ph.end:
        ph.fail(f"overhead is {ph.overhead} but '<!-- GWTAR END' ends the header at {ph.end}", ph.end)
    if ph.overhead is not None and ph.total is not None and ph.total < ph.overhead + 2 * tar.BLOCK:
        ph.fail(f"totalArchiveSize {ph.total} leaves no room for a tar after overhead {ph.overhead}",
                fatal=True)  # fmt: skip
    if ph.overhead is not None and ph.overhead > ph.end and END_MARK in data[ph.end : ph.overhead]:
        ph.fail("'<!-- GWTAR END' appears more than once in the header", ph.end)

    try:
        _parse_manifest(ph, head)
    except RecursionError:
        ph.fail("the manifest is nested too deeply", fatal=True)
    try:
        _parse_meta(ph, head)
    except RecursionError:
        ph.fail("the metadata is nested too deeply")
    return ph


def _parse_manifest(ph: ParsedHeader, head: bytes) -> None:
    start = head.find(b"let assets = ")
    if start < 0:
        ph.fail("no 'let assets = ' manifest in the header", fatal=True)
        return
    start += len(b"let assets = ")
    close = head.find(b"</script>", start)
    if close < 0:
        ph.fail("the manifest's <script> is not closed", start, fatal=True)
        return
    text = head[start:close].strip()
    if text.endswith(b";"):
        text = text[:-1].rstrip()
    try:
        value, dupes = _parse_json(text)
    except RecursionError:
        ph.fail("the manifest is not valid JSON: nested too deeply", start, fatal=True)
        return
    except (ValueError, UnicodeDecodeError) as e:
        ph.fail(f"the manifest is not valid JSON: {str(e)[:120]}", start, fatal=True)
        return
    for key in dupes:
        ph.fail(f"manifest key {key!r} appears more than once", start)
    if isinstance(value, _Pairs):
        pairs = list(value)
    elif isinstance(value, list):
        ph.manifest_is_array = True
        pairs = [(str(i), v) for i, v in enumerate(value)]
    else:
        ph.fail("the manifest is neither a JSON object nor an array", start, fatal=True)
        return
    ordered = js_order(pairs)
    manifest: list[tuple[str, dict[str, Any]]] = []
    for key, entry in ordered:
        if not isinstance(entry, _Pairs):
            ph.fail(f"manifest entry {key!r} is not an object", start)
            entry = _Pairs()
        manifest.append((key, _plain(entry)))
    ph.manifest = manifest
    keys = [k for k, _ in manifest]
    if "0" not in keys:
        ph.fail('the manifest has no entry "0" (the main page)', start)
    for key, entry in manifest:
        if not _is_size(entry.get("size")):
            ph.fail(f"manifest entry {key!r}: size is not a non-negative integer: {entry.get('size')!r}",
                    start, fatal=True)  # fmt: skip
        h = entry.get("hash")
        if h is None:
            ph.fail(f"manifest entry {key!r} has no hash", start)
        elif not isinstance(h, str) or not _HEX64.fullmatch(h):
            ph.fail(f"manifest entry {key!r}: hash is not 64 lowercase hex digits", start)
        if not isinstance(entry.get("content-type"), str):
            ph.fail(f"manifest entry {key!r} has no content-type", start)
        if key == "0":
            if entry.get("content-type") != "text/html":
                ph.fail(f'manifest entry "0": content-type is {entry.get("content-type")!r}, not text/html',
                        start)  # fmt: skip
            if not isinstance(entry.get("basename"), str) or not entry.get("basename"):
                ph.fail('manifest entry "0" has no basename', start)
        elif not ph.manifest_is_array:
            if is_array_index(key):
                ph.fail(f"manifest key {key!r} looks like an array index: v1 readers move it first", start)
            elif not ph.extension and not _V1_KEY.fullmatch(key):
                ph.fail(f"manifest key {key!r} is not of the v1 form BASE-asset-N.EXT", start)


def _parse_meta(ph: ParsedHeader, head: bytes) -> None:
    start = head.find(_META_OPEN)
    if start < 0:
        if ph.extension:
            ph.fail(f'the header names archiver gwtar but has no <script id="{META_ID}"> element', 0)
        return
    start += len(_META_OPEN)
    close = head.find(b"</script>", start)
    if close < 0:
        ph.fail("the metadata <script> is not closed", start)
        return
    try:
        value, _ = _parse_json(head[start:close])
    except RecursionError:
        ph.fail("the metadata is not valid JSON: nested too deeply", start)
        return
    except (ValueError, UnicodeDecodeError) as e:
        ph.fail(f"the metadata is not valid JSON: {str(e)[:120]}", start)
        return
    meta = _plain(value)
    if not isinstance(meta, dict) or meta.get("format") != META_ID:
        ph.fail(f"the metadata element is not an object with format {META_ID!r}", start)
        return
    if not isinstance(meta.get("version"), int):
        ph.fail("the metadata has no integer version", start)
        return
    ph.meta = meta
    ph.extension = True


def index_location(meta: dict[str, Any]) -> tuple[int, int, str] | str:
    """(data offset relative to the tar start, size, sha256) of the site index from the metadata, or a
    message saying what is wrong with it."""
    index = meta.get("index")
    if not isinstance(index, dict):
        return "the metadata has no index object"
    out = _offset_size(index, "index")
    if isinstance(out, str):
        return out
    sha = index.get("sha256")
    if not isinstance(sha, str) or not _HEX64.fullmatch(sha):
        return "index sha256 is not 64 lowercase hex digits"
    return out[0], out[1], sha


def bundle_location(meta: dict[str, Any]) -> tuple[int, int, int, int] | str | None:
    """(data offset relative to the tar start, size, first, count) of the bundle member and the site
    index entries of its files (formats/gwtar.md §5.5) from the metadata of an extension-2 file, None
    when the file has no bundle (an earlier version), or a message saying what is wrong with it."""
    if meta.get("version") != BUNDLE_VERSION:
        return None
    bundle = meta.get("bundle")
    if not isinstance(bundle, dict):
        return "the metadata of an extension-2 file has no bundle object"
    where = _offset_size(bundle, "bundle")
    if isinstance(where, str):
        return where
    first, count = bundle.get("first"), bundle.get("count")
    if not (_is_size(first) and _is_size(count)) or count < 1:
        return f"bundle first and count are not entry numbers: {first!r}, {count!r}"
    return where[0], where[1], first, count


def _offset_size(obj: dict[str, Any], what: str) -> tuple[int, int] | str:
    out: list[int] = []
    for name in ("offset", "size"):
        value = obj.get(name)
        if isinstance(value, str) and value.isascii() and value.isdigit():
            if len(value) != OFFSET_DIGITS:
                return f"{what} {name} has {len(value)} digits, not {OFFSET_DIGITS}"
            out.append(int(value))
        elif _is_size(value):
            out.append(value)
        else:
            return f"{what} {name} is not a decimal number: {value!r}"
    return out[0], out[1]
