"""What a URL is in HTML, for every part of the archiver: the one table capture rewrites from, gwtar
orders from (formats/gwtar.md §5.2) and the ZIM link checker checks from (formats/zim.md §7). Each
keeps its own parser (selectolax, html.parser, lxml) and asks this module about the elements it meets.

Pure: no network, no filesystem, no clock.

Every URL attribute has a :data:`Use`:

- ``"link"``: navigation; the page displays without it (``<a href>``, ``<area href>``, most ``<link>``
  rels such as ``canonical`` or ``prefetch``, which is for a later navigation);
- ``"absolute"``: never loaded by the page, kept as an absolute URL (``<form action>``, ``cite``);
- ``"frame"``: a nested document (``<iframe src>``, ``<frame src>``): embedded content, yet a page;
- ``"style" "font" "script" "image" "media" "other"``: an embedded resource the page loads to display.

Tags and attribute names are lower case (every HTML parser reports them so). ``<link href>`` takes its
use from ``rel`` (and ``as`` for ``preload``): :func:`link_use`. ``<input src>`` counts only for
``type=image``. srcset-like attributes (a list of candidates) are listed apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, NamedTuple

__all__ = [
    "EMBEDDED",
    "LAZY_SRC",
    "LAZY_SRCSET",
    "LAZY_TAGS",
    "LINK_AS",
    "LINK_RELS",
    "ONLY_WHEN",
    "SRCSET_ATTRIBUTES",
    "URL_ATTRIBUTES",
    "URL_ATTRIBUTE_NAMES",
    "Found",
    "Use",
    "attribute_refs",
    "link_use",
    "parse_refresh",
]

Use = Literal["link", "absolute", "frame", "style", "font", "script", "image", "media", "other"]
#: The uses whose target the page loads to display itself.
EMBEDDED: frozenset[Use] = frozenset({"frame", "style", "font", "script", "image", "media", "other"})

_SVG_HREF_IMAGE = ("image", "use", "feimage", "pattern", "lineargradient", "radialgradient", "textpath",
                   "mpath", "filter")  # fmt: skip
_BACKGROUND_TAGS = ("body", "table", "tr", "td", "th")  # legacy presentational attribute

#: (tag, attribute) → use, for single-URL attributes (``<link href>`` apart: :func:`link_use`).
URL_ATTRIBUTES: dict[tuple[str, str], Use] = {
    ("a", "href"): "link",
    ("a", "xlink:href"): "link",  # SVG <a>
    ("area", "href"): "link",
    ("iframe", "src"): "frame",
    ("frame", "src"): "frame",
    ("script", "src"): "script",
    ("script", "href"): "script",  # SVG <script>
    ("script", "xlink:href"): "script",
    ("img", "src"): "image",
    ("input", "src"): "image",  # type=image only (ONLY_WHEN)
    ("video", "src"): "media",
    ("video", "poster"): "image",
    ("audio", "src"): "media",
    ("source", "src"): "media",  # a media element's source (<picture> sources use srcset)
    ("track", "src"): "other",
    ("embed", "src"): "other",
    ("object", "data"): "other",
    **{(tag, "background"): "image" for tag in _BACKGROUND_TAGS},
    **{(tag, attr): "image" for tag in _SVG_HREF_IMAGE for attr in ("href", "xlink:href")},
    ("form", "action"): "absolute",
    ("button", "formaction"): "absolute",
    ("input", "formaction"): "absolute",
    ("blockquote", "cite"): "absolute",
    ("q", "cite"): "absolute",
    ("del", "cite"): "absolute",
    ("ins", "cite"): "absolute",
}
#: (tag, attribute) → use, for attributes holding a list of candidates (WHATWG srcset rules).
SRCSET_ATTRIBUTES: dict[tuple[str, str], Use] = {
    ("img", "srcset"): "image",
    ("source", "srcset"): "image",
    ("link", "imagesrcset"): "image",
}
#: (tag, attribute) → (other attribute, value it must have, ASCII case-insensitive) for the row to count.
ONLY_WHEN: dict[tuple[str, str], tuple[str, str]] = {("input", "src"): ("type", "image")}
#: ``<link rel>`` tokens that embed, in precedence order; None: the use comes from ``as`` (LINK_AS).
LINK_RELS: dict[str, Use | None] = {
    "stylesheet": "style",
    "preload": None,
    "modulepreload": "script",
    "icon": "image",
    "shortcut": "image",
    "apple-touch-icon": "image",
    "apple-touch-icon-precomposed": "image",
    "mask-icon": "image",
    "fluid-icon": "image",
    "image_src": "image",
    "manifest": "other",
}
#: ``<link rel=preload as=…>`` → use (any other ``as``: ``"other"``).
LINK_AS: dict[str, Use] = {
    "style": "style",
    "font": "font",
    "script": "script",
    "image": "image",
    "audio": "media",
    "video": "media",
    "document": "frame",
}
#: Every attribute name that holds a URL (so may hold a ``javascript:`` one).
URL_ATTRIBUTE_NAMES = frozenset({"href"} | {attr for _, attr in URL_ATTRIBUTES})
#: Lazy-loading attributes a script would copy into ``src`` / ``srcset``, and the tags they are on.
LAZY_SRC = ("data-src", "data-lazy-src")
LAZY_SRCSET = "data-srcset"
LAZY_TAGS = frozenset({"img", "source", "iframe", "video", "audio"})

_BY_TAG: dict[str, list[tuple[str, Use, bool]]] = {}
for (_tag, _attr), _use in URL_ATTRIBUTES.items():
    _BY_TAG.setdefault(_tag, []).append((_attr, _use, False))
for (_tag, _attr), _use in SRCSET_ATTRIBUTES.items():
    _BY_TAG.setdefault(_tag, []).append((_attr, _use, True))

#: compiled at its use (re keeps it), with re.I and re.S: only a meta refresh needs it
_REFRESH = r"^\s*(\d*(?:\.\d*)?)\s*(?:[;,]\s*(?:url\s*=\s*)?(['\"]?)(.*?)\2\s*)?$"


class Found(NamedTuple):
    """One URL attribute of an element: its name, its value as written, its use, and whether the value
    is a list of candidates (``srcset``: split it with :func:`archiver.srcset.parse`)."""

    attr: str
    value: str
    use: Use
    srcset: bool = False


def link_use(rel: str | None, as_: str | None = None) -> Use:
    """The use of a ``<link href>`` with these ``rel`` and ``as`` values (``"link"`` when no token of
    ``rel`` embeds: ``canonical``, ``alternate``, ``prefetch``, ``preconnect`` …)."""
    tokens = (rel or "").lower().split()
    for name, use in LINK_RELS.items():
        if name in tokens:
            return use if use is not None else LINK_AS.get((as_ or "").strip().lower(), "other")
    return "link"


def attribute_refs(tag: str, attrs: Mapping[str, str | None]) -> list[Found]:
    """The URL attributes present on an element ``tag`` (lower case) with attributes ``attrs``, in
    table order (``<link href>`` first, srcset-like attributes last)."""
    rows = _BY_TAG.get(tag)
    out: list[Found] = []
    if tag == "link":
        href = attrs.get("href")
        if href is not None:
            out.append(Found("href", href, link_use(attrs.get("rel"), attrs.get("as"))))
    for attr, use, is_srcset in rows or ():
        value = attrs.get(attr)
        if value is None:
            continue
        when = ONLY_WHEN.get((tag, attr))
        if when is not None and (attrs.get(when[0]) or "").strip().lower() != when[1]:
            continue
        out.append(Found(attr, value, use, is_srcset))
    return out


def parse_refresh(content: str) -> tuple[str, str] | None:
    """``<meta http-equiv=refresh content>`` as (delay, URL as written; empty when none), or None when
    it is not one (``5``, ``0; url=next.html``, ``0, 'x.html'``, ``1;URL=x``)."""
    m = re.match(_REFRESH, content, re.I | re.S)
    if m is None:
        return None
    return m.group(1), m.group(3) or ""
