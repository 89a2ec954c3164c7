"""Serialise HTML so pattern-based link checkers do not misfire, keeping the DOM identical.

Debian bookworm's zimcheck 3.1.3 (the checker everyone runs) does not parse HTML: it looks for the
bytes `` href`` or `` src``, optional white space, ``=``, white space and a quote, and takes what
follows up to the same quote for a link — in text, in attribute values and in tags alike. Two things
an ordinary page holds then make it fail a ZIM:

- text that *shows* markup, ``<code>&lt;base href="/docs/"&gt;</code>``: a "broken link" ``/docs/``;
- an empty link, ``<a href="">`` (a link to the page itself): an "empty link" error.

:func:`zimcheck_safe` rewrites exactly those bytes, in ways that every HTML parser reads back as the
same DOM (formats/zim.md §3.1):

- a quote that would close such a pattern in a **text node** or a **quoted attribute value** (where
  character references are decoded) becomes ``&quot;`` / ``&#39;``;
- a real ``href=""`` / ``src=""`` attribute (any quotes) becomes the empty-attribute syntax ``href``,
  whose value is the empty string.

Script, style, comments and other raw-text content are never touched (a character reference would
not be decoded there). Each result is checked: both documents are parsed with lexbor (an HTML5
parser) and the edit is dropped unless the two DOMs serialise identically. The edits are returned so
``extract`` can restore the original bytes (:func:`restore`).

Pure: no network, no filesystem, no clock. Bytes in, bytes out.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from selectolax.lexbor import LexborHTMLParser

from archiver.html_depth import bound_depth_bytes

__all__ = [
    "Attribute",
    "Edit",
    "StartTag",
    "apply_edits",
    "decode_edits",
    "encode_edits",
    "restore",
    "start_tags",
    "zimcheck_safe",
]

_WS = rb"[ \t\n\f\r]"
_RAW_NAMES = rb"script|style|xmp|iframe|noembed|noframes|noscript|textarea|title|plaintext"
# one attribute (or separator) of a tag, as HTML5 tokenises it; atomic, so a failed match cannot
# re-split names (no catastrophic backtracking)
_ATTR = rb"(?>[\s/]+|[^\s/>][^\s/>=]*+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]*+))?)"
_TAG_BODY = rb"(?:" + _ATTR + rb")*"
# the tokens of the data state; raw-text elements and comments count only with their closer
_RAW_ELEMENTS = b"".join(
    rb"|<" + name + rb"(?=[\s/>])" + _TAG_BODY + rb">.*?(?=</" + name + rb"[\s/>])"
    for name in _RAW_NAMES.split(b"|")
)
# one token of the data state; _TOKENS: a run of them
_TOKEN = re.compile(
    rb"(?>[^<]++"
    rb"|<!--(?:-?>|.*?--!?>)"
    + _RAW_ELEMENTS
    + rb"|<(?!(?:"
    + _RAW_NAMES
    + rb")[\s/>])[A-Za-z][^\s/>]*+"
    + _TAG_BODY
    + rb">"
    rb"|</[A-Za-z][^\s/>]*+" + _TAG_BODY + rb">"
    rb"|<(?:![^-]|!-[^-]|\?|/[^A-Za-z>])[^>]*+>"
    rb"|<(?![A-Za-z/!?]))",
    re.S | re.I,
)
_START_TAG = re.compile(rb"<([A-Za-z][^\s/>]*+)(" + _TAG_BODY + rb")>", re.S)
_ATTRIBUTE = re.compile(rb"[\s/]*+([^\s/>][^\s/>=]*+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>]*+))?", re.S)
_TOKENS = re.compile(rb"(?:" + _TOKEN.pattern + rb")*+", re.S | re.I)
# a start tag up to an attribute boundary, and up to inside a quoted attribute value
_TAG_PREFIX = re.compile(rb"<[A-Za-z][^\s/>]*+" + _TAG_BODY, re.S)
_IN_VALUE = re.compile(
    rb"<[A-Za-z][^\s/>]*+" + _TAG_BODY + rb"[^\s/>][^\s/>=]*+\s*=\s*(?:\"[^\"]*|'[^']*)", re.S
)
# what zimcheck 3.1.3 takes for the start of a link (case-sensitive, one literal space before)
_PATTERN = re.compile(rb" (?:href|src)" + _WS + rb"*=" + _WS + rb"*([\"'])")
_EMPTY_VALUE = re.compile(rb"=" + _WS + rb"*(\"\"|'')(?=[\s/>])")
_EMPTY_NAME = re.compile(rb" (?:href|src)" + _WS + rb"*\Z")
_ENTITY = {b'"': b"&quot;", b"'": b"&#39;"}
_OTHER = {b'"': b"'", b"'": b'"'}
_LIMIT = 16 << 20


@dataclass(frozen=True)
class Edit:
    """At ``offset`` of the rewritten document, ``new`` replaced ``old``."""

    offset: int
    old: bytes
    new: bytes


class _State:
    """Where a position is, found by tokenising from the last known data-state position onwards
    (candidates come in increasing order, so the whole page is tokenised about once)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.last = 0

    def in_text(self, pos: int) -> bool:
        """Whether ``pos`` is in the data state (text, not in a tag, comment or raw text)."""
        if pos < self.last:
            return False
        end = _TOKENS.match(self.data, self.last, pos).end()
        self.last = end
        return end == pos

    def tag_start(self, pos: int) -> int | None:
        """The start of the start tag ``pos`` is inside, when the text before that tag is whole."""
        lt = self.data.rfind(b"<", self.last, pos)
        if lt < 0 or not self.in_text(lt):
            return None
        return lt


