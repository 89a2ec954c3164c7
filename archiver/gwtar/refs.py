"""What a page needs for its first render: the references of an HTML document and of a stylesheet,
in document order, each with a category that decides its place in a gwtar (formats/gwtar.md §5.2).

Pure: no network, no filesystem, no clock.

HTML is tokenized with the standard library's tolerant ``html.parser``; which attributes are
references is the shared table :mod:`archiver.html_refs`, CSS references are :mod:`archiver.css_refs`
(tinycss2 tokens, never regular expressions). Nothing here raises on hostile input: unreadable parts
yield no references.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from archiver.css_refs import Reference, references_detailed
from archiver.html_close import Parser
from archiver.html_depth import bound_depth
from archiver.html_refs import attribute_refs
from archiver.srcset import urls as srcset_urls

__all__ = ["Category", "Ref", "css_refs", "html_refs", "resolve"]

Category = Literal["style", "font", "script", "image", "media", "other"]
_NOT_ASSETS = ("link", "absolute")  # uses (archiver.html_refs) a page does not load to display


@dataclass(frozen=True)
class Ref:
    """One reference as written in the document (entities decoded) and what it is for."""

    url: str
    category: Category


def _category(ref: Reference) -> Category:
    if ref.role == "import":
        return "style"
    return "font" if ref.font_face else "image"


def css_refs(text: str) -> list[Ref]:
    """References of a stylesheet in order: ``@import`` (``style``), ``url()`` inside ``@font-face``
    (``font``), every other ``url()``/``image-set()`` (``image``); the walker is
    :mod:`archiver.css_refs`."""
    return [Ref(r.url, _category(r)) for r in references_detailed(text)]


class _Collector(Parser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[Ref] = []
        self._in_style = False

    def _add(self, url: str | None, category: Category) -> None:
        if url and url.strip():
            self.refs.append(Ref(url.strip(), category))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if "style" in a:
            self.refs.extend(css_refs(a["style"]))
        for found in attribute_refs(tag, a):
            if found.use in _NOT_ASSETS:
                continue
            category: Category = "other" if found.use == "frame" else found.use  # type: ignore[assignment]
            for url in srcset_urls(found.value) if found.srcset else [found.value]:
                self._add(url, category)
        if tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.refs.extend(css_refs(data))


def html_refs(data: bytes | str) -> list[Ref]:
    """References of an HTML document in document order (stylesheets, scripts, images, ``srcset``
    candidates, media, ``style`` attributes and ``<style>`` blocks). Bytes are read as UTF-8 with
    replacement."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    collector = _Collector()
    try:
        collector.feed(bound_depth(text))
        collector.close()
    except (AssertionError, RecursionError):  # html.parser gives up on some malformed markup
        pass
    return collector.refs


def resolve(base: str, ref: str) -> str | None:
    """The tree path ``ref`` reaches from the document at tree path ``base``, or None when it leaves
    the tree (a scheme, ``//host``, ``..`` above the root) or is empty. Query and fragment are
    dropped; the path is percent-decoded once (formats/tree.md §5), so ``a%20b.png`` is ``a b.png``
    and ``a%252Fb`` the file ``a%2Fb``. A root-absolute ``/x`` is taken from the tree's root."""
    ref = ref.strip()
    for cut in ("#", "?"):
        ref = ref.split(cut, 1)[0]
    if not ref or ref.startswith("//"):
        return None
    head = ref.split("/", 1)[0]
    if ":" in head:  # a scheme (http:, data:, javascript:, …)
        return None
    path = unquote(ref) if "%" in ref else ref
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(base), path)
    norm = posixpath.normpath(joined)
    if norm in (".", "", "..") or norm.startswith(("../", "/")):
        return None
    return norm
