"""Attacks on archiver/warc/: verify and ls of good WARCs (warcio's, wget's), of hostile WARCs and
WACZs (each gives exit 1 or 2 and one line naming the fault, never a traceback), and the WACZ export
(``wacz validate`` passes, same input → same bytes, nothing left behind on failure)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from archiver.fixture import FixtureServer
from tests.warc import corpus

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*args: str | Path, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``archiver ARGS``: in this process through ``archiver.cli.main`` (fast), or with ``process`` as
    its own process (the exact bytes on stdout, signals)."""
    if process:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-m", "archiver", *map(str, args)], capture_output=True,
                              text=True, env=env, timeout=120)  # fmt: skip
    from archiver.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse
            code = int(e.code or 0)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def problem_lines(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [
        line for line in r.stdout.splitlines() if not line.rsplit(": ", 1)[-1].startswith(("OK", "INVALID"))
    ]


@pytest.fixture(scope="module")
def warcs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warcs")
    corpus.warcio_warc(folder / "a.warc.gz")
    corpus.warcio_warc(folder / "b.warc", gz=False, base="http://other.test")
    return folder


def test_warcio_warcs_verify_and_list_with_warcio_offsets(warcs: Path) -> None:
    r = run("verify", warcs / "a.warc.gz", warcs / "b.warc")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{warcs / 'a.warc.gz'}: OK (warc, 5 records)" in r.stdout
    ls = run("ls", "--json", warcs / "a.warc.gz")
    rows = [json.loads(line) for line in ls.stdout.splitlines()]
    assert [(x["type"], x["url"], x["status"], x["mime"]) for x in rows] == [
        *(("response", f"http://example.test/p{i}", 200, "text/html") for i in range(3)),
        ("resource", "http://example.test/shot.png", None, "image/png"),
    ]
    oracle = subprocess.run([BIN / "warcio", "index", "-f", "offset,warc-type", warcs / "a.warc.gz"],
                            capture_output=True, text=True, check=True)  # fmt: skip
    theirs = [(int(d["offset"]), d["warc-type"]) for d in map(json.loads, oracle.stdout.splitlines())]
    assert [(x["offset"], x["type"]) for x in rows] == [t for t in theirs if t[1] != "warcinfo"]


def test_wget_warc_verifies_and_exports_a_valid_wacz(tmp_path: Path) -> None:
    """A WARC made by another tool (GNU wget, WARC/1.0, <> around URIs, request before response)."""
    with FixtureServer() as server:
        home = server.url
        subprocess.run(["wget", "-q", "-p", "--warc-file=site", "-P", "dl", "-e", "robots=off", server.url],
                       cwd=tmp_path, timeout=60, check=False)  # fmt: skip
    warc = tmp_path / "site.warc.gz"
    r = run("verify", warc)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    wacz = tmp_path / "site.wacz"
    r = run("pack", warc, "--format", "wacz", "-o", wacz)
    assert r.returncode == 0, r.stderr
    check = subprocess.run([BIN / "wacz", "validate", "-f", wacz], capture_output=True, text=True)
    assert check.returncode == 0 and "valid" in check.stdout, check.stdout + check.stderr
    with zipfile.ZipFile(wacz) as z:
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()]
    assert pages[0]["format"] == "json-pages-1.0"
    assert pages[1]["url"] == home and pages[1]["title"]
    assert run("verify", wacz).returncode == 0
    oracle = subprocess.run([BIN / "cdxj-indexer", warc], capture_output=True, text=True, check=True)
    with zipfile.ZipFile(wacz) as z:
        ours = z.read("indexes/index.cdxj").decode()
    assert _index(ours) == {k: v for k, v in _index(oracle.stdout).items() if k[2].startswith("http")}


def _index(text: str) -> dict[tuple[str, str, str, str], tuple[str, ...]]:
    out = {}
    for line in text.splitlines():
        key, ts, body = line.split(" ", 2)
        d = json.loads(body)
        out[(key, ts, d["url"], d["offset"])] = (
            d["length"],
            d["digest"],
            d["mime"],
            d.get("status"),
            d["filename"],
        )
    return out


