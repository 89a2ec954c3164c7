"""Media types from file names, the same table for every module (tree inference, ZIM, serve, gwtar),
and from a ``Content-Type`` value (the live fetcher and the WARC replay read it alike).

Pure: no network, no filesystem, no clock. Python's ``mimetypes`` reads the host's
``/etc/mime.types``, so two machines could disagree; this table is fixed, and only falls back to
``mimetypes``' built-in defaults (``strict=True``, no system files) for extensions it does not list.
"""

from __future__ import annotations

import functools

__all__ = ["COMPRESSED_TYPES", "is_text", "media_type_for", "parse_content_type"]

_TABLE = {
    ".html": "text/html",
    ".htm": "text/html",
    ".xhtml": "application/xhtml+xml",
    ".css": "text/css",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".json": "application/json",
    ".map": "application/json",
    ".xml": "application/xml",
    ".rss": "application/rss+xml",
    ".atom": "application/atom+xml",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".md": "text/markdown",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".apng": "image/apng",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".ico": "image/x-icon",  # what nginx and browsers use; IANA has image/vnd.microsoft.icon
    ".bmp": "image/bmp",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".eot": "application/vnd.ms-fontobject",
    ".mp4": "video/mp4",
    ".m4v": "video/mp4",
    ".webm": "video/webm",
    ".ogv": "video/ogg",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".oga": "audio/ogg",
    ".wav": "audio/wav",
    ".flac": "audio/flac",
    ".vtt": "text/vtt",
    ".pdf": "application/pdf",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".wasm": "application/wasm",
    ".webmanifest": "application/manifest+json",
}


@functools.cache
def _fallback() -> dict[str, str]:
    """``mimetypes``' built-in table, built on first use: building it reads the host's files once
    more (``MimeTypes`` starts with ``mimetypes.init()``), ~5 ms of CPU at every start of every
    command, which most runs (an unchanged re-capture) never need."""
    import mimetypes

    return mimetypes.MimeTypes(filenames=(), strict=True).types_map[True]


#: Types whose bytes are already compressed: packers store them without compressing again.
COMPRESSED_TYPES = frozenset(
    {
        "image/png", "image/apng", "image/jpeg", "image/gif", "image/webp", "image/avif",
        "font/woff", "font/woff2", "video/mp4", "video/webm", "video/ogg", "audio/mpeg",
        "audio/ogg", "audio/flac", "application/zip", "application/gzip", "application/pdf",
    }
)  # fmt: skip


def media_type_for(name: str) -> str:
    """The media type for a file name or tree path, ``application/octet-stream`` when unknown.
    A query-folded name (``logo__q-951eba.png``) keeps its extension, so it needs nothing special."""
    leaf = name.rsplit("/", 1)[-1]
    dot = leaf.rfind(".")
    if dot <= 0:
        return "application/octet-stream"
    extension = leaf[dot:].lower()
    found = _TABLE.get(extension) or _fallback().get(extension)
    return found or "application/octet-stream"


def is_text(media_type: str) -> bool:
    """Types that carry a charset parameter when served."""
    return media_type.startswith("text/") or media_type in {
        "application/json",
        "application/xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/xhtml+xml",
        "image/svg+xml",
        "application/manifest+json",
    }


def parse_content_type(value: str | None) -> tuple[str | None, str | None]:
    """The media type (lower case) and the charset of a ``Content-Type`` value, None where absent."""
    if not value:
        return None, None
    media, _, params = value.partition(";")
    charset = None
    for param in params.split(";"):
        name, _, v = param.partition("=")
        if name.strip().lower() == "charset":
            charset = v.strip().strip("\"'") or None
    return media.strip().lower() or None, charset
