"""Test WARCs and WACZs made at test time: good ones with warcio's WARCWriter (and by wget, in the
tests), hostile ones by hand here, byte by byte, so each carries exactly one fault."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import uuid
import zipfile
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

DATE = "2026-01-02T03:04:05Z"


def page(i: int) -> bytes:
    head = f"<!doctype html><html><head><title>Page {i} &amp; more</title></head>"
    return f"{head}<body>p{i}</body></html>".encode()


def warcio_warc(path: Path, pages: int = 3, *, gz: bool = True, base: str = "http://example.test") -> Path:
    """A WARC 1.1 by warcio: warcinfo, then a response and a request per page, one PNG resource."""
    with path.open("wb") as f:
        w = WARCWriter(f, gzip=gz, warc_version="1.1")
        info = w.create_warcinfo_record(path.name, {"software": "tests"})
        info.rec_headers.replace_header("WARC-Date", DATE)
        w.write_record(info)
        for i in range(pages):
            body = page(i)
            h = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            rec = w.create_warc_record(
                f"{base}/p{i}",
                "response",
                payload=io.BytesIO(body),
                http_headers=h,
                warc_headers_dict={"WARC-Date": DATE},
            )
            w.write_record(rec)
        png = b"\x89PNG\r\n\x1a\n" + bytes(100)
        w.write_record(
            w.create_warc_record(
                f"{base}/shot.png",
                "resource",
                payload=io.BytesIO(png),
                warc_content_type="image/png",
                warc_headers_dict={"WARC-Date": DATE},
            )
        )
    return path


def _b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def record(
    uri: str,
    body: bytes,
    *,
    block_digest: str | None = None,
    payload_digest: str | None = None,
    length: int | None = None,
    extra: str = "",
) -> bytes:
    """A response record, by hand; ``length`` overrides the true Content-Length."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(body)
    block = http + body
    head = (
        "WARC/1.1\r\nWARC-Type: response\r\n"
        f"WARC-Record-ID: <urn:uuid:{uuid.UUID(int=len(uri) + len(body))}>\r\n"
        f"WARC-Date: {DATE}\r\nWARC-Target-URI: {uri}\r\n"
        "Content-Type: application/http;msgtype=response\r\n"
        f"WARC-Block-Digest: {block_digest or _b32(block)}\r\n"
        f"WARC-Payload-Digest: {payload_digest or _b32(body)}\r\n"
        f"{extra}Content-Length: {len(block) if length is None else length}\r\n\r\n"
    )
    return head.encode() + block + b"\r\n\r\n"


def good_records() -> list[bytes]:
    return [record(f"http://example.test/p{i}", page(i)) for i in range(3)]


def write(path: Path, records: list[bytes], *, gz: bool) -> Path:
    data = b"".join(gzip.compress(r, mtime=0) for r in records) if gz else b"".join(records)
    path.write_bytes(data)
    return path


def hostile_warcs(folder: Path) -> dict[str, tuple[Path, str]]:
    """name → (file, a word the problem line must contain)."""
    g = good_records()
    wrong = "sha1:" + "A" * 32
    x = "http://example.test/x"
    big = "X-Big: " + "a" * (1 << 20) + "\r\n"
    minus = record(x, page(9)).replace(b"Content-Length: 1", b"Content-Length: -1", 1)
    garbage = gzip.compress(g[0], mtime=0) + b"\x1f\x8b\x08\x00garbage-not-deflate" * 20
    out: dict[str, tuple[list[bytes] | bytes, bool, str]] = {
        "truncated": (b"".join(g)[:-60], False, "truncated"),
        "truncated_gz": (b"".join(gzip.compress(r, mtime=0) for r in g)[:-30], True, "truncated"),
        "lying_length": ([g[0], record(x, page(9), length=40), g[1]], False, "lies"),
        "long_length": ([g[0], record(x, page(9), length=10**9)], False, "truncated"),
        "huge_header": ([g[0], record(x, page(9), extra=big)], False, "longer than"),
        "bad_block_digest": ([g[0], record(x, page(9), block_digest=wrong)], True, "block digest"),
        "bad_payload_digest": ([g[0], record(x, page(9), payload_digest=wrong)], True, "payload digest"),
        "length_not_number": ([g[0], minus], False, "Content-Length"),
        "gzip_garbage": (garbage, True, "gzip"),
    }
    files = {}
    for name, (content, gz, word) in out.items():
        path = folder / f"{name}.warc{'.gz' if gz else ''}"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            write(path, content, gz=gz)
        files[name] = (path, word)
    return files


def rewrite_zip(
    src: Path,
    dst: Path,
    *,
    change: dict[str, bytes | None] | None = None,
    add: dict[str, bytes] | None = None,
    deflate_archive: bool = False,
) -> Path:
    """A copy of the zip ``src`` with entries changed (None: removed) or added, names as given."""
    change, add = change or {}, add or {}
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change.get(info.filename, zin.read(info.filename))
            if data is None:
                continue
            method = zipfile.ZIP_DEFLATED if deflate_archive or info.compress_type else zipfile.ZIP_STORED
            zout.writestr(zipfile.ZipInfo(info.filename, info.date_time), data, compress_type=method)
        for name, data in add.items():
            zout.writestr(zipfile.ZipInfo(name), data)
    return dst


def lying_datapackage(src: Path, dst: Path) -> Path:
    with zipfile.ZipFile(src) as z:
        doc = json.loads(z.read("datapackage.json"))
    doc["resources"][0]["hash"] = "sha256:" + "0" * 64
    package = json.dumps(doc).encode()  # and a datapackage-digest.json that agrees with the lie
    sealed = json.dumps({"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package).hexdigest()})
    return rewrite_zip(
        src, dst, change={"datapackage.json": package, "datapackage-digest.json": sealed.encode()}
    )


def wrong_offset_index(src: Path, dst: Path) -> Path:
    with zipfile.ZipFile(src) as z:
        lines = z.read("indexes/index.cdxj").decode().splitlines(keepends=True)
    key, ts, body = lines[0].split(" ", 2)
    fields = json.loads(body)
    fields["offset"] = str(int(fields["offset"]) + 7)
    lines[0] = f"{key} {ts} {json.dumps(fields)}\n"
    return rewrite_zip(src, dst, change={"indexes/index.cdxj": "".join(lines).encode()})