def test_pack_wacz_is_valid_reproducible_and_its_index_points_at_records(warcs: Path, tmp_path: Path) -> None:
    one, two = tmp_path / "one.wacz", tmp_path / "two.wacz"
    for out in (one, two):
        r = run("pack", warcs / "a.warc.gz", warcs / "b.warc", "--format", "wacz", "-o", out)
        assert r.returncode == 0, r.stderr
    assert one.read_bytes() == two.read_bytes()
    check = subprocess.run([BIN / "wacz", "validate", "-f", one], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    with zipfile.ZipFile(one) as z:
        infos = {i.filename: i for i in z.infolist()}
        assert sorted(infos) == list(infos)
        assert infos["archive/a.warc.gz"].compress_type == zipfile.ZIP_STORED
        assert {i.date_time for i in infos.values()} == {(1980, 1, 1, 0, 0, 0)}
        lines = z.read("indexes/index.cdxj").decode().splitlines(keepends=True)
        package = json.loads(z.read("datapackage.json"))
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()][1:]
    assert lines == sorted(lines, key=str.encode) and len(lines) == 8
    assert package["created"] == corpus.DATE and package["wacz_version"] == "1.1.1"
    assert {p["title"] for p in pages} == {f"Page {i} & more" for i in range(3)}
    assert len(pages) == 6
    r = run("verify", "--json", one)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["ok"] and doc["files"][0]["index_lines"] == 8


def test_big_index_is_written_compressed_and_checked(tmp_path: Path) -> None:
    warc = corpus.warcio_warc(tmp_path / "many.warc.gz", pages=400)
    out = tmp_path / "many.wacz"
    assert run("pack", warc, "--format", "wacz", "-o", out).returncode == 0
    with zipfile.ZipFile(out) as z:
        names = set(z.namelist())
        assert z.getinfo("indexes/index.cdx.gz").compress_type == zipfile.ZIP_STORED
    assert {"indexes/index.idx", "indexes/index.cdx.gz"} <= names and "indexes/index.cdxj" not in names
    assert subprocess.run([BIN / "wacz", "validate", "-f", out], capture_output=True).returncode == 0
    r = run("verify", out)
    assert r.returncode == 0 and "401 index lines" in r.stdout, r.stdout


