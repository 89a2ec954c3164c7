"""Bodies stored already decoded while their headers still say ``Content-Encoding`` (issue 22, point
4): ArchiveWeb.page and wabac.js record through the browser, which hands them the decoded body, and
keep the server's header; warcio and pywb replay such a record as stored when the coding fails at
its first block. The import does the same when the bytes are of the declared media type, and says so
once in its report (formats/warc.md §8.4); a body that is damaged, or whose bytes are not of its
type, still fails. Before, every such record failed: "the recorded body cannot be decoded"."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path

import brotli
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from archiver.tree import read_records
from archiver.warc import replay_rules as rules
from tests.warc.test_warc import run

BASE = "http://awp.test"
TEXT = "Recorded the ArchiveWeb.page way"
PAGE = (
    "<!doctype html><html><head><meta charset=utf-8><title>Decoded</title>"
    '<link rel="stylesheet" href="/style.css"><script src="/app.js" defer></script></head>'
    f'<body><h1>{TEXT}</h1><img src="/logo.png" alt="logo"><p id="out"></p></body></html>'
).encode()
CSS = b"h1 { color: rgb(200, 10, 10) }\n" * 40
JS = b'document.getElementById("out").textContent = "script ran from a decoded body";\n'
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8

#: URL path → (media type, the coding its header names, the body as stored: decoded)
RECORDS = {
    "/": ("text/html; charset=utf-8", "gzip", PAGE),
    "/style.css": ("text/css", "br", CSS),
    "/app.js": ("text/javascript", "deflate", JS),
    "/logo.png": ("image/png", "gzip", PNG),
}


def awp_warc(path: Path, records: dict[str, tuple[str, str, bytes]] = RECORDS) -> Path:
    """A WARC as ArchiveWeb.page writes one: each body decoded, the server's Content-Encoding kept
    (and its Content-Length, the coded size), the payload digest over the stored bytes."""
    coders = {"gzip": lambda b: gzip.compress(b, mtime=0), "br": brotli.compress, "deflate": zlib.compress}
    with path.open("wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        for p, (media, coding, body) in records.items():
            sent = coders[coding](body)
            fields = [
                ("Content-Type", media),
                ("Content-Encoding", coding),
                ("Content-Length", str(len(sent))),
            ]
            head = StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1")
            rec = w.create_warc_record(BASE + p, "response", payload=io.BytesIO(body), http_headers=head)
            w.write_record(rec)
    return path


def _stored(out: Path) -> dict[str, bytes]:
    return {url: (out / r.path).read_bytes() for r in read_records(out) for url in r.urls}


def test_warcio_reads_these_records_as_stored(tmp_path: Path) -> None:
    """The oracle: warcio's decoding stream falls back to the stored bytes for each record (but the
    br one: warcio 1.8 cannot decode br with brotli 1.2: warcio#73)."""
    records = {p: r for p, r in RECORDS.items() if r[1] != "br"}
    with awp_warc(tmp_path / "awp.warc.gz", records).open("rb") as f:
        got = {
            r.rec_headers.get_header("WARC-Target-URI"): r.content_stream().read() for r in ArchiveIterator(f)
        }
    assert got == {BASE + p: body for p, (_m, _c, body) in records.items()}