class Attribute(NamedTuple):
    """One attribute of a start tag: where its name starts, its name (lowercased), its value with
    character references decoded, and the value as written (without quotes) at ``data[start:end]``."""

    offset: int
    name: str
    value: str
    start: int
    end: int


class StartTag(NamedTuple):
    """A start tag: its name (lowercased), its attributes in order, and the offset just past ``>``."""

    name: str
    attributes: list[Attribute]
    end: int


def start_tags(data: bytes) -> Iterator[StartTag]:
    """Every start tag of ``data`` in order, as HTML5 tokenises it (the contents of script, style
    and the other raw-text elements are not looked into). Stops where the bytes cannot be tokenised
    (nothing after that)."""
    pos, end = 0, len(data)
    while pos < end:
        m = _TOKEN.match(data, pos)
        if m is None or m.end() == pos:
            return
        if data[pos : pos + 1] == b"<" and data[pos + 1 : pos + 2].isalpha():
            tag = _START_TAG.match(data, pos)
            if tag is not None:
                attributes = []
                at, body_end = tag.start(2), tag.end(2)
                while at < body_end:
                    a = _ATTRIBUTE.match(data, at, body_end)
                    if a is None or a.end() == at:
                        break
                    v0, v1 = (a.start(2), a.end(2)) if a.group(2) is not None else (a.end(), a.end())
                    if data[v0 : v0 + 1] in (b'"', b"'"):
                        v0, v1 = v0 + 1, v1 - 1
                    value = html.unescape(data[v0:v1].decode("utf-8", "replace"))
                    name = a.group(1).decode("latin-1").lower()
                    attributes.append(Attribute(a.start(1), name, value, v0, v1))
                    at = a.end()
                yield StartTag(tag.group(1).decode("latin-1").lower(), attributes, tag.end())
        pos = m.end()


def _find_edits(data: bytes) -> tuple[list[tuple[int, bytes, bytes]], bool]:
    """(edits, whether any is in text or an attribute value)."""
    candidates: list[tuple[int, int, int]] = []  # (position, kind, match end); kind 0 pattern, 1 empty
    for m in _PATTERN.finditer(data):
        candidates.append((m.start(), 0, m.start(1)))
    for m in _EMPTY_VALUE.finditer(data):
        name = _EMPTY_NAME.search(data, max(0, m.start() - 40), m.start())
        if name is not None:
            candidates.append((name.start(), 1, m.end(1)))
    candidates.sort()
    out: list[tuple[int, bytes, bytes]] = []
    risky = False
    state = _State(data)
    for pos, kind, end in candidates:
        if kind == 0:
            q = end
            # most candidates are real attributes: skipping one is always safe (the DOM stays), so
            # a cheap look at the nearest '<' and '>' leaves them out before any tokenising
            lt, gt = data.rfind(b"<", 0, pos), data.rfind(b">", 0, pos)
            if gt < lt and _OTHER[data[q : q + 1]] not in data[lt:pos]:
                continue  # in a tag, and in no quoted value that could hold this quote
            if state.in_text(pos):
                out.append((q, data[q : q + 1], _ENTITY[data[q : q + 1]]))
                risky = True
                continue
            lt = state.tag_start(pos)
            if lt is not None and _IN_VALUE.fullmatch(data, lt, pos):  # inside a quoted value
                out.append((q, data[q : q + 1], _ENTITY[data[q : q + 1]]))
                risky = True
        else:
            lt = state.tag_start(pos)
            if lt is not None and _TAG_PREFIX.fullmatch(data, lt, pos + 1):
                name_end = pos + (5 if data[pos + 1 : pos + 5] == b"href" else 4)
                out.append((name_end, data[name_end:end], b""))
    out.sort()
    return out, risky


