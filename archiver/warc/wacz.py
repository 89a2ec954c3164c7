"""``archiver pack WARC... --format wacz``: a WACZ 1.1.1 (formats/warc.md §5) made from WARC files,
by our own code (the ``wacz`` package is only the test oracle: it indexes with a second pass of
its own, writes the clock into the zip and datapackage, and cannot say which record is damaged).

One read of each WARC (records checked, CDXJ entries and pages collected, the file hashed), then
one write: ``archive/`` entries STORED, the rest DEFLATED, fixed timestamps and modes, entries in
byte order, ``created`` = the newest WARC-Date, so the same WARCs give the same bytes. The file is
written under a temporary name beside the output and renamed into place; any failure, Ctrl-C or
SIGTERM removes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from archiver import __version__, safefs
from archiver.detect import refuse_arc
from archiver.errors import FormatError, UsageError
from archiver.warc import cdxj
from archiver.warc.read import Record, iter_records

__all__ = ["PackResult", "input_warcs", "pack", "page_title"]

ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_INDEXED = frozenset({"response", "revisit", "resource"})
_NAME_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.warc(?:\.gz)?")


@dataclass
class PackResult:
    path: Path
    size: int
    warcs: int
    records: int
    pages: int
    index: str  # the index entry written: indexes/index.cdxj or indexes/index.idx
    main: str | None
    warnings: list[str] = field(default_factory=list)


def input_warcs(paths: Iterable[Path]) -> list[Path]:
    """The WARC files ``pack`` reads: each file given, and for a folder its ``_archiver/warc/*.warc.gz``
    (where ``capture --warc`` writes), in name order. A folder's must be its own regular files: a
    symbolic link there (to a WARC of someone else's, or any file) is refused, not packed, and so is
    a FIFO (never waited on). Every WARC is opened as a regular file only (:func:`_open`)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted((p / "_archiver" / "warc").glob("*.warc.gz"))
            if not found:
                raise UsageError("no _archiver/warc/*.warc.gz in this folder", subject=str(p))
            for f in found:
                if not stat.S_ISREG(os.lstat(f).st_mode):
                    raise UsageError(
                        "is not a regular file (a link or a special file is not packed)", subject=str(f)
                    )
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError("no such file or folder", subject=str(p))
    names = [p.name for p in out]
    for p in out:
        refuse_arc(p)
        if not _NAME_OK.fullmatch(p.name):
            raise UsageError(
                "a WARC's name must be letters, digits, . _ - and end .warc or .warc.gz", subject=str(p)
            )
        if names.count(p.name) > 1:
            raise UsageError("two WARC files have this name (archive/ needs distinct names)", subject=str(p))
    return out


def _open(path: Path) -> IO[bytes]:
    """A WARC opened for reading: a regular file (a FIFO never waited on); the last component a link
    only where the user named the file (a folder's WARCs are checked by :func:`input_warcs`)."""
    return open(safefs.open_regular(path, follow=True), "rb")


class _Hashing:
    """A reading file object that hashes what it returns."""

    def __init__(self, f: IO[bytes]) -> None:
        self.f, self.sha, self.size = f, hashlib.sha256(), 0

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.sha.update(data)
        self.size += len(data)
        return data


def page_title(rec: Record) -> str | None:
    """The title of an HTML response, read from its first payload bytes (de-chunked and decoded
    when the headers say so, at most 256 KiB after decoding)."""
    head = rec.head
    if "chunked" in rec.http_headers.get("transfer-encoding", "").lower():
        head = _dechunk(head)
    enc = rec.http_headers.get("content-encoding", "").lower().strip()
    if enc in ("gzip", "x-gzip", "deflate"):
        try:
            head = zlib.decompressobj(47 if enc != "deflate" else 15).decompress(head, 256 * 1024)
        except zlib.error:
            return None
    elif enc not in ("", "identity"):
        return None
    return cdxj.title_of(head, rec.http_type)


def _dechunk(data: bytes) -> bytes:
    out, i = bytearray(), 0
    while True:
        j = data.find(b"\r\n", i)
        size_text = data[i:j].split(b";")[0].strip() if j >= 0 else b""
        if j < 0 or not size_text or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
            return bytes(out) if out else data  # not chunked after all (pywb's lying TE)
        size = int(size_text, 16)
        if size == 0:
            return bytes(out)
        out += data[j + 2 : j + 2 + size]
        i = j + 4 + size
        if i > len(data):
            return bytes(out)


@dataclass
class _Warc:
    path: Path
    sha256: str = ""
    size: int = 0
    records: int = 0
    lines: list[str] = field(default_factory=list)
    pages: list[dict[str, Any]] = field(default_factory=list)
    newest: str = ""


def _read_warc(path: Path) -> _Warc:
    w = _Warc(path)
    findings: list[Any] = []
    try:
        with _open(path) as raw:
            f = _Hashing(raw)
            for rec in iter_records(f, findings):  # type: ignore[arg-type]
                w.records += 1
                if cdxj.valid_date(rec.date):
                    w.newest = max(w.newest, rec.date, key=_chronological)
                key = cdxj.surt(rec.uri)
                if rec.type not in _INDEXED or key is None or not cdxj.valid_date(rec.date):
                    continue
                if rec.type == "response" and rec.status is None:
                    continue  # no HTTP status line: nothing a replay could answer with
                status = rec.status if rec.status is not None else 200
                mime = "warc/revisit" if rec.type == "revisit" else rec.mime or "unk"
                fields = {
                    "url": rec.uri,
                    "mime": mime,
                    "status": str(status),
                    "digest": rec.payload_digest,
                    "length": str(rec.length),
                    "offset": str(rec.offset),
                    "filename": path.name,
                }
                w.lines.append(cdxj.IndexEntry(key, cdxj.timestamp(rec.date), fields).line())
                if rec.type == "response" and status == 200 and rec.mime == "text/html":
                    w.pages.append({"url": rec.uri, "ts": rec.date, "title": page_title(rec)})
            while f.read(1 << 20):  # bytes after a fatal fault still count in the hash
                pass
    except OSError as e:
        raise safefs.io_error(e, str(path), "while reading") from None
    w.sha256, w.size = f.sha.hexdigest(), f.size
    bad = [x for x in findings if not x.warning or "gzip member of their own" in x.message]
    if bad:
        raise FormatError(f"cannot pack a damaged WARC: {bad[0]}", subject=str(path))
    if not w.records:
        raise FormatError("no WARC records", subject=str(path))
    return w


def _chronological(date: str) -> str:
    """A WARC-Date as a key that sorts in time order (``…05Z`` before ``…05.5Z``)."""
    return date.rstrip("Z")


def _info(name: str, method: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    info.compress_type = method
    info.create_system = 3
    info.external_attr = 0o644 << 16
    return info


def _resource_name(path: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9._-]", "-", path.rsplit("/", 1)[-1].lower())
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def pack(paths: list[Path], out: Path) -> PackResult:
    """Write the WACZ of the WARC files (or capture folders) ``paths`` to ``out``."""
    warcs = [_read_warc(p) for p in input_warcs(paths)]
    lines = sorted((line for w in warcs for line in w.lines), key=lambda s: s.encode("utf-8"))
    seen: set[str] = set()
    pages = []
    for page in (p for w in warcs for p in w.pages):
        if page["url"] not in seen:
            seen.add(page["url"])
            pages.append(page)
    small: dict[str, bytes] = {}
    body = "".join(lines).encode("utf-8")
    if len(body) <= cdxj.PLAIN_LIMIT:
        small["indexes/index.cdxj"] = body
        index = "indexes/index.cdxj"
    else:
        small["indexes/index.cdx.gz"], small["indexes/index.idx"] = cdxj.compressed_index(lines)
        index = "indexes/index.idx"
    header = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    rows = [json.dumps(header)]
    for p in pages:
        pid = hashlib.sha256(f"{p['ts']} {p['url']}".encode()).hexdigest()[:32]
        doc = {"id": pid, "url": p["url"], "ts": p["ts"]} | ({"title": p["title"]} if p["title"] else {})
        rows.append(json.dumps(doc, ensure_ascii=False))
    small["pages/pages.jsonl"] = ("\n".join(rows) + "\n").encode("utf-8")
    taken: set[str] = set()
    resources = [
        {
            "name": _resource_name(f"archive/{w.path.name}", taken),
            "path": f"archive/{w.path.name}",
            "hash": f"sha256:{w.sha256}",
            "bytes": w.size,
        }
        for w in warcs
    ]
    for name in sorted(small):
        data = small[name]
        resources.append(
            {
                "name": _resource_name(name, taken),
                "path": name,
                "hash": f"sha256:{hashlib.sha256(data).hexdigest()}",
                "bytes": len(data),
            }
        )
    main = pages[0] if pages else None
    package: dict[str, Any] = {
        "profile": "data-package",
        "wacz_version": "1.1.1",
        "title": (main and main["title"]) or warcs[0].path.name,
        "software": f"archiver {__version__}",
        "created": max((w.newest for w in warcs), key=_chronological) or "1980-01-01T00:00:00Z",
        "resources": resources,
    }
    if main:
        package["mainPageUrl"], package["mainPageDate"] = main["url"], main["ts"]
    small["datapackage.json"] = json.dumps(package, indent=2, ensure_ascii=False).encode("utf-8")
    dp_hash = hashlib.sha256(small["datapackage.json"]).hexdigest()
    small["datapackage-digest.json"] = json.dumps(
        {"path": "datapackage.json", "hash": f"sha256:{dp_hash}"}, indent=2
    ).encode("utf-8")
    entries = sorted([f"archive/{w.path.name}" for w in warcs] + list(small))
    by_name = {f"archive/{w.path.name}": w for w in warcs}
    tmp = safefs.temp_path(out)
    try:
        with safefs.interruptible():
            with tmp.open("xb") as raw:
                # zipfile cannot be interrupted just anywhere (safefs.deferred): signals wait for a
                # checkpoint (between members, between a WARC's MiB) or for the central directory
                with safefs.deferred(), zipfile.ZipFile(raw, "w", allowZip64=True) as zf:
                    for name in entries:
                        safefs.checkpoint()
                        if name in by_name:
                            _copy_warc(zf, name, by_name[name])
                        else:
                            method = zipfile.ZIP_STORED if name.endswith(".gz") else zipfile.ZIP_DEFLATED
                            zf.writestr(_info(name, method), small[name], compresslevel=9)
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(out.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    return PackResult(
        out,
        out.stat().st_size,
        len(warcs),
        sum(w.records for w in warcs),
        len(pages),
        index,
        main["url"] if main else None,
    )


def _copy_warc(zf: zipfile.ZipFile, name: str, w: _Warc) -> None:
    info = _info(name, zipfile.ZIP_STORED)
    info.file_size = w.size
    sha = hashlib.sha256()
    with _open(w.path) as src, zf.open(info, "w", force_zip64=w.size >= 1 << 31) as dst:
        while chunk := src.read(1 << 20):
            safefs.checkpoint()
            sha.update(chunk)
            dst.write(chunk)
    if sha.hexdigest() != w.sha256:
        raise FormatError("the file changed while it was being packed", subject=str(w.path))
