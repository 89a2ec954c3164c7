"""Volatile spans of a page's text (formats/history.md §5.1, rule set 1).
Pure: no network, no filesystem, no clock.

Two versions of a page whose reader text differs only in these spans (a date, a time, "5 minutes
ago", a build hash, the digits of a "generated at" or copyright line) are "unchanged, volatile"."""

from __future__ import annotations

import re

__all__ = ["MARK", "RULES", "normalise", "same_but_volatile"]

#: The rule set's number (named in ``diff --json``'s summary); a change to the patterns is a new one.
RULES = 1
#: What a volatile span becomes (U+241F SYMBOL FOR UNIT SEPARATOR: never in ordinary text).
MARK = "\u241f"

_MONTHS = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_ZONE = r"(?:\s?(?:utc|gmt|z|[a-z]{2,4}t)(?:\s?[+-]\d{1,2}(?::?\d{2})?)?|\s?[+-]\d{2}:?\d{2})?"
_TIME = rf"\d{{1,2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:\s?[ap]\.?m\.?)?{_ZONE}"
_PATTERNS = [
    # ISO dates, with an optional time
    rf"\b\d{{4}}-\d{{2}}-\d{{2}}(?:[t ]{_TIME})?",
    # 1 Dec 2026, 1 December 2026
    rf"\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}\b",
    # December 1, 2026 / Dec 1 2026
    rf"\b{_MONTHS}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b",
    # 01/12/2026, 12/01/26
    r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b",
    # times
    rf"\b{_TIME}",
    # 5 minutes ago, an hour ago
    r"\b(?:\d+|an?|one)\s+(?:second|minute|hour|day|week|month|year)s?\s+ago\b",
    # hexadecimal ids of 7 to 64 digits holding a digit and a letter
    r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b",
]
_VOLATILE = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)
_STAMP_LINE = re.compile(r"generated|updated|\bbuilt\b|last modified|copyright|©", re.IGNORECASE)
_DIGITS = re.compile(r"\d+")


def normalise(text: str) -> str:
    """``text`` with each volatile span replaced by :data:`MARK`, line by line."""
    out = []
    for line in text.split("\n"):
        line = _VOLATILE.sub(MARK, line)
        if _STAMP_LINE.search(line):
            line = _DIGITS.sub(MARK, line)
        out.append(line)
    return "\n".join(out)


def same_but_volatile(old: str, new: str) -> bool:
    """Whether ``old`` and ``new`` differ, but only in volatile spans."""
    return old != new and normalise(old) == normalise(new)
