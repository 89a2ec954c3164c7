"""The text a reader sees on a page, for the search index (formats/search.md §2).
Pure: no network, no filesystem, no clock.

:func:`extract` turns an HTML document (bytes) into its title and its *blocks* in reading order, each
a heading (h1–h6) or body text. Left out: scripts, styles, templates, ``<head>`` except the title,
form controls, elements hidden by ``hidden``, ``aria-hidden="true"`` or an inline
``display:none``/``visibility:hidden``, and the navigation of the site: ``nav``, ``aside``,
``[role=navigation|banner|contentinfo|search]``, and ``header``/``footer`` that are not inside an
``article``, ``main`` or ``section``. The walk is iterative (any depth of nesting), the input is cut
at :data:`MAX_HTML` bytes and the text at :data:`MAX_TEXT` characters, and its nesting is bounded
before parsing by :func:`archiver.html_depth.bound_depth` (Blink's 512 levels; the parser's time grows
with the square of the depth).
"""

from __future__ import annotations

import codecs
import operator
import re
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver.html_depth import bound_depth

__all__ = ["MAX_HTML", "MAX_NODES", "MAX_TEXT", "Page", "extract"]

#: Bytes of HTML read from a page; the rest is not indexed.
MAX_HTML = 8 << 20
#: Characters of text kept from a page (title, headings and body together); the rest is cut.
MAX_TEXT = 1 << 20
#: Nodes (elements and texts) of a page walked; the rest is cut (a million ``<span>``: 28 s without).
MAX_NODES = 200_000

_SKIP = frozenset(
    {
        "script", "style", "noscript", "template", "head", "nav", "aside", "svg", "math", "iframe",
        "object", "embed", "select", "textarea", "button", "input", "option", "datalist", "canvas",
        "audio", "video", "map", "dialog", "-comment", "-doctype",
    }
)  # fmt: skip
_SKIP_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "dialog"})
_SECTIONING = frozenset({"article", "main", "section"})
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BLOCKS = frozenset(
    {
        "p", "div", "li", "ul", "ol", "dl", "dt", "dd", "pre", "blockquote", "table", "tr", "td", "th",
        "thead", "tbody", "tfoot", "caption", "figure", "figcaption", "section", "article", "main",
        "header", "footer", "br", "hr", "address", "details", "summary", "body", "html", "form",
        "fieldset", "legend", "center", "hgroup", "search",
    }
)  # fmt: skip
_HIDDEN_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\b", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
#: Whitespace is collapsed with ``" ".join(text.split())``: ``str.split`` and ``str.strip`` take the
#: characters ``re``'s ``\s`` matches (every code point checked), at a quarter of ``re.sub``'s CPU.


@dataclass
class Page:
    """A page's title and its blocks: ``(True, text)`` for a heading, ``(False, text)`` for body text."""

    title: str = ""
    blocks: list[tuple[bool, str]] = field(default_factory=list)
    cut: bool = False

    def size(self) -> int:
        return len(self.title) + sum(map(len, map(operator.itemgetter(1), self.blocks)))


def decode(data: bytes) -> str:
    """The page's text: a BOM, else a ``<meta charset>`` in the first 1024 bytes, else UTF-8;
    undecodable bytes become U+FFFD (which is no word character)."""
    data = data[:MAX_HTML]
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace")
    m = _META_CHARSET.search(data[:1024])
    name = "utf-8"
    if m:
        try:
            name = codecs.lookup(m.group(1).decode("ascii")).name
        except LookupError:
            name = "utf-8"
        if name.startswith("utf-16"):  # a meta tag read as ASCII cannot be UTF-16 (HTML spec)
            name = "utf-8"
    return data.decode(name, "replace")


#: The elements whose attributes can hide them; Lexbor finds them at C speed, so the walk reads the
#: attributes of these few instead of every element's (the attribute dict was a sixth of the build).
_MAY_HIDE = "[hidden],[aria-hidden],[role],[style]"


def _hidden_by(attrs: dict[str, str | None]) -> bool:
    """Whether an element with ``attrs`` is left out (§2.1: hidden, aria-hidden, a navigation role,
    an inline display:none or visibility:hidden)."""
    if "hidden" in attrs or (attrs.get("aria-hidden") or "").strip().lower() == "true":
        return True
    if (attrs.get("role") or "").strip().lower() in _SKIP_ROLES:
        return True
    style = attrs.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


# Each element's part in the walk, by Lexbor's tag id (an int: reading ``tag`` makes a new string an
# element, and a name is looked up in several sets): flags of :data:`_KINDS`.
_SKIPPED, _BLOCK, _HEADING, _SECTION, _HEADER = 1, 2, 4, 8, 16


def _kind(name: str) -> int:
    return (
        _SKIPPED * (name in _SKIP)
        | _BLOCK * (name in _BLOCKS or name in _HEADINGS)
        | _HEADING * (name in _HEADINGS)
        | _SECTION * (name in _SECTIONING)
        | _HEADER * (name in ("header", "footer"))
    )


