"""The link checker: every reference in an HTML or CSS document, and what is wrong with each.

Pure: no network, no filesystem, no clock. A document's bytes and its archive path go in, with a
predicate that says whether an archive path exists; problems come out as values (formats/zim.md §6).

What is read (the shared tables, so capture, gwtar and this checker agree on what a reference is):

- HTML: every URL attribute of :mod:`archiver.html_refs` but the never-loaded ones (``form action``,
  ``cite``): ``href``, ``src``, ``srcset`` and ``imagesrcset`` (parsed by the HTML standard's
  algorithm, so a URL may contain commas), ``poster``, ``object[data]``, legacy ``background``, SVG
  ``href``/``xlink:href``; ``<base href>``, ``<meta http-equiv=refresh>``, ``style`` attributes and
  ``<style>`` elements;
- CSS (:mod:`archiver.css_refs`, comments skipped): ``url(…)`` in both spellings, ``src()``, the
  strings of ``image-set()``, ``@import`` (string or url); never an ``@namespace`` name.

What is wrong:

- a relative target that does not exist once its query and fragment are dropped and it is
  percent-decoded (ZIM readers ignore queries; archive paths are stored decoded);
- a relative target that climbs above the archive's root;
- a root-absolute reference (``/x``): readers mount an archive under a prefix (``/content/<book>/``),
  so it never resolves;
- an absolute (``https:``/``//``) reference that the document *needs* to display offline: anything
  embedded (images, scripts, stylesheets, fonts, frames, media, icons). Navigation links (``<a>``,
  ``<area>``, ``<link rel=canonical>`` …) may point outside.

References a tree keeps as written are ignored: empty, ``#fragment``, ``data: mailto: javascript:`` ….
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

import lxml.etree
import lxml.html

from archiver.css_refs import decode, may_reference_bytes, references
from archiver.html_depth import bound_depth
from archiver.html_refs import EMBEDDED, attribute_refs, parse_refresh
from archiver.srcset import urls as srcset_urls
from archiver.urls import ref_action

__all__ = [
    "LinkProblem",
    "Ref",
    "check_document",
    "css_refs",
    "external",
    "html_refs",
    "parse_html",
    "resolve",
]

_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"


@dataclass(frozen=True)
class Ref:
    """One reference as written (``ref``), where it was found (``where``, like ``<img srcset>``), and
    whether the document needs its target to display offline (``embedded``)."""

    ref: str
    where: str
    embedded: bool


@dataclass(frozen=True)
class LinkProblem:
    """A reference that will not work in the archive, and why (one line)."""

    ref: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where} {self.ref!r}: {self.message}"


def _css(text: str, where: str) -> Iterator[Ref]:
    for url, role in references(text):
        yield Ref(url, f"{where} @import" if role == "import" else where, True)


def css_refs(text: str | bytes, where: str = "css") -> Iterator[Ref]:
    """Every URL a stylesheet loads (:mod:`archiver.css_refs`: ``url()``, ``src()``, ``image-set()``
    strings, ``@import``; comments skipped). Bytes are decoded as CSS says (BOM, ``@charset``, else
    UTF-8)."""
    if isinstance(text, bytes):
        if not may_reference_bytes(text):  # most stylesheets' bytes: no decoding, no tokenizing
            return
        text = decode(text)
    yield from _css(text, where)


_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")


def parse_html(data: bytes) -> lxml.html.HtmlElement | None:
    """The document's tree, or None for an empty or unparseable one. The bytes are decoded by their
    BOM or ``<meta charset>`` in the first 4 KiB, else as UTF-8 (libxml2's own default would be
    Latin-1, which garbles raw UTF-8 links), invalid bytes replaced."""
    if data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        m = _CHARSET.search(data[:4096])
        encoding = m.group(1).decode("ascii") if m else "utf-8"
    try:
        text = data.decode(encoding, "replace")
    except LookupError:
        text = data.decode("utf-8", "replace")
    text = _XML_DECLARATION.sub("", text, count=1)
    if not text.strip():
        return None
    try:
        return lxml.html.document_fromstring(bound_depth(text))
    except (lxml.etree.ParserError, ValueError):
        return None


def html_refs(data: bytes) -> Iterator[Ref]:
    """Every reference of an HTML document (see the module docstring), in document order."""
    root = parse_html(data)
    if root is None:
        return
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        tag = tag.rsplit("}", 1)[-1].lower()
        attrib: Mapping[str, str] = el.attrib
        if tag == "base" and "href" in attrib:
            yield Ref(attrib["href"], "<base href>", False)
        if _XLINK_HREF in attrib:  # an XML-namespaced name, as lxml may report it
            attrib = {**attrib, "xlink:href": attrib[_XLINK_HREF]}
        for found in attribute_refs(tag, attrib):
            if found.use == "absolute":
                continue  # never loaded (form action, cite): kept as written
            where = f"<{tag} {found.attr}>"
            if found.srcset:
                yield from (Ref(u, where, True) for u in srcset_urls(found.value))
            else:
                yield Ref(found.value, where, found.use in EMBEDDED)
        if tag == "meta" and (attrib.get("http-equiv") or "").lower() == "refresh":
            refresh = parse_refresh(attrib.get("content") or "")
            if refresh is not None and refresh[1]:
                yield Ref(refresh[1], "<meta refresh>", False)
        if "style" in attrib:
            yield from _css(attrib["style"], f"<{tag} style>")
        if tag == "style" and el.text:
            yield from _css(el.text, "<style>")


def resolve(doc_path: str, ref: str) -> str | None:
    """The archive path a relative reference in the document at ``doc_path`` points to: query and
    fragment dropped, percent-decoded once, dot segments resolved. ``""`` for a reference to the
    document itself (``?x``, ``#y`` already excluded); None when it climbs above the root."""
    target = ref.strip().split("#", 1)[0].split("?", 1)[0]
    if not target:
        return ""
    decoded = unquote(target, encoding="utf-8", errors="surrogateescape")
    folder = posixpath.dirname(doc_path)
    parts: list[str] = [p for p in folder.split("/") if p]
    for segment in decoded.split("/")[:-1]:
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    leaf = decoded.split("/")[-1]
    if leaf == "..":
        if not parts:
            return None
        parts.pop()
        leaf = ""
    elif leaf == ".":
        leaf = ""
    return "/".join([*parts, leaf]) if parts else leaf


def _scheme(ref: str) -> str | None:
    head = ref.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if ":" in head:
        return head.split(":", 1)[0].lower()
    return None


def _leaves(ref: str) -> bool:
    """Whether a reference that is fetched at all (:func:`archiver.urls.ref_action`) is absolute:
    ``http(s):`` or scheme-relative ``//``, so it leaves the archive."""
    return _scheme(ref) is not None or ref.startswith(("//", "\\\\"))


def external(ref: str) -> bool:
    """An absolute ``http(s):`` or scheme-relative reference: one a ZIM reader cannot load."""
    text = ref.strip()
    return ref_action(text) == "fetch" and _leaves(text)


def check_document(
    doc_path: str,
    data: bytes,
    media_type: str,
    exists: Callable[[str], bool],
) -> tuple[int, list[LinkProblem]]:
    """(number of references checked, problems) for one HTML (``text/html``,
    ``application/xhtml+xml``) or CSS (``text/css``) document at archive path ``doc_path``. Each
    distinct (reference, place, problem) is reported once per document; every one is reported."""
    if media_type in ("text/html", "application/xhtml+xml"):
        refs = list(html_refs(data))
    elif media_type == "text/css":
        refs = list(css_refs(data))
    else:
        return 0, []
    base = doc_path
    problems: dict[tuple[str, str, str], LinkProblem] = {}

    def problem(r: Ref, message: str) -> None:
        problems.setdefault((r.ref, r.where, message), LinkProblem(r.ref, r.where, message))

    for r in refs:
        if r.where == "<base href>":
            ref = r.ref.strip()
            if ref_action(ref) == "keep":
                continue
            if _scheme(ref) or ref.startswith(("/", "\\")):
                problem(r, "an absolute <base href> sends every relative link out of the archive")
                continue
            target = resolve(doc_path, ref if ref.endswith("/") else ref + "x")
            base = target if target is not None else doc_path
    checked = 0
    for r in refs:
        if r.where == "<base href>":
            continue
        ref = r.ref.strip()
        if ref_action(ref) == "keep":
            continue
        checked += 1
        if _leaves(ref):
            if r.embedded:
                problem(r, "external resource: the page needs it and it is not in the archive")
            continue
        if ref.startswith(("/", "\\")):
            problem(r, "root-absolute link: readers serve the archive under a prefix, so it never resolves")
            continue
        target = resolve(base, ref)
        if target is None:
            problem(r, "climbs above the archive's root")
        elif target == "":
            continue
        elif not exists(target):
            hint = " (a folder: ZIM has no index pages, link to …/index.html)" if target.endswith("/") else ""
            problem(r, f"broken: {target!r} is not in the archive{hint}")
    return checked, list(problems.values())
