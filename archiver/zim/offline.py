"""Switch off what a ZIM page would load from the network: references to other sites.

Pure: no network, no filesystem, no clock. Bytes in, byte insertions out.

A tree keeps the absolute URL of everything its capture did not store: assets of other sites (a
capture stores its own site's by default), skip-listed media, a tracking pixel (formats/tree.md §6.3).
In a ZIM each of them is an external dependency: Kiwix readers are offline, kiwix-serve's
Content-Security-Policy blocks them, zimcheck -X reports each as an error and ``verify`` as a
problem (formats/zim.md §7). So pack switches them off in the stored files only (formats/zim.md §3.3):

- an HTML attribute that makes the page *load* such a URL is renamed, :data:`PREFIX` put before its
  name (``src`` → ``data-zim-offline-src``). Which attributes load something is the shared table's
  rule (:mod:`archiver.html_refs`, uses in ``EMBEDDED``): ``src`` of images, media, frames, scripts;
  ``srcset`` (when any candidate is external; the element keeps its ``src``); ``poster``; ``<object
  data>``; legacy ``background``; ``<link href>`` of stylesheets, icons, preloads, manifests; SVG
  ``href``. Navigation (``<a href>``, ``<form action>``…) is never touched;
- a CSS reference (``url()``, ``@import``, ``image-set()``; :mod:`archiver.css_refs`) in a
  stylesheet, a ``<style>`` element or a ``style`` attribute gets :data:`CSS_MARK` put before its URL
  (``url(https://x/a.png)`` → ``url(about:invalid#https://x/a.png)``): an ``about:`` URL is never
  fetched, and the rest of the rule stays as it was;
- external means what the link checker calls so (:func:`archiver.zim.links.external`): an absolute
  ``http:``/``https:`` or scheme-relative ``//`` URL.

A page is tokenised only when some ``//`` in it follows what starts such an attribute value or CSS
URL, or is inside a ``srcset`` value (a cheap look that lets the pages without one, most of them,
through at the cost of a search).

Every change is an insertion ``(offset, b"", text)``, recorded with the zimcheck-safe edits, so
``extract`` gives back the original bytes. Files that already hold a marker are left alone (the
insertion could not be told from the original), as are CSS texts that are not UTF-8 and ``style``
values written with character references (their offsets would not map). The caller checks the
result: a page's DOM must be the original one once :func:`undo_markers` took the markers out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from archiver.css_refs import references_detailed
from archiver.html_refs import EMBEDDED, SRCSET_ATTRIBUTES, URL_ATTRIBUTES, Found, attribute_refs
from archiver.srcset import parse as srcset_candidates
from archiver.zim.links import external
from archiver.zim.zimsafe import Edit, apply_edits, start_tags

__all__ = ["CSS_MARK", "PREFIX", "stylesheet", "switch_off", "undo_markers"]

#: What is put before the name of an attribute that would load an external URL.
PREFIX = b"data-zim-offline-"
#: What is put before an external URL in CSS.
CSS_MARK = b"about:invalid#"
_STYLE_END = re.compile(rb"</style[\s/>]", re.I)
# A cheap first look (a superset of what switch_off finds, up to character references in values): is
# some "//" the start of an external URL in an attribute that loads, or in CSS? Only a page where one
# is gets tokenised.
_LOADING_NAMES = sorted(
    {a for (_t, a), use in URL_ATTRIBUTES.items() if use in EMBEDDED and a != "href"}
    | {a for (_t, a) in SRCSET_ATTRIBUTES}
)
_HREF_TAGS = sorted(
    {t for (t, a), use in URL_ATTRIBUTES.items() if a == "href" and use in EMBEDDED} | {"link"}
)
_BEFORE = re.compile(
    rb"(?:\s(?:" + "|".join(map(re.escape, _LOADING_NAMES)).encode() + rb")\s*=\s*[\"']?"
    + rb"|<(?:" + "|".join(_HREF_TAGS).encode() + rb")\b[^<]*?\shref\s*=\s*[\"']?"
    + rb"""|url\(\s*["']?|@import\s*["']|image-set\(\s*["'])\s*(?:https?:)?\Z""",
    re.I,
)  # fmt: skip
_WINDOW = 512  # bytes before a "//" that _BEFORE looks at
# A srcset's external candidate need not be its first (``a.png 1x, https://x/b.png 2x``, what an
# import leaves of a candidate its archive lacks): any "//" inside a srcset value is worth a look.
_SRCSET_SLASHES = re.compile(
    rb"\s(?:" + "|".join(sorted({a for (_t, a) in SRCSET_ATTRIBUTES})).encode()
    + rb""")\s*=\s*(?:"[^"]*//|'[^']*//|[^\s"'<>`]*//)""",
    re.I,
)  # fmt: skip


