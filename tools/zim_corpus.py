"""Build a corpus of damaged ZIM files, one per class of corruption, from a ZIM that archiver writes.

    python tools/zim_corpus.py OUT_DIR        # writes OUT_DIR/<class>.zim and prints the list

Each file is the packed bundled mini tree (testdata/trees/mini) with one thing broken, and its MD5
checksum recomputed afterwards (except in the ``checksum`` class), so that a reader which only checks
the checksum does not catch it: the structure itself must be checked. The classes follow the ZIM
layout (openZIM "ZIM file format"; formats/zim.md §7.1):

    header_truncated  the file cut inside the 80-byte header
    file_truncated    the file cut in half (the checksum lies past the end)
    checksum          a content byte flipped, the checksum left as it was
    dirent_pointer    a path pointer beyond the end of the file
    dirent_cluster    a directory entry naming a cluster that does not exist
    dirent_blob       a directory entry naming a blob its (uncompressed) cluster does not hold
    cluster_pointer   a cluster pointer beyond the end of the file
    mime_index        a directory entry's MIME type index past the MIME list
    redirect_index    a redirect to an entry index that does not exist
    main_page         the header's main page index out of range
    blob_misaligned   an uncompressed cluster's blob table size not a multiple of the offset size
    blob_oversized    an uncompressed cluster's last blob offset beyond the cluster
    dirents_unsorted  two path pointers swapped (the directory no longer sorted by path)
    titles_unsorted   two entries of the title listing swapped
    title_pointer     a title listing entry naming an entry index that does not exist

Used by tests/zim/test_corrupt.py; a tool, so the corpus is made at test time and never committed.
:func:`cluster_bomb` (tests/zim/test_bomb.py) makes a sound file whose entry is a decompression bomb.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"
_HEADER = struct.Struct("<IHH16sIIQQQQIIQ")


class _Zim:
    """The parsed layout of a (sound) ZIM file held in memory, for damaging it."""

    def __init__(self, data: bytes) -> None:
        self.data = bytearray(data)
        (_, _, _, _, self.entries, self.clusters, self.path_ptr, _title_ptr, self.cluster_ptr, self.mime_pos,
         _main, _layout, self.checksum_pos) = _HEADER.unpack_from(data)  # fmt: skip
        self.mimes = 0
        pos = self.mime_pos
        while data[pos] != 0:
            pos = data.index(b"\0", pos) + 1
            self.mimes += 1

    def dirent_offset(self, index: int) -> int:
        return struct.unpack_from("<Q", self.data, self.path_ptr + 8 * index)[0]

    def dirents(self) -> list[tuple[int, int, bytes, bytes, int, int]]:
        """(index, offset, namespace, path, mimetype, cluster) for every entry."""
        out = []
        for i in range(self.entries):
            at = self.dirent_offset(i)
            mimetype, _plen, namespace = struct.unpack_from("<HBc", self.data, at)
            names = at + (12 if mimetype == 0xFFFF else 16)
            path = bytes(self.data[names : self.data.index(b"\0", names)])
            cluster = struct.unpack_from("<I", self.data, at + 8)[0]
            out.append((i, at, namespace, path, mimetype, cluster))
        return out

    def cluster_at(self, index: int) -> int:
        return struct.unpack_from("<Q", self.data, self.cluster_ptr + 8 * index)[0]

    def uncompressed_cluster(self) -> int:
        for i in range(self.clusters):
            if self.data[self.cluster_at(i)] & 0x0F in (0, 1) and not self.data[self.cluster_at(i)] & 0x10:
                return i
        raise SystemExit("zim_corpus: the base ZIM has no uncompressed cluster to damage")

    def blob_range(self, cluster: int, blob: int) -> tuple[int, int]:
        at = self.cluster_at(cluster) + 1
        lo, hi = struct.unpack_from("<II", self.data, at + 4 * blob)
        return at + lo, at + hi

    def entry(self, namespace: bytes, path: bytes) -> tuple[int, int]:
        """(index, dirent offset) of one entry."""
        for i, at, ns, p, _m, _c in self.dirents():
            if (ns, p) == (namespace, path):
                return i, at
        raise SystemExit(f"zim_corpus: the base ZIM has no entry {namespace!r}/{path!r}")

    def fix_checksum(self) -> bytes:
        digest = hashlib.md5(self.data[: self.checksum_pos]).digest()
        self.data[self.checksum_pos : self.checksum_pos + 16] = digest
        return bytes(self.data)


def _content_in_uncompressed(z: _Zim) -> tuple[int, int]:
    """(dirent offset, cluster) of a C entry stored in an uncompressed cluster."""
    for _i, at, ns, _p, mimetype, cluster in z.dirents():
        if ns == b"C" and mimetype != 0xFFFF and z.data[z.cluster_at(cluster)] & 0x0F in (0, 1):
            return at, cluster
    raise SystemExit("zim_corpus: no content entry in an uncompressed cluster")


def _listing(z: _Zim) -> tuple[int, int]:
    """Byte range of the title listing's blob (it must sit in an uncompressed cluster)."""
    _i, at = z.entry(b"X", b"listing/titleOrdered/v1")
    cluster, blob = struct.unpack_from("<II", z.data, at + 8)
    if z.data[z.cluster_at(cluster)] & 0x0F not in (0, 1):
        raise SystemExit("zim_corpus: the title listing is compressed in the base ZIM")
    return z.blob_range(cluster, blob)


