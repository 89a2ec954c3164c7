"""Host names as sites (tree.md §6.2): registrable domains by the Public Suffix List (bundled data,
loaded once and only when a host name needs it), and IP literals, which stand for themselves.

Pure: no network, no filesystem, no clock, no global state (the list is bundled data, read once).
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the list is read (a tenth of a second) only when a host name needs it
    from publicsuffixlist import PublicSuffixList

__all__ = ["registrable_domain"]


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def _hostname(netloc: str) -> str:
    if netloc.startswith("["):
        return netloc[: netloc.index("]") + 1]
    return netloc.partition(":")[0]


def _is_ip(host: str) -> bool:
    if host.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(host)
        return True
    except ValueError:
        return False


def registrable_domain(host: str) -> str:
    """eTLD+1 of a canonical host by the Public Suffix List, private section included (tree.md §6.2).
    IP literals, ``localhost`` and hosts that are themselves public suffixes stand for themselves."""
    name = _hostname(host)
    if _is_ip(name):
        return name
    return _psl().privatesuffix(name) or name
