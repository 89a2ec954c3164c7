"""A minimal reader of the ZIM file layout (openZIM "ZIM file format"), independent of libzim, so tests
can see what libzim does not expose: whether an entry's cluster is compressed."""

from __future__ import annotations

import struct
from pathlib import Path

COMPRESSION = {1: "none", 4: "xz", 5: "zstd"}


def cluster_compression(zim: Path) -> dict[str, str]:
    """Content path → compression of the cluster holding it ('none' or 'zstd'); redirects left out."""
    data = zim.read_bytes()
    (magic,) = struct.unpack_from("<I", data, 0)
    assert magic == 72173914, "not a ZIM file"
    entry_count, cluster_count, path_ptr, _title_ptr, cluster_ptr = struct.unpack_from("<IIQQQ", data, 24)
    clusters = struct.unpack_from(f"<{cluster_count}Q", data, cluster_ptr)
    out = {}
    for i in range(entry_count):
        (offset,) = struct.unpack_from("<Q", data, path_ptr + 8 * i)
        mimetype, _param_len, namespace = struct.unpack_from("<HBc", data, offset)
        if mimetype == 0xFFFF or namespace != b"C":
            continue
        cluster, _blob = struct.unpack_from("<II", data, offset + 8)
        end = data.index(b"\0", offset + 16)
        path = data[offset + 16 : end].decode("utf-8")
        out[path] = COMPRESSION.get(data[clusters[cluster]] & 0x0F, "?")
    return out