def test_import_takes_decoded_bodies_as_stored_and_says_so_once(tmp_path: Path) -> None:
    warc = awp_warc(tmp_path / "awp.warc.gz")
    out = tmp_path / "tree"
    r = run("capture", "--from-warc", warc, "-o", out, "--no-render", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    without_script = {BASE + p: "ok" for p in RECORDS if p != "/app.js"}  # a script is for rendering
    assert {i["url"]: i["outcome"] for i in report["items"]} == without_script
    stored = _stored(out)
    assert stored[BASE + "/style.css"] == CSS and stored[BASE + "/logo.png"] == PNG
    assert TEXT.encode() in stored[BASE + "/"]
    notes = report["notes"]
    assert len(notes) == 1 and notes[0].startswith("3 responses stored already decoded"), notes
    summary = run("capture", "--from-warc", warc, "-o", tmp_path / "again", "--no-render")
    assert summary.stdout.count("stored already decoded") == 1, summary.stdout


@pytest.mark.browser
def test_the_rendered_import_shows_the_page_its_script_and_style(tmp_path: Path) -> None:
    """Chromium renders from the records: the page's text, the script's (it ran, so it was served
    decoded; the rendered page is stored, not the script), the stylesheet and the image stored."""
    warc = awp_warc(tmp_path / "awp.warc.gz")
    out = tmp_path / "tree"
    r = run("capture", "--from-warc", warc, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    page = (out / "index.html").read_text()
    assert TEXT in page and "script ran from a decoded body" in page
    stored = _stored(out)
    assert stored[BASE + "/style.css"] == CSS and stored[BASE + "/logo.png"] == PNG
    notes = json.loads(r.stdout)["notes"]
    assert len(notes) == 1 and notes[0].startswith("4 responses stored already decoded"), notes


# ---- the rule on its own (archiver/warc/replay_rules.py)


def _decode(coding: str, media: str, data: bytes, step: int = 1000) -> tuple[bytes, rules.BodyDecoder]:
    dec = rules.BodyDecoder(coding, media)
    out = b"".join(piece for i in range(0, len(data), step) for piece in dec.feed(data[i : i + step]))
    return out + b"".join(dec.close()), dec


@pytest.mark.parametrize("step", [1, 2, 7, 1000])
@pytest.mark.parametrize("coding", ["gzip", "x-gzip", "deflate", "br", "gzip, br"])
def test_a_decoded_body_under_any_coding_is_taken_as_stored(coding: str, step: int) -> None:
    for media, body in (("text/html", PAGE), ("text/css", CSS), ("text/javascript", JS), ("image/png", PNG)):
        out, dec = _decode(coding, media, body, step)
        assert (out, dec.error, dec.as_stored) == (body, "", True), (coding, media)


def test_a_large_body_taken_as_stored_comes_out_in_steps() -> None:
    big = b"<!doctype html><p>" + b"words, " * 200_000
    dec = rules.BodyDecoder("gzip", "text/html")
    pieces = list(dec.feed(big)) + list(dec.close())
    assert b"".join(pieces) == big and dec.as_stored
    assert max(map(len, pieces)) <= 64 << 10


def test_what_is_not_taken_as_stored() -> None:
    # bytes not of the declared type: an image that is HTML, HTML that is binary, an unknown type
    for media, body in (("image/png", PAGE), ("text/html", PNG), ("application/octet-stream", PAGE)):
        out, dec = _decode("gzip", media, body)
        assert not dec.as_stored and "damaged" in dec.error and out == b"", media
    # a damaged gzip body (its magic, then garbage) is binary: still a failure
    out, dec = _decode("gzip", "text/html", b"\x1f\x8b\x08\x00" + bytes(range(40)) + PAGE)
    assert not dec.as_stored and "damaged" in dec.error
    # a coding that failed after it gave bytes is damage within the data, not a decoded body
    coded = gzip.compress(PAGE, mtime=0)
    out, dec = _decode("gzip", "text/html", coded[: len(coded) // 2] + b"<p>garbage" * 100)
    assert not dec.as_stored and dec.error
    # without a media type (the old call) nothing is taken as stored
    out, dec = _decode("gzip", "", PAGE)
    assert not dec.as_stored and dec.error
    # a body coded as it says is decoded, not taken as stored
    out, dec = _decode("gzip", "text/html", coded)
    assert (out, dec.error, dec.as_stored) == (PAGE, "", False)


def test_media_types_by_their_bytes() -> None:
    assert rules.of_media_type("text/html", b"\xef\xbb\xbf \n<!doctype html>")
    assert not rules.of_media_type("text/html", b"plain words")
    assert rules.of_media_type("text/css", CSS) and rules.of_media_type("application/json", b'{"a": 1}')
    assert not rules.of_media_type("text/css", b"\x1f\x8b\x08\x00")
    assert rules.of_media_type("image/svg+xml", b"<svg/>")
    assert rules.of_media_type("image/jpeg", b"\xff\xd8\xff\xe0") and not rules.of_media_type(
        "image/jpeg", PNG
    )
    assert rules.of_media_type("image/webp", b"RIFF\x00\x00\x00\x00WEBPVP8 ")
    assert rules.of_media_type("font/woff2", b"wOF2\x00\x01") and not rules.of_media_type("font/woff2", CSS)
    assert not rules.of_media_type("application/octet-stream", PNG)
