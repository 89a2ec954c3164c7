"""Decompression bombs made at test time, a loopback server that sends them, and a run of the
command line in a child process that reports how far the run raised the child's peak RSS.

Each bomb is :data:`BOMB_SIZE` (512 MiB) of zeros, content-coded ``br``, ``gzip`` or ``deflate``:
the whole 512 MiB, so a path that decodes without a bound blows up, while a bounded one stops at its
size cap after a few MiB. gzip and deflate are built from one DEFLATE block run repeated (a full flush
makes each MiB of zeros compress to the same bytes), so they take milliseconds, not seconds.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import brotli

from tests.httpd import serving

BOMB_SIZE = 512 << 20
CODINGS = ("br", "gzip", "deflate")
_MIB = bytes(1 << 20)


@functools.cache
def _raw_deflate() -> tuple[bytes, bytes]:
    """A raw DEFLATE stream of BOMB_SIZE zeros (without its last block) and the last block."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    c.compress(_MIB)
    first = c.flush(zlib.Z_FULL_FLUSH)
    c.compress(_MIB)
    again = c.flush(zlib.Z_FULL_FLUSH)
    assert first == again  # a full flush forgets the history: every MiB compresses alike
    return first * (BOMB_SIZE >> 20), c.flush()


@functools.cache
def bomb(coding: str) -> bytes:
    """:data:`BOMB_SIZE` zeros, content-coded ``coding``."""
    if coding == "br":
        c = brotli.Compressor(quality=5)
        return b"".join([c.process(bytes(16 << 20)) for _ in range(BOMB_SIZE >> 24)] + [c.finish()])
    body, last = _raw_deflate()
    if coding == "deflate":  # the zlib format (RFC 9110 §8.4.1.2)
        adler = 1
        for _ in range(BOMB_SIZE >> 20):
            adler = zlib.adler32(_MIB, adler)
        return b"\x78\xda" + body + last + adler.to_bytes(4, "big")
    assert coding == "gzip"
    crc = 0
    for _ in range(BOMB_SIZE >> 20):
        crc = zlib.crc32(_MIB, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return head + body + last + crc.to_bytes(4, "little") + (BOMB_SIZE & 0xFFFFFFFF).to_bytes(4, "little")


#: What each kind of resource is called and declared as.
KINDS = {"page": ("text/html", ""), "image": ("image/png", ".png"), "style": ("text/css", ".css")}


def bomb_paths() -> dict[str, tuple[str, str, str]]:
    """``/path`` → (kind, coding, media type) of the nine bombs (three codings × page, image, stylesheet)."""
    out = {}
    for coding in CODINGS:
        for kind, (media, ext) in KINDS.items():
            out[f"/{kind}-{coding}{ext}"] = (kind, coding, media)
    return out


def bomb_home() -> bytes:
    """A page that links to the three bomb pages and uses the six bomb images and stylesheets."""
    parts = ["<!doctype html><html><head><title>Bombs</title>"]
    body = ["<body><h1>Bombs</h1>"]
    for path, (kind, _coding, _media) in bomb_paths().items():
        if kind == "style":
            parts.append(f'<link rel="stylesheet" href="{path}">')
        elif kind == "image":
            body.append(f'<img src="{path}" alt="">')
        else:
            body.append(f'<a href="{path}">{path}</a>')
    return ("".join(parts) + "</head>" + "".join(body) + "</body></html>").encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        found = bomb_paths().get(path)
        if path == "/":
            self._send(200, "text/html; charset=utf-8", bomb_home(), None)
        elif found is not None:
            _kind, coding, media = found
            self._send(200, media, bomb(coding), coding)
        else:
            self._send(404, "text/plain", b"not here", None)

    def _send(self, status: int, media: str, body: bytes, coding: str | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        if coding:
            self.send_header("Content-Encoding", coding)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)  # the client may stop reading at its size cap

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def bomb_server() -> Iterator[str]:
    """A loopback server of :func:`bomb_home` and the nine bombs; yields its base URL."""
    for coding in CODINGS:
        bomb(coding)  # built before the first request
    with serving(_Handler) as base:
        yield base


_CHILD = r"""
import json, sys
def peak():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) * 1024
import archiver.cli, archiver.capture.crawl, archiver.capture.fetch, archiver.capture.render
import archiver.warc.replay, archiver.warc.importer, archiver.warc.record, archiver.gwtar.write
import playwright.async_api, httpx, brotli, sqlite3
before = peak()
code = 70
try:
    code = archiver.cli.main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as f:
        json.dump({"before": before, "after": peak(), "code": code}, f)
sys.exit(code)
"""


def peak_rise(args: list[object], report: Path) -> tuple[int, int, str]:
    """Run ``archiver ARGS`` in a child Python; its exit code, how many bytes the run raised the
    child's peak RSS (VmHWM) over what it was once archiver, Playwright and httpx were imported,
    and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(report), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    figures = json.loads(report.read_text())
    assert figures["code"] == proc.returncode, proc.stderr
    return proc.returncode, figures["after"] - figures["before"], proc.stderr


def bomb_warc(path: Path, base: str = "http://bombs.test") -> Path:
    """A WARC (warcio's writer) of :func:`bomb_home` at ``base``/ and the nine bombs, each stored as
    sent: content-coded, so the record is small and the body it stands for 512 MiB."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        answers = [("/", "text/html; charset=utf-8", None, bomb_home())]
        for p, (_kind, coding, media) in bomb_paths().items():
            answers.append((p, media, coding, bomb(coding)))
        for p, media, coding, body in answers:
            fields = [("Content-Type", media), ("Content-Length", str(len(body)))]
            if coding:
                fields.append(("Content-Encoding", coding))
            head = StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1")
            rec = w.create_warc_record(base + p, "response", payload=io.BytesIO(body), http_headers=head)
            w.write_record(rec)
    return path
