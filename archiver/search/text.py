"""The text a reader sees on a page, for the search index (formats/search.md §2).
Pure: no network, no filesystem, no clock.

:func:`extract` turns an HTML document (bytes) into its title and its *blocks* in reading order, each
a heading (h1–h6) or body text. Left out: scripts, styles, templates, ``<head>`` except the title,
form controls, elements hidden by ``hidden``, ``aria-hidden="true"`` or an inline
``display:none``/``visibility:hidden``, and the navigation of the site: ``nav``, ``aside``,
``[role=navigation|banner|contentinfo|search]``, and ``header``/``footer`` that are not inside an
``article``, ``main`` or ``section``. The walk is iterative (any depth of nesting), the input is cut
at :data:`MAX_HTML` bytes and the text at :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import codecs
import operator
import re
from dataclasses import dataclass, field
from itertools import accumulate

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver.html_depth import bound_depth

__all__ = ["MAX_DEPTH", "MAX_HTML", "MAX_NODES", "MAX_TEXT", "Page", "extract", "flatten"]

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
#: Elements nested deeper than this lose their tags (a space each; their text stays), before parsing:
#: the parser's time grows with the square of the depth (20,000 nested ``<div>``: 6 s), and browsers
#: cap it too (Chromium's parser at 512).
MAX_DEPTH = 256
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)[^>]*?(/?)>")
_RAW = frozenset({"script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes"})
_NO_DEPTH = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rtc", "rp", "tbody",
        "thead", "tfoot", "colgroup", "caption", "param", "keygen",
    }
)  # fmt: skip


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


def _either_case(names: list[str]) -> str:
    """A regex matching exactly ``names`` (lower-case ASCII) in any case, as a trie of alternatives
    (one branch per first letter: Python's ``re`` tries every branch of a flat alternation)."""
    heads: dict[str, list[str]] = {}
    for name in names:
        heads.setdefault(name[0], []).append(name[1:])
    out = []
    for c, rests in sorted(heads.items()):
        more = [r for r in rests if r]
        inner = f"(?:{_either_case(more)})" if more else ""
        out.append(f"[{c}{c.upper()}]" + (inner + "?" if more and "" in rests else inner))
    return "|".join(out)


# flatten's tags at C speed, with the same extents as ``_TAG`` (from "<" and an ASCII letter to the
# first ">"): a raw-text or uncounted name leaves the depth alone (no group: ""), any other tag is a
# start (its first letter) or an end ("/" and its first letter). A self-closed start tag counts as a
# start here (flatten does not count it: the estimate can only be higher); a self-closed end tag
# would count lower, so its presence sends the page to flatten itself. Names are spelled in both
# cases, not matched with re.I (which would take "ſ" for "s").
_STEP = re.compile(rf"<(?:/?(?:{_either_case(sorted(_RAW | _NO_DEPTH))})(?=[\s/>])[^>]*>|(/?[A-Za-z])[^>]*>)")
_SELF_CLOSED_END = re.compile(r"</[A-Za-z][^>]*/>")
_DEPTH = (0, 1, -1)  # by the length of _STEP's group


def too_deep(html: str) -> bool:
    """Whether :func:`flatten` may change ``html`` (never False when it would), at C speed: the depth
    walk of its pass (a start tag +1, an end tag −1, never below 0) as prefix sums of the tags found
    by ``_STEP``. An ordinary page costs a fifth of flatten's own pass."""
    if "\u212a" in html or _SELF_CLOSED_END.search(html):  # KELVIN SIGN lowers to "k"
        return True
    sums = list(accumulate(map(_DEPTH.__getitem__, map(len, _STEP.findall(html)))))
    # The walk floored at 0 is each prefix sum less the lowest negative prefix sum before it: at most
    # the highest sum less the lowest (below 0); only above that bound is the exact walk needed.
    if not sums or max(sums) - min(0, min(sums)) <= MAX_DEPTH:
        return False
    floors = accumulate(sums, min, initial=0)
    return max(map(operator.sub, sums, floors)) > MAX_DEPTH


def flatten(html: str) -> str:
    """``html`` with the tags of elements nested over :data:`MAX_DEPTH` deep replaced by a space
    (counting neither void elements nor those whose end tag is optional; raw-text elements such as
    ``script`` keep their tags, so their text stays out)."""
    depth = 0

    def tag(m: re.Match[str]) -> str:
        nonlocal depth
        name = m.group(2).lower()
        if name in _RAW or name in _NO_DEPTH or m.group(3):
            return m.group()
        if m.group(1):
            depth = max(0, depth - 1)
            return m.group() if depth < MAX_DEPTH else " "
        depth += 1
        return m.group() if depth <= MAX_DEPTH else " "

    return _TAG.sub(tag, html)


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


def extract(html: bytes) -> Page:
    """The title and the blocks of ``html`` (formats/search.md §2)."""
    text = decode(html)
    if text.count("<") > 4 * MAX_DEPTH and too_deep(text):  # only a page with many tags can be that deep
        text = flatten(text)
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
    nodes = 0
    # Each of Lexbor's node properties makes a new Python object: each is read once a node here
    # (tag, child, next), and what is skipped or ends a block is tested inline: 8 % less extraction CPU.
    skip_tags = _SKIP
    blocks = _BLOCKS | _HEADINGS
    while node is not None and budget > 0:
        nodes += 1
        if nodes > MAX_NODES:
            page.cut = True
            break
        tag = node.tag or ""
        child = None
        if tag == "-text":
            text = node.text_content or ""
            parts.append(text)
            pending += len(text)
            if pending > budget:
                flush(heading_depth > 0)
        elif not (
            tag in skip_tags
            or (tag.startswith("-") and tag != "-text")
            or (hidden and node.mem_id in hidden)
            or (tag in ("header", "footer") and not sectioned)
        ):
            if tag in blocks:
                flush(heading_depth > 0)
            if tag in _HEADINGS:
                heading_depth += 1
            if tag in _SECTIONING:
                sectioned += 1
            child = node.child
            if child is None:
                if tag in blocks:
                    flush(heading_depth > 0)
                heading_depth -= tag in _HEADINGS
                sectioned -= tag in _SECTIONING
        if child is not None:
            stack.append(node)
            node = child
            continue
        # Next sibling, else climb until an ancestor has one (leaving each element climbed out of).
        following = node.next
        while following is None:
            if len(stack) <= 1:
                break
            node = stack.pop()
            t = node.tag or ""
            if t in blocks:
                flush(heading_depth > 0)
            heading_depth -= t in _HEADINGS
            sectioned -= t in _SECTIONING
            following = node.next
        node = following
    flush(heading_depth > 0)
    if budget <= 0:
        page.cut = True
    return page