def _tag_ids() -> tuple[int, dict[int, int], dict[str, int]]:
    """The text node's tag id, the flags of the names of the sets above by their tag id, and the
    names whose id is not fixed (Lexbor numbers a name it does not know a document at a time:
    found by numbering some unknown names first in one of two documents), to be looked up in each
    document. The comment's and doctype's ids are read from a parsed document."""
    probe = LexborHTMLParser("<!DOCTYPE html><body>t<!--c-->")
    fresh, busy = LexborHTMLParser(""), LexborHTMLParser("")
    for i in range(3):
        busy.create_node(f"x-archiver-probe-{i}")
    kinds: dict[int, int] = {}
    moving: dict[str, int] = {}
    for name in sorted(_SKIP | _BLOCKS | _HEADINGS | _SECTIONING | {"header", "footer"}):
        if name.startswith("-"):
            continue
        tag_id = fresh.create_node(name).tag_id
        if tag_id == busy.create_node(name).tag_id:
            kinds[tag_id] = _kind(name)
        else:
            moving[name] = _kind(name)
    text = comment = None
    assert probe.body is not None and probe.root is not None
    for node in probe.body.traverse(include_text=True):
        if node.tag == "-text":
            text = node.tag_id
        elif node.tag == "-comment":
            comment = node.tag_id
    doctype = probe.root.prev
    assert text is not None and comment is not None and doctype is not None
    kinds[comment] = kinds[doctype.tag_id] = _SKIPPED
    return text, kinds, moving


_TEXT_ID, _KINDS, _MOVING = _tag_ids()


def _kinds_of(tree: LexborHTMLParser) -> dict[int, int]:
    """:data:`_KINDS` with the ids this document gave the names of :data:`_MOVING` (none in
    selectolax 1.0.2: every name of the sets has a fixed id)."""
    if not _MOVING:
        return _KINDS
    return {**_KINDS, **{tree.create_node(name).tag_id: kind for name, kind in _MOVING.items()}}


def extract(html: bytes) -> Page:
    """The title and the blocks of ``html`` (formats/search.md §2), read in this process: a page of
    someone else's is read through :func:`archiver.search.guarded.extract`."""
    return page_of(decode(html))


def page_of(text: str) -> Page:
    """The title and the blocks of the decoded page ``text``."""
    tree = LexborHTMLParser(bound_depth(text))
    page = Page()
    title = tree.css_first("title")
    if title is not None:
        page.title = " ".join(title.text(deep=True).split())[:1024]
    body = tree.body
    if body is None:
        return page
    hidden = {n.mem_id for n in body.css(_MAY_HIDE) if _hidden_by(n.attributes)}
    budget = MAX_TEXT - len(page.title)
    parts: list[str] = []
    pending = 0  # characters in ``parts``
    heading_depth = 0  # > 0 while inside a heading
    sectioned = 0  # > 0 while inside article/main/section

    def flush(heading: bool) -> None:
        nonlocal budget
        nonlocal pending
        if not pending:  # no text since the last block (most of them: nested block elements)
            parts.clear()
            return
        raw = "".join(parts)
        text = " ".join((raw[: 4 * budget + 4096] if len(raw) > 4 * budget + 4096 else raw).split())
        parts.clear()
        pending = 0
        if text and budget > 0:
            text = text[:budget]
            budget -= len(text)
            page.blocks.append((heading, text))
            if budget <= 0:
                page.cut = True

    node: LexborNode | None = body.child
    stack: list[LexborNode] = [body]  # the open elements above ``node``
    kinds_open: list[int] = [_BLOCK]  # their flags
    nodes = 0
    # Each of Lexbor's node properties makes a new Python object: each is read once a node here
    # (tag_id, child, next), an element's flags come from one dict by its tag id and are kept on the
    # stack for its end, and what is skipped or ends a block is tested inline.
    kinds = _kinds_of(tree)
    text_id = _TEXT_ID
    while node is not None and budget > 0:
        nodes += 1
        if nodes > MAX_NODES:
            page.cut = True
            break
        tag_id = node.tag_id
        if tag_id == text_id:
            text = node.text_content or ""
            parts.append(text)
            pending += len(text)
            if pending > budget:
                flush(heading_depth > 0)
        else:
            kind = kinds.get(tag_id, 0)
            if not (
                kind & _SKIPPED or (hidden and node.mem_id in hidden) or (kind & _HEADER and not sectioned)
            ):
                if kind & _BLOCK:
                    flush(heading_depth > 0)
                child = node.child
                if child is not None:  # (a childless block has nothing more to flush)
                    heading_depth += kind & _HEADING  # counted in steps of the flag
                    sectioned += kind & _SECTION
                    stack.append(node)
                    kinds_open.append(kind)
                    node = child
                    continue
        # Next sibling, else climb until an ancestor has one (leaving each element climbed out of).
        following = node.next
        while following is None:
            if len(stack) <= 1:
                break
            node = stack.pop()
            kind = kinds_open.pop()
            if kind & _BLOCK:
                flush(heading_depth > 0)
            heading_depth -= kind & _HEADING
            sectioned -= kind & _SECTION
            following = node.next
        node = following
    flush(heading_depth > 0)
    if budget <= 0:
        page.cut = True
    return page