def _swap(data: bytearray, a: int, b: int, width: int) -> None:
    data[a : a + width], data[b : b + width] = data[b : b + width], data[a : a + width]


def _header_truncated(z: _Zim) -> bytes:
    return bytes(z.data[:40])


def _file_truncated(z: _Zim) -> bytes:
    return bytes(z.data[: len(z.data) // 2])


def _checksum(z: _Zim) -> bytes:
    at, cluster = _content_in_uncompressed(z)
    blob = struct.unpack_from("<I", z.data, at + 12)[0]
    lo, hi = z.blob_range(cluster, blob)
    z.data[(lo + hi) // 2] ^= 0x55
    return bytes(z.data)


def _dirent_pointer(z: _Zim) -> bytes:
    struct.pack_into("<Q", z.data, z.path_ptr + 8 * 3, len(z.data) + 4096)
    return z.fix_checksum()


def _dirent_cluster(z: _Zim) -> bytes:
    _i, at = z.entry(b"C", b"index.html")
    struct.pack_into("<I", z.data, at + 8, z.clusters + 5)
    return z.fix_checksum()


def _dirent_blob(z: _Zim) -> bytes:
    at, _cluster = _content_in_uncompressed(z)
    struct.pack_into("<I", z.data, at + 12, 999)
    return z.fix_checksum()


def _cluster_pointer(z: _Zim) -> bytes:
    struct.pack_into("<Q", z.data, z.cluster_ptr + 8 * (z.clusters - 1), len(z.data) + 4096)
    return z.fix_checksum()


def _mime_index(z: _Zim) -> bytes:
    _i, at = z.entry(b"C", b"index.html")
    struct.pack_into("<H", z.data, at, z.mimes + 3)
    return z.fix_checksum()


def _redirect_index(z: _Zim) -> bytes:
    _i, at = z.entry(b"W", b"mainPage")
    struct.pack_into("<I", z.data, at + 8, z.entries + 7)
    return z.fix_checksum()


def _main_page(z: _Zim) -> bytes:
    struct.pack_into("<I", z.data, 64, z.entries + 1)
    return z.fix_checksum()


def _blob_misaligned(z: _Zim) -> bytes:
    at = z.cluster_at(z.uncompressed_cluster()) + 1
    struct.pack_into("<I", z.data, at, struct.unpack_from("<I", z.data, at)[0] + 1)
    return z.fix_checksum()


def _blob_oversized(z: _Zim) -> bytes:
    cluster = z.uncompressed_cluster()
    at = z.cluster_at(cluster) + 1
    count = struct.unpack_from("<I", z.data, at)[0] // 4
    struct.pack_into("<I", z.data, at + 4 * (count - 1), 0x7FFFFFF0)
    return z.fix_checksum()


def _dirents_unsorted(z: _Zim) -> bytes:
    i, _at = z.entry(b"C", b"index.html")
    _swap(z.data, z.path_ptr + 8 * i, z.path_ptr + 8 * (i - 1), 8)
    return z.fix_checksum()


def _titles_unsorted(z: _Zim) -> bytes:
    lo, hi = _listing(z)
    if hi - lo < 8:
        raise SystemExit("zim_corpus: the title listing has fewer than two entries")
    _swap(z.data, lo, lo + 4, 4)
    return z.fix_checksum()


def _title_pointer(z: _Zim) -> bytes:
    lo, _hi = _listing(z)
    struct.pack_into("<I", z.data, lo, z.entries + 3)
    return z.fix_checksum()


CLASSES: dict[str, Callable[[_Zim], bytes]] = {
    "header_truncated": _header_truncated,
    "file_truncated": _file_truncated,
    "checksum": _checksum,
    "dirent_pointer": _dirent_pointer,
    "dirent_cluster": _dirent_cluster,
    "dirent_blob": _dirent_blob,
    "cluster_pointer": _cluster_pointer,
    "mime_index": _mime_index,
    "redirect_index": _redirect_index,
    "main_page": _main_page,
    "blob_misaligned": _blob_misaligned,
    "blob_oversized": _blob_oversized,
    "dirents_unsorted": _dirents_unsorted,
    "titles_unsorted": _titles_unsorted,
    "title_pointer": _title_pointer,
}


def zstd_zeros_frame(head: bytes, zeros: int) -> bytes:
    """A zstd frame (RFC 8878) of ``head`` then ``zeros`` zero bytes, written by hand: one raw block,
    then RLE blocks of 128 KiB (4 bytes each): 3 GiB of zeros in 96 KiB of frame, no zstd needed."""
    block = 128 << 10
    out = bytearray(b"\x28\xb5\x2f\xfd")  # magic
    out += bytes([0x00, 0x38])  # no content size, no checksum; window 2**17 (the largest block)
    blocks: list[tuple[int, int, bytes]] = [(0, len(head), head)]  # (type, size, payload)
    while zeros:
        n = min(block, zeros)
        blocks.append((1, n, b"\0"))
        zeros -= n
    for i, (kind, size, payload) in enumerate(blocks):
        last = 1 if i == len(blocks) - 1 else 0
        out += (last | kind << 1 | size << 3).to_bytes(3, "little") + payload
    return bytes(out)


def cluster_bomb(data: bytes, entry: bytes, blob_size: int) -> bytes:
    """``data`` (a sound ZIM) with a third cluster appended, zstd-compressed, whose one blob is
    ``blob_size`` zero bytes in ~``blob_size / 32768`` bytes of file, and the entry ``entry`` (a path
    of the C namespace) moved to it. The cluster pointer list moves to the end with the new pointer;
    the checksum is recomputed. A decompression bomb for every reader that hands an entry out whole."""
    return cluster_bomb_blobs(data, entry, [blob_size], 0)


def cluster_bomb_blobs(
    data: bytes,
    entry: bytes,
    sizes: list[int],
    pick: int,
    *,
    table: int | None = None,
    width: int = 4,
    namespace: bytes = b"C",
) -> bytes:
    """:func:`cluster_bomb` with a cluster of several zero blobs (``sizes``), ``entry`` moved to blob
    ``pick``: each blob may be under the entry bound while the cluster up to the last is not (libzim
    decompresses a cluster from its start). ``table``: a blob table of that many bytes claimed by the
    first offset (the rest of the table zeros): a bomb before any blob is read. ``width`` 8: the
    cluster's extended (8-byte) offsets. ``namespace``: the entry's (``M`` for a metadata entry)."""
    z = _Zim(data)
    code = "<Q" if width == 8 else "<I"
    if table is not None:
        head, zeros = struct.pack(code, table), table - width
    else:
        offsets = [width * (len(sizes) + 1)]
        for size in sizes:
            offsets.append(offsets[-1] + size)
        head = b"".join(struct.pack(code, o) for o in offsets)
        zeros = sum(sizes)
    out = bytearray(z.data[: z.checksum_pos])
    bomb_at = len(out)
    out += bytes([0x05 | (0x10 if width == 8 else 0)]) + zstd_zeros_frame(head, zeros)
    pointers = len(out)
    out += struct.pack(f"<{z.clusters + 1}Q", *(z.cluster_at(i) for i in range(z.clusters)), bomb_at)
    fields = list(_HEADER.unpack_from(out))
    fields[5], fields[8], fields[12] = z.clusters + 1, pointers, len(out)  # clusters, pointers, checksum
    _HEADER.pack_into(out, 0, *fields)
    _i, at = z.entry(namespace, entry)
    struct.pack_into("<II", out, at + 8, z.clusters, pick)
    out += hashlib.md5(out).digest()
    return bytes(out)


def base_zim(out: Path) -> Path:
    """The sound ZIM every class starts from: the bundled mini tree packed by archiver."""
    from archiver.zim import pack

    pack(MINI, out, today=dt.date(2026, 11, 29))
    return out


def build(out_dir: Path, base: Path | None = None) -> dict[str, Path]:
    """Write ``out_dir/<class>.zim`` for every class; returns class → path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if base is None:
        base = base_zim(out_dir / "base.zim.src")
    data = base.read_bytes()
    made = {}
    for name, damage in CLASSES.items():
        path = out_dir / f"{name}.zim"
        path.write_bytes(damage(_Zim(data)))
        made[name] = path
    return made


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n", 2)[1], file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        made = build(Path(argv[0]), base_zim(Path(tmp) / "base.zim"))
    for name, path in made.items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
