"""Rewrite a parsed HTML document for the tree: every reference through one decision, scripts out.

Pure: no network, no filesystem, no clock (it works on a parsed document in memory).

**Parser.** Documents are parsed with selectolax's Lexbor engine, an HTML5-conformant parser that
builds the tree a browser builds. lxml's HTML parser (libxml2, an HTML4 parser) does not: it treats
``<source>`` as a container and nests the following ``<img>`` inside it, does not foster-parent stray
content out of ``<table>``, and drops the doctype (which switches a page into quirks mode).
``tests/capture/test_rewrite_html.py`` shows each of these on both parsers, so the choice is checked,
not assumed.

**What :func:`rewrite` does** (in this order):

1. removes ``<script>``, ``<base>`` (the caller resolved references against it first: see
   :func:`base_url`), Content-Security-Policy ``<meta>`` tags, ``<meta http-equiv=refresh>`` that
   leads to ``javascript:``, and ``<link>`` tags that only serve scripts or the live network
   (``modulepreload``, ``preconnect``, ``dns-prefetch``, ``prefetch``, ``prerender``, script preloads);
2. unwraps ``<noscript>`` (its fallback is what a script-free copy should show), or drops it
   (``noscript="drop"``: for a rendered page, whose scripts already ran);
3. removes every ``on*`` event handler attribute and every attribute whose URL is ``javascript:``;
4. promotes lazy-loading attributes: ``data-src`` / ``data-lazy-src`` become ``src`` and
   ``data-srcset`` becomes ``srcset``, and ``loading=lazy`` is dropped, so the copy shows its images
   without a script or a scroll;
5. passes every reference, one at a time, to ``change(reference, hint)``, the caller's single decision
   function, and writes back what it returns (``None`` leaves the reference as it was): element
   attributes (the shared table :mod:`archiver.html_refs`), ``srcset`` candidates (WHATWG parsing,
   :mod:`archiver.srcset`), ``style`` attributes and ``<style>`` elements (:mod:`archiver.css_refs`),
   a meta refresh URL, and ``<iframe srcdoc>`` documents (recursively); with ``drop_candidate``,
   a ``srcset`` candidate it names (after ``change`` saw it) is left out of its attribute, unless no
   candidate would be left;
6. drops ``integrity`` and ``crossorigin`` from elements whose reference changed (the local copy is
   rewritten, and CORS has no meaning for ``file://``);
7. with ``search`` (a :class:`.searchbox.Target`), makes the page's own search boxes submit to the
   archive's search page (:mod:`.searchbox`), after the references (so a form's action was seen as
   the site wrote it);
8. makes the document declare ``<meta charset="utf-8">`` first in ``<head>`` (the serialised text is
   written as UTF-8), replacing any other charset declaration, and keeps the doctype exactly as it
   was written (Lexbor would write every doctype as ``<!DOCTYPE html>``, which turns a quirks-mode
   page into a standards-mode one).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, NamedTuple

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver import urls
from archiver.capture import searchbox
from archiver.capture.policy import Hint
from archiver.css_refs import Role, rewrite_declarations, rewrite_stylesheet
from archiver.errors import URLError
from archiver.html_depth import bound_depth
from archiver.html_refs import (
    LAZY_SRC,
    LAZY_SRCSET,
    LAZY_TAGS,
    SRCSET_ATTRIBUTES,
    URL_ATTRIBUTE_NAMES,
    URL_ATTRIBUTES,
    Use,
    attribute_refs,
    parse_refresh,
)

__all__ = [
    "Change",
    "DropCandidate",
    "HTMLResult",
    "Scan",
    "base_url",
    "parse",
    "rewrite",
    "scan",
    "title_of",
]

#: ``change(reference, hint)`` → the text to write instead, or None to leave the reference as it is.
Change = Callable[[str, Hint], "str | None"]
#: ``drop(candidate URL as written)`` → whether to leave that ``srcset`` candidate out.
DropCandidate = Callable[[str], bool]

# What each use of a URL attribute (archiver.html_refs) is to the capture policy: a frame is a page.
_HINTS: dict[Use, Hint] = {"link": "link", "frame": "link", "absolute": "absolute", "style": "stylesheet"}
# <link> tags that only serve scripts or the live network: dropped from a script-free copy.
_LINK_DROP_RELS = frozenset({"modulepreload", "preconnect", "dns-prefetch", "prefetch", "prerender"})
_PRELOAD_DROP_AS = frozenset({"script", "fetch", "worker", "document", "audio", "video", "track"})
_JS_SCHEME = re.compile(r"^\s*javascript:", re.I)
# The tags with a rule of their own (URL attributes of their own, lazy loading, <link>, <meta>,
# srcdoc), and the attribute names a rule reads on any element (with every ``on*`` handler): an
# element with neither is left as it is without looking further.
_ACTIVE_TAGS = frozenset({tag for tag, _ in URL_ATTRIBUTES} | {tag for tag, _ in SRCSET_ATTRIBUTES})
_ACTIVE_TAGS |= LAZY_TAGS | {"link", "meta", "iframe"}
_ACTIVE_NAMES = URL_ATTRIBUTE_NAMES | {"style"}
#: The names most elements of a page carry and no rule reads (one set lookup for most elements).
_PASSIVE_NAMES = frozenset(
    {"class", "id", "title", "lang", "dir", "role", "name", "value", "type", "rel", "target", "alt",
     "width", "height", "align", "valign", "colspan", "rowspan", "headers", "scope", "border",
     "cellpadding", "cellspacing", "tabindex", "hidden", "for", "aria-hidden", "aria-label"}
)  # fmt: skip
assert not any(n in _ACTIVE_NAMES or n.startswith("on") for n in _PASSIVE_NAMES)
_DOCTYPE = re.compile(
    rb"^(?:\xef\xbb\xbf)?\s*(<\?xml[^>]*\?>)?\s*(?:<!--.*?-->\s*)*(<!doctype[^>]*>)?", re.I | re.S
)
#: What Lexbor makes of an XML declaration: a bogus comment, first in its output.
#: (It and the next are compiled at their use, re keeping them: only a page with an XML declaration.)
_XML_AS_COMMENT = r"^<!--\?xml[^>]*\?-->"
_XML_ENCODING = r"""(\sencoding\s*=\s*)(["'])[^"']*\2"""


class HTMLResult:
    """The serialised document and its ``<title>`` text (whitespace collapsed, or None), and the
    references written changed. (A plain class, compared and shown as the dataclass it was: a
    dataclass's generated methods were compiled from source at every start of a capture, and its
    module imported for it.)"""

    __slots__ = ("changed", "html", "title")

    def __init__(self, html: str, title: str | None = None, changed: list[str] | None = None) -> None:
        self.html = html
        self.title = title
        self.changed: list[str] = [] if changed is None else changed

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HTMLResult) and other.__class__ is self.__class__:
            return (self.html, self.title, self.changed) == (other.html, other.title, other.changed)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"HTMLResult(html={self.html!r}, title={self.title!r}, changed={self.changed!r})"


def parse(text: str) -> LexborHTMLParser:
    """Parse an HTML document (as a browser does) with Lexbor, nested at most as deep as Blink nests
    it (archiver/html_depth.py: deeper elements become siblings; formats/tree.md)."""
    return LexborHTMLParser(bound_depth(text))


class Scan(NamedTuple):
    """One walk over the elements of a parsed document (:func:`scan`), in document order: what
    :func:`base_url` and :func:`rewrite` would otherwise each look for with a CSS query (Lexbor sets up
    a document's selector engine at its first query: ~35 us, more than the walk of a page's elements).
    It describes the document as it was when scanned: valid until the document is changed (and
    :func:`rewrite` empties ``nodes`` when it is done: a page of a million elements holds a wrapper
    object for each, which the serialising that follows should not have to find room beside)."""

    #: every element (and comment: its tag starts with ``-``), as ``traverse`` gives them
    nodes: list[LexborNode]
    base: LexborNode | None  # the first ``<base>`` with an ``href`` (``base[href]``)
    title: LexborNode | None  # the first ``<title>`` (``title``)
    removed: list[LexborNode]  # every ``<script>`` and ``<base>`` (the rewrite removes them)
    noscripts: list[LexborNode]


_SCANNED = frozenset({"script", "base", "noscript", "title"})


def scan(doc: LexborHTMLParser) -> Scan:
    """Walk ``doc``'s elements once (see :class:`Scan`). The walk is Lexbor's own (``traverse``), the
    same elements in the same order a CSS query finds: none inside a ``<template>``'s contents, those
    of SVG and MathML included (tests/capture/test_rewrite_html.py compares the two)."""
    nodes: list[LexborNode] = []
    base = title = None
    removed: list[LexborNode] = []
    noscripts: list[LexborNode] = []
    root = doc.root
    if root is not None:
        for node in root.traverse(include_text=False):
            nodes.append(node)
            tag = node.tag
            if tag in _SCANNED:
                if tag == "title":
                    title = title or node
                elif tag == "noscript":
                    noscripts.append(node)
                else:
                    removed.append(node)
                    if base is None and tag == "base" and "href" in node.attributes:
                        base = node
    return Scan(nodes, base, title, removed, noscripts)


def base_url(doc: LexborHTMLParser, url: str, scanned: Scan | None = None) -> str:
    """The URL that relative references in ``doc`` resolve against: its first ``<base href>``
    resolved against ``url`` (the document's own URL), else ``url``. ``scanned``: :func:`scan` of
    ``doc``, when the caller has it (no CSS query then)."""
    node = doc.css_first("base[href]") if scanned is None else scanned.base
    if node is None:
        return url
    href = node.attributes.get("href") or ""
    try:
        return urls.canonicalize(href, url) if urls.ref_action(href) == "fetch" else url
    except URLError:
        return url


def title_of(doc: LexborHTMLParser, scanned: Scan | None = None) -> str | None:
    """The document's ``<title>`` text, whitespace collapsed (None when absent or blank)."""
    node = doc.css_first("title") if scanned is None else scanned.title
    if node is None:
        return None
    text = " ".join(node.text(deep=True).split())
    return text or None


def _link_dropped(attrs: dict[str, str | None]) -> bool:
    """Whether a ``<link>`` only serves scripts or the live network (so it is dropped)."""
    rels = set((attrs.get("rel") or "").lower().split())
    if rels & _LINK_DROP_RELS:
        return True
    return "preload" in rels and (attrs.get("as") or "").strip().lower() in _PRELOAD_DROP_AS


def _css_change(change: Change) -> Callable[[str, Role], str | None]:
    def run(ref: str, role: Role) -> str | None:
        return change(ref, "stylesheet" if role == "import" else "embed")

    return run


class _Rewriter:
    def __init__(
        self,
        change: Change,
        noscript: Literal["unwrap", "drop", "keep"],
        drop_candidate: DropCandidate | None = None,
        search: searchbox.Target | None = None,
    ) -> None:
        self.change = change
        self.search = search
        self.noscript = noscript
        self.drop_candidate = drop_candidate
        self.changed: list[str] = []

    def _apply(self, node: LexborNode, attr: str, value: str, hint: Hint) -> bool:
        new = self.change(value, hint)
        if new is not None and new != value:
            node.attrs[attr] = new
            self.changed.append(new)
            return True
        return False

    def _apply_srcset(self, node: LexborNode, attr: str, value: str) -> bool:
        if not value:
            return False
        before = len(self.changed)

        def one(ref: str) -> str:
            new = self.change(ref, "embed")
            if new is not None and new != ref:
                self.changed.append(new)
                return new
            return ref

        from archiver import srcset  # only a document with a srcset attribute needs it

        written = srcset.parse(value)
        candidates = [srcset.Candidate(one(c.url), c.descriptors) for c in written]
        dropped = False
        if self.drop_candidate is not None:
            kept = [
                new for old, new in zip(written, candidates, strict=True) if not self.drop_candidate(old.url)
            ]
            if kept and len(kept) < len(candidates):
                candidates, dropped = kept, True
        if len(self.changed) > before or dropped:
            node.attrs[attr] = srcset.serialize(candidates)
            return True
        return False

    def _style_attribute(self, node: LexborNode, attrs: dict[str, str | None]) -> None:
        style = attrs.get("style")
        if not style:
            return
        result = rewrite_declarations(style, _css_change(self.change))
        if result.text != style:
            node.attrs["style"] = result.text

    def _refresh(self, node: LexborNode) -> bool:
        """Rewrite a meta refresh's URL; False when it leads to ``javascript:`` (the tag removed)."""
        refresh = parse_refresh(node.attributes.get("content") or "")
        if refresh is None or not refresh[1]:
            return True
        delay, target = refresh
        if _JS_SCHEME.match(target):
            node.decompose()
            return False
        new = self.change(target, "link")
        if new is not None and new != target:
            node.attrs["content"] = f"{delay or '0'}; url={new}"
        return True

    def _promote_lazy(self, node: LexborNode, tag: str) -> None:
        if tag not in LAZY_TAGS:
            return
        attrs = node.attributes
        for name in LAZY_SRC:
            value = attrs.get(name)
            if value and value.strip():
                node.attrs["src"] = value
                break
        lazy_srcset = attrs.get(LAZY_SRCSET)
        if lazy_srcset and lazy_srcset.strip():
            node.attrs["srcset"] = lazy_srcset
        for name in (*LAZY_SRC, LAZY_SRCSET):
            if name in attrs:
                del node.attrs[name]
        if (attrs.get("loading") or "").lower() == "lazy":
            del node.attrs["loading"]

    def _strip_handlers(self, node: LexborNode, attrs: dict[str, str | None]) -> bool:
        """Removes the event handlers and ``javascript:`` URLs of ``node`` (whose attributes are
        ``attrs``); True when it removed one."""
        removed = False
        for name, value in attrs.items():
            lower = name.lower()
            if lower.startswith("on") or (
                lower in URL_ATTRIBUTE_NAMES and value is not None and _JS_SCHEME.match(value)
            ):
                del node.attrs[name]
                removed = True
        return removed

    def element(self, node: LexborNode, tag: str) -> bool:
        """Apply the rules to ``node``, whose tag name, lower case, is ``tag``; False when they
        removed it."""
        attrs = node.attributes  # a new dict each time it is read: read again only after a change
        if not attrs:
            return True  # every rule below reads an attribute (most elements of a page have none)
        if tag not in _ACTIVE_TAGS:
            # no rule reads this element's attributes unless one is a handler, a URL or a style
            # (names hold no whitespace: one string of them, lower case, is searched at C speed)
            if _PASSIVE_NAMES.issuperset(attrs):
                return True
            names = " " + " ".join(attrs).lower()
            if " on" not in names and _ACTIVE_NAMES.isdisjoint(names.split()):
                return True
        if self._strip_handlers(node, attrs):
            attrs = node.attributes
        if tag in LAZY_TAGS:
            self._promote_lazy(node, tag)
            attrs = node.attributes
        if tag == "link" and _link_dropped(attrs):
            node.decompose()
            return False
        if tag == "meta":
            equiv = (attrs.get("http-equiv") or "").lower()
            if equiv == "refresh":
                return self._refresh(node)
            if equiv == "content-security-policy":
                node.decompose()
                return False
        elif tag == "iframe":
            srcdoc = attrs.get("srcdoc")
            if srcdoc:
                inner = parse(srcdoc)
                _Rewriter(self.change, self.noscript, self.drop_candidate).document(inner)
                node.attrs["srcdoc"] = inner.html or ""
        touched = False
        for found in attribute_refs(tag, attrs):
            if found.srcset:
                touched |= self._apply_srcset(node, found.attr, found.value)
            else:
                touched |= self._apply(node, found.attr, found.value, _HINTS.get(found.use, "embed"))
        # the URL attributes just written are neither ``style``, ``integrity`` nor ``crossorigin``
        self._style_attribute(node, attrs)
        if touched:
            for name in ("integrity", "crossorigin"):
                if name in attrs:
                    del node.attrs[name]
        return True

    def document(self, doc: LexborHTMLParser, scanned: Scan | None = None) -> None:
        found = scan(doc) if scanned is None else scanned
        # asked before the removals (a removed node's children are freed with it)
        walk_again = (found.noscripts and self.noscript == "drop") or any(map(_holds_element, found.removed))
        removed, noscripts = found.removed, found.noscripts
        if walk_again:  # a removed node may hold another: only the outermost are removed (the
            # others are freed with them, and must not be touched again)
            doomed = {n.mem_id for n in removed}
            if self.noscript == "drop":
                doomed.update(n.mem_id for n in noscripts)
            removed = _outermost(removed, doomed)
            noscripts = _outermost(noscripts, doomed)
        for node in removed:
            node.decompose()
        for node in noscripts:
            if self.noscript == "unwrap":
                node.unwrap()
            elif self.noscript == "drop":
                node.decompose()
        # the elements left, in document order: the scan's less those removed (an unwrapped
        # <noscript>'s children are where it was), unless some went with a removed parent
        nodes = found.nodes
        if walk_again:
            root = doc.root
            nodes = [] if root is None else list(root.traverse(include_text=False))
        elif found.removed or (found.noscripts and self.noscript == "unwrap"):
            gone = {id(n) for n in found.removed}  # the scan's own objects: by identity
            if self.noscript == "unwrap":
                gone.update(id(n) for n in found.noscripts)
            nodes = [n for n in nodes if id(n) not in gone]
        boxes = False  # an element a search box can be (the rules below remove none)
        metas: list[LexborNode] = []  # those the rules leave, in document order (_ensure_charset)
        for node in nodes:
            tag = node.tag
            if tag == "style":
                text = node.text(deep=True)
                result = rewrite_stylesheet(text, _css_change(self.change))
                if result.text != text:
                    node.inner_html = result.text
                self._strip_handlers(node, node.attributes)
                continue
            if tag and not tag.startswith("-"):
                tag = tag.lower()
                boxes = boxes or tag in searchbox.BOX_TAGS
                if self.element(node, tag) and tag == "meta":
                    metas.append(node)
        if self.search is not None and boxes:  # searchbox's queries cost more than the walk's look
            searchbox.rewrite(doc, self.search)
            metas = doc.css("meta")  # it may have replaced an element that holds one
        _ensure_charset(doc, metas)


def _outermost(nodes: list[LexborNode], doomed: set[int]) -> list[LexborNode]:
    """Those of ``nodes`` that no node of ``doomed`` (``mem_id``s) holds: removing one of those frees
    the nodes inside it, so they are not removed again. Each ancestor is looked at once for all of
    ``nodes`` (what is known of it kept by ``mem_id``): linear in the document, however deep."""
    under: dict[int, bool] = {}  # a node not doomed itself -> whether a doomed node holds it
    kept = []
    for node in nodes:
        path = []
        held = False
        parent = node.parent
        while parent is not None:
            key = parent.mem_id
            if key in doomed:
                held = True
                break
            if key in under:
                held = under[key]
                break
            path.append(key)
            parent = parent.parent
        for key in path:
            under[key] = held
        if not held:
            kept.append(node)
    return kept


def _holds_element(node: LexborNode) -> bool:
    """Whether ``node`` has an element child (an SVG ``<script>`` can: HTML's holds text only)."""
    return any(not (child.tag or "-").startswith("-") for child in node.iter(include_text=True))


def _ensure_charset(doc: LexborHTMLParser, metas: list[LexborNode]) -> None:
    """Make ``doc`` declare UTF-8 first in its head; ``metas``: its ``<meta>`` elements."""
    head = doc.head
    declared = []
    for node in metas:
        attrs = node.attributes
        if "charset" in attrs or (attrs.get("http-equiv") or "").lower() == "content-type":
            declared.append(node)
    if (
        head is not None
        and len(declared) == 1
        and head.child is not None
        and head.child == declared[0]
        and declared[0].attributes == {"charset": "utf-8"}
    ):
        return  # already the one declaration wanted, first in <head>
    for node in declared:
        node.decompose()
    if head is None:
        return
    meta = LexborHTMLParser('<meta charset="utf-8">').css_first("meta")
    assert meta is not None
    first = head.child
    if first is None:
        head.insert_child(meta)
    else:
        first.insert_before(meta)


def rewrite(
    doc: LexborHTMLParser,
    change: Change,
    *,
    noscript: Literal["unwrap", "drop", "keep"] = "unwrap",
    drop_candidate: DropCandidate | None = None,
    search: searchbox.Target | None = None,
    scanned: Scan | None = None,
) -> HTMLResult:
    """Rewrite ``doc`` in place as the module docstring says, and serialise it (doctype kept).
    ``change`` is called once per reference; resolve references against :func:`base_url` in it.
    ``drop_candidate`` (called after ``change`` saw a ``srcset``'s candidates) leaves the candidates
    it names out of their attribute, as long as one is left. ``search`` rewrites the page's search
    boxes (:mod:`.searchbox`). ``scanned``: :func:`scan` of ``doc`` as it is, when the caller has it."""
    found = scan(doc) if scanned is None else scanned
    title = title_of(doc, found)
    rewriter = _Rewriter(change, noscript, drop_candidate, search)
    rewriter.document(doc, found)
    found.nodes.clear()  # the wrappers go before the serialising (see Scan)
    out = doc.html or ""
    # Lexbor writes every doctype as <!DOCTYPE html>; the original one decides quirks mode: keep it.
    # An XML declaration before it (XHTML served as text/html) comes out as a bogus comment: put the
    # declaration back as written, its encoding now UTF-8, the encoding the tree stores.
    m = _DOCTYPE.match(doc.raw_html[:4096])
    prolog = ""
    if m and m.group(1):
        xml = m.group(1).decode("utf-8", "replace")
        prolog = re.sub(_XML_ENCODING, r"\1\2utf-8\2", xml, flags=re.I) + "\n"
        out = re.sub(_XML_AS_COMMENT, "", out, count=1).lstrip()
    if m and m.group(2) and out[:9].upper() == "<!DOCTYPE":
        end = out.find(">")
        out = m.group(2).decode("utf-8", "replace") + out[end + 1 :]
    return HTMLResult(prolog + out, title, rewriter.changed)
