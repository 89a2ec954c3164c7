"""The link checker: every reference in an HTML or CSS document, and what is wrong with each.

Pure: no network, no filesystem, no clock. A document's bytes and its archive path go in, with a
predicate that says whether an archive path exists; problems come out as values (formats/zim.md §6).

What is read:

- HTML: ``href`` (``a area link base``), ``src`` (``img script iframe frame embed audio video source
  track input``), ``srcset`` and ``imagesrcset`` (parsed by the HTML standard's algorithm, so a URL
  may contain commas), ``poster``, ``object[data]``, legacy ``background``, SVG ``href``/``xlink:href``,
  ``<meta http-equiv=refresh>``, ``style`` attributes and ``<style>`` elements;
- CSS (with tinycss2, comments skipped): ``url(…)`` in both spellings, ``src()``, the strings of
  ``image-set()``, ``@import`` (string or url).

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import lxml.etree
import lxml.html
import tinycss2
import tinycss2.ast

from archiver.srcset import parse as srcset_candidates
from archiver.urls import ref_action

__all__ = [
    "LinkProblem",
    "Ref",
    "check_document",
    "css_refs",
    "html_refs",
    "parse_html",
    "parse_srcset",
    "resolve",
]

# link rel values whose target a page loads to display itself
_EMBEDDING_RELS = frozenset(
    {"stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon", "preload",
     "modulepreload", "manifest", "prefetch", "fluid-icon"}
)  # fmt: skip
_SRC_TAGS = frozenset(
    {"img", "script", "iframe", "frame", "embed", "audio", "video", "source", "track", "input"}
)
_SRCSET_TAGS = frozenset({"img", "source"})
_CSS_URL_FUNCTIONS = frozenset({"url", "src"})
_CSS_SET_FUNCTIONS = frozenset({"image-set", "-webkit-image-set"})
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


def parse_srcset(value: str) -> list[str]:
    """The URLs of a ``srcset`` value, by the HTML standard's algorithm (:func:`archiver.srcset.parse`):
    a URL runs to the next white space, and commas at its end separate candidates, so
    ``a,b.png 1x, c.png 2x`` is ``a,b.png`` and ``c.png``."""
    return [c.url for c in srcset_candidates(value)]


def _walk_tokens(tokens: list[tinycss2.ast.Node] | None, where: str) -> Iterator[Ref]:
    for token in tokens or ():
        if token.type == "url":
            yield Ref(token.value, where, True)
        elif token.type == "function":
            name = token.lower_name
            if name in _CSS_URL_FUNCTIONS:
                strings = [a for a in token.arguments if a.type == "string"]
                if strings:
                    yield Ref(strings[0].value, where, True)
                    continue
            if name in _CSS_SET_FUNCTIONS:
                for arg in token.arguments:
                    if arg.type == "string":
                        yield Ref(arg.value, where, True)
            yield from _walk_tokens(token.arguments, where)
        elif token.type in ("() block", "[] block", "{} block"):
            yield from _walk_tokens(token.content, where)


def _css_rules(rules: list[tinycss2.ast.Node], where: str) -> Iterator[Ref]:
    for rule in rules:
        if rule.type == "at-rule":
            if rule.lower_at_keyword == "import":
                for token in rule.prelude:
                    if token.type == "string":
                        yield Ref(token.value, f"{where} @import", True)
                        break
                    if token.type in ("url", "function"):
                        yield from (
                            Ref(r.ref, f"{where} @import", True) for r in _walk_tokens([token], where)
                        )
                        break
                continue
            if rule.lower_at_keyword == "namespace":
                continue  # a namespace URI is a name, never fetched
            # @media, @supports, @font-face …: every url() in them, nested blocks included
            yield from _walk_tokens(rule.prelude, where)
            yield from _walk_tokens(rule.content, where)
        elif rule.type == "qualified-rule":
            yield from _walk_tokens(rule.content, where)


def css_refs(text: str | bytes, where: str = "css") -> Iterator[Ref]:
    """Every URL a stylesheet loads (comments skipped): ``url()``, ``src()``, ``image-set()`` strings,
    ``@import``. Bytes are decoded as CSS says (``@charset``, BOM, else UTF-8)."""
    if isinstance(text, bytes):
        rules, _ = tinycss2.parse_stylesheet_bytes(text, skip_comments=True, skip_whitespace=True)
    else:
        rules = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    yield from _css_rules(rules, where)


def _inline_css_refs(text: str, where: str) -> Iterator[Ref]:
    yield from _walk_tokens(tinycss2.parse_component_value_list(text, skip_comments=True), where)


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
        return lxml.html.document_fromstring(text)
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
        attrib = el.attrib
        if "href" in attrib and tag in ("a", "area", "link", "base", "image", "use", "feimage"):
            embedded = tag in ("image", "use", "feimage")
            if tag == "link":
                rels = set((attrib.get("rel") or "").lower().split())
                embedded = bool(rels & _EMBEDDING_RELS) or "icon" in rels
            yield Ref(attrib["href"], f"<{tag} href>", embedded)
        for name in ("xlink:href", _XLINK_HREF):
            if name in attrib:
                yield Ref(attrib[name], f"<{tag} xlink:href>", True)
        is_image_input = tag != "input" or (attrib.get("type") or "").lower() == "image"
        if "src" in attrib and tag in _SRC_TAGS and is_image_input:
            yield Ref(attrib["src"], f"<{tag} src>", True)
        if "srcset" in attrib and tag in _SRCSET_TAGS:
            yield from (Ref(u, f"<{tag} srcset>", True) for u in parse_srcset(attrib["srcset"]))
        if "imagesrcset" in attrib and tag == "link":
            yield from (Ref(u, "<link imagesrcset>", True) for u in parse_srcset(attrib["imagesrcset"]))
        if "poster" in attrib and tag == "video":
            yield Ref(attrib["poster"], "<video poster>", True)
        if "data" in attrib and tag == "object":
            yield Ref(attrib["data"], "<object data>", True)
        if "background" in attrib and tag in ("body", "table", "td", "th", "tr"):
            yield Ref(attrib["background"], f"<{tag} background>", True)
        if tag == "meta" and (attrib.get("http-equiv") or "").lower() == "refresh":
            content = attrib.get("content") or ""
            _, _, rest = content.partition(";")
            rest = rest.strip()
            if rest.lower().startswith("url"):
                target = rest[3:].lstrip(" =").strip().strip("'\"")
                if target:
                    yield Ref(target, "<meta refresh>", False)
        if "style" in attrib:
            yield from _inline_css_refs(attrib["style"], f"<{tag} style>")
        if tag == "style" and el.text:
            yield from css_refs(el.text, "<style>")


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
        scheme = _scheme(ref)
        if scheme is not None or ref.startswith(("//", "\\\\")):
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
