"""WARCs for the import tests, made at test time with warcio's WARCWriter: a small site whose records
exercise every rule of formats/warc.md §8 (several captures, revisits three ways, a redirect,
chunking, gzip/deflate/br/zstd bodies, a Latin-1 page, a 404, robots.txt), in a WARC/1.1 gzip file
and a plain WARC/1.0 file."""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

import brotli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

BASE = "http://site.test"
D1, D2, D3 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-02T00:00:00.5Z"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
BG = b"\x89PNG\r\n\x1a\nBG" + bytes(64)
CSS = b"body { background: url(/bg.png) }\n"
LINKS = [
    "a.html",
    "d.html",
    "b.html",
    "c.html",
    "redir",
    "gone.html",
    "missing.html",
    "chunked.html",
    "latin.html",
    "private/x.html",
    "old.html",
    "forbidden.html",
]
IMAGES = ["img.png", "deflate.png", "raw-deflate.png", "br.png", "z.png"]


def html(title: str, body: str = "") -> bytes:
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>".encode()


HOME = (
    b'<!doctype html><html><head><title>Home</title><link rel="stylesheet" href="/style.css"></head><body>'
    + "".join(f'<a href="/{x}">{x}</a> ' for x in LINKS).encode()
    + "".join(f'<img src="/{x}"> ' for x in IMAGES).encode()
    + b"</body></html>"
)


def _response(
    w: WARCWriter,
    path: str,
    body: bytes,
    *,
    date: str = D1,
    status: str = "200 OK",
    headers: list[tuple[str, str]] | None = None,
    media: str = "text/html",
) -> object:
    fields = headers if headers is not None else [("Content-Type", media), ("Content-Length", str(len(body)))]
    h = StatusAndHeaders(status, fields, protocol="HTTP/1.1")
    rec = w.create_warc_record(
        f"{BASE}/{path}",
        "response",
        payload=io.BytesIO(body),
        http_headers=h,
        warc_headers_dict={"WARC-Date": date},
    )
    w.write_record(rec)
    return rec


def _chunked(body: bytes, size: int = 5) -> bytes:
    out = b""
    for i in range(0, len(body), size):
        piece = body[i : i + size]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    return out + b"0\r\n\r\n"


def site_warcs(folder: Path) -> list[Path]:
    """``site.warc.gz`` (WARC/1.1, gzip per record) and ``more.warc`` (WARC/1.0, plain)."""
    first = folder / "site.warc.gz"
    with first.open("wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        w.write_record(w.create_warcinfo_record(first.name, {"software": "tests"}))
        _response(w, "", HOME)
        _response(w, "robots.txt", b"User-agent: *\nDisallow: /private/\n", media="text/plain")
        # several captures: the newest wins whatever the order in the file
        _response(w, "a.html", html("A", "A-NEW"), date=D2)
        _response(w, "a.html", html("A", "A-OLD"), date=D1)
        _response(w, "a.html?utm_source=x", html("A", "A-UTM-OLDER"), date=D1)
        # a revisit by Refers-To-Target-URI and -Date
        original = _response(w, "b.html", html("B", "B-ORIGINAL"), date=D1)
        digest = original.rec_headers.get_header("WARC-Payload-Digest")  # type: ignore[attr-defined]
        w.write_record(
            w.create_revisit_record(
                f"{BASE}/b.html", digest, f"{BASE}/b.html", D1, warc_headers_dict={"WARC-Date": D3}
            )
        )
        # a revisit by payload digest only (the original has another URL)
        original = _response(w, "c-original.html", html("C", "C-BODY"), date=D1)
        digest = original.rec_headers.get_header("WARC-Payload-Digest")  # type: ignore[attr-defined]
        revisit = w.create_revisit_record(
            f"{BASE}/c.html", digest, "", "", warc_headers_dict={"WARC-Date": D2}
        )
        for name in ("WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"):
            revisit.rec_headers.remove_header(name)
        w.write_record(revisit)
        # a revisit whose original is nowhere: passed over for the older capture
        _response(w, "d.html", html("D", "D-OLDER-BUT-THERE"), date=D1)
        lost = w.create_revisit_record(
            f"{BASE}/d.html", "sha1:" + "Q" * 32, "", "", warc_headers_dict={"WARC-Date": D2}
        )
        for name in ("WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"):
            lost.rec_headers.remove_header(name)
        w.write_record(lost)
        _response(
            w, "redir", b"", status="302 Found", headers=[("Location", "/a.html"), ("Content-Length", "0")]
        )
        _response(w, "gone.html", html("Gone", "NOT-HERE"), status="404 Not Found")
        _response(w, "forbidden.html", html("No", "NO"), status="403 Forbidden")
        _response(w, "private/x.html", html("Private", "PRIVATE"))
        _response(
            w,
            "latin.html",
            "<!doctype html><title>L</title><p>café LATIN</p>".encode("latin-1"),
            headers=[("Content-Type", "text/html; charset=iso-8859-1")],
        )
        gz = gzip.compress(CSS, mtime=0)
        _response(
            w,
            "style.css",
            gz,
            headers=[
                ("Content-Type", "text/css"),
                ("Content-Encoding", "gzip"),
                ("Content-Length", str(len(gz))),
            ],
        )
        _response(w, "img.png", PNG, media="image/png")
        _response(
            w,
            "deflate.png",
            zlib.compress(PNG),
            headers=[("Content-Type", "image/png"), ("Content-Encoding", "deflate")],
        )
        raw = zlib.compressobj(9, zlib.DEFLATED, -15)
        _response(
            w,
            "raw-deflate.png",
            raw.compress(PNG) + raw.flush(),
            headers=[("Content-Type", "image/png"), ("Content-Encoding", "deflate")],
        )
        _response(
            w,
            "br.png",
            brotli.compress(PNG),
            headers=[("Content-Type", "image/png"), ("Content-Encoding", "br")],
        )
        _response(
            w,
            "z.png",
            b"(\xb5/\xfd not really zstd",
            headers=[("Content-Type", "image/png"), ("Content-Encoding", "zstd")],
        )
        w.write_record(
            w.create_warc_record(
                f"{BASE}/bg.png",
                "resource",
                payload=io.BytesIO(BG),
                warc_content_type="image/png",
                warc_headers_dict={"WARC-Date": D1},
            )
        )
    second = folder / "more.warc"
    with second.open("wb") as f:
        w = WARCWriter(f, gzip=False)  # warcio's default: WARC/1.0
        body = html("Chunked", "CHUNKED-BODY-IN-PIECES")
        _response(
            w,
            "chunked.html",
            _chunked(body),
            headers=[("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
        )
        _response(w, "old.html", html("Old", "OLD-FORMAT"))
    return [first, second]