def _worth_a_look(data: bytes) -> bool:
    at = data.find(b"//")
    if at >= 0 and _SRCSET_SLASHES.search(data):
        return True
    while at >= 0:
        if _BEFORE.search(data, max(0, at - _WINDOW), at):
            return True
        at = data.find(b"//", at + 2)
    return False


_NEWLINES = re.compile(r"\r\n|[\r\n\f]")  # what tinycss2 counts as a line break
Insertion = tuple[int, bytes, bytes]


def undo_markers(dom: str) -> str:
    """A serialised DOM with the markers taken out (what the original's DOM must equal)."""
    return dom.replace(" " + PREFIX.decode("ascii"), " ").replace(CSS_MARK.decode("ascii"), "")


def switch_off(data: bytes) -> list[Insertion]:
    """The insertions that switch off an HTML page's external references, in offset order (offsets in
    ``data``): attribute renames and CSS marks in ``<style>`` and ``style``. None when the page
    already holds a marker, or when no ``//`` in it follows what starts a loading attribute value or
    a CSS URL (the first look, :func:`_worth_a_look`)."""
    if PREFIX in data or CSS_MARK in data or not _worth_a_look(data):
        return []
    out: list[Insertion] = []
    for tag in start_tags(data):
        values: dict[str, str] = {}
        for a in tag.attributes:
            values.setdefault(a.name, a.value)
        hits = {f.attr for f in attribute_refs(tag.name, values) if f.use in EMBEDDED and _loads_external(f)}
        for a in tag.attributes:
            if a.name in hits:  # every occurrence: a later duplicate must not take the first one's place
                out.append((a.offset, b"", PREFIX))
            elif a.name == "style" and b"&" not in data[a.start : a.end]:
                out.extend(_css_marks(data, a.start, a.end))
        if tag.name == "style":
            end = _STYLE_END.search(data, tag.end)
            out.extend(_css_marks(data, tag.end, end.start() if end else len(data)))
    return sorted(out)


def stylesheet(data: bytes) -> tuple[bytes, list[Edit]]:
    """A stylesheet (UTF-8; a BOM allowed) with its external references switched off, and the edits
    (none: ``data`` itself). Kept as it was unless every reference is still read, in the same order,
    as it was or marked."""
    if CSS_MARK in data or b"//" not in data:
        return data, []
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    marks = list(_css_marks(data, start, len(data)))
    if not marks:
        return data, []
    out, edits = apply_edits(data, marks)
    before = [r.url for r in references_detailed(data[start:].decode("utf-8"))]
    after = [r.url for r in references_detailed(out[start:].decode("utf-8"))]
    mark = CSS_MARK.decode("ascii")
    if len(after) != len(before) or any(a not in (b, mark + b) for a, b in zip(after, before, strict=True)):
        return data, []
    return out, edits


def _loads_external(found: Found) -> bool:
    if found.srcset:
        return any(external(c.url) for c in srcset_candidates(found.value))
    return external(found.value)


def _css_marks(data: bytes, start: int, end: int) -> Iterator[Insertion]:
    """:data:`CSS_MARK` before every external URL of the CSS at ``data[start:end]``."""
    chunk = data[start:end]
    if b"//" not in chunk:
        return
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return
    line_starts = [0] + [m.end() for m in _NEWLINES.finditer(text)]
    chars = octets = 0  # a position in text and the same one in bytes (references come in order)
    for ref in references_detailed(text):
        if not external(ref.url) or not 0 < ref.line <= len(line_starts):
            continue
        at = line_starts[ref.line - 1] + ref.column - 1
        if text[at : at + 1] in ('"', "'"):
            at += 1
        elif text[at : at + 4].lower() == "url(":
            at += 4
            while text[at : at + 1] in (" ", "\t", "\n", "\r", "\f"):
                at += 1
        else:
            continue
        if at >= chars and text.startswith(ref.url[:1], at):
            octets += len(text[chars:at].encode("utf-8"))
            chars = at
            yield start + octets, b"", CSS_MARK
