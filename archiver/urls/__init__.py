"""The tree contract's pure core: canonical URLs, dedup keys, LocalPath, Rel and scope.

Pure: no network, no filesystem, no clock, no global state (the Public Suffix List is bundled data,
loaded once). Every function here is specified in ``formats/tree.md`` (the section named in its
docstring) and held to the vectors in ``formats/vectors/``. Bad input raises :class:`URLError` and
nothing else; references that are not ours to fetch (``mailto:``, ``#top``…) are recognised by
:func:`ref_action` without raising.

The vocabulary:

- a *reference* is what a page says (``../a.css``, ``mailto:x``, ``#top``);
- a *canonical URL* is an absolute http(s) URL in the form of tree.md §2 (:func:`canonicalize`);
- a *dedup key* is the canonical URL with tracking parameters removed (:func:`dedup_key`); it is
  what is fetched and what LocalPath is computed from;
- a *tree path* is a decoded, ``/``-separated path relative to the tree's root (:func:`local_path`);
- an *href* is a percent-encoded relative reference between two tree paths (:func:`rel`).

Callers use this package's names (``from archiver import urls; urls.canonicalize(...)``); the code
lives in one module a job, each pure:

- :mod:`~archiver.urls.syntax`: URL text as written (the RFC 3986 split, the WHATWG strip) and the
  errors' wording;
- :mod:`~archiver.urls.percent`: percent-encoding both ways (canonical escaping, names on disk);
- :mod:`~archiver.urls.host`: the authority (IDNA, IPv4 and IPv6 literals, ports);
- :mod:`~archiver.urls.canonical`: §2, :func:`ref_action`, :func:`canonicalize`, :func:`parse_seed`,
  :func:`host_of`;
- :mod:`~archiver.urls.dedup`: §3, :class:`Hygiene` and :func:`dedup_key`;
- :mod:`~archiver.urls.tree_path`: §4, :func:`local_path`, :func:`fold_suffix`, the reserved folder
  and its names;
- :mod:`~archiver.urls.href`: §5, :func:`rel`;
- :mod:`~archiver.urls.domains`: the Public Suffix List, :func:`registrable_domain`;
- :mod:`~archiver.urls.scope`: §6, :func:`in_scope`, :func:`same_site`, :func:`want_asset`,
  :func:`likely_page`.
"""

from __future__ import annotations

from archiver.urls.canonical import (
    MAX_URL_LENGTH,
    NOT_FETCHED_SCHEMES,
    canonicalize,
    host_of,
    parse_seed,
    ref_action,
    scheme_typo,
)
from archiver.urls.dedup import DEFAULT_HYGIENE, Hygiene, canonical_and_key, dedup_key
from archiver.urls.dedup import NO_HYGIENE as NO_HYGIENE
from archiver.urls.domains import registrable_domain
from archiver.urls.href import rel
from archiver.urls.scope import (
    DEFAULT_SKIP_EXTENSIONS,
    ext,
    guess_kind,
    in_scope,
    key_ext,
    key_kind,
    likely_page,
    same_site,
    want_asset,
)
from archiver.urls.tree_path import (
    NAME_MAX,
    PATH_BUDGET,
    PRIVATE_NAMES,
    REPORT_NAME,
    RESERVED_DIR,
    RESERVED_NAMES,
    SEARCH_DIR,
    STATE_NAME,
    VERSIONS_NAME,
    Kind,
    fit_name,
    fold_suffix,
    local_path,
)

__all__ = [
    "DEFAULT_HYGIENE",
    "DEFAULT_SKIP_EXTENSIONS",
    "MAX_URL_LENGTH",
    "NAME_MAX",
    "NOT_FETCHED_SCHEMES",
    "PATH_BUDGET",
    "PRIVATE_NAMES",
    "REPORT_NAME",
    "RESERVED_DIR",
    "RESERVED_NAMES",
    "SEARCH_DIR",
    "STATE_NAME",
    "VERSIONS_NAME",
    "Hygiene",
    "Kind",
    "canonical_and_key",
    "canonicalize",
    "dedup_key",
    "ext",
    "fit_name",
    "fold_suffix",
    "guess_kind",
    "host_of",
    "in_scope",
    "key_ext",
    "key_kind",
    "likely_page",
    "local_path",
    "parse_seed",
    "ref_action",
    "registrable_domain",
    "rel",
    "same_site",
    "scheme_typo",
    "want_asset",
]
