"""Write a small ZIM the pre-2021 way (major version 5, namespaces ``A/`` ``I/`` ``-/`` ``M/``), as
mwoffliner and zimwriterfs did before libzim 7, so tests can feed archiver a layout it never writes.

    python tools/zim_oldlayout.py OUT.zim [--split BYTES]

``write(out, entries=ENTRIES + SPRITES)`` adds a stylesheet in a folder of the ``-`` namespace whose
image is in a folder of ``I`` (``-/s/style.css`` → ``../../I/s/cog-sprite.png``, as mwoffliner's
Wikipedia ZIMs have it); ``+ EMPTY_FLAVOUR`` an empty ``M/Flavour`` (as openZIM's own test ZIMs).

libzim 7 and later no longer write this layout, so it is written here byte by byte from the openZIM
"ZIM file format" description: header, MIME list, path pointers, the title pointer list in the
header, directory entries, uncompressed clusters, MD5 checksum. With ``--split`` the file is cut into
``OUT.zimaa``, ``OUT.zimab``… instead, the way large ZIMs are distributed.
"""

from __future__ import annotations

import hashlib
import struct
import sys
import uuid
from pathlib import Path

_PNG_48 = bytes.fromhex(  # a 48x48 one-colour PNG
    "89504e470d0a1a0a0000000d494844520000003000000030080200000"
    "0d8606ed00000001c49444154789cedc1010d000000c2a0f74f6d0e37a"
    "00000000000000000be0d210000013b5b9e0f0000000049454e44ae426082"
)

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="stylesheet" href="../-/style.css"></head>
<body><h1>{title}</h1><p>{body}</p><img src="../I/logo.png" alt="logo"></body></html>
"""

#: (namespace, path, MIME type or None for a redirect, title, content or redirect target "ns/path")
ENTRIES: list[tuple[str, str, str | None, str, bytes | str]] = [
    ("-", "favicon", "image/png", "", _PNG_48),
    ("-", "style.css", "text/css", "", b"body { font-family: serif; }\n"),
    ("A", "Main_Page", "text/html", "Main page",
     PAGE.format(title="Main page", body='See <a href="Other">it</a>, <a href="Old">old</a>.').encode()),
    ("A", "Old", None, "Old name", "A/Other"),
    ("A", "Other", "text/html", "Other page",
     PAGE.format(title="Other page", body='Back to <a href="Main_Page">the main page</a>.').encode()),
    ("I", "logo.png", "image/png", "", _PNG_48),
    ("M", "Creator", "text/plain", "", b"archiver tests"),
    ("M", "Date", "text/plain", "", b"2020-01-01"),
    ("M", "Description", "text/plain", "", b"A ZIM in the old namespace layout"),
    ("M", "Illustration_48x48@1", "image/png", "", _PNG_48),
    ("M", "Language", "text/plain", "", b"eng"),
    ("M", "Name", "text/plain", "", b"tests_en_oldlayout"),
    ("M", "Publisher", "text/plain", "", b"archiver"),
    ("M", "Title", "text/plain", "", b"Old layout"),
]  # fmt: skip
#: A page, a stylesheet and an image in folders of the old namespaces, linked as mwoffliner links
#: them: from ``A/Sprites`` to ``../-/s/style.css``, from there to ``../../I/s/cog-sprite.png``.
SPRITES: list[tuple[str, str, str | None, str, bytes | str]] = [
    ("-", "s/style.css", "text/css", "",
     b".cog { background: url(../../I/s/cog-sprite.png) no-repeat; }\n"
     b"@import url('../style.css');\n"),
    ("A", "Sprites", "text/html", "Sprites",
     b'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Sprites</title>\n'
     b'<link rel="stylesheet" href="../-/s/style.css"></head>\n'
     b'<body><h1 class="cog">Sprites</h1><a href="Main_Page">home</a>'
     b'<img src="../I/s/cog-sprite.png" alt=""></body></html>\n'),
    ("I", "s/cog-sprite.png", "image/png", "", _PNG_48),
]  # fmt: skip
#: An empty optional metadata entry (openZIM's test suite has a valid ZIM with one; zimcheck passes it).
EMPTY_FLAVOUR: list[tuple[str, str, str | None, str, bytes | str]] = [("M", "Flavour", "text/plain", "", b"")]
MAIN = ("A", "Main_Page")


def build(chosen: list[tuple[str, str, str | None, str, bytes | str]] | None = None) -> bytes:
    """The bytes of the ZIM of ``chosen`` entries (default :data:`ENTRIES`)."""
    entries = sorted(ENTRIES if chosen is None else chosen, key=lambda e: (e[0], e[1]))
    index = {(ns, path): i for i, (ns, path, *_rest) in enumerate(entries)}
    mimes = sorted({m for _ns, _p, m, _t, _c in entries if m})
    mime_list = b"".join(m.encode() + b"\0" for m in mimes) + b"\0"
    blobs = [content for _ns, _p, mime, _t, content in entries if mime]
    assert all(isinstance(b, bytes) for b in blobs)
    table = 4 * (len(blobs) + 1)
    offsets, at = [], table
    for blob in blobs:
        offsets.append(at)
        at += len(blob)  # type: ignore[arg-type]
    offsets.append(at)
    cluster = b"\x01" + struct.pack(f"<{len(offsets)}I", *offsets) + b"".join(blobs)  # type: ignore[arg-type]

    dirents, blob_no = [], 0
    for ns, path, mime, title, content in entries:
        names = path.encode() + b"\0" + title.encode() + b"\0"
        if mime is None:
            target_ns, target_path = str(content).split("/", 1)
            dirents.append(
                struct.pack("<HBcII", 0xFFFF, 0, ns.encode(), 0, index[(target_ns, target_path)]) + names
            )
        else:
            dirents.append(struct.pack("<HBcIII", mimes.index(mime), 0, ns.encode(), 0, 0, blob_no) + names)
            blob_no += 1
    count = len(entries)
    mime_pos = 80
    path_ptr = mime_pos + len(mime_list)
    title_ptr = path_ptr + 8 * count
    dirent_pos = title_ptr + 4 * count
    pointers, at = [], dirent_pos
    for d in dirents:
        pointers.append(at)
        at += len(d)
    cluster_ptr = at
    cluster_pos = cluster_ptr + 8
    checksum_pos = cluster_pos + len(cluster)
    titles = sorted(range(count), key=lambda i: (entries[i][0], entries[i][3] or entries[i][1]))
    header = struct.pack(
        "<IHH16sIIQQQQIIQ",
        72173914, 5, 0, uuid.UUID(int=0x0123456789ABCDEF).bytes, count, 1,
        path_ptr, title_ptr, cluster_ptr, mime_pos, index[MAIN], 0xFFFFFFFF, checksum_pos,
    )  # fmt: skip
    body = b"".join(
        [
            header,
            mime_list,
            struct.pack(f"<{count}Q", *pointers),
            struct.pack(f"<{count}I", *titles),
            *dirents,
            struct.pack("<Q", cluster_pos),
            cluster,
        ]
    )
    assert len(body) == checksum_pos
    return body + hashlib.md5(body).digest()


def write(
    out: Path,
    split: int | None = None,
    entries: list[tuple[str, str, str | None, str, bytes | str]] | None = None,
) -> list[Path]:
    """Write the ZIM of ``entries`` (default :data:`ENTRIES`) at ``out`` (or its parts ``outaa``,
    ``outab``… of ``split`` bytes)."""
    data = build(entries)
    if not split:
        out.write_bytes(data)
        return [out]
    parts = []
    for k, start in enumerate(range(0, len(data), split)):
        part = out.with_name(f"{out.name}{chr(97 + k // 26)}{chr(97 + k % 26)}")
        part.write_bytes(data[start : start + split])
        parts.append(part)
    return parts


def main(argv: list[str]) -> int:
    if not argv or len(argv) not in (1, 3) or (len(argv) == 3 and argv[1] != "--split"):
        print("usage: python tools/zim_oldlayout.py OUT.zim [--split BYTES]", file=sys.stderr)
        return 2
    for part in write(Path(argv[0]), int(argv[2]) if len(argv) == 3 else None):
        print(part)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
