"""The WARCs an import reads (formats/warc.md §8.1): WARC files as they are, and a WACZ's
``archive/`` entries, STORED ones read in place in the zip file (random access at a record's
offset), DEFLATE-d ones through the zip; a WACZ's seed pages (``mainPageUrl``, ``pages.jsonl``).
A WACZ whose entry names are unsafe is refused before anything in it is read."""

from __future__ import annotations

import contextlib
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from archiver.detect import refuse_arc
from archiver.errors import FormatError, UsageError

__all__ = ["Source", "sources_of"]

_MAX_JSON = 64 << 20


@dataclass(frozen=True)
class Source:
    """One WARC to read: a file, or a WACZ's ``archive/`` entry (``member``). A STORED entry is read
    straight from the zip file (its data starts at ``start`` and is ``size`` bytes long)."""

    label: str  # how messages name it: the file, or ``X.wacz:archive/a.warc.gz``
    path: Path
    member: str | None = None
    start: int = 0
    size: int | None = None
    crc: int | None = None  # a STORED entry's CRC-32, checked when the entry is read from start to end

    @contextlib.contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The WARC's bytes from its start (seekable)."""
        with self.path.open("rb") as raw:
            if self.member is None:
                yield raw
            elif self.size is not None:
                yield _Slice(raw, self.start, self.size, self.crc, self.member)  # type: ignore[misc]
            else:  # a DEFLATE-d entry (refused by verify, read here all the same: slowly)
                with zipfile.ZipFile(raw) as zf, zf.open(self.member) as f:
                    yield f


class _Slice:
    """``size`` bytes of ``f`` from ``start``, as a seekable file of their own. With ``crc``, the
    bytes read in order from the start are checked against it when the last one is read (as
    zipfile checks an entry it reads): a mismatch raises :class:`zipfile.BadZipFile`."""

    def __init__(
        self, f: IO[bytes], start: int, size: int, crc: int | None = None, name: str | None = None
    ) -> None:
        self.f, self.start, self.size, self.pos = f, start, size, 0
        self.crc, self.name = crc, name
        self.running, self.checked = 0, 0  # the CRC-32 of the first ``checked`` bytes
        f.seek(start)

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.pos
        n = left if n < 0 else min(n, left)
        data = self.f.read(n) if n > 0 else b""
        if self.crc is not None and self.pos == self.checked and data:
            self.running = zlib.crc32(data, self.running)
            self.checked += len(data)
            if self.checked == self.size and self.running != self.crc:
                raise zipfile.BadZipFile(f"Bad CRC-32 for file {self.name!r}")
        self.pos += len(data)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = max(0, min(self.size, pos if whence == 0 else self.pos + pos))
        self.f.seek(self.start + self.pos)
        return self.pos

    def tell(self) -> int:
        return self.pos


def sources_of(paths: list[Path]) -> tuple[list[Source], list[str]]:
    """The WARCs of the inputs (a WACZ stands for its ``archive/`` entries, in name order) and the
    seed pages of the WACZ files (their ``pages/pages.jsonl`` pages, the ``mainPageUrl`` first)."""
    out: list[Source] = []
    pages: list[str] = []
    known: set[str] = set()  # the pages so far (a list's 'in' made 40,000 pages take 5 s of CPU)
    for path in paths:
        if not path.is_file():
            raise UsageError("no such file" if not path.exists() else "not a file", subject=str(path))
        refuse_arc(path)
        if path.name.lower().endswith(".wacz") or _zip_magic(path):
            found, listed = _wacz(path)
            out += found
            for p in listed:
                if p not in known:
                    known.add(p)
                    pages.append(p)
        else:
            out.append(Source(str(path), path))
    return out, pages


def _zip_magic(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"PK\x03\x04"


def _wacz(path: Path) -> tuple[list[Source], list[str]]:
    from archiver.warc.verify import _lines, _unsafe_names

    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise FormatError(f"not a readable WACZ (zip): {e}", subject=str(path)) from None
    with zf:
        bad = _unsafe_names(zf)
        if bad:
            raise FormatError(f"{bad[0]}: nothing imported", subject=str(path))
        names = sorted(n for n in zf.namelist() if n.startswith("archive/") and not n.endswith("/"))
        if not names:
            raise FormatError("no WARC in archive/", subject=str(path))
        found = []
        try:
            with path.open("rb") as raw:
                for name in names:
                    info = zf.getinfo(name)
                    label = f"{path}:{name}"
                    if info.compress_type != zipfile.ZIP_STORED:
                        found.append(Source(label, path, name))
                        continue
                    raw.seek(info.header_offset)
                    head = raw.read(30)
                    if len(head) < 30 or head[:4] != b"PK\x03\x04":
                        raise FormatError(f"{name}: damaged zip entry header", subject=str(path))
                    name_len, extra_len = struct.unpack("<HH", head[26:30])
                    start = info.header_offset + 30 + name_len + extra_len
                    found.append(Source(label, path, name, start, info.file_size, info.CRC))
            main = ""
            if "datapackage.json" in zf.namelist() and zf.getinfo("datapackage.json").file_size <= _MAX_JSON:
                with contextlib.suppress(ValueError, RecursionError):  # nested too deep: no main page
                    doc = json.loads(zf.read("datapackage.json"))
                    if isinstance(doc, dict):  # WACZ 1.0.0 has it in "metadata"
                        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
                        main = str(
                            doc.get("mainPageUrl") or doc.get("mainPageURL") or meta.get("mainPageURL") or ""
                        )
            pages = [main] if main else []
            listed = set(pages)  # the pages so far ('in' the list: 40,000 pages took 5 s of CPU)
            if "pages/pages.jsonl" in zf.namelist():
                with zf.open("pages/pages.jsonl") as f:
                    for line in _lines(f):
                        with contextlib.suppress(ValueError, RecursionError):
                            doc = json.loads(line)
                            url = doc.get("url") if isinstance(doc, dict) else None
                            if isinstance(url, str) and url and url not in listed:
                                listed.add(url)
                                pages.append(url)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, KeyError) as e:
            raise FormatError(f"damaged zip data: {e}", subject=str(path)) from None
    return found, pages
