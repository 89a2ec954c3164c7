"""``capture --warc`` without a browser, as attacks: a server answering gzip, br, deflate and chunked
bodies, a redirect and identical payloads (recorded as sent, stored decoded, revisits, request and
response linked, the manifest pointing at each record), a hostile server (a Content-Length that lies,
a header too large, a gzip bomb, gzip that is not) that still leaves WARCs warcio and our verifier
pass, torn tails cut on the next start, rotation by size, and the content decoder on its own."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import shutil
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import brotli
import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.capture import capture
from archiver.cli.argtypes import size as _size
from archiver.codings import STEP, CodingError, Decoder
from archiver.tree import read_records
from archiver.warc import read
from archiver.warc.record import PROFILE_IDENTICAL
from archiver.warc.recover import recover

BIN = Path(sys.executable).parent

PAGE = (
    b"<!doctype html><html><head><title>Encoded home</title><link rel=stylesheet href=/s.css></head>"
    b"<body><p>GZIP-PAGE-MARKER</p><a href=/chunked.html>c</a> <a href=/moved>m</a> <a href=/raw.html>r</a>"
    b"<img src=/a.png><img src=/b.png><a href=/d.js>script</a></body></html>"
)
CSS = b"/* BR-CSS-MARKER */ body { background: url(/a.png) }" + b" " * 2000
CHUNKED = b"<!doctype html><title>Chunked</title><p>CHUNKED-MARKER</p>" + b"x" * 5000
JS = b"// DEFLATE-JS-MARKER\n" + b"var a = 1;\n" * 300
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
RAW = b"<!doctype html><title>Raw deflate</title><p>RAW-DEFLATE-MARKER</p>"
TARGET = b"<!doctype html><title>Target</title><p>moved here</p>"


def _raw_deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


ENCODED: dict[str, tuple[str, str | None, bytes, bytes]] = {
    # path: (content type, content encoding, body as sent, body decoded)
    "/": ("text/html", "gzip", gzip.compress(PAGE, mtime=0), PAGE),
    "/s.css": ("text/css", "br", brotli.compress(CSS), CSS),
    "/chunked.html": ("text/html", "gzip", gzip.compress(CHUNKED, mtime=0), CHUNKED),
    "/d.js": ("text/javascript", "deflate", zlib.compress(JS), JS),
    "/raw.html": ("text/html", "deflate", _raw_deflate(RAW), RAW),
    "/a.png": ("image/png", None, PNG, PNG),
    "/b.png": ("image/png", None, PNG, PNG),
    "/target.html": ("text/html", None, TARGET, TARGET),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    routes: ClassVar[dict[str, Any]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        route = self.routes.get(self.path.split("?", 1)[0])
        if route is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        route(self)


def _serve(
    handler: BaseHTTPRequestHandler, media: str, coding: str | None, body: bytes, *, chunked: bool
) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", media)
    if coding:
        handler.send_header("Content-Encoding", coding)
    if chunked:
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for i in range(0, len(body), 700):
            piece = body[i : i + 700]
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")
    else:
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)


def _encoded_routes() -> dict[str, Any]:
    routes: dict[str, Any] = {}
    for path, (media, coding, sent, _decoded) in ENCODED.items():
        routes[path] = lambda h, m=media, c=coding, b=sent, p=path: _serve(
            h, m, c, b, chunked=p == "/chunked.html"
        )

    def moved(h: BaseHTTPRequestHandler) -> None:
        h.send_response(302)
        h.send_header("Location", "/target.html")
        h.send_header("Content-Length", "5")
        h.end_headers()
        h.wfile.write(b"moved")

    routes["/moved"] = moved
    return routes


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the hostile handlers hang up on purpose


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    routes: dict[str, Any] = {}
    handler = type("Handler", (_Handler,), {"routes": routes})
    httpd = _Quiet(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", routes
    finally:
        httpd.shutdown()
        httpd.server_close()


def _warcs(out: Path) -> list[Path]:
    return sorted((out / "_archiver" / "warc").glob("*.warc.gz"))


def _records(path: Path) -> list[tuple[int, Any, bytes]]:
    """(offset, record, raw payload as stored) of every record of a WARC, read by warcio."""
    out = []
    with path.open("rb") as f:
        it = ArchiveIterator(f)
        for rec in it:
            payload = rec.raw_stream.read()  # before the offset: asking for it reads to the end
            out.append((it.get_record_offset(), rec, payload))
    return out


def _warcio_digests(path: Path) -> list[bool | None]:
    """warcio's digest verdict on every record of ``path`` (what ``warcio check`` decides), read
    from the stored bytes."""
    verdicts = []
    with path.open("rb") as f:
        for rec in ArchiveIterator(f, check_digests=True):
            while rec.raw_stream.read(1 << 16):
                pass
            verdicts.append(rec.digest_checker.passed)
    return verdicts


def _coding(rec: Any) -> str | None:
    return rec.http_headers.get_header("Content-Encoding") if rec.http_headers else None


def _check_clean(out: Path) -> None:
    """warcio check (its digest verdicts, and the command itself on WARCs without br bodies: warcio
    1.8 cannot decode br with Google's brotli module, warcio#73) and our verify pass on every WARC of
    the capture ``out``; warcio index lists them."""
    warcs = _warcs(out)
    assert warcs
    for w in warcs:
        assert all(v is not False for v in _warcio_digests(w)), w
    plain = [w for w in warcs if not any(_coding(r) == "br" for _o, r, _p in _records(w))]
    if plain:
        check = subprocess.run([BIN / "warcio", "check", "-v", *plain], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
        assert "digest fail" not in check.stdout
    index = subprocess.run([BIN / "warcio", "index", *warcs], capture_output=True, text=True)
    assert index.returncode == 0 and index.stdout.strip(), index.stderr[-2000:]
    from archiver.cli import main

    assert main(["verify", *map(str, warcs)]) == 0


def test_encoded_bodies_are_recorded_as_sent_and_stored_decoded(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    report = capture([url], out, render=False, delay=0, progress=False, warc=True, retries=0)
    assert report.pages >= 3
    _check_clean(out)
    base = url.rstrip("/")
    responses: dict[str, tuple[Any, bytes]] = {}
    requests: dict[str, Any] = {}
    types = []
    for _offset, rec, payload in _records(_warcs(out)[0]):
        types.append(rec.rec_type)
        uri = rec.rec_headers.get_header("WARC-Target-URI")
        if rec.rec_type in ("response", "revisit"):
            responses[uri] = (rec, payload)
        elif rec.rec_type == "request":
            requests[rec.rec_headers.get_header("WARC-Concurrent-To")] = (rec, payload)
    assert types[0] == "warcinfo"
    for path, (_media, coding, sent, _decoded) in ENCODED.items():
        rec, payload = responses[base + path]
        if rec.rec_type == "revisit":
            continue
        assert payload == sent, path  # the body as it came over the wire, coding included
        assert rec.http_headers.get_header("Content-Encoding") == coding, path
        assert rec.http_headers.get_header("Transfer-Encoding") is None, path
        assert (
            rec.rec_headers.get_header("WARC-Payload-Digest") == "sha256:" + hashlib.sha256(sent).hexdigest()
        )
        # the request as sent, linked both ways
        request, block = requests[rec.rec_headers.get_header("WARC-Record-ID")]
        assert rec.rec_headers.get_header("WARC-Concurrent-To") == request.rec_headers.get_header(
            "WARC-Record-ID"
        )
        assert request.rec_headers.get_header("WARC-Date") == rec.rec_headers.get_header("WARC-Date")
        head = request.http_headers
        assert (head.protocol, head.statusline) == ("GET", f"{path} HTTP/1.1")
        assert head.get_header("Host") == base.split("://", 1)[1]
        assert "br" in (head.get_header("Accept-Encoding") or "")
        del block
    robots, _ = responses[base + "/robots.txt"]  # robots.txt is fetched like anything else: recorded
    assert robots.http_headers.get_statuscode() == "404"
    chunked, _ = responses[base + "/chunked.html"]
    assert chunked.http_headers.get_header("X-Archiver-Transfer-Encoding") == "chunked"
    # stored decoded in the tree
    files = {r.urls[0]: out / r.path for r in read_records(out)}
    assert files[base + "/d.js"].read_bytes() == JS
    assert files[base + "/a.png"].read_bytes() == PNG
    assert b"BR-CSS-MARKER" in files[base + "/s.css"].read_bytes()
    assert b"GZIP-PAGE-MARKER" in files[base + "/"].read_bytes()
    assert b"CHUNKED-MARKER" in files[base + "/chunked.html"].read_bytes()
    assert b"RAW-DEFLATE-MARKER" in files[base + "/raw.html"].read_bytes()
    # one of the two identical images is a revisit of the other
    a, b = responses[base + "/a.png"][0], responses[base + "/b.png"][0]
    first, second = (a, b) if a.rec_type == "response" else (b, a)
    assert (first.rec_type, second.rec_type) == ("response", "revisit")
    h = second.rec_headers
    assert h.get_header("WARC-Profile") == PROFILE_IDENTICAL
    assert h.get_header("WARC-Refers-To") == first.rec_headers.get_header("WARC-Record-ID")
    assert h.get_header("WARC-Refers-To-Target-URI") == first.rec_headers.get_header("WARC-Target-URI")
    assert h.get_header("WARC-Payload-Digest") == "sha256:" + hashlib.sha256(PNG).hexdigest()
    # the redirect is recorded with its own body
    moved, body = responses[base + "/moved"]
    assert moved.http_headers.get_statuscode() == "302" and body == b"moved"
    _check_manifest_links(out)


def _check_manifest_links(out: Path) -> None:
    """Every manifest record names its WARC record: the file, the offset of a record with that id,
    whose target is one of the record's URLs."""
    for record in read_records(out):
        assert record.warc is not None, record.path
        with (out / "_archiver" / "warc" / record.warc.file).open("rb") as f:
            f.seek(record.warc.offset)
            rec = next(iter(ArchiveIterator(f)))
            assert rec.rec_headers.get_header("WARC-Record-ID") == record.warc.id
            assert rec.rec_type in ("response", "revisit")
            assert rec.rec_headers.get_header("WARC-Target-URI") in record.urls, record.path


def _hostile_routes() -> dict[str, Any]:
    def page(h: BaseHTTPRequestHandler) -> None:
        port = h.server.server_address[1]
        body = (
            b"<!doctype html><title>Hostile</title><link rel=stylesheet href=/huge.css>"
            b"<a href=/liar.js>1</a> <a href=/bomb.js>2</a> <a href=/badgz.js>3</a> <a href=/ok.js>4</a>"
            b"<a href=/moved-broken>5</a> <img src=http://localhost:%d/guarded.png>" % port
        )

        _serve(h, "text/html", None, body, chunked=False)

    def moved_broken(h: BaseHTTPRequestHandler) -> None:  # a redirect whose body never arrives whole
        h.send_response(301)
        h.send_header("Location", "/ok.js")
        h.send_header("Content-Length", "1000")
        h.end_headers()
        h.wfile.write(b"gone")
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    def liar(h: BaseHTTPRequestHandler) -> None:  # says 5000 bytes, sends 100, hangs up
        h.send_response(200)
        h.send_header("Content-Type", "text/javascript")
        h.send_header("Content-Length", "5000")
        h.end_headers()
        h.wfile.write(b"/" * 100)
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    def huge(h: BaseHTTPRequestHandler) -> None:  # one header of 300 KB
        h.send_response(200)
        h.send_header("X-Huge", "a" * 300_000)
        h.send_header("Content-Length", "2")
        h.end_headers()
        h.wfile.write(b"{}")

    bomb = gzip.compress(b"\0" * (64 << 20), mtime=0)  # 64 MiB of zeros in 64 KiB: past the cap
    return {
        "/": page,
        "/liar.js": liar,
        "/huge.css": huge,
        "/bomb.js": lambda h: _serve(h, "text/javascript", "gzip", bomb, chunked=False),
        "/badgz.js": lambda h: _serve(h, "text/javascript", "gzip", b"this is not gzip" * 10, chunked=False),
        "/ok.js": lambda h: _serve(h, "text/javascript", None, b"var ok = 1;", chunked=True),
        "/moved-broken": moved_broken,
        "/guarded.png": lambda h: _serve(h, "image/png", None, PNG, chunked=False),
    }


def test_a_hostile_server_leaves_readable_warcs(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    url, routes = server
    routes.update(_hostile_routes())
    out = tmp_path / "tree"
    capture(
        [url],
        out,
        render=False,
        delay=0,
        progress=False,
        warc=True,
        retries=0,
        asset_cap=1 << 20,
        assets_any_host=True,
    )
    _check_clean(out)
    base = url.rstrip("/")
    seen: dict[str, Any] = {}
    for path in _warcs(out):
        for _offset, rec, payload in _records(path):
            if rec.rec_type == "response":
                seen[rec.rec_headers.get_header("WARC-Target-URI")] = (rec, payload)
    assert base + "/huge.css" not in seen  # no response was ever read: nothing recorded
    assert not any("guarded" in uri for uri in seen)  # the address guard refused it: never sent
    moved, payload = seen[base + "/moved-broken"]  # the redirect is recorded, marked, and followed
    assert payload == b"gone" and moved.rec_headers.get_header("WARC-Truncated") == "disconnect"
    liar, payload = seen[base + "/liar.js"]  # what was received, marked
    assert payload == b"/" * 100 and liar.rec_headers.get_header("WARC-Truncated") == "disconnect"
    bomb, payload = seen[base + "/bomb.js"]  # cut at the cap (decoded), the raw bytes read so far kept
    assert bomb.rec_headers.get_header("WARC-Truncated") == "length" and 0 < len(payload) < 1 << 20
    bad, payload = seen[base + "/badgz.js"]  # recorded as sent up to where decoding gave up; failed
    assert payload and (b"this is not gzip" * 10).startswith(payload)
    assert bad.rec_headers.get_header("WARC-Truncated") in (None, "length")
    assert seen[base + "/ok.js"][1] == b"var ok = 1;"
    items = json.loads((out / "_archiver" / "report.json").read_text(encoding="utf-8"))["items"]
    outcome = {item["url"]: item["outcome"] for item in items}
    assert outcome[base + "/badgz.js"] == "failed" and outcome[base + "/ok.js"] == "ok"
    assert outcome[base + "/moved-broken"] == "redirected"
    port = int(base.rsplit(":", 1)[1])
    assert outcome[f"http://localhost:{port}/guarded.png"] == "refused"


def test_rotation_resume_and_revisits_across_files(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False, warc=True, warc_max_size=3000)
    first = _warcs(out)
    assert len(first) >= 3  # a new file once one passes 3000 bytes
    capture([url], out, render=False, delay=0, progress=False, warc=True, warc_max_size=3000, refresh=True)
    warcs = _warcs(out)
    assert warcs[: len(first)] == first and len(warcs) > len(first)  # the resume starts a new file
    names = [p.name for p in warcs]
    assert names == sorted(names) and len({n.split("-")[1] for n in names}) == 1  # one capture, in order
    _check_clean(out)
    ids: dict[str, str] = {}
    revisits = []
    for path in warcs:
        records = _records(path)
        assert records[0][1].rec_type == "warcinfo"
        assert records[0][1].rec_headers.get_header("WARC-Filename") == path.name
        fields = records[0][2].decode()
        assert "software: archiver/" in fields and "robots: obey" in fields and '"warc":true' in fields
        for _offset, rec, _payload in records:
            ids[rec.rec_headers.get_header("WARC-Record-ID")] = path.name
            if rec.rec_type == "revisit":
                revisits.append((path.name, rec.rec_headers.get_header("WARC-Refers-To")))
    # the refreshed run found its payloads in the earlier run's files
    assert any(ids[refers] in {p.name for p in first} and name not in {p.name for p in first}
               for name, refers in revisits)  # fmt: skip
    _check_manifest_links(out)


def _one_warc(server: tuple[str, dict[str, Any]], tmp_path: Path) -> tuple[list[int], bytes]:
    """A recorded capture's one WARC file: its records' offsets (its size last) and its bytes."""
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False, warc=True)
    (warc,) = _warcs(out)
    offsets = [offset for offset, _rec, _payload in _records(warc)] + [warc.stat().st_size]
    return offsets, warc.read_bytes()


def test_a_torn_tail_is_cut_back_to_the_last_complete_record(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    offsets, data = _one_warc(server, tmp_path)
    rng = random.Random(16)
    for cut in [*sorted(rng.sample(range(1, len(data)), 6)), offsets[3] + 1, offsets[-2] + 10]:
        torn = tmp_path / f"cut-{cut}.warc.gz"
        torn.write_bytes(data[:cut])
        kept = sum(1 for _ in recover(torn))
        whole = max(i for i, o in enumerate(offsets) if o <= cut)  # members complete before the cut
        assert kept == whole, cut
        if whole == 0:
            assert not torn.exists()
            continue
        assert torn.stat().st_size == offsets[whole]
        assert all(v is not False for v in _warcio_digests(torn))
        findings: list[Any] = []
        with torn.open("rb") as f:
            assert len(list(read.iter_records(f, findings))) == whole and findings == []
    # damage that is not a torn tail (bytes after a complete record that are no gzip) is left alone
    damaged = tmp_path / "damaged.warc.gz"
    damaged.write_bytes(data + b"garbage, not a gzip member")
    assert sum(1 for _ in recover(damaged)) == len(offsets) - 1
    assert damaged.stat().st_size == len(data) + 26


def test_a_member_cut_in_its_last_bytes_is_torn_though_its_record_reads_whole(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    """A writer killed while writing a member's last bytes (its final block's end, its CRC and
    length) leaves a record whose bytes all decompress: it is still torn (unchecked, and a record
    appended after it would be read as its trailer). Every such cut of every member is cut back to
    the record before; the reader reports the damage at the record's member and does not yield it."""
    offsets, data = _one_warc(server, tmp_path)
    for k in range(1, len(offsets)):
        for short in range(1, 13):  # the trailer's 8 bytes and a few before them
            cut = offsets[k] - short
            if cut <= offsets[k - 1]:
                continue
            torn = tmp_path / "torn.warc.gz"
            torn.write_bytes(data[:cut])
            findings: list[Any] = []
            with torn.open("rb") as f:
                read_back = list(read.iter_records(f, findings))
            assert len(read_back) == k - 1, (k, short)
            assert [f.offset for f in findings if not f.warning] == [offsets[k - 1]], (k, short)
            assert sum(1 for _ in recover(torn)) == k - 1
            if k == 1:
                assert not torn.exists()
            else:
                assert torn.stat().st_size == offsets[k - 1]
                assert all(v is not False for v in _warcio_digests(torn))


def test_a_resume_after_a_torn_tail_keeps_every_record(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False, warc=True)
    (warc,) = _warcs(out)
    whole = warc.read_bytes()
    with warc.open("ab") as f:  # what a writer killed mid-record leaves
        noise = random.Random(5).randbytes(5000)
        f.write(gzip.compress(b"WARC/1.1\r\nWARC-Type: response\r\n" + noise)[:700])
    capture([url], out, render=False, delay=0, progress=False, warc=True, refresh=True)
    first, second = _warcs(out)
    assert first.read_bytes() == whole
    assert second.name > first.name
    _check_clean(out)


def test_no_resume_removes_the_previous_warcs(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False, warc=True)
    (before,) = _warcs(out)
    old = before.read_bytes()
    capture([url], out, render=False, delay=0, progress=False, warc=True, resume=False)
    (after,) = _warcs(out)  # the old file is gone, a new capture's file is there
    assert after.read_bytes() != old and after.name.endswith("-00001.warc.gz")


def test_without_warc_nothing_is_recorded(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False)
    assert not (out / "_archiver" / "warc").exists()
    assert all(r.warc is None for r in read_records(out))
    assert b'"warc"' not in (out / "_archiver" / "manifest.jsonl").read_bytes()


# ---- the decoder on its own


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", lambda d: gzip.compress(d, mtime=0)),
        ("x-gzip", lambda d: gzip.compress(d, mtime=0)),
        ("deflate", zlib.compress),
        ("deflate", _raw_deflate),
        ("br", brotli.compress),
        ("gzip, br", lambda d: brotli.compress(gzip.compress(d, mtime=0))),
        ("identity", lambda d: d),
        ("compress", lambda d: d),  # unknown: passed through, as httpx does
    ],
)
def test_decoder_undoes_codings_in_any_split(coding: str, encode: Any) -> None:
    data = random.Random(1).randbytes(50_000) + b"z" * 300_000
    sent = encode(data)
    for step in (1, 7, 4096, len(sent)):
        d = Decoder(coding)
        got = b"".join(piece for i in range(0, len(sent), step) for piece in d.feed(sent[i : i + step]))
        got += b"".join(d.flush())
        assert got == data, (coding, step)


def test_decoder_bounds_a_bomb_and_rejects_lies() -> None:
    bomb = gzip.compress(b"\0" * (200 << 20), mtime=0)
    d = Decoder("gzip")
    pieces = d.feed(bomb[:4096])
    total = 0
    for piece in pieces:  # never more than a step at a time
        assert len(piece) <= STEP
        total += len(piece)
        if total > 8 * STEP:
            break
    with pytest.raises(CodingError):
        list(Decoder("gzip").feed(b"not gzip at all"))
    with pytest.raises(CodingError):
        d = Decoder("gzip")
        list(d.feed(gzip.compress(b"abc" * 1000)[:-12]))
        list(d.flush())
    with pytest.raises(CodingError):
        d = Decoder("br")
        list(d.feed(brotli.compress(b"abc" * 1000)[:-3]))
        list(d.flush())


def test_warc_max_size_parses_sizes() -> None:
    assert _size("1G") == 10**9 and _size("1GB") == 10**9 and _size("500M") == 500 * 10**6
    assert _size("64MiB") == 64 << 20 and _size("4096") == 4096 and _size("1.5k") == 1500
    for bad in ("", "1X", "-1", "0", "G"):
        with pytest.raises(Exception, match=r"size|byte"):
            _size(bad)


def test_cli_capture_warc_flags(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "capture", url, "-o", out, "--no-render", "--delay", "0",
         "--warc", "--warc-max-size", "4k", "--json"],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(_warcs(out)) >= 2
    bad = subprocess.run(
        [sys.executable, "-m", "archiver", "capture", url, "-o", tmp_path / "x", "--warc-max-size", "lots"],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert bad.returncode == 2 and "size" in bad.stderr and "Traceback" not in bad.stderr
    shutil.rmtree(out)


BIG = """
import sys
from pathlib import Path
from archiver.capture import capture
capture([sys.argv[1]], Path(sys.argv[2]), render=False, delay=0, progress=False, warc=True,
        asset_cap=200 << 20)
print(Path('/proc/self/status').read_text().split('VmHWM:')[1].split()[0])
"""


def test_a_large_body_is_recorded_in_flat_memory(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    """A 96 MiB asset (gzip-coded, 2x incompressible) goes to the WARC as sent and to the tree decoded,
    the process's peak RSS far below the body's size (spooled, compressed and written in steps)."""
    url, routes = server
    block = random.Random(7).randbytes(1 << 20)
    size = 96 << 20
    decoded = hashlib.sha256()
    for _ in range(size // len(block)):
        decoded.update(block)
    sent = gzip.compress(block * (size // len(block)), compresslevel=1, mtime=0)

    def big(h: BaseHTTPRequestHandler) -> None:
        _serve(h, "application/octet-stream", "gzip", sent, chunked=True)

    routes["/"] = lambda h: _serve(
        h, "text/html", None, b"<title>big</title><img src=/big.bin>", chunked=False
    )
    routes["/big.bin"] = big
    out = tmp_path / "tree"
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", BIG, url, out], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) < 160 * 1024  # KiB: the body is 96 MiB decoded, as much coded
    (stored,) = [r for r in read_records(out) if r.urls[0] == url + "big.bin" and r.kind == "asset"]
    assert stored.sha256 == decoded.hexdigest() and stored.size == size
    found = False
    for path in _warcs(out):
        with path.open("rb") as f:
            for rec in ArchiveIterator(f):
                if (
                    rec.rec_headers.get_header("WARC-Target-URI") == url + "big.bin"
                    and rec.rec_type == "response"
                ):
                    payload = hashlib.sha256()
                    while chunk := rec.raw_stream.read(1 << 20):
                        payload.update(chunk)
                    assert payload.hexdigest() == hashlib.sha256(sent).hexdigest()
                    found = True
    assert found
    _check_clean(out)


def test_manifest_records_with_and_without_the_warc_link_decode() -> None:
    """The ``warc`` field is optional: a manifest line written before it existed decodes (None), one
    with it decodes to a WarcRef, a later reader's unknown fields inside it are ignored, and a record
    without it is encoded without it."""
    import msgspec

    from archiver.tree import Record, WarcRef

    old = b'{"path":"a.html","kind":"page","media_type":"text/html","size":1,"sha256":"00"}'
    assert msgspec.json.decode(old, type=Record).warc is None
    new = old[:-1] + b',"warc":{"file":"rec-1.warc.gz","offset":7,"id":"<urn:uuid:x>","length":9},"later":1}'
    got = msgspec.json.decode(new, type=Record)
    assert got.warc == WarcRef(file="rec-1.warc.gz", offset=7, id="<urn:uuid:x>")
    assert b"warc" not in msgspec.json.encode(msgspec.json.decode(old, type=Record))


def test_an_unreadable_earlier_warc_is_one_line_and_exit_4(
    server: tuple[str, dict[str, Any]], tmp_path: Path
) -> None:
    url, routes = server
    routes.update(_encoded_routes())
    out = tmp_path / "tree"
    capture([url], out, render=False, delay=0, progress=False, warc=True)
    (warc,) = _warcs(out)
    blocker = warc.with_name(warc.name.replace("-00001.", "-00002."))
    blocker.mkdir()  # a name of ours that cannot be read as a file
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "capture", url, "-o", out, "--no-render", "--delay", "0",
         "--warc"], capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read an earlier WARC" in lines[0] and blocker.name in lines[0], lines


def test_kill_9_in_the_middle_of_a_large_record(server: tuple[str, dict[str, Any]], tmp_path: Path) -> None:
    """A 64 MiB incompressible record is written in steps; kill -9 once part of it is in the file: the
    file ends in a torn member, which the resumed run cuts, keeping every record before it."""
    import os
    import signal
    import time

    url, routes = server
    sent = random.Random(9).randbytes(64 << 20)
    routes["/"] = lambda h: _serve(
        h, "text/html", None, b"<title>big</title><img src=/big.bin>", chunked=False
    )
    routes["/big.bin"] = lambda h: _serve(h, "application/octet-stream", None, sent, chunked=False)
    out = tmp_path / "tree"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-c", BIG, url, str(out)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        warcs = _warcs(out)
        if warcs and warcs[0].stat().st_size > 20 << 20:  # well into the big record, not at its end
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the capture ended before the big record was half written"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (torn,) = _warcs(out)
    findings: list[Any] = []
    with torn.open("rb") as f:
        before = [rec.headers.get("warc-record-id") for rec in read.iter_records(f, findings)]
    assert findings and "truncated" in findings[-1].message  # a reader sees the torn record as torn
    done = subprocess.run(
        [sys.executable, "-c", BIG, url, str(out)], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, second = _warcs(out)
    findings = []
    with first.open("rb") as f:
        assert [rec.headers.get("warc-record-id") for rec in read.iter_records(f, findings)] == before
    assert findings == []
    _check_clean(out)
    assert any(
        rec.rec_headers.get_header("WARC-Target-URI") == url + "big.bin" for _o, rec, _p in _records(second)
    )
