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

__all__ = ["has_public_suffix", "registrable_domain"]


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


@lru_cache(maxsize=1)
def _rules_text() -> str:
    """The bundled list's data file, lower case (read once, not parsed: 7 ms; building the list
    IDN-encodes all ~10,000 rules, a fifth of a second, at the start of every capture)."""
    from publicsuffixlist import PSLFILE  # its module costs a millisecond; building the list, 200

    with open(PSLFILE, encoding="utf-8") as f:  # the bundled data file (tests/test_purity.py)
        return f.read().lower()


@lru_cache(maxsize=1)
def _rules_bytes() -> tuple[bytes, bytes] | None:
    """The bundled list's data file as bytes, and the same with its ASCII letters in lower case: what
    :func:`_is_last_label` searches (0.03 + 0.6 ms, where :func:`_rules_text`'s decoding and Unicode
    lower-casing of the whole file take 3; a first capture asks it of ``html`` for its home page).
    None when the file holds a ``\r`` (a line break :func:`_rules_text` reads as one) or the
    KELVIN SIGN (the one character outside ASCII whose lower case is a letter of ASCII): those are
    searched as text."""
    from publicsuffixlist import PSLFILE

    with open(PSLFILE, "rb") as f:  # the bundled data file (tests/test_purity.py)
        raw = f.read()
    if b"\r" in raw or "\u212a".encode() in raw:
        return None
    return raw, raw.lower()


@lru_cache(maxsize=4096)
def _is_last_label(label: str) -> bool:
    """Whether some rule of the bundled list ends in the plain ASCII, lower-case ``label``: only the
    lines holding it are looked at (finding them costs a millisecond; splitting the whole file into
    its rules to collect every last label, for a tree path like ``site.css``, cost 40). A line whose
    rule ends in ``label`` holds it in ASCII (the letters of ASCII in either case: no other
    character lower-cases to one of them alone but the KELVIN SIGN; U+0130's lower case adds a
    combining dot, which no label of ASCII holds), so the lines searched for it in the bytes, each
    decoded and lower-cased as :func:`_rules_text` does the whole file, are those."""
    found = _rules_bytes()
    if found is None:
        return _is_last_label_in_text(label)
    raw, folded = found
    needle = label.encode("ascii")
    i = folded.find(needle)
    while i >= 0:
        start = folded.rfind(b"\n", 0, i) + 1
        end = folded.find(b"\n", i)
        if end < 0:
            end = len(folded)
        # a comment (most of the lines naming "html": its links) holds no rule: not decoded
        if not folded[start:end].lstrip().startswith(b"//") and _ends_in(
            raw[start:end].decode("utf-8").lower(), label
        ):
            return True
        i = folded.find(needle, end)
    return False


def _is_last_label_in_text(label: str) -> bool:
    """:func:`_is_last_label` read from :func:`_rules_text`."""
    text = _rules_text()
    i = text.find(label)
    while i >= 0:
        start = text.rfind("\n", 0, i) + 1
        end = text.find("\n", i)
        if end < 0:
            end = len(text)
        if _ends_in(text[start:end], label):
            return True
        i = text.find(label, end)
    return False


def _ends_in(line: str, label: str) -> bool:
    """Whether the rule on ``line`` of the list (lower case) ends in ``label``."""
    rule = line.split(" ")[0].strip()
    return bool(rule) and not rule.startswith("//") and rule.rsplit(".", 1)[-1].lstrip("!") == label


def has_public_suffix(name: str) -> bool:
    """Whether the host-like ``name`` ends in a suffix of the list (an unknown top-level name is none):
    what ``PublicSuffixList().publicsuffix(name, accept_unknown=False)`` says, the list built only
    when the last label could be in it."""
    name = name.lower()
    last = name.rsplit(".", 1)[-1]
    if last and last.isascii() and not last.startswith("xn--") and not _is_last_label(last):
        return False  # every rule ends in its top-level label: none can match
    return _psl().publicsuffix(name, accept_unknown=False) is not None


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
