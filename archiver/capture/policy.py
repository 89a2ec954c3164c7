"""What a capture takes: scope, the one reference decision, frontier priority, and URL redaction.

Pure: no network, no filesystem, no clock.

Every reference in every document, HTML or CSS, is decided by :meth:`Scope.decide` (the rewriters
only find references; they never judge them):

- an **in-scope page** (same site as a seed, or an allowed domain; under the include prefixes and no
  exclude prefix; within the depth limit; not known to be disallowed by robots.txt) → ``local``: the
  crawler enqueues it and writes a relative link;
- a **wanted asset** (tree.md §6.3: not on the skip list and, unless ``assets_any_host``, on a seed's
  registrable domain) → ``local``: enqueued, relative link;
- **anything else** that is an http(s) URL → ``absolute``: the reference becomes the absolute URL it
  names (a reference already written absolute is left as it was), so it still works from disk;
- references that are never fetched (``#top``, ``mailto:``, ``data:`` …, tree.md §2.2) and references
  that are not valid URLs → ``keep``: left exactly as written.

With ``routes`` (a rendered capture), a fragment-only route link (``#/guide``, ``#!/inbox``) in a
page at ``/`` is a page of a client-routed app, decided like any other page (tree.md §6.5).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Literal, NamedTuple
from urllib.parse import unquote

from archiver import urls
from archiver.errors import URLError
from archiver.frozen import Frozen
from archiver.urls import DEFAULT_HYGIENE, DEFAULT_SKIP_EXTENSIONS, Hygiene, Kind

__all__ = [
    "SECRET_PARAMS",
    "Decision",
    "Hint",
    "Scope",
    "redact",
    "split_fragment",
]

#: ``link``: a navigation (``<a href>``, ``<iframe src>``, meta refresh): page or asset by its URL.
#: ``embed``: something the page loads to display itself (img, CSS url(), fonts): always an asset.
#: ``stylesheet``: an asset that is CSS (``<link rel=stylesheet>``, ``@import``).
#: ``absolute``: never fetched, only made absolute (``<form action>``).
Hint = Literal["link", "embed", "stylesheet", "absolute"]

#: Query parameters whose values never reach a manifest, a log or a report (case-insensitive;
#: also any name ending in ``_token``, ``_key``, ``_secret`` or ``_password``).
SECRET_PARAMS = frozenset(
    {
        "token",
        "access_token",
        "key",
        "secret",
        "sign",
        "signature",
        "auth",
        "password",
        "sessionid",
        "email",
        "phone",
    }
)
_SECRET_SUFFIXES = ("_token", "_key", "_secret", "_password")
REDACTED = "REDACTED"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
_ABSOLUTE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\\]*\Z")
_SPACE = re.compile(r"\s")  # the characters str.isspace() accepts (both use Py_UNICODE_ISSPACE)
_MEMO_SIZE = 100_000
# a fragment that never changes the URL it is on (tree.md §2.1: only a route fragment, "#!…" or
# "#/…", stays in a URL) nor whether it parses (no control character; no space, which WHATWG drops)
_PLAIN_FRAGMENT = re.compile(r"[^\s\x00-\x1f\x7f!/][^\s\x00-\x1f\x7f]*\Z")


def _base_part(ref: str, base: str) -> str:
    """The part of ``base`` that resolving ``ref`` depends on (see :meth:`Scope.resolve`)."""
    backslash, scheme, origin, folder = _base_parts(base)
    if backslash or "\\" in ref or _SPACE.search(ref):
        return base
    if _ABSOLUTE.match(ref):
        return ""
    if scheme is None:
        return base
    if ref.startswith("//"):
        return scheme
    if ref.startswith("/"):
        return origin
    if not ref or ref[0] in "?#" or _SCHEME.match(ref):
        return base
    return folder


@lru_cache(maxsize=1024)
def _base_parts(base: str) -> tuple[bool, str | None, str, str]:
    """What :func:`_base_part` takes of ``base``, worked out once per base (every reference of a
    page has the same): whether it holds a backslash, its scheme (None without ``://``), and the
    parts a reference from the origin and a relative path depend on (``base`` itself when it has
    no path)."""
    scheme, sep, rest = base.partition("://")
    if not sep:
        return "\\" in base, None, base, base
    slash = rest.find("/")
    if slash < 0:
        return "\\" in base, scheme, base, base
    path = rest.split("?", 1)[0].split("#", 1)[0]
    return "\\" in base, scheme, scheme + "://" + rest[:slash], scheme + "://" + path[: path.rfind("/") + 1]


def _route_url(ref: str, base: str) -> str | None:
    """The absolute URL of the fragment-only route reference ``ref`` (``#/inbox``, ``#!/inbox``)
    written in a document at ``base``, when that URL keeps its fragment (the path is ``/``,
    tree.md §2.1 step 10); None otherwise."""
    head = base.split("#", 1)[0]
    if "://" not in head:
        return None
    try:
        canonical = urls.canonicalize(head + ref)
    except URLError:
        return None
    return canonical if "#" in canonical else None


class Decision(NamedTuple):
    """What to do with one reference. ``url`` is the dedup key for ``local``, the absolute URL to
    write for ``absolute`` (None when the reference is already absolute and stays as written),
    None for ``keep``. ``fragment`` is the reference's ``#…`` part (with the ``#``) to write back."""

    action: Literal["keep", "absolute", "local"]
    url: str | None = None
    kind: Kind | None = None
    fragment: str = ""
    reason: str = ""


def split_fragment(ref: str) -> tuple[str, str]:
    """``(reference without fragment, "#fragment" or "")``."""
    head, sep, frag = ref.partition("#")
    return head, (sep + frag if sep else "")


def _secret(name: str) -> bool:
    key = unquote(name).lower()
    return key in SECRET_PARAMS or key.endswith(_SECRET_SUFFIXES)


def redact(url: str) -> str:
    """``url`` with the value of every secret-looking query parameter replaced by ``REDACTED``
    (``?token=abc&page=2`` → ``?token=REDACTED&page=2``). Everything else is unchanged."""
    head, frag = split_fragment(url)
    base, sep, query = head.partition("?")
    if not sep:
        return url
    parts = []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        parts.append(f"{name}={REDACTED}" if eq and value and _secret(name) else part)
    return f"{base}?{'&'.join(parts)}{frag}"


def _host_name(key: str) -> str:
    netloc = urls.host_of(key)
    if netloc.startswith("["):
        return netloc[: netloc.index("]") + 1]
    return netloc.partition(":")[0]


class Scope(Frozen):
    """The capture's scope rules (tree.md §6), built once from the options. (Immutable: a
    :class:`~archiver.frozen.Frozen` class, as the frozen dataclass it was; the memos are not
    compared nor shown.)"""

    _fields = (
        "home", "seeds", "max_depth", "subdomains", "include", "exclude", "allow_domains",
        "assets_any_host", "skip_extensions", "prefer", "avoid", "hygiene", "routes",
    )  # fmt: skip
    __slots__ = (*_fields, "_keys", "_verdicts", "_classes", "_hosts")
    home: str
    seeds: tuple[str, ...]
    max_depth: int
    subdomains: bool
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    allow_domains: tuple[str, ...]
    assets_any_host: bool
    skip_extensions: frozenset[str]
    prefer: tuple[str, ...]
    avoid: tuple[str, ...]
    hygiene: Hygiene
    #: follow fragment-only route links (``#/…``, ``#!…``) on a page at ``/`` as pages (a rendered
    #: capture: the browser shows each route; fetched as is, every route is the same document)
    routes: bool
    # memo of pure results (every page names the same stylesheet, menu and images again)
    _keys: dict[tuple[str, str], tuple[str, str]]
    _verdicts: dict[tuple[str, str], bool]
    _classes: dict[tuple[str, str, str], _Class]
    _hosts: dict[str, tuple[bool, bool]]

    def __init__(
        self,
        home: str,
        seeds: tuple[str, ...],
        max_depth: int = 3,
        subdomains: bool = False,
        include: tuple[str, ...] = (),
        exclude: tuple[str, ...] = (),
        allow_domains: tuple[str, ...] = (),
        assets_any_host: bool = False,
        skip_extensions: frozenset[str] = DEFAULT_SKIP_EXTENSIONS,
        prefer: tuple[str, ...] = (),
        avoid: tuple[str, ...] = (),
        hygiene: Hygiene = DEFAULT_HYGIENE,
        routes: bool = False,
        _keys: dict[tuple[str, str], tuple[str, str]] | None = None,
        _verdicts: dict[tuple[str, str], bool] | None = None,
        _classes: dict[tuple[str, str, str], _Class] | None = None,
        _hosts: dict[str, tuple[bool, bool]] | None = None,
    ) -> None:
        self._init(home, seeds, max_depth, subdomains, include, exclude, allow_domains, assets_any_host,
                   skip_extensions, prefer, avoid, hygiene, routes)  # fmt: skip
        put = object.__setattr__  # the memos: not fields (not compared, hashed nor shown)
        put(self, "_keys", {} if _keys is None else _keys)
        put(self, "_verdicts", {} if _verdicts is None else _verdicts)
        put(self, "_classes", {} if _classes is None else _classes)
        put(self, "_hosts", {} if _hosts is None else _hosts)

    # ---- pages

    def _allowed_domain(self, key: str) -> bool:
        host = _host_name(key)
        return any(host == d or host.endswith("." + d) for d in self.allow_domains)

    def on_site(self, key: str) -> bool:
        """Same site as some seed (tree.md §6.1), or in an allowed domain."""
        return self._allowed_domain(key) or any(
            urls.same_site(seed, key, subdomains=self.subdomains) for seed in self.seeds
        )

    def page_in_scope(self, key: str) -> bool:
        """On the site, under an include prefix (when there are any) and under no exclude prefix."""
        if not self.on_site(key):
            return False
        if self.include and not any(
            urls.in_scope(key, key, prefix=p, exclude=self.exclude) for p in self.include
        ):
            return False
        return urls.in_scope(key, key, exclude=self.exclude)

    def priority(self, key: str) -> int:
        """Frontier order under a page budget: 0 for a path matching a ``prefer`` keyword, 2 for one
        matching an ``avoid`` keyword (avoid wins over prefer), 1 otherwise."""
        if not self.avoid and not self.prefer:  # no keywords (most runs): no path to look at
            return 1
        path = unquote(key.split("://", 1)[-1].partition("/")[2].partition("?")[0]).lower()
        if any(word in path for word in self.avoid):
            return 2
        if any(word in path for word in self.prefer):
            return 0
        return 1

    # ---- assets

    def want_asset(self, key: str) -> bool:
        """tree.md §6.3 against every seed (and the allowed domains)."""
        if urls.ext(key) in self.skip_extensions:
            return False
        if self.assets_any_host or self._allowed_domain(key):
            return True
        return any(
            urls.want_asset(seed, key, same_domain=True, skip=self.skip_extensions) for seed in self.seeds
        )

    # ---- memoised pure parts

    def resolve(self, ref: str, base: str) -> tuple[str, str]:
        """``(canonical URL, dedup key)`` of the stripped reference ``ref`` written at ``base``
        (raises :class:`URLError`). Remembered by what the result depends on: the reference alone
        when it is absolute, with the base's origin when it starts with one ``/``, with the base's
        folder for a relative path; anything else (``?q``, backslashes, …) by the whole base."""
        memo = (ref, _base_part(ref, base))
        hit = self._keys.get(memo)
        if hit is None:
            hit = urls.canonical_and_key(ref, base, self.hygiene)
            if len(self._keys) >= _MEMO_SIZE:
                self._keys.clear()
            self._keys[memo] = hit
        return hit

    def _by_host(self, key: str) -> tuple[bool, bool]:
        """``(on_site(key), an asset there is wanted unless its extension is skipped)``: both depend
        on the key's host alone (:meth:`on_site`, :meth:`want_asset`), remembered by it."""
        host = urls.host_of(key)
        hit = self._hosts.get(host)
        if hit is None:
            wanted = (
                self.assets_any_host
                or self._allowed_domain(key)
                or any(urls.same_site(seed, key, subdomains=True) for seed in self.seeds)
            )
            hit = (self.on_site(key), wanted)
            if len(self._hosts) >= _MEMO_SIZE:
                self._hosts.clear()
            self._hosts[host] = hit
        return hit

    def _verdict(self, what: Literal["kind", "page", "asset"], key: str) -> bool | str:
        """:func:`urls.guess_kind`, :meth:`page_in_scope` or :meth:`want_asset` of the dedup key
        ``key`` (canonical: its extension is read from its text), remembered; the scope of its host
        is worked out once per host."""
        memo = (what, key)
        hit = self._verdicts.get(memo)
        if hit is None:
            if what == "kind":
                hit = urls.key_kind(key)
            elif what == "page":
                if self.include or self.exclude:
                    hit = self._by_host(key)[0] and self.page_in_scope(key)
                else:  # no prefix: the page is in scope when its host is on the site
                    hit = self._by_host(key)[0]
            else:
                hit = urls.key_ext(key) not in self.skip_extensions and self._by_host(key)[1]
            if len(self._verdicts) >= _MEMO_SIZE:
                self._verdicts.clear()
            self._verdicts[memo] = hit  # type: ignore[assignment]
        return hit

    # ---- the one decision

    def _classify(self, ref: str, base: str, hint: Hint) -> _Class:
        """The part of :meth:`decide` that depends only on ``ref``, what of ``base`` it resolves
        against, and ``hint``: everything but the depth limit and robots.txt."""
        stripped = ref.strip()
        route = self.routes and hint == "link" and stripped[:2] in ("#/", "#!")
        if route:
            # a route of a client-routed app (tree.md §2.1, §6.5): a page when the document's path
            # is / (the canonical URL then keeps the fragment), otherwise a link into the document
            stripped = _route_url(stripped, base)
            if stripped is None:
                return _Class(Decision("keep"))
        elif urls.ref_action(ref) == "keep":
            return _Class(Decision("keep"))
        _, fragment = split_fragment(stripped)
        try:
            canonical, key = self.resolve(stripped, base)
        except URLError as e:
            return _Class(Decision("keep", reason=str(e)))
        if "#" in canonical:  # a route fragment (tree.md §2.1) is part of the key, not written back
            fragment = ""
        already_absolute = bool(_SCHEME.match(stripped)) and not route  # a route is written absolute
        text = None if already_absolute else canonical + fragment

        def absolute(reason: str) -> _Class:
            return _Class(Decision("absolute", text, None, fragment, reason))

        if hint == "absolute":
            return absolute("not fetched")
        kind: Kind = self._verdict("kind", key) if hint == "link" else "asset"  # type: ignore[assignment]
        if kind == "page":
            if not self._verdict("page", key):
                return absolute("out of scope")
        elif not self._verdict("asset", key):
            reason = "skip list" if urls.ext(key) in self.skip_extensions else "asset on another site"
            return absolute(reason)
        return _Class(Decision("local", key, kind, fragment), text)

    def _remember(self, memo: tuple[str, str, str], found: _Class) -> None:
        if len(self._classes) >= _MEMO_SIZE:
            self._classes.clear()
        self._classes[memo] = found

    def _classified(self, ref: str, base: str, hint: Hint) -> _Class:
        """:meth:`_classify`; for a reference with a plain fragment (``page.html#sec``: not a route,
        no space or control character), derived from the one of the reference without it, remembered
        (a documentation page names the same few pages under thousands of fragments)."""
        head, sep, fragment = ref.partition("#")
        if sep and head.strip() and len(ref) <= urls.MAX_URL_LENGTH and _PLAIN_FRAGMENT.match(fragment):
            bare = head + "#"  # resolves to the same URL: the fragment is only written back
            memo = (bare, _base_part(bare, base), hint)
            found = self._classes.get(memo)
            if found is None:
                found = self._classify(bare, base, hint)
                self._remember(memo, found)
            derived = found.with_fragment("#" + fragment)
            if derived is not None:
                return derived
        return self._classify(ref, base, hint)

    def written_absolute(self, ref: str, base: str, hint: Hint) -> str | None:
        """What a reference that :meth:`decide` made local is written as when it is not fetched
        after all (the page budget): as for the depth limit, its absolute URL with its fragment, or
        None (kept as written) when it was written absolute."""
        memo = (ref, _base_part(ref, base), hint)
        found = self._classes.get(memo) or self._classify(ref, base, hint)
        return found.absolute

    def decide(
        self,
        ref: str,
        base: str,
        hint: Hint,
        depth: int,
        robots_allows: Callable[[str], bool | None] = lambda key: None,
    ) -> Decision:
        """Decide what becomes of reference ``ref`` written in a document at ``base`` (its URL, or
        its ``<base href>``) found at link ``depth``. See the module docstring. The part that does
        not depend on ``depth`` and robots.txt is remembered (every page names the same menu,
        stylesheet and images again)."""
        memo = (ref, _base_part(ref, base), hint)
        found = self._classes.get(memo)
        if found is None:
            found = self._classified(ref, base, hint)
            self._remember(memo, found)
        decision = found.decision
        if decision.action != "local":
            return decision
        if decision.kind == "page" and depth + 1 > self.max_depth:
            return Decision("absolute", found.absolute, None, decision.fragment, "beyond the depth limit")
        if robots_allows(decision.url or "") is False:
            return Decision("absolute", found.absolute, None, decision.fragment, "disallowed by robots.txt")
        return decision


class _Class(NamedTuple):
    """What :meth:`Scope.decide` remembers of one reference: the decision before the depth limit and
    robots.txt, and (for ``local``) the text to write should one of those make it ``absolute``."""

    decision: Decision
    absolute: str | None = None

    def with_fragment(self, fragment: str) -> _Class | None:
        """This class of a reference ending in a bare ``#``, for the same reference ending in
        ``fragment`` instead (a plain one: it does not change the URL, only what is written back);
        None for ``keep`` (its reason quotes the reference)."""
        d = self.decision
        if d.action == "keep" or d.fragment != "#":
            return None
        extra = fragment[1:]
        url = d.url + extra if d.action == "absolute" and d.url is not None else d.url
        absolute = self.absolute + extra if self.absolute is not None else None
        return _Class(Decision(d.action, url, d.kind, fragment, d.reason), absolute)
