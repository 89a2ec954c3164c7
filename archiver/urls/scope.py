"""Scope (tree.md §6): which pages are crawled (same site, prefixes), which assets are stored (extension,
registrable domain), and whether a link's target is likely a page.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from archiver.urls.canonical import _canonical, host_of
from archiver.urls.dedup import NO_HYGIENE, _dedup
from archiver.urls.domains import _hostname, _is_ip, registrable_domain
from archiver.urls.percent import _decode_segment
from archiver.urls.tree_path import Kind

__all__ = [
    "DEFAULT_SKIP_EXTENSIONS",
    "ext",
    "guess_kind",
    "in_scope",
    "key_ext",
    "key_kind",
    "likely_page",
    "same_site",
    "want_asset",
]

#: Asset extensions left on the live web unless the user asks for them (tree.md §6.3).
DEFAULT_SKIP_EXTENSIONS = frozenset(
    ".mp4 .m4v .mov .avi .mkv .webm .flv .wmv .m3u8 .ts .mp3 .wav .flac .aac .ogg .oga .dmg .pkg .exe .msi "
    ".deb .rpm .appimage .iso .zip .tar .gz .tgz .bz2 .xz .7z .rar .pdf".split()
)
# LikelyPage: a link whose last segment has one of these extensions is an asset, not a page (tree.md §6.4).
_ASSET_EXTENSIONS = DEFAULT_SKIP_EXTENSIONS | frozenset(
    ".png .jpg .jpeg .gif .webp .avif .svg .ico .bmp .tif .tiff .woff .woff2 .ttf .otf .eot .css .js .mjs "
    ".json .xml .rss .atom .csv .txt .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub .wasm .map".split()
)


def same_site(home: str, url: str, *, subdomains: bool = False) -> bool:
    """Is ``url`` on the site of ``home`` (tree.md §6.1)? Same host name (ports ignored); with
    ``subdomains``, same registrable domain. IP literals only ever match themselves."""
    a = _hostname(host_of(home))
    b = _hostname(host_of(url))
    if a == b:
        return True
    if not subdomains or _is_ip(a) or _is_ip(b):
        return False
    return registrable_domain(a) == registrable_domain(b)


def _prefix_matches(path: str, prefix: str) -> bool:
    prefix = "/" + prefix.strip("/")
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def in_scope(
    home: str,
    url: str,
    *,
    subdomains: bool = False,
    prefix: str | None = None,
    exclude: Iterable[str] = (),
) -> bool:
    """Is ``url`` a page to crawl (tree.md §6.1)? Same site, under ``prefix`` and under no ``exclude``
    prefix; prefixes are whole segments (``/api`` matches ``/api/x``, not ``/apiv1``)."""
    if not same_site(home, url, subdomains=subdomains):
        return False
    path = _dedup(url, NO_HYGIENE).path
    if prefix is not None and not _prefix_matches(path, prefix):
        return False
    return not any(_prefix_matches(path, p) for p in exclude)


def ext(url: str) -> str:
    """Lowercased extension of the last path segment, with its dot; the query is ignored."""
    leaf = _canonical(url, None).path.rsplit("/", 1)[-1]
    dot = leaf.rfind(".")
    return _decode_segment(leaf[dot:]).lower() if dot > 0 else ""


#: a canonical http(s) URL: its path runs from the ``/`` after the authority to a ``?``, ``#`` or the end
_KEY_PATH = re.compile(r"https?://[^/?#\\\s]+(/[^?#\\\s]*)(?:[?#]|\Z)")


def key_ext(key: str) -> str:
    """:func:`ext` of a canonical URL (a dedup key, as :func:`canonicalize` gives it), read from its
    text instead of parsing it again (a canonical path holds neither ``?`` nor ``#``), remembered by
    the last segment; any other URL is parsed (``tests/test_urls_properties.py`` checks both agree)."""
    m = _KEY_PATH.match(key)
    if m is None:
        return ext(key)
    return _leaf_ext(m.group(1).rpartition("/")[2])


@lru_cache(maxsize=4096)
def _leaf_ext(leaf: str) -> str:
    dot = leaf.rfind(".")
    return _decode_segment(leaf[dot:]).lower() if dot > 0 else ""


def likely_page(url: str) -> bool:
    """False when the extension says the target is a file (image, archive, font, CSS…; tree.md §6.4)."""
    return ext(url) not in _ASSET_EXTENSIONS


def guess_kind(url: str) -> Kind:
    """``"page"`` or ``"asset"`` from the URL alone, for links (``<a href>``) whose target is unknown."""
    return "page" if likely_page(url) else "asset"


def key_kind(key: str) -> Kind:
    """:func:`guess_kind` of a canonical URL (:func:`key_ext`)."""
    return "page" if key_ext(key) not in _ASSET_EXTENSIONS else "asset"


def want_asset(
    home: str,
    url: str,
    *,
    same_domain: bool = True,
    skip: frozenset[str] = DEFAULT_SKIP_EXTENSIONS,
) -> bool:
    """Should the asset at ``url`` be stored (tree.md §6.3)? Its extension is not skipped and, with
    ``same_domain``, it shares ``home``'s registrable domain (IP literals: the same address)."""
    if ext(url) in skip:
        return False
    return not same_domain or same_site(home, url, subdomains=True)