HOSTILE = ["truncated", "truncated_gz", "lying_length", "long_length", "huge_header", "bad_block_digest",
           "bad_payload_digest", "length_not_number", "gzip_garbage"]  # fmt: skip


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    return corpus.hostile_warcs(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_warc_is_one_line_with_an_offset_and_exit_1(
    name: str, hostile: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    path, word = hostile[name]
    r = run("verify", path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    lines = problem_lines(r)
    assert len(lines) == 1 and word in lines[0] and ": offset " in lines[0], r.stdout
    assert r.stdout.splitlines()[-1].endswith(")") and "INVALID" in r.stdout.splitlines()[-1]
    if name in ("gzip_garbage", "bad_block_digest"):  # the good record before the damage counts
        assert r.stdout.splitlines()[-1].endswith(f"(warc, {2 if 'digest' in name else 1} records)")
    ls = run("ls", path)
    if name not in ("bad_block_digest", "bad_payload_digest"):
        assert ls.returncode == 1 and len(ls.stderr.splitlines()) == 1 and word in ls.stderr, ls.stderr
    out = tmp_path / "x.wacz"
    p = run("pack", path, "--format", "wacz", "-o", out)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr
    assert list(tmp_path.iterdir()) == []  # no output, no temporary file


@pytest.fixture(scope="module")
def good_wacz(warcs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wacz") / "good.wacz"
    assert run("pack", warcs / "a.warc.gz", "--format", "wacz", "-o", out).returncode == 0
    return out


def test_wacz_entry_escaping_with_dotdot_is_refused(good_wacz: Path, tmp_path: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate it is asked to write
        add = {"../evil": b"x", "/abs": b"y", "pages/pages.jsonl": b"{}"}
        evil = corpus.rewrite_zip(good_wacz, tmp_path / "evil.wacz", add=add)
    r = run("verify", evil)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert [x for x in problem_lines(r)] == [
        f"{evil}: unsafe zip entry name '../evil' (hostile)",
        f"{evil}: unsafe zip entry name '/abs' (hostile)",
        f"{evil}: zip entry 'pages/pages.jsonl' appears twice (hostile)",
    ]
    ls = run("ls", evil)
    assert ls.returncode == 1 and ls.stdout == "" and ls.stderr.count("\n") == 1 and "unsafe" in ls.stderr


@pytest.mark.parametrize(
    ("how", "word"),
    [("datapackage", "does not match datapackage.json"), ("offset", "no record at offset"),
     ("deflate", "DEFLATE"), ("bomb", "longer than")],
)  # fmt: skip
def test_lying_wacz_gives_one_line_and_exit_1(good_wacz: Path, tmp_path: Path, how: str, word: str) -> None:
    bad = tmp_path / "bad.wacz"
    if how == "datapackage":
        corpus.lying_datapackage(good_wacz, bad)
    elif how == "offset":
        corpus.wrong_offset_index(good_wacz, bad)
    elif how == "deflate":
        corpus.rewrite_zip(good_wacz, bad, deflate_archive=True)
    elif how == "bomb":  # one endless line, 64 MiB inflated from ~64 KiB
        endless = b'{"format": "json-pages-1.0"}\n' + b"a" * (64 << 20)
        corpus.rewrite_zip(good_wacz, bad, change={"pages/pages.jsonl": endless})
    else:
        raise AssertionError(how)
    r = run("verify", bad)
    lines = [x for x in problem_lines(r) if word in x]
    assert r.returncode == 1 and len(lines) == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr


def test_verify_json_merges_warc_reports_with_other_formats(warcs: Path, hostile: dict) -> None:
    r = run("verify", "--json", warcs / "a.warc.gz", hostile["bad_block_digest"][0])
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["ok"] is False
    assert [f["ok"] for f in doc["files"]] == [True, False]
    assert "block digest" in doc["files"][1]["problems"][0]


def test_strict_counts_warnings(tmp_path: Path) -> None:
    rec = corpus.record("<http://example.test/a>", b"hi")
    path = corpus.write(tmp_path / "w.warc", [rec], gz=False)
    assert run("verify", path).returncode == 0
    r = run("verify", "--strict", path)
    assert r.returncode == 1 and "WARC 1.0 style" in r.stdout


def test_missing_warc_is_exit_2(tmp_path: Path) -> None:
    r = run("verify", tmp_path / "none.warc.gz")
    assert r.returncode == 2 and r.stderr.strip() == f"archiver: {tmp_path / 'none.warc.gz'}: no such file"


def test_verify_memory_stays_flat_on_a_large_record(tmp_path: Path) -> None:
    """A 128 MiB block is hashed as it streams: the verifier's peak RSS stays far below the record."""
    path = tmp_path / "big.warc"
    size = 128 << 20
    import hashlib

    sha = hashlib.sha1()
    http = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"
    chunk = bytes(range(256)) * 4096
    sha.update(http)
    for _ in range(size // len(chunk)):
        sha.update(chunk)
    import base64

    head = ("WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:0000-1>\r\n"
            f"WARC-Date: {corpus.DATE}\r\nWARC-Target-URI: http://example.test/big\r\n"
            "Content-Type: application/http;msgtype=response\r\n"
            f"WARC-Block-Digest: sha1:{base64.b32encode(sha.digest()).decode()}\r\n"
            f"Content-Length: {len(http) + size}\r\n\r\n")  # fmt: skip
    with path.open("wb") as f:
        f.write(head.encode() + http)
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(b"\r\n\r\n")
    code = (
        "import sys; from pathlib import Path; from archiver.warc.verify import verify\n"
        "r = verify(Path(sys.argv[1])); assert r.ok, r.problems\n"
        "print(Path('/proc/self/status').read_text().split('VmHWM:')[1].split()[0])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) < 100 * 1024  # KiB, this process's own peak (ru_maxrss outlives exec)


SURT_CASES = [
    "https://www.Example.com:8080/a?b=2&a=1#f", "http://example.test", "http://www2.ex.org:80/x",
    "http://127.0.0.1:44377/blog/", "http://a.test/x//", "http://a.test/A/B?Z=1&a=2", "https://ex.org:443/",
    "http://ex.org/p;jsessionid=1234?x=1", "http://user:pw@ex.org/a", "http://ex.org/a%20b", "http://ex.org/?",
    "http://EX.org./a", "http://ex.org/a?b&a=", "http://ex.org/a?a-b=1&a=1", "http://xn--bcher-kva.test/é",
    "http://e.org/a/./b", "http://e.org/a/../b", "http://e.org/../b", "http://e.org/a//b",
    "http://e.org/we%5C(ird%5C).png", "http://e.org/a%2Fb", "http://e.org/%7Euser", "http://e.org/a b",
    "http://e.org/?q=%41", "http://e.org/?q=a+b", "http://e.org/%2525", "http://e.org/a?q=%26x",
    "http://e.org/a#?x", "http://e.org/a?x=%5C", 'http://e.org/"<>', "http://e.org/a%3Fb", "http://e.org/a?%20=1",
    "http://e.org/%ff%fe", "http://e.org/a?b=%e9",
]  # fmt: skip


@pytest.mark.parametrize("url", SURT_CASES)
def test_surt_agrees_with_the_surt_package(url: str) -> None:
    """Our keys are the ones cdxj-indexer and pywb compute (the ``surt`` package is their oracle)."""
    import surt

    from archiver.warc import cdxj

    assert cdxj.surt(url) == surt.surt(url)


def test_surt_of_other_schemes_is_none() -> None:
    from archiver.warc import cdxj

    assert cdxj.surt("metadata://gnu.org/x") is None and cdxj.surt("http://[::1]:99999/") is None


def test_digest_forms() -> None:
    import hashlib

    from archiver.warc import digest

    raw = hashlib.sha1(b"x").digest()
    for text in ("sha1:" + __import__("base64").b32encode(raw).decode(), "SHA-1:" + raw.hex().upper()):
        d = digest.parse(text)
        assert isinstance(d, digest.Declared) and d.matches(raw)
    assert str(digest.parse("crc32:1234")).startswith("unknown")
    assert "malformed" in str(digest.parse("sha256:abc"))


def test_sigterm_during_pack_leaves_nothing(tmp_path: Path) -> None:
    """pack is killed (SIGTERM) while it writes: exit 130, no output, no temporary file."""
    import signal
    import time

    src = tmp_path / "src"
    src.mkdir()
    body = b"\0" * (160 << 20)
    http = b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n"
    head = (
        "WARC/1.1\r\nWARC-Type: resource\r\nWARC-Record-ID: <urn:uuid:0-1>\r\n"
        f"WARC-Date: {corpus.DATE}\r\nWARC-Target-URI: http://example.test/z\r\n"
        f"Content-Length: {len(http) + len(body)}\r\n\r\n"
    )
    (src / "big.warc").write_bytes(head.encode() + http + body + b"\r\n\r\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "archiver",
        "pack",
        src / "big.warc",
        "--format",
        "wacz",
        "-o",
        out_dir / "x.wacz",
    ]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    for _ in range(6000):  # bounded wait (60 s) for the temporary file to appear
        if any(out_dir.iterdir()) or proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "archiver: interrupted"
    assert list(out_dir.iterdir()) == []


def test_pack_takes_a_capture_folder_warcs(tmp_path: Path) -> None:
    """A tree folder stands for its _archiver/warc/*.warc.gz (where capture --warc writes)."""
    tree = tmp_path / "tree"
    (tree / "_archiver" / "warc").mkdir(parents=True)
    corpus.warcio_warc(tree / "_archiver" / "warc" / "c-0001.warc.gz")
    out = tmp_path / "t.wacz"
    r = run("pack", tree, "--format", "wacz", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["warcs"] == 1 and json.loads(r.stdout)["pages"] == 3
    with zipfile.ZipFile(out) as z:
        assert "archive/c-0001.warc.gz" in z.namelist()
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run("pack", empty, "--format", "wacz", "-o", out)
    assert (
        r.returncode == 2
        and r.stderr.strip() == f"archiver: {empty}: no _archiver/warc/*.warc.gz in this folder"
    )


@pytest.mark.timeout(60)
def test_a_folders_warcs_are_its_own_regular_files(tmp_path: Path) -> None:
    """The attacks on ``pack FOLDER --format wacz``, a tree from elsewhere: a link in its
    _archiver/warc to a WARC outside it (someone's private capture) was packed into the WACZ, and a
    FIFO there held the pack for good. Both are refused, one line, exit 2, nothing written; a WARC the
    user names through a link is still packed."""
    private = tmp_path / "private.warc.gz"
    corpus.warcio_warc(private)
    tree = tmp_path / "tree"
    (tree / "_archiver" / "warc").mkdir(parents=True)
    found = tree / "_archiver" / "warc" / "c-0001.warc.gz"
    found.symlink_to(private)
    out = tmp_path / "out"
    out.mkdir()
    for _ in ("link", "fifo"):
        r = run("pack", tree, "--format", "wacz", "-o", out / "t.wacz")
        assert r.returncode == 2 and r.stderr.strip() == (
            f"archiver: {found}: is not a regular file (a link or a special file is not packed)"
        )
        assert list(out.iterdir()) == []
        found.unlink()
        os.mkfifo(found)
    named = tmp_path / "named.warc.gz"
    named.symlink_to(private)
    assert run("pack", named, "--format", "wacz", "-o", out / "n.wacz").returncode == 0


def test_ls_escapes_control_characters_in_urls(tmp_path: Path) -> None:
    path = corpus.write(
        tmp_path / "esc.warc", [corpus.record("http://example.test/a\x1b[31mred", b"x")], gz=False
    )
    r = run("ls", path)
    assert r.returncode == 0 and "\x1b" not in r.stdout and "/a\\x1b[31mred" in r.stdout
    row = json.loads(run("ls", "--json", path).stdout)
    assert row["url"] == "http://example.test/a\x1b[31mred"


def test_verify_recursive_finds_warcs_and_waczs(warcs: Path, good_wacz: Path, tmp_path: Path) -> None:
    shutil.copy(warcs / "a.warc.gz", tmp_path / "a.warc.gz")
    (tmp_path / "sub").mkdir()
    shutil.copy(good_wacz, tmp_path / "sub" / "g.wacz")
    r = run("verify", "-r", tmp_path)
    assert r.returncode == 0 and r.stdout.count(": OK (") == 2, r.stdout + r.stderr
    corpus.write(
        tmp_path / "sub" / "bad.warc", [corpus.record("http://example.test/", b"x", length=3)], gz=False
    )
    r = run("verify", "-r", tmp_path)
    assert r.returncode == 1 and len(problem_lines(r)) == 1 and "lies" in r.stdout, r.stdout


def test_verify_accepts_a_wacz_made_by_py_wacz(warcs: Path, tmp_path: Path) -> None:
    """A WACZ by another tool (``wacz create``: compressed index with block digests) is valid."""
    out = tmp_path / "theirs.wacz"
    subprocess.run([BIN / "wacz", "create", "-o", out, warcs / "a.warc.gz"], capture_output=True, check=True)
    r = run("verify", out)
    assert r.returncode == 0 and ": OK, 1 warning(s)" in r.stdout, r.stdout + r.stderr
    assert "warning: no pages/pages.jsonl" in r.stdout  # py-wacz writes none without --detect-pages
    assert run("verify", "--strict", out).returncode == 1


def test_revisit_is_indexed_and_its_payload_digest_not_checked(tmp_path: Path) -> None:
    from warcio.warcwriter import WARCWriter

    path = corpus.warcio_warc(tmp_path / "r.warc.gz", pages=1)
    with path.open("ab") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        w.write_record(w.create_revisit_record("http://example.test/p0", "sha1:" + "B" * 32,
                                               "http://example.test/p0", corpus.DATE))  # fmt: skip
    assert run("verify", path).returncode == 0
    out = tmp_path / "r.wacz"
    assert run("pack", path, "--format", "wacz", "-o", out).returncode == 0
    with zipfile.ZipFile(out) as z:
        mimes = [
            json.loads(x.split(" ", 2)[2])["mime"] for x in z.read("indexes/index.cdxj").decode().splitlines()
        ]
    assert mimes.count("warc/revisit") == 1
    assert run("verify", out).returncode == 0


def test_bytes_that_are_not_utf8_in_headers_never_break_the_output(tmp_path: Path) -> None:
    rec = corpus.record("http://example.test/\xff", b"x", block_digest="sha1:" + "A" * 32)
    rec = rec.replace("\xff".encode(), b"\xfe", 1)  # a URI with a byte that is not UTF-8
    rec = rec.replace(b"WARC-Date: ", b"WARC-Date: \xff\x1b", 1).replace(b"<urn:uuid:", b"<urn:\xfe\x1b:", 1)
    path = corpus.write(tmp_path / "bytes.warc", [rec], gz=False)
    for argv in (["verify"], ["verify", "--json"], ["ls"], ["ls", "--json"]):
        r = run(*argv, path, process=True)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr, (argv, r.stderr)
        assert "\x1b" not in r.stdout
    assert "is not a UTC date" in run("verify", path).stdout and "block digest" in run("verify", path).stdout
    assert json.loads(run("verify", "--json", path).stdout)["ok"] is False


def test_page_titles_are_read_through_chunking_and_gzip(tmp_path: Path) -> None:
    import gzip as gz

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    html = "<html><head><title>Zipped &eacute;t&eacute; \u2603</title></head><body>z</body></html>".encode()
    packed = gz.compress(html, mtime=0)
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(packed[i : i + 40]), packed[i : i + 40]) for i in range(0, len(packed), 40)
    )
    chunked += b"0\r\n\r\n"
    path = tmp_path / "z.warc.gz"
    with path.open("wb") as f:
        w = WARCWriter(f, gzip=True, warc_version="1.1")
        headers = [("Content-Type", "text/html; charset=utf-8"), ("Content-Encoding", "gzip"),
                   ("Transfer-Encoding", "chunked")]  # fmt: skip
        h = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
        dated = {"WARC-Date": corpus.DATE}
        rec = w.create_warc_record("http://example.test/z", "response", payload=io.BytesIO(chunked),
                                   http_headers=h, warc_headers_dict=dated)  # fmt: skip
        w.write_record(rec)
    assert run("verify", path).returncode == 0
    out = tmp_path / "z.wacz"
    assert run("pack", path, "--format", "wacz", "-o", out).returncode == 0
    with zipfile.ZipFile(out) as z:
        pages = [json.loads(x) for x in z.read("pages/pages.jsonl").splitlines()]
        package = json.loads(z.read("datapackage.json"))
    assert pages[1]["title"] == "Zipped été \u2603" == package["title"]


def test_created_is_the_newest_date_in_time_order(tmp_path: Path) -> None:
    """``…05.5Z`` is later than ``…05Z`` though it sorts before it as text."""
    late = corpus.record("http://example.test/b", b"b").replace(
        corpus.DATE.encode(), b"2026-01-02T03:04:05.5Z"
    )
    path = corpus.write(tmp_path / "d.warc", [late, corpus.record("http://example.test/a", b"a")], gz=False)
    out = tmp_path / "d.wacz"
    assert run("pack", path, "--format", "wacz", "-o", out).returncode == 0
    with zipfile.ZipFile(out) as z:
        assert json.loads(z.read("datapackage.json"))["created"] == "2026-01-02T03:04:05.5Z"
