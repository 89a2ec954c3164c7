"""Dedup keys (tree.md §3): which query parameters are tracking noise (:class:`Hygiene`), and the
canonical URL without them, which is what archiver fetches and stores under.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

from archiver.frozen import Frozen
from archiver.urls.canonical import _URL, _canonical
from archiver.urls.percent import _pct_decode_text

__all__ = ["DEFAULT_HYGIENE", "NO_HYGIENE", "Hygiene", "canonical_and_key", "dedup_key"]


_DROP_EXACT = frozenset(
    {
        "fbclid", "gclid", "dclid", "msclkid", "yclid", "spm", "scm",
        "share_source", "share_medium", "share_plat",
    }
)  # fmt: skip


class Hygiene(Frozen):
    """Which query parameters are tracking noise (tree.md §3). Keys compare case-insensitively after
    percent-decoding. ``keep`` wins over both drop lists, so an ambiguous key is never dropped by a
    prefix rule. (Immutable: a :class:`~archiver.frozen.Frozen` class, as the frozen dataclass it was.)"""

    _fields = ("drop_prefixes", "drop_exact", "keep")
    __slots__ = _fields
    drop_prefixes: tuple[str, ...]
    drop_exact: frozenset[str]
    keep: frozenset[str]

    def __init__(
        self,
        drop_prefixes: tuple[str, ...] = ("utm_", "mtm_", "hsa_", "pk_"),
        drop_exact: frozenset[str] = _DROP_EXACT,
        keep: frozenset[str] = frozenset({"ref", "from", "source", "src", "via"}),
    ) -> None:
        self._init(drop_prefixes, drop_exact, keep)

    def drops(self, key: str) -> bool:
        k = _pct_decode_text(key).lower()
        if k in self.keep:
            return False
        return k in self.drop_exact or k.startswith(self.drop_prefixes)


DEFAULT_HYGIENE = Hygiene()
NO_HYGIENE = Hygiene(drop_prefixes=(), drop_exact=frozenset(), keep=frozenset())


def dedup_key(url: str, hygiene: Hygiene = DEFAULT_HYGIENE) -> str:
    """The canonical URL without tracking parameters (tree.md §3). Parameter order is kept (not
    sorted): see tree.md §3.2 for why. This is the URL archiver fetches and stores under."""
    return str(_dedup(url, hygiene))


def canonical_and_key(ref: str, base: str | None, hygiene: Hygiene = DEFAULT_HYGIENE) -> tuple[str, str]:
    """``(canonicalize(ref, base), dedup_key(that, hygiene))`` with the URL parsed once: a canonical URL
    is its own canonical URL (``tests/test_urls_properties.py`` checks both, and that the pair is the
    two calls'). Raises :class:`URLError` as :func:`canonicalize` does."""
    u = _canonical(ref, base)
    return str(u), str(_without_noise(u, hygiene))


def _dedup(url: str, hygiene: Hygiene) -> _URL:
    return _without_noise(_canonical(url, None), hygiene)


def _without_noise(u: _URL, hygiene: Hygiene) -> _URL:
    if u.query is None:
        return u
    kept = [p for p in u.query.split("&") if p and not hygiene.drops(p.partition("=")[0])]
    query = "&".join(kept) if kept else None
    return _URL(u.scheme, u.host, u.port, u.path, query, u.fragment)
