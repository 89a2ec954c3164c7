"""The 48×48 PNG illustration every ZIM must carry: the site's icon scaled, or one drawn from a seed.

Pure: no network, no filesystem, no clock. Scaling uses Pillow when it is installed (it decodes
ICO, PNG, JPEG, GIF, WebP, BMP); SVG and anything Pillow cannot read fall back to
:func:`generated_png`, which needs only ``zlib``.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zlib

__all__ = ["SIZE", "generated_png", "scaled_png"]

SIZE = 48


def scaled_png(data: bytes) -> bytes | None:
    """``data`` (an image in any format Pillow reads) as a square 48×48 RGBA PNG: the largest frame
    of an ICO, scaled to fit and centred on a transparent square. None when it cannot be decoded."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # Pillow is optional: the generated icon is used instead
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.format == "ICO":
                sizes = sorted(image.info.get("sizes", set()), key=lambda s: s[0] * s[1])
                if sizes:
                    image.size = sizes[-1]
            image.load()
            rgba = image.convert("RGBA")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    if rgba.width < 1 or rgba.height < 1:
        return None
    scale = SIZE / max(rgba.width, rgba.height)
    size = (max(1, round(rgba.width * scale)), max(1, round(rgba.height * scale)))
    resized = rgba.resize(size, Image.Resampling.LANCZOS)
    canvas = Image.new("RGBA", (SIZE, SIZE), (0, 0, 0, 0))
    canvas.paste(resized, ((SIZE - size[0]) // 2, (SIZE - size[1]) // 2))
    out = io.BytesIO()
    canvas.save(out, format="PNG", optimize=True)
    return out.getvalue()


def generated_png(seed: str) -> bytes:
    """A deterministic 48×48 PNG for ``seed`` (the ZIM's name): a mirrored 5×5 pattern in one colour
    on a light square, like the identicons of code forges, so two archives look different in a library."""
    digest = hashlib.sha256(seed.encode("utf-8")).digest()
    colour = (40 + digest[0] % 160, 40 + digest[1] % 160, 40 + digest[2] % 160)
    background = (244, 244, 244)
    cells = [[bool(digest[3 + row * 3 + min(col, 4 - col)] & 1) for col in range(5)] for row in range(5)]
    margin, cell = 4, 8  # 4 + 5×8 + 4 = 48
    rows = []
    for y in range(SIZE):
        line = bytearray(b"\x00")  # filter type 0 for each scan line
        for x in range(SIZE):
            cy, cx = (y - margin) // cell, (x - margin) // cell
            on = margin <= y < SIZE - margin and margin <= x < SIZE - margin and cells[cy][cx]
            line += bytes(colour if on else background)
        rows.append(bytes(line))
    return _png(SIZE, SIZE, b"".join(rows))


def _png(width: int, height: int, raw: bytes) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
