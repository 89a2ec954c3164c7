"""WARC, WACZ and ARC files written by other tools, as attacks: a WARC-Target-URI whose bytes are not
UTF-8, a WACZ entry whose CRC-32 is wrong, a CDXJ digest without its ``sha1:`` label (pywb, CDX), a
WACZ in the 1.0.0 layout (py-wacz before 0.3: ``stats`` in the resources), a WACZ without a WARC, and
an ARC file (the format before WARC) through every command. Each is one line and one exit code from
every command that reads it (formats/warc.md §1, §2, §6.2, §8.1), never a traceback; the inputs are
made here, byte by byte or with zipfile."""

from __future__ import annotations

import gzip
import hashlib
import json
import struct
import zipfile
from pathlib import Path

import pytest

from archiver.detect import ARC_NOT_SUPPORTED
from archiver.warc import digest
from tests.warc import corpus
from tests.warc.test_warc import run


def _one_line(r: object, code: int, word: str) -> None:
    err = r.stderr  # type: ignore[attr-defined]
    assert r.returncode == code, (r.returncode, r.stdout, err)  # type: ignore[attr-defined]
    assert "Traceback" not in err and len(err.splitlines()) == 1 and word in err, err


@pytest.fixture(scope="module")
def good_wacz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("strangers")
    warc = corpus.warcio_warc(folder / "good.warc.gz")
    assert run("pack", warc, "--format", "wacz", "-o", folder / "good.wacz").returncode == 0
    return folder / "good.wacz"