def apply_edits(data: bytes, found: list[tuple[int, bytes, bytes]]) -> tuple[bytes, list[Edit]]:
    """``data`` with the replacements ``(offset, old, new)`` (offsets in ``data``, in order; one that
    overlaps the one before is dropped) made, and the edits as :func:`restore` takes them."""
    parts: list[bytes] = []
    edits: list[Edit] = []
    last = 0
    shift = 0
    for offset, old, new in found:
        if offset < last:
            continue
        parts.append(data[last:offset])
        edits.append(Edit(offset + shift, old, new))
        parts.append(new)
        shift += len(new) - len(old)
        last = offset + len(old)
    parts.append(data[last:])
    return b"".join(parts), edits


def _dom(data: bytes, vet: Callable[[bytes], None]) -> str | None:
    vet(data)  # the caller's check before a parse (archiver.markup_guard.vet: formats/tree.md §9.5)
    html = LexborHTMLParser(bound_depth_bytes(data)).html
    return html


def zimcheck_safe(
    data: bytes,
    insertions: Sequence[tuple[int, bytes, bytes]] = (),
    undo: Callable[[str], str] | None = None,
    vet: Callable[[bytes], None] = lambda data: None,
) -> tuple[bytes, list[Edit]]:
    """``data`` rewritten as the module docstring says, and the edits made (none: ``data`` itself).
    Edits that would change the DOM are not made. ``insertions`` (:func:`archiver.zim.offline.switch_off`)
    are made too when ``undo`` of the result's serialised DOM is the original's, else left out.
    ``vet`` is called with each document before it is parsed (it raises to refuse one)."""
    if len(data) > _LIMIT:
        return data, []
    found, risky = _find_edits(data)
    if insertions and undo is not None:
        out, edits = apply_edits(data, sorted([*found, *insertions]))
        if undo(_dom(out, vet) or "") == (_dom(data, vet) or ""):
            return out, edits
    if not found:
        return data, []
    out, edits = apply_edits(data, found)
    if risky and _dom(out, vet) != _dom(data, vet):
        return data, []
    return out, edits


def restore(data: bytes, edits: list[Edit]) -> bytes:
    """The original document from a rewritten one and its edits (the inverse of :func:`zimcheck_safe`).
    Raises ValueError when the edits do not fit ``data``."""
    out = bytearray(data)
    for e in sorted(edits, key=lambda e: e.offset, reverse=True):
        if out[e.offset : e.offset + len(e.new)] != e.new:
            raise ValueError(f"edit at {e.offset} does not match the stored bytes")
        out[e.offset : e.offset + len(e.new)] = e.old
    return bytes(out)


def encode_edits(edits: dict[str, list[Edit]]) -> bytes:
    """The edits of every rewritten page as JSON lines, ``{"path": …, "edits": [[offset, old, new], …]}``
    in path order (old and new are ASCII: quotes, ``=""``, character references)."""
    lines = []
    for path in sorted(edits):
        rows = [[e.offset, e.old.decode("ascii"), e.new.decode("ascii")] for e in edits[path]]
        lines.append(json.dumps({"path": path, "edits": rows}, ensure_ascii=False, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode("utf-8")


def decode_edits(data: bytes) -> dict[str, list[Edit]]:
    """The inverse of :func:`encode_edits`. Raises ValueError on anything else."""
    out: dict[str, list[Edit]] = {}
    for line in data.decode("utf-8").splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        if not isinstance(doc, dict) or not isinstance(doc.get("path"), str):
            raise ValueError("an edits line without a path")
        rows = doc.get("edits")
        if not isinstance(rows, list):
            raise ValueError(f"edits of {doc['path']!r} are not a list")
        edits = []
        for row in rows:
            if (
                not isinstance(row, list)
                or len(row) != 3
                or not isinstance(row[0], int)
                or row[0] < 0
                or not all(isinstance(x, str) for x in row[1:])
            ):
                raise ValueError(f"a malformed edit of {doc['path']!r}")
            edits.append(Edit(row[0], row[1].encode("ascii"), row[2].encode("ascii")))
        out[doc["path"]] = edits
    return out
