"""Switch off what a ZIM page would load from the network: embedded references to other sites.

Pure: no network, no filesystem, no clock. Bytes in, byte edits out.

A tree keeps the absolute URL of everything its capture did not store: assets of other sites (a
capture stores its own site's by default), skip-listed media, a tracking pixel (formats/tree.md §6.3).
In a ZIM each of them is an external dependency: Kiwix readers are offline, kiwix-serve's
Content-Security-Policy blocks them, zimcheck -X reports each as an error and ``verify`` as a
problem (formats/zim.md §7). So pack renames every attribute that makes the page *load* such a URL —
``src`` becomes ``data-zim-offline-src`` — in the stored page only (formats/zim.md §3.3):

- which attributes load something is the shared table's rule (:mod:`archiver.html_refs`, uses in
  ``EMBEDDED``): ``src`` of images, media, frames, scripts; ``srcset``; ``poster``; ``<object data>``;
  legacy ``background``; ``<link href>`` of stylesheets, icons, preloads, manifests; SVG ``href``;
  navigation (``<a href>``, ``<form action>``…) is never touched;
- external means an absolute ``http:``/``https:`` or scheme-relative ``//`` URL; a ``srcset`` is
  switched off when any of its candidates is external (the element keeps its ``src``);
- the edits are insertions of :data:`PREFIX` before attribute names, found by tokenising the bytes
  as HTML5 does (:func:`archiver.zim.zimsafe.start_tags`); the caller checks that the edited page's
  DOM is the original one with those attributes renamed, and keeps the page as it was otherwise.

The page then shows what an offline reader shows anyway (nothing at that place), its source still
names the URL, and ``extract`` undoes the edits like the zimcheck-safe ones, so tree → ZIM → tree
gives the original bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

from archiver.html_refs import EMBEDDED, Found, attribute_refs
from archiver.srcset import parse as srcset_candidates
from archiver.urls import ref_action
from archiver.zim.zimsafe import start_tags

__all__ = ["PREFIX", "external", "switch_off"]

#: What is put before the name of an attribute that would load an external URL.
PREFIX = b"data-zim-offline-"


def external(ref: str) -> bool:
    """An absolute ``http(s):`` or scheme-relative reference (what a ZIM reader cannot load)."""
    text = ref.strip(" \t\n\f\r")
    if ref_action(text) == "keep":
        return False
    head = text.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return text.startswith(("//", "\\\\")) or (":" in head)


def switch_off(data: bytes) -> Iterator[tuple[int, bytes, bytes]]:
    """``(offset, b"", PREFIX)`` for every attribute of ``data`` to rename, in document order (offsets
    in ``data``). Nothing when the page already holds :data:`PREFIX` (the rename could not be undone
    by name alone)."""
    if PREFIX in data or (b"//" not in data):
        return
    for tag, attributes in start_tags(data):
        values: dict[str, str] = {}
        for _offset, name, value in attributes:
            values.setdefault(name, value)
        hits = {f.attr for f in attribute_refs(tag, values) if f.use in EMBEDDED and _loads_external(f)}
        for offset, name, _value in attributes:
            if name in hits:  # every occurrence: a later duplicate must not take the first one's place
                yield offset, b"", PREFIX


def _loads_external(found: Found) -> bool:
    if found.srcset:
        return any(external(c.url) for c in srcset_candidates(found.value))
    return external(found.value)
