"""Conditional re-fetch in ``capture --new-version`` (formats/history.md §6.1), written as the
attacks and mistakes it must survive: validators that would inject a header, a server answering
304 to everything, a 304 for bytes we no longer hold whole, a server whose ETag stays when its page
changes, a kill -9 in the middle; and what it is for: an unchanged site re-captured asks every URL
conditionally and keeps every file, and the re-captured tree equals a fresh capture of the new state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archiver.capture.conditional import MAX_VALIDATOR, judge, request_headers, validator
from archiver.capture.revalidate import lanes_of
from archiver.capture.state import Row
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import Record, read_records
from archiver.versions import store
from tests.versions.helpers import tree_files as _files
from tests.versions.server import Page, Server, Site
from tests.versions.test_recapture import _capture, _cli, _page

# ---- the pure rules


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ('"abc123"', '"abc123"'),
        ('W/"weak-1"', 'W/"weak-1"'),
        ("Wed, 02 Dec 2026 03:33:10 GMT", "Wed, 02 Dec 2026 03:33:10 GMT"),
        ('"a"\r\nX-Injected: 1', None),
        ('"a"\nX-Injected: 1', None),
        ('"a"\rX', None),
        ('"a\x00b"', None),
        ('"a\tb"', None),
        ('"caf\u00e9"', None),
        ('"\u2028"', None),
        ('"' + "x" * 10_240 + '"', None),
        ("x" * MAX_VALIDATOR, "x" * MAX_VALIDATOR),
        ("x" * (MAX_VALIDATOR + 1), None),
        (" padded", None),
        ("", None),
        (None, None),
    ],
)
def test_only_bounded_visible_ascii_validators_are_kept(value: str | None, kept: str | None) -> None:
    assert validator(value) == kept


def test_a_hostile_record_sends_no_header_it_names() -> None:
    # a record read back from an edited manifest or state: checked again before it is sent
    assert request_headers('"a"\r\nX-Injected: 1', "Wed\x00") == {}
    assert request_headers('"ok"', None) == {"If-None-Match": '"ok"'}
    assert request_headers(None, "Wed, 02 Dec 2026 03:33:10 GMT") == {
        "If-Modified-Since": "Wed, 02 Dec 2026 03:33:10 GMT"
    }


@pytest.mark.parametrize(
    ("status", "conditional", "redirected", "retried", "verdict"),
    [
        (304, True, False, False, "keep"),
        (304, False, False, False, "refetch"),  # a 304 we did not ask for
        (304, True, True, False, "refetch"),  # at the end of a redirect: that hop was not conditional
        (304, False, False, True, "fail"),  # a 304 again to the unconditional retry
        (200, True, False, False, "new"),
        (200, False, False, False, "new"),
        (404, True, False, False, "new"),
        (None, True, False, False, "new"),
    ],
)
def test_what_a_304_means(
    status: int | None, conditional: bool, redirected: bool, retried: bool, verdict: str
) -> None:
    assert judge(status, conditional=conditional, redirected=redirected, retried=retried) == verdict


# ---- on the fixture server (ETag, Last-Modified, 304 on a match)


def _records(root: Path) -> dict[str, Record]:
    return {r.path: r for r in read_records(root)}


def _site(root: Path, pages: int = 3) -> Path:
    root.mkdir()
    (root / "s.css").write_text("body { color: #123 }")
    links = " ".join(f'<a href="/p{i}.html">{i}</a>' for i in range(pages))
    (root / "index.html").write_text(_page("Home", f"<p>{links}</p>"))
    for i in range(pages):
        (root / f"p{i}.html").write_text(_page(f"P{i}", f"<p>page {i}</p>"))
    return root


def test_an_unchanged_site_is_asked_conditionally_and_every_file_kept(tmp_path: Path) -> None:
    site = _site(tmp_path / "live")
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        assert _capture(server.url, out).returncode == 0
        first = _files(out)
        inodes = {p: (out / p).stat().st_ino for p in first}
        time.sleep(1.1)
        n = len(server.requests)
        again = _capture(server.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
        asked = [r for r in server.requests[n:] if r.path != "/robots.txt"]
    assert len(asked) == 5  # home, three pages, the stylesheet: once each
    assert all("if-none-match" in r.headers and "if-modified-since" in r.headers for r in asked)
    assert {r.status for r in asked} == {304}
    records = _records(out)
    assert all(r.revalidated and r.etag and r.last_modified for r in records.values())
    assert _files(out) == first
    assert {p: (out / p).stat().st_ino for p in first} == inodes  # not even written again
    listed = [json.loads(x) for x in _cli("ls", str(out), "--versions", "--json").stdout.splitlines()]
    assert [d["new_bytes"] for d in listed][1] == 0
    assert _cli("verify", str(out)).returncode == 0


def _comparable(root: Path) -> dict[str, dict[str, object]]:
    out = {}
    for r in read_records(root):
        d = {k: getattr(r, k) for k in r.__struct_fields__}
        for k in ("fetched", "revalidated", "warc"):
            d.pop(k)
        out[r.path] = d
    return out


def test_a_re_capture_equals_a_fresh_capture_of_the_new_state(tmp_path: Path) -> None:
    site = _site(tmp_path / "live", pages=6)
    out, fresh = tmp_path / "tree", tmp_path / "fresh"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        assert _capture(server.url, out).returncode == 0
        time.sleep(1.1)
        (site / "p0.html").write_text(_page("P0", "<p>page 0, changed</p>"))
        (site / "p1.html").unlink()  # linked still: gone
        (site / "s.css").write_text("body { color: #456 }")
        links = " ".join(f'<a href="/p{i}.html">{i}</a>' for i in (0, 1, 2, 3, 4, 6))  # p5 unlinked
        (site / "index.html").write_text(_page("Home", f"<p>{links}</p>"))
        (site / "p5.html").unlink()
        (site / "p6.html").write_text(_page("P6", "<p>new</p>"))
        again = _capture(server.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
        assert _capture(server.url, fresh).returncode == 0
    records = _records(out)
    assert {p for p, r in records.items() if r.revalidated} == {"p2.html", "p3.html", "p4.html"}
    assert _files(out) == _files(fresh)
    assert _comparable(out) == _comparable(fresh)


def test_a_re_capture_asks_each_url_once_and_stores_a_change_from_that_answer(tmp_path: Path) -> None:
    """The first pass asks every known URL conditionally (formats/history.md §6.3); a changed page's
    answer goes to its own stage, which stores it without asking again; a page first linked by the
    changed home is fetched once, unconditionally."""
    site = _site(tmp_path / "live", pages=6)
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        assert _capture(server.url, out).returncode == 0
        time.sleep(1.1)
        (site / "p0.html").write_text(_page("P0", "<p>page 0, changed</p>"))
        (site / "s.css").write_text("body { color: #456 }")
        (site / "p6.html").write_text(_page("P6", "<p>new</p>"))
        links = " ".join(f'<a href="/p{i}.html">{i}</a>' for i in range(7))
        (site / "index.html").write_text(_page("Home", f"<p>{links}</p>"))
        n = len(server.requests)
        again = _capture(server.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
        asked = [r for r in server.requests[n:] if r.path != "/robots.txt"]
    paths = [r.path for r in asked]
    assert sorted(paths) == sorted(set(paths)) and len(paths) == 9  # home, p0–p6, the stylesheet
    new = next(r for r in asked if r.path == "/p6.html")
    assert "if-none-match" not in new.headers and "if-modified-since" not in new.headers
    assert {r.path for r in asked if r.status == 200} == {"/", "/p0.html", "/p6.html", "/s.css"}
    records = _records(out)
    assert {p for p, r in records.items() if r.revalidated} == {f"p{i}.html" for i in range(1, 6)}
    report = next(json.loads(x) for x in again.stdout.splitlines() if x.startswith('{"out"'))
    assert report["this_run"]["unchanged"] == 5  # and the terminal summary says so
    css = next(r for r in records.values() if r.urls[0].endswith("/s.css"))
    assert "changed" in (out / "p0.html").read_text() and "#456" in (out / css.path).read_text()
    assert _cli("verify", str(out)).returncode == 0


def _row(key: str, seq: int) -> Row:
    return Row(key, "page", "pending", 1, None, 1, seq, None, None, None, None, 0, None, False)


@pytest.mark.parametrize(
    ("hosts", "slots", "lists", "lanes"),
    [
        ("a b a c a", 2, ["a a a", "b", "c"], 2),
        ("a b a c a", 12, ["a a a", "b", "c"], 3),  # a lane a host: no second lane waits on a's lock
        ("a a a a", 12, ["a a a a"], 1),
        ("", 12, [], 1),
    ],
)
def test_the_first_pass_gives_each_host_one_lane(
    hosts: str, slots: int, lists: list[str], lanes: int
) -> None:
    rows = [_row(f"http://{h}.localhost:8000/p{i}.html", i) for i, h in enumerate(hosts.split())]
    asked = [
        (r, Record(path=f"p{r.seq}.html", kind="page", media_type="text/html", size=0, sha256=""))
        for r in rows
    ]
    got, n = lanes_of(asked, slots)
    seen = [[r.key for r, _ in items] for items in got]
    assert n == lanes
    assert [" ".join(k.split("//")[1].split(".")[0] for k in keys) for keys in seen] == lists
    assert sorted(k for keys in seen for k in keys) == sorted(r.key for r in rows)  # each row once, in order
    assert all(keys == sorted(keys, key=lambda k: int(k.rsplit("p", 1)[1].split(".")[0])) for keys in seen)


# ---- on a hostile server


def test_hostile_validators_are_not_kept_nor_sent_back(tmp_path: Path) -> None:
    body = _page("X", "<p>x</p>").encode()
    links = '<a href="/long.html">l</a> <a href="/latin.html">n</a> <a href="/fold.html">f</a>'
    site = Site(
        pages={
            "/": Page(_page("Home", links).encode(), etag=b'"good"'),
            "/long.html": Page(body, etag=b'"' + b"x" * 10_240 + b'"'),
            "/latin.html": Page(body, etag=b'"caf\xe9"', last_modified=b"Wed, 02 Dec 2026 \xff GMT"),
            "/fold.html": Page(body, etag=b'"a"\r\n\tX-Injected: 1'),  # an obs-fold: one value
            "/robots.txt": Page(b"", media="text/plain"),
        }
    )
    out = tmp_path / "tree"
    with Server(site) as url:
        assert _capture(url, out).returncode == 0
        records = _records(out)
        assert records["index.html"].etag == '"good"'
        assert records["long.html"].etag is None and records["latin.html"].etag is None
        assert records["latin.html"].last_modified is None
        assert "\n" not in (records["fold.html"].etag or "")
        time.sleep(1.1)
        n = len(site.log)
        again = _capture(url, out, "--new-version")
        assert again.returncode == 0, again.stderr
    sent = dict(site.log[n:])
    assert sent["/"]["if-none-match"] == '"good"'
    for path in ("/long.html", "/latin.html"):
        assert "if-none-match" not in sent[path] and "if-modified-since" not in sent[path]
    assert all("x-injected" not in headers for _p, headers in site.log)
    assert _records(out)["index.html"].revalidated


def test_a_server_answering_304_to_everything_stores_nothing_for_it(tmp_path: Path) -> None:
    body = _page("X", '<p><a href="/a.html">a</a></p>').encode()
    site = Site(pages={"/": Page(body, etag=b'"e"'), "/a.html": Page(body)}, not_modified="always")
    out = tmp_path / "tree"
    with Server(site) as url:
        done = _capture(url, out, "--ignore-robots")
        assert done.returncode == 4, done.stderr  # no page stored
        assert "answered 304 Not Modified to a request that was not conditional" in done.stderr
        assert not (out / "index.html").exists()
        # asked twice: the first 304 was not trusted, the unconditional retry failed
        assert [p for p, _h in site.log] == ["/", "/"]
        assert all("if-none-match" not in h for _p, h in site.log)
        # a tree captured while the server behaved; then it answers 304 to everything again
        site.not_modified = "never"
        assert _capture(url, out, "--ignore-robots").returncode == 0
        site.not_modified = "always"
        time.sleep(1.1)
        again = _capture(url, out, "--ignore-robots", "--new-version")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    failed = {i["url"]: i["reason"] for i in report["items"] if i["outcome"] == "failed"}
    # the home page had a validator: its 304 answers our question; a.html had none (and s.css was a
    # 404, nothing held): not trusted
    why = "answered 304 Not Modified to a request that was not conditional"
    assert failed == {url + "a.html": why, url + "s.css": why}
    assert _records(out)["index.html"].revalidated and not (out / "a.html").exists()


def test_an_etag_that_stays_when_the_page_changes_keeps_the_old_bytes(tmp_path: Path) -> None:
    """A weak validator lie: the server says "not modified" for a page it changed. A 304 means the
    bytes we hold stand; we keep them (formats/history.md §6.1 says so); --rerender asks again."""
    home = Page(_page("Home", "<p>first words</p>").encode(), etag=b'W/"same"')
    site = Site(pages={"/": home, "/robots.txt": Page(b"", media="text/plain")})
    out = tmp_path / "tree"
    with Server(site) as url:
        assert _capture(url, out).returncode == 0
        first = (out / "index.html").read_bytes()
        home.body = _page("Home", "<p>second words</p>").encode()
        time.sleep(1.1)
        assert _capture(url, out, "--new-version").returncode == 0
        assert (out / "index.html").read_bytes() == first
        assert _records(out)["index.html"].revalidated
        time.sleep(1.1)
        n = len(site.log)
        assert _capture(url, out, "--new-version", "--rerender").returncode == 0
        assert "if-none-match" not in dict(site.log[n:])["/"]
    assert b"second words" in (out / "index.html").read_bytes()
    assert not _records(out)["index.html"].revalidated


def test_bytes_no_longer_whole_are_fetched_again_unconditionally(tmp_path: Path) -> None:
    site = _site(tmp_path / "live")
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        assert _capture(server.url, out).returncode == 0
        first = _files(out)
        time.sleep(1.1)
        assert _capture(server.url, out, "--new-version").returncode == 0  # the tree holds the versions
        records = _records(out)
        # p0's file altered in place (the versions hold it in the tree only), p1's file deleted
        assert not store.blob_path(out, records["p0.html"].sha256).exists()
        with open(out / "p0.html", "r+b") as f:
            f.write(b"XXXX")
        (out / "p1.html").unlink()
        time.sleep(1.1)
        n = len(server.requests)
        again = _capture(server.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
        asked = {r.path: r for r in server.requests[n:]}
    for path in ("/p0.html", "/p1.html"):
        assert "if-none-match" not in asked[path].headers and asked[path].status == 200
    assert "if-none-match" in asked["/p2.html"].headers and asked["/p2.html"].status == 304
    assert (out / "p0.html").read_bytes() == first["p0.html"]
    assert (out / "p1.html").read_bytes() == first["p1.html"]
    records = _records(out)
    assert not records["p0.html"].revalidated and not records["p1.html"].revalidated
    assert records["p2.html"].revalidated


def test_a_kill_during_a_conditional_re_capture_leaves_it_whole_and_resumable(tmp_path: Path) -> None:
    site = _site(tmp_path / "live", pages=40)
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None, latency=0.2)) as slow:
        assert _capture(slow.url, out).returncode == 0
        first = _files(out)
        time.sleep(1.1)
        cmd = [sys.executable, "-m", "archiver", "capture", slow.url, "-o", str(out)]
        cmd += ["--no-render", "--delay", "0", "--new-version"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (store.store_dir(out) / "pending.json").exists():
            time.sleep(0.05)
        time.sleep(1.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        some = sum(1 for r in read_records(out) if r.revalidated) if (out / "_archiver").exists() else 0
        vs = store.versions(out)
        assert vs[0].recorded
        assert _cli("verify", str(out)).returncode == 0
        assert _files(out) == first  # a 304 writes nothing: the folder is the previous version's
        again = _capture(slow.url, out, "--new-version")
        assert again.returncode == 0, again.stderr
    assert [v.recorded for v in store.versions(out)] == [True, True]
    records = list(read_records(out))
    assert len(records) == 42 and all(r.revalidated for r in records), some
    assert _files(out) == first


def test_a_304_in_a_warc_re_capture_is_a_not_modified_revisit_that_resolves(tmp_path: Path) -> None:
    site = _site(tmp_path / "live")
    out = tmp_path / "tree"
    common = ("--warc",)
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        url = server.url
        assert _capture(server.url, out, *common).returncode == 0
        time.sleep(1.1)
        (site / "p0.html").write_text(_page("P0", "<p>page 0, changed</p>"))
        again = _capture(server.url, out, *common, "--new-version")
        assert again.returncode == 0, again.stderr
        time.sleep(1.1)
        (site / "p0.html").write_text(_page("P0", "<p>page 0</p>"))  # back to the first bytes
        os.utime(site / "p0.html", (1, 1))  # a new ETag and date: asked, answered 200
        third = _capture(server.url, out, *common, "--new-version")
        assert third.returncode == 0, third.stderr
    from archiver.warc.read import iter_records

    records = []
    for f in sorted((out / "_archiver" / "warc").iterdir()):
        with f.open("rb") as fh:
            records += [r for r in iter_records(fh, []) if r.type in ("response", "revisit")]
    by_id = {r.headers["warc-record-id"]: r for r in records}
    home = [r for r in records if r.uri == url]
    assert [r.type for r in home] == ["response", "revisit", "revisit"]
    for r in home[1:]:
        assert r.headers["warc-profile"].endswith("/revisit/server-not-modified")
        original = by_id[r.headers["warc-refers-to"]]
        assert original is home[0]
        assert r.headers["warc-refers-to-target-uri"] == home[0].uri
        assert r.headers["warc-refers-to-date"] == home[0].date
        assert r.headers["warc-payload-digest"] == home[0].headers["warc-payload-digest"]
    p0 = [r for r in records if r.uri == url + "p0.html"]
    assert [r.type for r in p0] == ["response", "response", "revisit"]  # first, changed, first again
    assert p0[2].headers["warc-profile"].endswith("/revisit/identical-payload-digest")
    assert p0[2].headers["warc-refers-to"] == p0[0].headers["warc-record-id"]
    # every run's records in one WACZ; the tree rebuilt from it (archiver's own replay resolving
    # each revisit to its original) holds the newest version's files
    wacz = tmp_path / "t.wacz"
    packed = _cli("pack", str(out), "--format", "wacz", "-o", str(wacz))
    assert packed.returncode == 0, packed.stderr
    assert _cli("verify", str(wacz)).returncode == 0
    rebuilt = tmp_path / "rebuilt"
    done = _cli("capture", url, "-o", str(rebuilt), "--from-warc", str(wacz), "--no-render")
    assert done.returncode == 0, done.stderr
    assert _files(rebuilt) == _files(out)


def test_an_unchanged_page_is_not_rendered_again_unless_asked(tmp_path: Path) -> None:
    site = tmp_path / "live"
    site.mkdir()
    script = "<script>document.body.insertAdjacentHTML('beforeend', '<p>' + Math.random() + '</p>')</script>"
    (site / "index.html").write_text(_page("Home", f"<p>home</p>{script}"))
    (site / "s.css").write_text("body { color: #123 }")
    out = tmp_path / "tree"
    cmd = ("capture", "-o", str(out), "--delay", "0", "--json", "--tabs", "1")
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        first = _cli(*cmd[:1], server.url, *cmd[1:])
        assert first.returncode == 0, first.stderr
        rendered = (out / "index.html").read_bytes()
        assert b"0." in rendered.split(b"<h1>Home</h1>")[1]  # the script's number, rendered in
        time.sleep(1.1)
        again = _cli(*cmd[:1], server.url, *cmd[1:], "--new-version")
        assert again.returncode == 0, again.stderr
        assert (out / "index.html").read_bytes() == rendered  # a new render would draw a new number
        assert _records(out)["index.html"].revalidated
        time.sleep(1.1)
        third = _cli(*cmd[:1], server.url, *cmd[1:], "--new-version", "--rerender")
        assert third.returncode == 0, third.stderr
    assert (out / "index.html").read_bytes() != rendered
    assert not _records(out)["index.html"].revalidated


def test_kept_records_reach_the_manifest_as_the_state_encodes_them(tmp_path: Path) -> None:
    """A batch of kept rows is written to the manifest in one write, each line the state's own
    encoding of the record (not encoded a second time): the same lines one add() a record wrote."""
    import msgspec

    from archiver.tree import Header, ManifestWriter

    records = [
        Record(path=f"p/{i}.html", kind="page", media_type="text/html", size=i, sha256="0" * 64,
               urls=[f"http://h/p/{i}.html"], etag=f'"{i}"', revalidated=True)
        for i in range(3)
    ]  # fmt: skip
    header = Header(home="http://h/", created="2026-12-01T00:00:00Z")
    one, batch = tmp_path / "one", tmp_path / "batch"
    with ManifestWriter(one, header, durable=False) as m:
        for r in records:
            m.add(r)
    with ManifestWriter(batch, header, durable=False) as m:
        m.add_encoded([msgspec.json.Encoder().encode(r) for r in records])
        m.add_encoded([])
    assert (batch / "_archiver" / "manifest.jsonl").read_bytes() == (
        one / "_archiver" / "manifest.jsonl"
    ).read_bytes()
    assert list(read_records(batch)) == records


def test_a_file_is_whole_only_with_its_size_and_hash(tmp_path: Path) -> None:
    """stage._whole, on which a conditional request stands: a small file read by one call, a large
    one in chunks; a byte changed, a size that differs or a missing file is not whole."""
    import hashlib

    from archiver.capture.stage import _WHOLE_AT_ONCE, _whole

    for size in (0, 818, _WHOLE_AT_ONCE - 1, _WHOLE_AT_ONCE, 3 * _WHOLE_AT_ONCE + 5):
        data = bytes(i % 251 for i in range(size))
        path = tmp_path / f"f{size}"
        path.write_bytes(data)
        sha = hashlib.sha256(data).hexdigest()
        assert _whole(str(path), size, sha)
        assert not _whole(str(path), size + 1, sha)
        if size:
            path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
            assert not _whole(str(path), size, sha)
    assert not _whole(str(tmp_path / "missing"), 0, hashlib.sha256(b"").hexdigest())
