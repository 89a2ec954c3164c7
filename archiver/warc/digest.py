"""WARC digests (formats/warc.md §3): ``WARC-Block-Digest`` and ``WARC-Payload-Digest`` values parsed,
a hasher made for them, and the result compared in the encoding the value uses.

Pure: no network, no filesystem, no clock.

A value is ``algorithm:encoded``. The algorithm label is case-insensitive and may carry a dash
(``sha-1``); the encoding is told by its length (W11A #48, #80): Base16 (hex, any case) or Base32
(upper or lower case, padding optional). sha1, sha256, sha512 and md5 are known; any other label is
"not checked" (a warning, not a problem).
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

__all__ = ["Declared", "encode_like", "parse", "same"]

_ALGORITHMS = {"sha1": "sha1", "sha256": "sha256", "sha512": "sha512", "md5": "md5"}


@dataclass(frozen=True)
class Declared:
    """A parsed digest value: ``algorithm`` is hashlib's name, ``raw`` the digest bytes."""

    text: str
    algorithm: str
    raw: bytes

    def hasher(self) -> Any:
        return hashlib.new(self.algorithm)

    def matches(self, computed: bytes) -> bool:
        return computed == self.raw


def parse(value: str) -> Declared | str:
    """The digest ``value`` parsed, or a one-line reason why it cannot be checked (starting with
    ``unknown`` when only the algorithm is foreign: a warning; anything else is a problem)."""
    label, sep, encoded = value.strip().partition(":")
    if not sep or not encoded:
        return f"malformed digest {value[:80]!r} (expected algorithm:value)"
    name = _ALGORITHMS.get(label.lower().replace("-", ""))
    if name is None:
        return f"unknown digest algorithm {label[:40]!r}: not checked"
    size = hashlib.new(name).digest_size
    encoded = encoded.strip()
    try:
        if len(encoded) == 2 * size:
            raw = bytes.fromhex(encoded)
        elif len(encoded.rstrip("=")) == -(-size * 8 // 5):
            text = encoded.rstrip("=").upper()
            raw = base64.b32decode(text + "=" * (-len(text) % 8))
        else:
            return f"malformed {label} digest {encoded[:80]!r} (neither Base16 nor Base32 of {size} bytes)"
    except ValueError:
        return f"malformed {label} digest {encoded[:80]!r}"
    return Declared(value.strip(), name, raw)


def encode_like(declared: Declared, computed: bytes) -> str:
    """``computed`` written the way ``declared`` is (for the message of a mismatch)."""
    label, _, encoded = declared.text.partition(":")
    if len(encoded) == 2 * len(computed):
        return f"{label}:{computed.hex()}"
    return f"{label}:{base64.b32encode(computed).decode('ascii')}"


def same(a: str, b: str) -> bool:
    """Whether two digest values name the same digest. A value without its ``algorithm:`` label (as
    CDX and pywb's CDXJ write a SHA-1: ``digest`` ``ABC…`` for ``sha1:ABC…``) takes the other's label
    (``sha1`` when neither has one); labels compare as :func:`parse` reads them, values by their
    bytes (Base16 or Base32, any case). Values that do not parse compare as text, case aside."""
    a, b = a.strip(), b.strip()
    label_a = a.partition(":")[0] if ":" in a else ""
    label_b = b.partition(":")[0] if ":" in b else ""
    a = a if label_a else f"{label_b or 'sha1'}:{a}"
    b = b if label_b else f"{label_a or 'sha1'}:{b}"
    got_a, got_b = parse(a), parse(b)
    if isinstance(got_a, Declared) and isinstance(got_b, Declared):
        return got_a.algorithm == got_b.algorithm and got_a.raw == got_b.raw
    return a.lower() == b.lower()
