"""Canonical URLs (tree.md §2): which references are fetched at all (§2.2), resolving a reference against
its base into the canonical form (§2.1), a URL typed by a user (§2.4), and the canonical host of a URL.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal, NamedTuple

from archiver.errors import URLError
from archiver.urls.host import _parse_authority
from archiver.urls.percent import _PATH_SAFE, _QUERY_SAFE, _escape
from archiver.urls.syntax import _CONTROL, _SCHEME, _SPLIT, _fail, _strip

__all__ = [
    "MAX_URL_LENGTH",
    "NOT_FETCHED_SCHEMES",
    "canonicalize",
    "host_of",
    "parse_seed",
    "ref_action",
    "scheme_typo",
]

#: Longer inputs are rejected (tree.md §2.1): nginx's default request-line buffer is 8 KiB.
MAX_URL_LENGTH = 8192
#: References with these schemes stay in pages exactly as written and are never fetched (tree.md §2.2).
NOT_FETCHED_SCHEMES = frozenset(
    {"javascript", "mailto", "tel", "data", "blob", "about", "ftp", "sms", "file"}
)


class _URL(NamedTuple):
    """A URL in parts (a named tuple: one is made per resolution, and a frozen dataclass costs
    every process ~0.2 ms to define and every instance an ``object.__setattr__`` per field)."""

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
    ``https://example.com/``. A misspelt scheme (``http//host``, ``https:/host``, ``htp://host``) is
    refused with the URL it probably meant, never taken as a host called ``http``."""
    stripped = _strip(text)
    meant = scheme_typo(stripped)
    if meant is not None:
        raise _fail(text, f"misspelt scheme; did you mean {meant!r}?")
    if stripped and "://" not in stripped and not stripped.startswith("//"):
        stripped = "https://" + stripped
    url = _canonical(stripped, None, original=text)
    if url.host in ("http", "https"):  # "https:8080/x": a scheme taken for a host name
        raise _fail(text, f"{url.host!r} is a scheme, not a host name: write {url.host}://HOST/")
    return str(url)


_TYPED_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)([:;]*)(/*)(.*)$", re.DOTALL)


def _near(word: str, target: str) -> bool:
    """Whether ``word`` is ``target`` with at most one letter added, dropped, changed, or two
    neighbours swapped (the Damerau distance is at most 1)."""
    if word == target:
        return True
    if abs(len(word) - len(target)) > 1:
        return False
    if len(word) == len(target):
        diff = [i for i, (a, b) in enumerate(zip(word, target, strict=True)) if a != b]
        if len(diff) == 1:
            return True
        i = diff[0] if len(diff) == 2 else -1
        return len(diff) == 2 and diff[1] == i + 1 and word[i] == target[i + 1] and word[i + 1] == target[i]
    short, long = (word, target) if len(word) < len(target) else (target, word)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def scheme_typo(text: str) -> str | None:
    """The URL ``text`` (as typed, already stripped) was probably meant to be, when its scheme is
    misspelt (tree.md §2.4), else None.

    Caught: ``http`` or ``https`` without ``://`` in full (``http//host``, ``https:/host``,
    ``http:host``, ``https;//host``), and a scheme one letter away from ``http`` or ``https``
    (``htp://``, ``htps://``, ``hhttp://``, ``htpts://``) that is no scheme of its own (``ftp`` is one).
    A host that is merely called ``http`` cannot be typed this way; ``http.example`` is not caught."""
    m = _TYPED_SCHEME.match(text)
    if m is None:
        return None
    word, colons, slashes, rest = m.groups()
    lower = word.lower()
    if not rest or rest.startswith(("/", "\\")):
        return None
    if colons == ":" and slashes.startswith("//"):
        if slashes != "//":
            return None  # "https:///host": WHATWG's parser reads the host after any slashes
        if lower in ("http", "https") or lower in NOT_FETCHED_SCHEMES:
            return None
        meant = "https" if _near(lower, "https") else "http" if _near(lower, "http") else None
        return f"{meant}://{rest}" if meant else None
    if lower in ("http", "https") and (colons or slashes) and (colons, slashes) != ("", "/"):
        if colons == ":" and not slashes and rest.split("/", 1)[0].isdigit():
            return None  # "http:8080" would be a host called http on a port: caught below as a port
        return f"{lower}://{rest}"
    return None


#: the parts of each canonical URL :func:`_resolve` gave out lately, by its text: a canonical URL is its
#: own canonical URL, parsed into the same parts (tests/test_urls_properties.py), so reading one again
#: (a capture resolves a reference to its key, then reads the key for its tree path) is a lookup. A memo
#: like the functions' caches: what it answers is what the parse would.
_PARSED: dict[str, _URL] = {}
_PARSED_SIZE = 4096


def _canonical(ref: str, base: str | None, original: str | None = None) -> _URL:
    """The canonical URL of ``ref`` resolved against ``base``, in parts (tree.md §2.1); ``original``:
    the text to name in an error, when not ``ref``."""
    if base is None:
        known = _PARSED.get(ref)
        if known is not None:
            return known
    return _resolve(ref, base, original)


@lru_cache(maxsize=4096)
def _resolve(ref: str, base: str | None, original: str | None = None) -> _URL:
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
    cut = len(text)  # where the query or fragment starts (the first '?' or '#')
    for mark in ("?", "#"):
        i = text.find(mark, 0, cut)
        if i >= 0:
            cut = i
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
    try:
        host, port = _authority(target_auth, target_scheme)
    except URLError:  # said again of the whole reference
        host, port = _parse_authority(target_auth, target_scheme, shown)
    canon_path = _canonical_path(target_path)
    canon_query = _escape(target_query, _QUERY_SAFE) if target_query else None
    route = None
    if fragment and canon_path == "/" and fragment[0] in "!/":
        route = _escape(fragment, _QUERY_SAFE)  # tree.md §2.1: hash-bang and route fragments survive
    url = _URL(target_scheme, host, port, canon_path, canon_query, route)
    text = str(url)
    if len(text) > MAX_URL_LENGTH:
        raise _fail(shown, f"URL longer than {MAX_URL_LENGTH} characters once resolved")
    if len(_PARSED) >= _PARSED_SIZE:
        _PARSED.clear()
    _PARSED[text] = url
    return url


@lru_cache(maxsize=1024)
def _authority(authority: str, scheme: str) -> tuple[str, str]:
    """The host and port of ``authority``, cached: a page names a few hosts hundreds of times, and
    each reading decodes, IDNA-maps and checks the host again."""
    return _parse_authority(authority, scheme, authority)


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


#: ``scheme://authority`` at the start of a plain URL: what alone decides its host (:func:`host_of`)
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#\\\s]*")


def host_of(url: str) -> str:
    """The canonical ``host[:port]`` of an absolute URL (IPv6 keeps its brackets). A plain URL (no
    control character, within the length bound, its authority ended by ``/ ? #`` or its end) is
    read by its ``scheme://authority`` alone, cached: the fetcher asks this for every request of a
    few hosts. Any other goes through the whole parse, which says what is wrong with it."""
    m = _ORIGIN.match(url)
    if (
        m is None
        or len(url) > MAX_URL_LENGTH
        or (m.end() < len(url) and url[m.end()] not in "/?#")
        or _CONTROL.search(url) is not None
    ):
        return _canonical(url, None).netloc
    try:
        return _origin_host(m.group())
    except URLError:  # said of the whole URL, as a reader of the error expects
        return _canonical(url, None).netloc


@lru_cache(maxsize=1024)
def _origin_host(origin: str) -> str:
    return _canonical(origin, None).netloc
