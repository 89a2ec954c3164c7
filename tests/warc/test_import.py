"""Attacks on the WARC import (formats/warc.md §8) without a browser: ``capture --from-warc`` of WARCs
made at test time (warcio's writer, with every rule of §8 in them; wget of the fixture site), with
sockets and the live fetcher forbidden; hostile inputs give exit 1 or 2 and one line and write
nothing."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.warcwriter import WARCWriter

from archiver import urls
from archiver.fixture import FixtureServer
from archiver.tree import read_records
from tests.warc import corpus, import_corpus
from tests.warc.conftest import no_network
from tests.warc.import_corpus import BASE, BG, CSS, PNG
from tests.warc.test_warc import ROOT, run


@pytest.fixture
def offline() -> Iterator[list[object]]:
    """No socket may connect anywhere and the live fetcher may not even be built; every attempt is
    recorded (and fails)."""
    with no_network() as tried:
        yield tried


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return import_corpus.site_warcs(tmp_path_factory.mktemp("site"))


def _import(out: Path, *files: Path, extra: tuple[str, ...] = ()) -> tuple[int, dict, str]:
    r = run("capture", "--from-warc", *files, "-o", out, "--no-render", "--json", "--depth", "5", *extra)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else {}), r.stderr


def _by_url(out: Path) -> dict[str, Path]:
    return {u: out / rec.path for rec in read_records(out) for u in rec.urls}


def test_import_follows_every_rule(site: list[Path], tmp_path: Path, offline: list[object]) -> None:
    code, report, err = _import(tmp_path / "tree", *site)
    assert code == 0, err
    assert offline == []  # no socket, no live fetcher
    files = _by_url(tmp_path / "tree")
    text = {u: p.read_text("utf-8", "replace") for u, p in files.items() if p.suffix in (".html", "")}
    assert "A-NEW" in text[f"{BASE}/a.html"]  # the newest of three captures (one with ?utm_source)
    assert "B-ORIGINAL" in text[f"{BASE}/b.html"]  # revisit by Refers-To-Target-URI and -Date
    assert "C-BODY" in text[f"{BASE}/c.html"]  # revisit by payload digest, original at another URL
    assert "D-OLDER-BUT-THERE" in text[f"{BASE}/d.html"]  # a revisit of nothing: the older capture
    assert "CHUNKED-BODY-IN-PIECES" in text[f"{BASE}/chunked.html"]  # de-chunked (WARC/1.0 file)
    assert "OLD-FORMAT" in text[f"{BASE}/old.html"]
    assert "café LATIN" in text[f"{BASE}/latin.html"]  # ISO-8859-1 recorded, UTF-8 in the tree
    for name in ("img.png", "deflate.png", "raw-deflate.png", "br.png"):
        assert files[f"{BASE}/{name}"].read_bytes() == PNG, name
    assert files[f"{BASE}/bg.png"].read_bytes() == BG  # a resource record, found through the CSS
    css = files[f"{BASE}/style.css"].read_bytes()  # gzip undone, then rewritten
    assert css.startswith(CSS.split(b"(")[0]) and b"bg.png" in css
    home = (tmp_path / "tree" / "index.html").read_text()
    relative = ['href="a.html"', 'href="redir/index.html"', 'src="_archiver/site.test/br.png"']
    for ref in relative:
        assert ref in home, ref
    # what the archive lacks or refused stays a live link, as in a live capture
    assert 'href="http://site.test/missing.html"' in home and 'src="http://site.test/z.png"' in home
    items = {i["url"]: i for i in report["items"]}
    assert items[f"{BASE}/redir"]["outcome"] == "redirected"
    assert items[f"{BASE}/gone.html"]["outcome"] == "failed"
    assert items[f"{BASE}/gone.html"]["reason"] == "HTTP 404 (as recorded)"
    assert items[f"{BASE}/forbidden.html"]["outcome"] == "unconfirmed"
    assert (items[f"{BASE}/missing.html"]["outcome"], items[f"{BASE}/missing.html"]["reason"]) == (
        "failed",
        "not in the archive",
    )
    assert items[f"{BASE}/private/x.html"]["outcome"] == "skipped"  # the archive's robots.txt
    assert "not supported" in items[f"{BASE}/z.png"]["reason"]
    assert report["complete"]
    r = run("verify", tmp_path / "tree")
    assert r.returncode == 0, r.stdout


def test_ignore_robots_and_given_seeds(site: list[Path], tmp_path: Path, offline: list[object]) -> None:
    code, report, err = _import(tmp_path / "t", *site, extra=("--ignore-robots", f"{BASE}/private/x.html"))
    assert code == 0, err
    assert report["home"] == f"{BASE}/private/x.html"
    assert "PRIVATE" in (tmp_path / "t" / "private" / "x.html").read_text()


def test_a_seed_not_in_the_archive_is_exit_4(site: list[Path], tmp_path: Path, offline: list[object]) -> None:
    code, _report, err = _import(tmp_path / "t", *site, extra=(f"{BASE}/nowhere.html",))
    assert code == 4 and err.count("\n") == 1 and "not in the archive" in err, err
    assert offline == []


def test_wacz_round_trip_gives_the_same_tree(site: list[Path], tmp_path: Path, offline: list[object]) -> None:
    """WARC → WACZ (our export) → import: seeds from pages.jsonl, the same files as from the WARCs."""
    wacz = tmp_path / "site.wacz"
    assert run("pack", *site, "--format", "wacz", "-o", wacz).returncode == 0
    with zipfile.ZipFile(wacz) as z:
        pages = [json.loads(x)["url"] for x in z.read("pages/pages.jsonl").splitlines()[1:]]
    assert pages[0] == BASE + "/" and f"{BASE}/c-original.html" in pages  # linked from nowhere
    code, _r, err = _import(tmp_path / "from-warc", *site, extra=tuple(pages))
    assert code == 0, err
    code, _r, err = _import(tmp_path / "from-wacz", wacz)
    assert code == 0, err

    def tree(root: Path) -> dict[str, str]:
        return {r.path: r.sha256 for r in read_records(root)}

    assert tree(tmp_path / "from-wacz") == tree(tmp_path / "from-warc")


def test_srcset_candidates_the_archive_lacks_are_left_out(tmp_path: Path, offline: list[object]) -> None:
    """A browser records only the srcset candidate it picked (pywb's proxy driven by Chromium): a
    candidate the archive lacks is left out of its attribute when another one is stored, so no
    viewport or pixel density picks a missing one, and a ZIM keeps the srcset (formats/warc.md §8.4);
    a srcset none of whose candidates is stored keeps its absolute URLs, as any missing reference."""
    body = (
        '<img src="/one.png" srcset="/one.png 1x, /two.png 2x">'
        '<img src="/w1.png" srcset="/w1.png 300w, /w2.png 600w, /w3.png 1200w" sizes="600px">'
        '<picture><source srcset="/p.avif" type="image/avif"><img src="/one.png"></picture>'
    )
    warc = tmp_path / "browser.warc.gz"
    with warc.open("wb") as f:
        w = WARCWriter(f, gzip=True)
        import_corpus._response(w, "", import_corpus.html("Home", body))
        for name in ("one.png", "w2.png"):
            import_corpus._response(w, name, PNG, media="image/png")
    code, _report, err = _import(tmp_path / "tree", warc)
    assert code == 0, err
    assert offline == []
    home = (tmp_path / "tree" / "index.html").read_text()
    assert 'srcset="_archiver/site.test/one.png 1x"' in home
    assert 'src="http://site.test/w1.png" srcset="_archiver/site.test/w2.png 600w"' in home
    assert 'srcset="http://site.test/p.avif"' in home
    r = run("pack", tmp_path / "tree", "--format", "zim", "-o", tmp_path / "home.zim")
    assert r.returncode == 0, r.stderr
    r = run("verify", tmp_path / "home.zim")
    assert r.returncode == 0, r.stdout


def test_wget_warc_of_the_fixture_site(tmp_path: Path, offline: list[object]) -> None:
    """wget's WARC/1.0 (<> around URIs, request before response, raw bytes), imported with the server
    stopped: every page wget saw is in the tree, its links are relative."""
    site_pages = _wget_warc(tmp_path)
    code, _report, err = _import(tmp_path / "tree", tmp_path / "site.warc.gz", extra=("--depth", "10"))
    assert code == 0, err
    assert offline == []
    stored = {r.path for r in read_records(tmp_path / "tree")}
    assert site_pages <= stored, sorted(site_pages - stored)
    home = (tmp_path / "tree" / "index.html").read_text()
    assert 'href="docs/index.html"' in home and "http://127.0.0.1" not in home.split("<body", 1)[1]


def _wget_warc(folder: Path) -> set[str]:
    """``folder/site.warc.gz`` by wget (mirror, page requisites) of the fixture site; the tree paths
    of the pages it holds."""
    with FixtureServer() as server:
        port = server.port
        subprocess.run(
            [
                "wget",
                "-q",
                "-r",
                "-l",
                "inf",
                "-p",
                "--warc-file=site",
                "-P",
                "dl",
                "-e",
                "robots=off",
                server.url,
            ],
            cwd=folder,
            timeout=120,
            check=False,
        )
    got = {
        p.relative_to(folder / "dl" / f"127.0.0.1:{port}").as_posix() for p in (folder / "dl").rglob("*.html")
    }
    return {g for g in got if "private/" not in g and "?" not in g}


# ---- hostile inputs: one line, exit 1 or 2, nothing written


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    return corpus.hostile_warcs(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize(
    "name",
    [
        "truncated",
        "truncated_gz",
        "lying_length",
        "long_length",
        "huge_header",
        "bad_block_digest",
        "bad_payload_digest",
        "length_not_number",
        "gzip_garbage",
    ],
)
def test_hostile_warc_is_refused_in_one_line(hostile: dict, tmp_path: Path, name: str) -> None:
    path, word = hostile[name]
    for args in (
        ("capture", "--from-warc", path, "-o", tmp_path / "out", "--no-render"),
        ("pack", path, "--format", "gwtar", "-o", tmp_path / "x.gwtar.html", "--no-render"),
    ):
        r = run(*args, process=True)
        assert r.returncode == 1, r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
        assert "cannot import a damaged WARC" in r.stderr and word in r.stderr, r.stderr
        assert list(tmp_path.iterdir()) == [], list(tmp_path.iterdir())


def test_wacz_escaping_with_dotdot_is_refused(site: list[Path], tmp_path: Path) -> None:
    wacz = tmp_path / "good.wacz"
    assert run("pack", *site, "--format", "wacz", "-o", wacz).returncode == 0
    evil = corpus.rewrite_zip(
        wacz, tmp_path / "evil.wacz", add={"archive/../../escape.warc": b"WARC/1.1\r\n"}
    )
    r = run("capture", "--from-warc", evil, "-o", tmp_path / "out", "--no-render", process=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "unsafe zip entry" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "escape.warc").exists()
    not_zip = tmp_path / "junk.wacz"
    not_zip.write_bytes(b"PK\x03\x04 junk")
    r = run("capture", "--from-warc", not_zip, "-o", tmp_path / "out", "--no-render", process=True)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    r = run("capture", "--from-warc", tmp_path / "nope.warc.gz", "-o", tmp_path / "out", process=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr, r.stderr


def test_whole_file_gzip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(gzip_all(b"".join(corpus.good_records())))
    r = run("capture", "--from-warc", path, "-o", tmp_path / "out", "--no-render", process=True)
    assert r.returncode == 1 and "recompress" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def gzip_all(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def test_index_stays_on_disk_and_leaves_nothing(site: list[Path], tmp_path: Path) -> None:
    code, _r, err = _import(tmp_path / "tree", *site)
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"]  # the index folder is gone
    assert not (tmp_path / "tree" / "_archiver" / "tmp").exists()


def test_wacz_pages_are_the_seeds(site: list[Path], tmp_path: Path) -> None:
    wacz = tmp_path / "x.wacz"
    assert run("pack", *site, "--format", "wacz", "-o", wacz).returncode == 0
    with zipfile.ZipFile(wacz) as z:
        pages = [json.loads(x)["url"] for x in z.read("pages/pages.jsonl").splitlines()[1:]]
    code, report, err = _import(tmp_path / "t", wacz, extra=("--depth", "0"))
    assert code == 0, err
    stored = {
        i["url"] for i in report["items"] if i["kind"] == "page" and i["outcome"] in ("ok", "redirected")
    }
    wanted = {urls.dedup_key(urls.canonicalize(p)) for p in pages if "private" not in p}
    assert stored >= wanted and len(wanted) == 8


def _big_warc(path: Path, size: int) -> Path:
    """A page linking one ``size``-byte asset, in a plain WARC (no digests: they are optional)."""
    http = b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n"
    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + b'<!doctype html><img src="/big.png">'

    def head(uri: str, length: int) -> bytes:
        return (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0-{len(uri)}>\r\n"
            f"WARC-Date: {corpus.DATE}\r\nWARC-Target-URI: {uri}\r\n"
            f"Content-Type: application/http;msgtype=response\r\nContent-Length: {length}\r\n\r\n"
        ).encode()

    chunk = bytes(range(256)) * 4096
    with path.open("wb") as f:
        f.write(head("http://big.test/", len(page)) + page + b"\r\n\r\n")
        f.write(head("http://big.test/big.png", len(http) + size) + http)
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(b"\r\n\r\n")
    return path


def test_import_memory_stays_flat_on_a_large_record(tmp_path: Path) -> None:
    """A 128 MiB asset goes from its record to the tree through a spool file, never whole in memory."""
    warc = _big_warc(tmp_path / "big.warc", 128 << 20)
    code = (
        "import sys; from pathlib import Path; from archiver.cli import main\n"
        "rc = main(['capture', '--from-warc', sys.argv[1], '-o', sys.argv[2], '--no-render',"
        " '--asset-cap', str(200 << 20), '--json'])\n"
        "assert rc == 0, rc\n"
        "print(Path('/proc/self/status').read_text().split('VmHWM:')[1].split()[0], file=sys.stderr)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code, warc, tmp_path / "tree"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    peak = int(out.stderr.strip().splitlines()[-1])
    print(f"import of a 128 MiB record: peak RSS {peak} KiB")
    assert peak < 120 * 1024
    sizes = {r.size for r in read_records(tmp_path / "tree") if "http://big.test/big.png" in r.urls}
    assert 128 << 20 in sizes


def test_sigterm_during_pack_of_a_warc_leaves_nothing(tmp_path: Path) -> None:
    """pack of a WARC killed (SIGTERM) while it imports: exit 130, nothing left beside the output."""
    warc = _big_warc(tmp_path / "big.warc", 256 << 20)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "archiver",
        "pack",
        warc,
        "--format",
        "zim",
        "-o",
        out_dir / "x.zim",
        "--no-render",
    ]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    for _ in range(6000):  # bounded wait (60 s) for the private folder to appear
        if any(out_dir.iterdir()) or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "archiver: interrupted"
    assert list(out_dir.iterdir()) == []


def test_a_compressed_bomb_is_skipped_at_the_size_cap(tmp_path: Path, offline: list[object]) -> None:
    """256 MiB of zeros in a 256 KiB gzip body: decoded in steps, dropped once past --asset-cap."""
    bomb = gzip.compress(bytes(256 << 20), compresslevel=1, mtime=0)
    page = b'<!doctype html><img src="/bomb.png">'
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "bomb.warc.gz"
    with path.open("wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        for uri, body, fields in (
            ("http://bomb.test/", page, [("Content-Type", "text/html")]),
            (
                "http://bomb.test/bomb.png",
                bomb,
                [("Content-Type", "image/png"), ("Content-Encoding", "gzip")],
            ),
        ):
            h = StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1")
            w.write_record(w.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=h))
    code, report, err = _import(tmp_path / "t", path, extra=("--asset-cap", str(1 << 20)))
    assert code == 0, err
    items = {i["url"]: i for i in report["items"]}
    assert items["http://bomb.test/bomb.png"]["outcome"] == "skipped"
    assert "size cap" in items["http://bomb.test/bomb.png"]["reason"]


def test_a_wacz_with_deflated_warcs_still_imports(
    site: list[Path], tmp_path: Path, offline: list[object]
) -> None:
    wacz = tmp_path / "good.wacz"
    assert run("pack", *site, "--format", "wacz", "-o", wacz).returncode == 0
    deflated = corpus.rewrite_zip(wacz, tmp_path / "deflated.wacz", deflate_archive=True)
    with zipfile.ZipFile(deflated) as z:
        assert all(
            i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist() if i.filename.startswith("archive/")
        )
    code, _a, err = _import(tmp_path / "a", wacz)
    assert code == 0, err
    code, _b, err = _import(tmp_path / "b", deflated)
    assert code == 0, err
    assert {r.path: r.sha256 for r in read_records(tmp_path / "a")} == {
        r.path: r.sha256 for r in read_records(tmp_path / "b")
    }