def repackage(src: Path, dst: Path, change: dict[str, bytes | None], *, v100: bool = False) -> Path:
    """A copy of the WACZ ``src`` with entries changed (None: removed) and datapackage.json made to
    agree again (hashes, sizes, datapackage-digest.json); ``v100``: in the WACZ 1.0.0 layout (py-wacz
    0.2: each resource's ``stats`` and ``hashing``, the page in ``metadata``, no digest file)."""
    with zipfile.ZipFile(src) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
        package = json.loads(entries["datapackage.json"])
    for name, data in change.items():
        if data is None:
            entries.pop(name, None)
        else:
            entries[name] = data
    resources = []
    for name, data in sorted(entries.items()):
        if name.startswith("datapackage"):
            continue
        hexed = hashlib.sha256(data).hexdigest()
        if v100:
            resources.append(
                {"path": name, "stats": {"hash": hexed, "bytes": len(data)}, "hashing": "sha256"}
            )
        else:
            resources.append({"name": name.rsplit("/", 1)[-1], "path": name, "hash": f"sha256:{hexed}",
                              "bytes": len(data)})  # fmt: skip
    if v100:
        package = {"profile": "data-package", "resources": resources, "wacz_version": "1.0.0",
                   "metadata": {"title": "old", "mainPageURL": package["mainPageUrl"]}}  # fmt: skip
        entries.pop("datapackage-digest.json", None)
    else:
        package["resources"] = resources
    entries["datapackage.json"] = json.dumps(package).encode()
    if "datapackage-digest.json" in entries:
        sealed = hashlib.sha256(entries["datapackage.json"]).hexdigest()
        entries["datapackage-digest.json"] = json.dumps(
            {"path": "datapackage.json", "hash": f"sha256:{sealed}"}
        ).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in sorted(entries.items()):
            stored = name.startswith("archive/") or name.endswith(".gz")
            z.writestr(name, data, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
    return dst


# ---------------------------------------------------------------------------- a URI that is not UTF-8


def test_a_target_uri_that_is_not_utf8_is_one_line_and_exit_1_from_every_command(tmp_path: Path) -> None:
    good = corpus.good_records()
    bad = corpus.record("http://example.test/cafX", corpus.page(5)).replace(b"cafX", b"caf\xe9")
    warc = corpus.write(tmp_path / "latin1.warc.gz", [good[0], bad, good[1]], gz=True)
    verify = run("verify", warc)
    assert verify.returncode == 1 and "not UTF-8" in verify.stdout and "INVALID" in verify.stdout
    _one_line(run("ls", warc), 1, "not UTF-8")
    _one_line(run("capture", "--from-warc", warc, "-o", tmp_path / "site", "--no-render"), 1, "not UTF-8")
    _one_line(run("pack", warc, "--format", "zim", "-o", tmp_path / "x.zim", "--no-render"), 1, "not UTF-8")
    _one_line(run("pack", warc, "--format", "wacz", "-o", tmp_path / "x.wacz"), 1, "not UTF-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latin1.warc.gz"]  # nothing written


# ------------------------------------------------------------------------------- a bad CRC-32 in a WACZ


def _flip_crc(src: Path, dst: Path, name: str) -> Path:
    """``src`` with the CRC-32 of entry ``name`` changed in both of its headers (the data intact)."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        crc = struct.pack("<I", z.getinfo(name).CRC)
    assert data.count(crc) == 2
    dst.write_bytes(bytes(data).replace(crc, struct.pack("<I", struct.unpack("<I", crc)[0] ^ 1)))
    return dst


def _flip_byte(src: Path, dst: Path, name: str) -> Path:
    """``src`` with one byte of entry ``name``'s compressed data flipped."""
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as z:
        info = z.getinfo(name)
    n, e = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    data[info.header_offset + 30 + n + e + 5] ^= 0x01
    dst.write_bytes(bytes(data))
    return dst


def test_a_wacz_entry_with_a_bad_crc_is_one_line_and_exit_1_from_every_command(
    good_wacz: Path, tmp_path: Path
) -> None:
    wacz = _flip_crc(good_wacz, tmp_path / "crc.wacz", "archive/good.warc.gz")
    verify = run("verify", wacz)
    assert verify.returncode == 1 and "Bad CRC-32" in verify.stdout
    _one_line(run("ls", wacz), 1, "Bad CRC-32")
    _one_line(run("capture", "--from-warc", wacz, "-o", tmp_path / "site", "--no-render"), 1, "Bad CRC-32")
    _one_line(
        run("pack", wacz, "--format", "gwtar", "-o", tmp_path / "x.gwtar.html", "--no-render"), 1, "CRC"
    )
    for name in ("pages/pages.jsonl", "datapackage.json"):  # DEFLATE-d entries, a byte flipped
        damaged = _flip_byte(good_wacz, tmp_path / "flipped.wacz", name)
        assert run("verify", damaged).returncode == 1
        _one_line(run("capture", "--from-warc", damaged, "-o", tmp_path / "site", "--no-render"), 1, "zip")
        _one_line(run("pack", damaged, "--format", "zim", "-o", tmp_path / "x.zim", "--no-render"), 1, "zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crc.wacz", "flipped.wacz"]


# --------------------------------------------------------------------------- other writers' layouts


def test_a_cdxj_digest_without_its_label_matches_the_labelled_one(good_wacz: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(good_wacz) as z:
        lines = z.read("indexes/index.cdxj").decode().splitlines(keepends=True)
    bare = []
    for line in lines:
        key, ts, body = line.split(" ", 2)
        fields = json.loads(body)
        assert fields["digest"].startswith("sha1:")
        fields["digest"] = fields["digest"][5:]  # as pywb's indexer and CDX files write it
        bare.append(f"{key} {ts} {json.dumps(fields)}\n")
    wacz = repackage(good_wacz, tmp_path / "bare.wacz", {"indexes/index.cdxj": "".join(bare).encode()})
    r = run("verify", wacz)
    assert r.returncode == 0 and "digest '" not in r.stdout and "warning" not in r.stdout, r.stdout
    # and a digest that differs is still a problem, labelled or not
    wrong = [bare[0].replace(json.loads(bare[0].split(" ", 2)[2])["digest"], "A" * 32), *bare[1:]]
    wacz = repackage(good_wacz, tmp_path / "wrong.wacz", {"indexes/index.cdxj": "".join(wrong).encode()})
    r = run("verify", wacz)
    assert r.returncode == 1 and "digest '" in r.stdout, r.stdout


def test_digest_sameness() -> None:
    value = "sha1:" + "B" * 32
    assert digest.same(value, "B" * 32) and digest.same("b" * 32, value) and digest.same(value, value.lower())
    hexed = "sha1:" + bytes(20).hex()
    assert digest.same("sha1:" + "A" * 32, hexed)  # Base32 of 20 zero bytes is all A
    assert not digest.same(value, "C" * 32) and not digest.same(value, "sha256:" + "B" * 52)


def test_a_wacz_in_the_1_0_0_layout_is_read(good_wacz: Path, tmp_path: Path) -> None:
    wacz = repackage(good_wacz, tmp_path / "old.wacz", {}, v100=True)
    r = run("verify", wacz)
    assert r.returncode == 0 and "None" not in r.stdout, r.stdout
    assert "wacz_version '1.0.0'" in r.stdout  # a warning
    lying = repackage(good_wacz, tmp_path / "lying.wacz", {}, v100=True)
    with zipfile.ZipFile(lying) as z:
        package = json.loads(z.read("datapackage.json"))
    package["resources"][0]["stats"]["hash"] = "0" * 64
    bad = corpus.rewrite_zip(
        lying, tmp_path / "bad.wacz", change={"datapackage.json": json.dumps(package).encode()}
    )
    r = run("verify", bad)
    assert r.returncode == 1 and "does not match datapackage.json's '" + "0" * 64 in r.stdout, r.stdout
    out = tmp_path / "old.gwtar.html"
    r = run("pack", wacz, "--format", "gwtar", "-o", out, "--no-render")
    assert r.returncode == 0 and "main page p0/index.html" in r.stdout, r.stdout + r.stderr


def test_ls_of_a_wacz_without_a_warc_is_exit_1_as_verify(good_wacz: Path, tmp_path: Path) -> None:
    wacz = repackage(good_wacz, tmp_path / "empty.wacz", {"archive/good.warc.gz": None})
    assert run("verify", wacz).returncode == 1
    _one_line(run("ls", wacz), 1, "no WARC in archive/")


# ------------------------------------------------------------------------------------------------ ARC


def _arc(gz: bool) -> bytes:
    info = b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
    first = b"filedesc://crawl.arc 0.0.0.0 20260102030405 text/plain %d\n%s\n" % (len(info), info)
    body = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html><title>x</title></html>"
    rec = b"http://example.test/ 127.0.0.1 20260102030405 text/html %d\n%s\n" % (len(body), body)
    return gzip.compress(first, mtime=0) + gzip.compress(rec, mtime=0) if gz else first + rec


@pytest.mark.parametrize("name", ["crawl.arc", "crawl.arc.gz", "named-as.warc.gz", "crawl.dat"])
def test_an_arc_file_is_one_message_and_exit_2_from_every_command(tmp_path: Path, name: str) -> None:
    arc = tmp_path / name
    arc.write_bytes(_arc(gz=name.endswith(".gz")))
    out = tmp_path / "out"
    for argv in (
        ["verify", arc],
        ["verify", "--json", arc],
        ["ls", arc],
        ["extract", arc, "-o", out],
        ["pack", arc, "--format", "gwtar", "-o", out],
        ["pack", arc, "--format", "zim", "-o", out],
        ["pack", arc, "--format", "wacz", "-o", out],
        ["capture", "--from-warc", arc, "-o", out],
        ["serve", arc, "--port", "0"],
    ):
        r = run(*argv)
        assert (r.returncode, r.stderr) == (2, f"archiver: {arc}: {ARC_NOT_SUPPORTED}\n"), argv
        assert not out.exists()
    assert "arc2warc" in ARC_NOT_SUPPORTED and "warctools" in ARC_NOT_SUPPORTED
