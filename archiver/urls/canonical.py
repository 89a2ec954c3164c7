"""Canonical URLs (tree.md §2): which references are fetched at all (§2.2), resolving a reference against
its base into the canonical form (§2.1), a URL typed by a user (§2.4), and the canonical host of a URL.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from archiver.urls.host import _parse_authority
from archiver.urls.percent import _PATH_SAFE, _QUERY_SAFE, _escape
from archiver.urls.syntax import _CONTROL, _SCHEME, _SPLIT, _fail, _strip

__all__ = ["MAX_URL_LENGTH", "NOT_FETCHED_SCHEMES", "canonicalize", "host_of", "parse_seed", "ref_action"]

#: Longer inputs are rejected (tree.md §2.1): nginx's default request-line buffer is 8 KiB.
MAX_URL_LENGTH = 8192
#: References with these schemes stay in pages exactly as written and are never fetched (tree.md §2.2).
NOT_FETCHED_SCHEMES = frozenset(
    {"javascript", "mailto", "tel", "data", "blob", "about", "ftp", "sms", "file"}
)


@dataclass(frozen=True)
class _URL:
    scheme: str
    host: str  # lowercased; IPv6 with brackets; IDNA A-labels
    port: str  # "" when default or absent
    path: str  # canonical escaping, starts with "/"
    query: str | None
    fragment: str | None  # only route fragments survive canonicalisation

    @property
    def netloc(self) -> str:
        return f"{self.host}:{self.port}" if self.port else self.host

    def __str__(self) -> str:
        out = f"{self.scheme}://{self.netloc}{self.path}"
        if self.query is not None:
            out += "?" + self.query
        if self.fragment is not None:
            out += "#" + self.fragment
        return out


def ref_action(ref: str) -> Literal["fetch", "keep"]:
    """``"keep"`` for a reference that stays in the page exactly as written and is never fetched
    (tree.md §2.2): empty, fragment-only (``#top``), or a scheme other than http/https
    (``javascript: mailto: tel: data: blob: about:`` …); ``"fetch"`` for everything else. Never raises."""
    text = _strip(ref)
    if not text or text.startswith("#"):
        return "keep"
    m = _SPLIT.match(text)
    scheme = m.group(1) if m else None
    if scheme and _SCHEME.match(scheme) and scheme.lower() not in ("http", "https"):
        return "keep"
    return "fetch"


def canonicalize(ref: str, base: str | None = None) -> str:
    """Resolve ``ref`` against ``base`` (itself any URL this module accepts) and return the canonical
    URL of tree.md §2.1. Raises :class:`URLError` for anything that is not an absolute http(s) URL
    with a valid host and port once resolved, and for references that :func:`ref_action` keeps."""
    return str(_canonical(ref, base))


def parse_seed(text: str) -> str:
    """A URL typed by a user (tree.md §2.4): like :func:`canonicalize`, but ``example.com`` means
    ``https://example.com/``."""
    stripped = _strip(text)
    if stripped and "://" not in stripped and not stripped.startswith("//"):
        stripped = "https://" + stripped
    return str(_canonical(stripped, None, original=text))


@lru_cache(maxsize=4096)
def _canonical(ref: str, base: str | None, original: str | None = None) -> _URL:
    shown = ref if original is None else original
    if not isinstance(ref, str):
        raise TypeError(f"URL must be str, not {type(ref).__name__}")
    if len(ref) > MAX_URL_LENGTH:
        raise _fail(shown, f"URL longer than {MAX_URL_LENGTH} characters")
    text = _strip(ref)
    if not text:
        raise _fail(shown, "empty URL")
    if text.startswith("#"):
        raise _fail(shown, "fragment-only reference: it points into the same page, nothing to fetch")
    if _CONTROL.search(text):
        raise _fail(shown, "control character in URL")
    # WHATWG: in http(s) URLs a backslash before the query is a slash (so "http:\\\\host" has a host).
    cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    text = text[:cut].replace("\\", "/") + text[cut:]
    m = _SPLIT.match(text)
    assert m is not None  # the RFC 3986 appendix B expression matches every string
    scheme, authority, path, query, fragment = m.groups()
    if scheme is not None and not _SCHEME.match(scheme):
        # "1a:b" is not a scheme: the whole thing is a relative path
        scheme, authority, path, query, fragment = _SPLIT.match("./" + text).groups()  # type: ignore[union-attr]
    if scheme is not None:
        scheme = scheme.lower()
        if scheme in NOT_FETCHED_SCHEMES:
            raise _fail(shown, f"{scheme}: reference, kept in the page and never fetched")
        if scheme not in ("http", "https"):
            raise _fail(shown, f"unsupported scheme {scheme!r}: only http and https are archived")

    if scheme is not None and (authority is not None or base is None):
        if authority is None:
            raise _fail(shown, "no host in URL")
        target_scheme, target_auth, target_path, target_query = scheme, authority, path, query
    else:
        if base is None:
            raise _fail(shown, "relative reference without a base URL")
        if scheme is not None and scheme != _canonical(base, None).scheme:
            raise _fail(shown, "no host in URL")
        b = _canonical(base, None)
        target_scheme = b.scheme
        if authority is not None:  # scheme-relative "//host/path"
            target_auth, target_path, target_query = authority, path, query
        else:
            target_auth = b.netloc
            if path == "":
                target_path = b.path
                target_query = query if query is not None else b.query
            elif path.startswith("/"):
                target_path, target_query = path, query
            else:
                target_path, target_query = b.path[: b.path.rfind("/") + 1] + path, query
    host, port = _parse_authority(target_auth, target_scheme, shown)
    canon_path = _canonical_path(target_path)
    canon_query = _escape(target_query, _QUERY_SAFE) if target_query else None
    route = None
    if fragment and canon_path == "/" and fragment[0] in "!/":
        route = _escape(fragment, _QUERY_SAFE)  # tree.md §2.1: hash-bang and route fragments survive
    url = _URL(target_scheme, host, port, canon_path, canon_query, route)
    if len(str(url)) > MAX_URL_LENGTH:
        raise _fail(shown, f"URL longer than {MAX_URL_LENGTH} characters once resolved")
    return url


def _canonical_path(path: str) -> str:
    escaped = _escape(path, _PATH_SAFE)
    segments = escaped.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        # _escape decoded %2E, so "%2e%2e" is a dot segment here too, as in browsers
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        elif seg or last:  # empty segments (//) collapse; the last one keeps a trailing slash
            out.append(seg)
    return "/" + "/".join(out)


def host_of(url: str) -> str:
    """The canonical ``host[:port]`` of an absolute URL (IPv6 keeps its brackets)."""
    return _canonical(url, None).netloc
