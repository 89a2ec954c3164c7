"""The site's own search box, made to submit to the archive's search page (formats/search.md §9).

Pure: no network, no filesystem, no clock (it works on a parsed document in memory).

A search box is a text input (``type`` absent, ``text`` or ``search``) the page marks as search:

- ``type=search``; or inside the HTML ``<search>`` element or an element with ``role=search``
  (the form itself or any ancestor);
- a generator's markup (formats/search.md §9.1): Sphinx (``#searchbox``, ``form.search``), the Read
  the Docs theme (``form#rtd-search-form``), MkDocs (``#mkdocs-search-query``), MkDocs Material
  (``form.md-search__form``, ``input.md-search__input``), mdBook 0.4/0.5 (``#searchbar``,
  ``#mdbook-searchbar``, ``form#searchbar-outer``), rustdoc (``form.search-form``,
  ``input.search-input``, ``<rustdoc-search>``), Hugo themes (``input.td-search-input``,
  ``#searchInput``, ``#book-search-input``), Jekyll just-the-docs (``#search-input``);
- or an input named like a query (``q``, ``query``, ``search``, ``searchbar``, ``s``, ``term``,
  ``k``, ``keywords``) in a form whose action's last path segment names search (``search``,
  ``search.html``, ``search.php``…) **on the page's own site** (a relative action, or one whose
  host is the page's; an empty action is the page's own URL: Sphinx's ``search.html``). A form
  that submits to another site's search and is not marked as search is not the site's search box
  and is left alone; so is every form without such an input (a login form, a newsletter form whose
  field is ``type=email``).

Each box (one per form: its first ``type=search`` or query-named input, else its first text input)
becomes a plain form: ``method=get``, ``action`` = the archive's search page (the caller's relative
href), no ``enctype``/``target``; the input is named ``q`` (what it holds is what the reader
typed), loses ``disabled`` and ``readonly``; the form's hidden inputs, and ``formaction``,
``formmethod``, ``formenctype``, ``formtarget`` and ``disabled`` on its other controls, are removed.
An input with no form gets one, at the end of ``<body>``, that it names by its ``form`` attribute
(a form put around it would close an open ``<p>`` when the page is parsed again). From the input up
to ``<body>``, what hides the box until a script shows it is removed: the ``hidden`` and ``inert``
attributes, ``aria-hidden=true``, inline ``display:none`` and ``visibility:hidden``, the class
``hidden`` (mdBook's ``#search-wrapper``); a ``<dialog>`` that holds a box gets ``open``. A dialog
or overlay that holds no box is not touched. A DocSearch button (``button.DocSearch-Button``: no
input until a script makes one) is replaced by an input (its form at the end of ``<body>``); an
empty ``<rustdoc-search>`` (an unrendered rustdoc page) gets one inside. Nothing else changes, and
the rewrite is idempotent.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from selectolax.lexbor import LexborHTMLParser, LexborNode

from archiver.frozen import Frozen

__all__ = ["BOX_TAGS", "QUERY_NAMES", "Target", "rewrite"]

#: Names a site gives its query field.
QUERY_NAMES = frozenset({"q", "query", "search", "searchbar", "s", "term", "k", "keywords"})
_TEXT_TYPES = frozenset({"", "text", "search"})
_INPUT_IDS = frozenset(
    {
        "searchbar",
        "mdbook-searchbar",
        "mkdocs-search-query",
        "search-input",
        "searchinput",
        "book-search-input",
    }
)
_INPUT_CLASSES = frozenset({"search-input", "md-search__input", "td-search-input"})
_FORM_IDS = frozenset({"rtd-search-form", "searchbar-outer", "mdbook-searchbar-outer", "searchbox"})
_FORM_CLASSES = frozenset({"search-form", "md-search__form", "search", "searchbar-outer"})
#: compiled at its use (re keeps it), with re.I: only a page with a search box needs it
_SEARCH_SEGMENT = r"^search(?:\.[a-z0-9]+)?$"
_BUTTON_DROP = ("formaction", "formmethod", "formenctype", "formtarget", "disabled")


class Target(Frozen):
    """Where boxes submit: ``href`` (the page's relative href to the archive's search page) and the
    page's own URL (``page_url``: which form actions are on the page's site; empty = relative only).
    (Immutable: a :class:`~archiver.frozen.Frozen` class, as the frozen dataclass it was: made at
    every start of a capture, where a dataclass's generated methods were compiled from source.)"""

    _fields = ("href", "page_url")
    __slots__ = _fields
    href: str
    page_url: str

    def __init__(self, href: str, page_url: str = "") -> None:
        self._init(href, page_url)


def _attr(node: LexborNode, name: str) -> str:
    return (node.attributes.get(name) or "").strip()


def _classes(node: LexborNode) -> set[str]:
    return set(_attr(node, "class").split())


def _ancestors(node: LexborNode) -> list[LexborNode]:
    out = []
    parent = node.parent
    while parent is not None and parent.tag not in (None, "body", "html", "-document"):
        out.append(parent)
        parent = parent.parent
    return out


def _form_of(node: LexborNode) -> LexborNode | None:
    for a in _ancestors(node):
        if a.tag == "form":
            return a
    return None


def _marked(node: LexborNode) -> bool:
    """Whether ``node`` marks what it holds as search (the element, the role, a generator's form)."""
    if node.tag == "search" or _attr(node, "role").lower() == "search":
        return True
    if node.tag == "rustdoc-search":
        return True
    if _attr(node, "id").lower() in _FORM_IDS:
        return True
    return node.tag == "form" and bool(_classes(node) & _FORM_CLASSES)


def _same_site_search(action: str, page_url: str) -> bool:
    try:
        page = urlsplit(page_url) if page_url else None
        # an empty action submits to the page itself (Sphinx's own search.html has action="")
        parts = urlsplit(action.strip()) if action.strip() or page is None else page
    except ValueError:
        return False
    if parts.scheme and parts.scheme.lower() not in ("http", "https"):
        return False
    if parts.netloc and (page is None or parts.hostname != page.hostname):
        return False
    segments = [s for s in parts.path.split("/") if s]
    return bool(segments) and re.match(_SEARCH_SEGMENT, segments[-1], re.I) is not None


def _is_box(node: LexborNode, target: Target) -> bool:
    if node.tag != "input" or _attr(node, "type").lower() not in _TEXT_TYPES:
        return False
    if _attr(node, "type").lower() == "search":
        return True
    if _attr(node, "id").lower() in _INPUT_IDS or _classes(node) & _INPUT_CLASSES:
        return True
    if any(_marked(a) for a in _ancestors(node)):
        return True
    form = _form_of(node)
    return (
        form is not None
        and _attr(node, "name").lower() in QUERY_NAMES
        and _same_site_search(_attr(form, "action"), target.page_url)
    )


def _rank(node: LexborNode) -> int:
    if _attr(node, "type").lower() == "search" or _attr(node, "name").lower() in QUERY_NAMES:
        return 0
    return 1


def _unhide_style(style: str) -> str | None:
    """``style`` without ``display:none`` and ``visibility:hidden`` (None when it has neither)."""
    kept = []
    removed = False
    for decl in style.split(";"):
        prop, _, value = decl.partition(":")
        p = prop.strip().lower()
        v = value.replace("!important", "").strip().lower()
        if (p == "display" and v == "none") or (p == "visibility" and v == "hidden"):
            removed = True
        elif decl.strip():
            kept.append(decl.strip())
    return "; ".join(kept) if removed else None


def _unhide(node: LexborNode) -> None:
    attrs = node.attributes
    for name in ("hidden", "inert"):
        if name in attrs:
            del node.attrs[name]
    if (attrs.get("aria-hidden") or "").strip().lower() == "true":
        del node.attrs["aria-hidden"]
    style = attrs.get("style")
    new = _unhide_style(style) if style is not None else None
    if new:
        node.attrs["style"] = new
    elif new is not None:
        del node.attrs["style"]
    classes = (attrs.get("class") or "").split()
    if "hidden" in classes:
        rest = " ".join(c for c in classes if c != "hidden")
        if rest:
            node.attrs["class"] = rest
        else:
            del node.attrs["class"]
    if node.tag == "dialog" and "open" not in attrs:
        node.attrs["open"] = ""


def _fix_form(form: LexborNode, box: LexborNode, href: str) -> None:
    if _attr(form, "method").lower() != "get" or "method" not in form.attributes:
        form.attrs["method"] = "get"
    if form.attributes.get("action") != href:
        form.attrs["action"] = href
    for name in ("enctype", "target"):
        if name in form.attributes:
            del form.attrs[name]
    for node in list(form.css("input, button")):
        if node.tag == "input" and _attr(node, "type").lower() == "hidden":
            node.decompose()
            continue
        if node.tag == "input" and _attr(node, "name") == "q" and node.mem_id != box.mem_id:
            del node.attrs["name"]  # one q: the box's
        for name in _BUTTON_DROP:
            if name in node.attributes and node.mem_id != box.mem_id:
                del node.attrs[name]


def _fix_box(box: LexborNode, keep_form: bool) -> None:
    if box.attributes.get("name") != "q":
        box.attrs["name"] = "q"
    for name in ("disabled", "readonly") if keep_form else ("disabled", "readonly", "form"):
        if name in box.attributes:
            del box.attrs[name]


def _new_form(href: str, form_id: str) -> LexborNode:
    import html  # with its entity table (~1 ms to import): only a page with a search box needs it

    markup = (
        f'<form id="{form_id}" class="archiver-search" role="search" method="get" '
        f'action="{html.escape(href)}"></form>'
    )
    node = LexborHTMLParser(markup).css_first("form")
    assert node is not None
    return node


def _new_input(form_id: str, cls: str = "") -> LexborNode:
    extra = f' class="{cls}"' if cls else ""
    markup = (
        f'<input{extra} type="search" name="q" placeholder="Search" aria-label="Search" form="{form_id}">'
    )
    node = LexborHTMLParser(markup).css_first("input")
    assert node is not None
    return node


def _owner(node: LexborNode, by_id: dict[str, LexborNode]) -> LexborNode | None:
    """The input's form owner as HTML defines it: the form its ``form`` attribute names (none when
    that names no form), else its nearest ancestor form."""
    if "form" in node.attributes:
        return by_id.get(node.attributes.get("form") or "")
    return _form_of(node)


#: the tags of every element :func:`rewrite` looks at (a document with none has no box to rewrite)
BOX_TAGS = frozenset({"input", "button", "rustdoc-search"})


def rewrite(doc: LexborHTMLParser, target: Target) -> int:
    """Rewrite every search box of ``doc`` in place (module docstring); returns how many."""
    body = doc.body
    if body is None:
        return 0
    by_id = {f.attributes.get("id") or "": f for f in doc.css("form[id]")}
    made = 0

    def new_form() -> str:
        # A box in no form gets one at the end of <body>, named by the input's form attribute: a
        # <form> put around it would close an open <p> when the page is parsed again.
        nonlocal made
        made += 1
        form_id = f"archiver-search-{made}"
        while form_id in by_id:
            made += 1
            form_id = f"archiver-search-{made}"
        form = _new_form(target.href, form_id)
        body.insert_child(form)
        by_id[form_id] = body.last_child if body.last_child is not None else form
        return form_id

    for button in list(doc.css("button.DocSearch-Button")):
        button.replace_with(_new_input(new_form()))
    for holder in list(doc.css("rustdoc-search")):
        if holder.css_first("input") is None:
            holder.insert_child(_new_input(new_form(), "search-input"))
    boxes: list[tuple[LexborNode, LexborNode]] = []
    for node in list(doc.css("input")):
        if not _is_box(node, target):
            continue
        form = _owner(node, by_id)
        if form is None:
            node.attrs["form"] = new_form()
            form = by_id[node.attributes["form"] or ""]
        for k, (other_form, other) in enumerate(boxes):
            if other_form.mem_id == form.mem_id:
                if _rank(node) < _rank(other):
                    boxes[k] = (form, node)
                break
        else:
            boxes.append((form, node))
    for form, box in boxes:
        owner = _owner(box, by_id) if "form" in box.attributes else None
        _fix_box(box, keep_form=owner is not None and owner.mem_id == form.mem_id)
        _fix_form(form, box, target.href)
        for node in [box, *_ancestors(box)]:
            _unhide(node)
    return len(boxes)
