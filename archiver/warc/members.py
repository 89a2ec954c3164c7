"""The gzip members the WARC recorder writes, one per record (formats/warc.md §7.2): how each record
is packed and the compressor that packs it.

A record is **stored** (deflate's stored blocks: still one valid gzip member, at memory speed) when
its body came content-coded or is of a type its own format compresses with a strong coder (JPEG,
WebP, AVIF, video, most audio, WOFF, archives): deflate finds under 1 % there. Every other record
(text, PNG, GIF, the request and warcinfo records) is **deflated**: by ISA-L at its level 3 when the
``isal`` package is installed (a dependency: 1.7 to 6 times less CPU than zlib's default level on
1 KB to 64 KB records, for members 2 to 11 % larger), else by zlib at level 6. Any gzip reader reads
either; which one wrote a file is not recorded, nor needed.

Pure but for the choice of compressor made at import.
"""

from __future__ import annotations

import re
import zlib
from types import ModuleType
from typing import Any, Literal

__all__ = ["DEFLATE", "ENGINE", "STORED", "Packing", "compressor", "gzip_params", "packing_for"]

Packing = Literal["stored", "deflate"]
STORED: Packing = "stored"
DEFLATE: Packing = "deflate"

_engine: ModuleType
try:
    from isal import isal_zlib as _engine

    _ENGINE_LEVEL = 3
except ImportError:  # a platform without its wheel: the standard library's zlib, as fast as it goes
    _engine = zlib
    _ENGINE_LEVEL = 6

#: Which compressor deflates records here: ``"isal"`` or ``"zlib"``.
ENGINE = "zlib" if _engine is zlib else "isal"

_MAX_WBITS = 15
_PACKED_TYPES = re.compile(
    r"(image/(jpeg|pjpeg|webp|avif|heic|heif|jxl)|video/|audio/(?!wav|x-wav|wave|aiff|x-aiff|basic)|font/woff2?"
    r"|application/(zip|gzip|x-gzip|x-bzip2|x-xz|zstd|x-7z-compressed|vnd\.rar|font-woff2?|x-font-woff2?))\b",
    re.IGNORECASE,
)


def gzip_params(size: int) -> tuple[int, int]:
    """zlib's ``wbits`` (gzip framing) and ``memLevel`` for one record member of ``size`` bytes: a
    window no larger than the record (any window up to 32 KiB is valid gzip, and one past the input
    finds no more matches) and, below the full window, a smaller hash table: the same output for
    the small records most exchanges are, at a quarter of the set-up cost of zlib's defaults."""
    wbits = min(_MAX_WBITS, max(10, (size - 1).bit_length()))
    return 16 + wbits, 8 if wbits == _MAX_WBITS else 6


def packing_for(content_type: str | None, content_encoding: str | None) -> Packing:
    """How a response record is packed: stored when the body came content-coded or is of a type
    its format compresses with a strong coder; else deflated (see the module docstring)."""
    if content_encoding and content_encoding.strip().lower() not in ("", "identity"):
        return STORED
    if content_type and _PACKED_TYPES.match(content_type.strip()):
        return STORED
    return DEFLATE


def compressor(packing: Packing, size: int, engine: ModuleType | None = None) -> Any:
    """A compressor making one gzip member of a record of ``size`` bytes packed as ``packing``;
    ``engine`` (``zlib`` or ``isal.isal_zlib``) overrides the one chosen at import, for tests.
    Stored blocks always come from zlib (ISA-L's level 0 is a fast deflate, not stored)."""
    wbits, mem = gzip_params(size)
    if packing == STORED:
        return zlib.compressobj(0, zlib.DEFLATED, wbits, mem)
    engine = engine or _engine
    level = _ENGINE_LEVEL if engine is _engine else (6 if engine is zlib else 3)
    return engine.compressobj(level, zlib.DEFLATED, wbits, mem)
