"""What a packer learns from the main page's head: title, language, description, icon links.

Pure: no network, no filesystem, no clock. Works on the page's first bytes (the head belongs there).
"""

from __future__ import annotations

from dataclasses import dataclass

from archiver.zim.links import parse_html

__all__ = ["PageInfo", "page_info"]

# rel values that name an icon, best first
_ICON_RELS = ("icon", "shortcut icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon")


@dataclass(frozen=True)
class PageInfo:
    """The head of an HTML page. ``icons`` are the hrefs of ``<link rel=icon…>`` as written, best
    first (``rel=icon`` before ``apple-touch-icon`` …)."""

    title: str | None = None
    lang: str | None = None
    description: str | None = None
    icons: tuple[str, ...] = ()


def page_info(data: bytes) -> PageInfo:
    """Title, ``<html lang>``, ``<meta name=description>`` and icon links of an HTML document."""
    root = parse_html(data)
    if root is None:
        return PageInfo()
    title_element = root.find(".//title")
    title = " ".join(title_element.text_content().split()) or None if title_element is not None else None
    lang = (root.get("lang") or root.get("xml:lang") or "").strip() or None
    description = None
    icons: list[tuple[int, str]] = []
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() == "description" and description is None:
            description = " ".join((meta.get("content") or "").split()) or None
    for link in root.iter("link"):
        rel = " ".join((link.get("rel") or "").lower().split())
        href = (link.get("href") or "").strip()
        if href and rel in _ICON_RELS:
            icons.append((_ICON_RELS.index(rel), href))
    icons.sort(key=lambda pair: pair[0])
    return PageInfo(title=title, lang=lang, description=description, icons=tuple(h for _, h in icons))
