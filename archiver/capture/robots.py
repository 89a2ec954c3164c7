"""robots.txt by RFC 9309: groups, longest match, ``*`` and ``$`` wildcards, and Crawl-delay.

Pure: no network, no filesystem, no clock. (Python's ``urllib.robotparser`` knows no wildcards and
applies the first matching rule instead of the longest, so ``Allow: /a/b`` under ``Disallow: /a``
comes out wrong.)

The group for a crawler is the one whose ``User-agent`` lines name its product token exactly
(case-insensitive), else the ``*`` group; groups that name the same agent are merged. Among the
rules of that group the longest matching path wins, and ``Allow`` wins a tie. An
empty ``Disallow:`` allows everything. ``/robots.txt`` itself is always allowed.

What a fetch result means (RFC 9309 §2.3.1, applied by the fetcher): 2xx → parse the body; 4xx
(but 429) → no restrictions; 5xx, 429 after backoff, or unreachable (network error, timeout) →
everything disallowed for now (§2.3.1.4: the server may be in trouble). That last one is no verdict
on any page: :attr:`Robots.unreachable` says why the file could not be read, and what it kept from
being fetched ends ``unconfirmed`` (tried again on the next run), never "disallowed by robots.txt".
"""

from __future__ import annotations

import contextlib
import math
from urllib.parse import quote, unquote

from archiver.frozen import Frozen

__all__ = ["MAX_BYTES", "MAX_CRAWL_DELAY", "Robots", "parse"]

#: RFC 9309 §2.5: parse at least 500 KiB; ignore the rest (the fetcher reads no more than this).
MAX_BYTES = 500 * 1024
#: The longest Crawl-delay obeyed, in seconds: a robots.txt asking for more (``inf``, ``1e308``) gets
#: this, not a capture that waits forever.
MAX_CRAWL_DELAY = 60.0


class _Rule(Frozen):
    _fields = ("allow", "path")
    __slots__ = _fields
    allow: bool
    path: str  # percent-normalised pattern

    def __init__(self, allow: bool, path: str) -> None:
        self._init(allow, path)


class Robots(Frozen):
    """The rules that apply to one crawler on one host. ``unreachable`` is None for a robots.txt that
    was read (or is known to be absent); else why it could not be read (one line, e.g. ``robots.txt
    answered 503``), and everything is disallowed until a later run reads it. (Immutable: a
    :class:`~archiver.frozen.Frozen` class, as the frozen dataclass it was.)"""

    _fields = ("rules", "crawl_delay", "disallow_all", "sitemaps", "unreachable")
    __slots__ = _fields
    rules: tuple[_Rule, ...]
    crawl_delay: float | None
    disallow_all: bool
    sitemaps: tuple[str, ...]
    unreachable: str | None

    def __init__(
        self,
        rules: tuple[_Rule, ...] = (),
        crawl_delay: float | None = None,
        disallow_all: bool = False,
        sitemaps: tuple[str, ...] = (),
        unreachable: str | None = None,
    ) -> None:
        self._init(rules, crawl_delay, disallow_all, sitemaps, unreachable)

    @classmethod
    def allow_everything(cls) -> Robots:
        return cls()

    @classmethod
    def disallow_everything(cls, reason: str) -> Robots:
        """The rules while robots.txt cannot be read, for ``reason`` (see :attr:`unreachable`)."""
        return cls(disallow_all=True, unreachable=" ".join(reason.split()) or "robots.txt unreachable")

    def allowed(self, path_and_query: str) -> bool:
        """May ``path_and_query`` (``/a/b?x=1``, as sent on the request line) be fetched?"""
        target = _normalise(path_and_query or "/")
        if target == "/robots.txt":
            return True
        if self.disallow_all:
            return False
        best: _Rule | None = None
        best_len = -1
        for rule in self.rules:
            if _matches(rule.path, target):
                length = len(rule.path)
                if length > best_len or (length == best_len and rule.allow and best and not best.allow):
                    best, best_len = rule, length
        return best is None or best.allow


def _normalise(path: str) -> str:
    # Compare paths percent-encoded the same way: decode, then encode everything but the reserved set.
    return quote(unquote(path), safe="/?&=:;@!$'()*+,~-._%")


def _matches(pattern: str, target: str) -> bool:
    """Whether the rule path ``pattern`` (``*``: any run of characters; a last ``$``: the end) matches
    the start of ``target``. Each ``*``-separated part is found leftmost after the one before (which is
    exact for patterns whose only wildcard is ``*``), so the time is linear in the sizes, never the
    backtracking of a regular expression: ``Disallow: /*a*a*a*a*a*a*a*a*a*a*a*a*c`` held a capture's
    event loop for good on a 40-character path (a hostile robots.txt and a link of its site)."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    if "*" not in body:
        return target == body if anchored else target.startswith(body)
    first, *middle, last = body.split("*")
    if not target.startswith(first):
        return False
    pos = len(first)
    for part in middle:
        if part:
            found = target.find(part, pos)
            if found < 0:
                return False
            pos = found + len(part)
    if anchored:
        return len(target) - len(last) >= pos and target.endswith(last)
    return target.find(last, pos) >= 0


def parse(text: str, agent: str) -> Robots:
    """The rules of ``text`` (a robots.txt body) that apply to product token ``agent``."""
    agent = agent.lower()
    groups: list[tuple[list[str], list[_Rule], list[float]]] = []
    sitemaps: list[str] = []
    current: tuple[list[str], list[_Rule], list[float]] | None = None
    in_agents = False
    if len(text) > MAX_BYTES:  # a line cut at the limit is no rule (it may be a shorter, wider one)
        text = text[: text.rfind("\n", 0, MAX_BYTES) + 1]
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if ":" not in line:
            continue
        name, _, value = line.partition(":")
        name, value = name.strip().lower(), value.strip()
        if name == "user-agent":
            if current is None or not in_agents:
                current = ([], [], [])
                groups.append(current)
            current[0].append(value.lower())
            in_agents = True
            continue
        if name == "sitemap":
            sitemaps.append(value)
            continue
        in_agents = False
        if current is None:
            continue
        if name in ("allow", "disallow"):
            if value:  # "Disallow:" with no path allows everything: no rule
                current[1].append(_Rule(name == "allow", _normalise(value)))
        elif name == "crawl-delay":
            with contextlib.suppress(ValueError):
                delay = float(value)
                if math.isfinite(delay):  # "nan" is no delay; "inf" and "1e308" are capped
                    current[2].append(min(max(0.0, delay), MAX_CRAWL_DELAY))
                elif delay > 0:
                    current[2].append(MAX_CRAWL_DELAY)
    chosen = [g for g in groups if agent in g[0]] or [g for g in groups if "*" in g[0]]
    rules = tuple(rule for g in chosen for rule in g[1])
    delays = [d for g in chosen for d in g[2]]
    return Robots(rules, max(delays) if delays else None, False, tuple(sitemaps))
