"""A tree's versions through ``archiver serve`` (formats/history.md §7, RFC 7089): each recorded
version a mount of its own origin whose pages carry Memento-Datetime and Link; the bare host's
TimeMap (application/link-format: original, timegate, self with from/until, first and last
memento with their datetimes) and TimeGate (Accept-Datetime → 302 to the memento in force, Vary);
a bad Accept-Datetime is a 400; a version's pages are not served on another origin."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from archiver.serve import running
from archiver.versions import store
from tests.serve.helpers import get_on as _get
from tests.versions.helpers import HOME, page, write_tree

V1 = "20261130T090000Z"
V2 = "20261201T090000Z"


def _links(text: str) -> list[tuple[str, dict[str, str]]]:
    """A link-format list or Link header as (URI, params)."""
    out = []
    for m in re.finditer(r"<([^>]*)>((?:\s*;\s*[a-z]+=\"[^\"]*\")*)", text):
        params = dict(re.findall(r"([a-z]+)=\"([^\"]*)\"", m.group(2)))
        out.append((m.group(1), params))
    return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    root = tmp_path_factory.mktemp("memento") / "site"
    write_tree(root, {"index.html": page("Home", "<p>one</p>"), "docs/a.html": page("A", "<p>first</p>")},
               "2026-11-30T09:00:00Z")  # fmt: skip
    store.record(root)
    write_tree(root, {"index.html": page("Home", "<p>two</p>"), "docs/a.html": page("A", "<p>second</p>")},
               "2026-12-01T09:00:00Z")  # fmt: skip
    store.record(root)
    with running([root]) as url:
        yield url, int(urlsplit(url).port or 0)


def test_the_timemap_lists_every_version(served: tuple[str, int]) -> None:
    base, port = served
    status, headers, body = _get(base, "/~/timemap/site/docs/a.html", f"localhost:{port}")
    assert status == 200 and headers["content-type"].startswith("application/link-format")
    links = _links(body.decode())
    rels = [p.get("rel") for _, p in links]
    assert rels == ["original", "timegate", "self", "first memento", "last memento"]
    assert links[0][0] == HOME + "docs/a.html"
    assert links[1][0] == f"http://localhost:{port}/~/timegate/site/docs/a.html"
    assert links[2][1]["from"] == "Mon, 30 Nov 2026 09:00:00 GMT"
    assert links[2][1]["until"] == "Tue, 01 Dec 2026 09:00:00 GMT"
    assert links[3][0] == f"http://site-{V1.lower()}.localhost:{port}/site@{V1}/docs/a.html"
    assert links[3][1]["datetime"] == "Mon, 30 Nov 2026 09:00:00 GMT"
    assert links[4][0] == f"http://site-{V2.lower()}.localhost:{port}/site@{V2}/docs/a.html"
    assert _get(base, "/~/timemap/site/nope.html", f"localhost:{port}")[0] == 404


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        ("Mon, 30 Nov 2026 12:00:00 GMT", V1),
        ("Tue, 01 Dec 2026 09:00:00 GMT", V2),
        ("Sun, 01 Jan 2012 00:00:00 GMT", V1),  # before the first: the first
        (None, V2),  # none: the last
    ],
)
def test_the_timegate_redirects_to_the_memento_in_force(
    served: tuple[str, int], accept: str | None, version: str
) -> None:
    base, port = served
    headers = {"Accept-Datetime": accept} if accept else {}
    status, got, _ = _get(base, "/~/timegate/site/docs/a.html", f"localhost:{port}", headers)
    assert status == 302
    assert got["location"] == f"http://site-{version.lower()}.localhost:{port}/site@{version}/docs/a.html"
    assert got["vary"] == "accept-datetime"
    links = _links(got["link"])
    assert [p["rel"] for _, p in links[:2]] == ["original", "timemap"]
    # the memento chosen and its neighbours (RFC 7089 §2.2.1.4), each with its datetime
    rels = {uri.rsplit("@", 1)[1].split("/")[0]: set(p["rel"].split()) for uri, p in links[2:]}
    if version == V1:
        assert rels == {V1: {"first", "memento"}, V2: {"next", "last", "memento"}}
    else:
        assert rels == {V1: {"first", "prev", "memento"}, V2: {"last", "memento"}}
    assert all("datetime" in p for _, p in links[2:])


def test_a_bad_accept_datetime_is_a_400(served: tuple[str, int]) -> None:
    base, port = served
    status, got, _ = _get(
        base, "/~/timegate/site/docs/a.html", f"localhost:{port}", {"Accept-Datetime": "soon"}
    )
    assert status == 400 and got["vary"] == "accept-datetime"


def test_a_memento_carries_its_datetime_and_links_and_stays_on_its_origin(served: tuple[str, int]) -> None:
    base, port = served
    origin = f"site-{V1.lower()}.localhost:{port}"
    status, got, body = _get(base, f"/site@{V1}/docs/a.html", origin)
    assert status == 200 and b"<p>first</p>" in body
    assert got["memento-datetime"] == "Mon, 30 Nov 2026 09:00:00 GMT"
    rels = {p["rel"]: uri for uri, p in _links(got["link"])}
    assert rels["original"] == HOME + "docs/a.html"
    assert rels["timemap"] == f"http://localhost:{port}/~/timemap/site/docs/a.html"
    assert "content-security-policy" in got  # the archive's pages keep serve's policy
    status, _, body = _get(base, f"/site@{V1}/", origin)
    assert status == 200 and b"<p>one</p>" in body
    # another version's pages, the tree's own and the TimeGate are not on this origin
    assert _get(base, f"/site@{V2}/docs/a.html", origin)[0] == 404
    assert _get(base, "/site/docs/a.html", origin)[0] == 404
    assert _get(base, "/~/timegate/site/docs/a.html", origin)[0] == 404
    index = _get(base, "/", f"localhost:{port}")[2].decode()
    assert f"site@{V1}" in index and "site as of 2026-11-30T09:00:00Z" in index


@pytest.fixture(scope="module")
def lying(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A tree whose earlier version's manifest was edited: its URLs carry CR LF and '>' (hostile input)."""
    import json
    import os

    root = tmp_path_factory.mktemp("memento-lying") / "site"
    write_tree(root, {"index.html": page("Home", "<p>one</p>"), "docs/a.html": page("A", "<p>first</p>")},
               "2026-11-30T09:00:00Z")  # fmt: skip
    store.record(root)
    write_tree(root, {"index.html": page("Home", "<p>two</p>")}, "2026-12-01T09:00:00Z")
    store.record(root)
    manifest = store.store_dir(root) / f"{V1}.jsonl"
    os.chmod(manifest, 0o644)
    lines = manifest.read_bytes().splitlines(keepends=True)
    for i, line in enumerate(lines[1:], 1):
        r = json.loads(line)
        r["urls"] = {
            "index.html": [HOME + 'x>; rel="memento"; datetime="x", <javascript:alert(1)'],
            "docs/a.html": [HOME + "a\r\nSet-Cookie: pwned=1\r\nX: é"],
        }[r["path"]]
        lines[i] = json.dumps(r).encode() + b"\n"
    manifest.write_bytes(b"".join(lines))
    with running([root]) as url:
        yield url, int(urlsplit(url).port or 0)


def test_a_url_of_an_edited_manifest_is_escaped_in_every_link(lying: tuple[str, int]) -> None:
    # before: a record's URL went into Link raw: its CR LF began a header of its own on a memento
    # (Set-Cookie), the TimeGate's answer was dropped (the server refused the header: no response),
    # and a '>' added a link of the archive's choosing (rel="memento" to javascript:)
    base, port = lying
    bare, origin = f"localhost:{port}", f"site-{V1.lower()}.localhost:{port}"
    answers = [
        _get(base, f"/site@{V1}/docs/a.html", origin),
        _get(base, f"/site@{V1}/index.html", origin),
        _get(base, "/~/timegate/site/docs/a.html", bare),
        _get(base, "/~/timemap/site/docs/a.html", bare),
        _get(base, "/~/timemap/site/index.html", bare),
        _get(base, "/site/docs/a.html", bare),  # gone from the newest: its 404 page links the original
    ]
    assert [a[0] for a in answers] == [200, 200, 302, 200, 200, 404]
    for _status, got, body in answers:
        assert "set-cookie" not in got
        text = body.decode() if got.get("content-type", "").startswith("application/link-format") else ""
        for uri, params in _links(got.get("link", "") + "\n" + text):
            assert params.get("rel") != "memento" or uri.startswith("http://site-"), uri
            assert not uri.startswith("javascript:")
            assert all(0x21 <= ord(c) < 0x7F for c in uri) and not set(uri) & set('<>"'), uri
    original = dict((p["rel"], u) for u, p in _links(answers[0][1]["link"]))["original"]
    assert original == HOME + "a%0D%0ASet-Cookie:%20pwned=1%0D%0AX:%20%C3%A9"


def test_a_media_type_with_a_line_break_in_a_gwtar_is_never_a_header_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gwtar whose site index gives a member the type "text/html\\r\\nSet-Cookie: pwned=1" (the
    same shared representation builds the memento answers above). Before: serve's fast path wrote it
    as two header lines, a Set-Cookie of the archive's choosing. Now: application/octet-stream."""
    import shutil

    from archiver.gwtar import layout
    from archiver.gwtar.write import pack
    from tests.gwtar.conftest import MINI
    from tests.gwtar.corpus import STUB_LOADER

    tree = tmp_path / "tree"
    shutil.copytree(MINI, tree)
    real = layout._entry_parts

    def forged(spec: layout.MemberSpec, offset: int) -> tuple[bytes, bytes]:
        if spec.path == "index.html":
            spec = layout.MemberSpec(**{**spec.__dict__, "media_type": "text/html\r\nSet-Cookie: pwned=1"})
        return real(spec, offset)

    monkeypatch.setattr(layout, "_entry_parts", forged)
    out = pack(tree, tmp_path / "ct.gwtar.html", loader=STUB_LOADER).path
    monkeypatch.setattr(layout, "_entry_parts", real)
    with running([out]) as url:
        port = int(urlsplit(url).port or 0)
        for _ in range(2):  # the first answer, then the cached one
            status, got, _body = _get(url, "/ct.gwtar.html/~/index.html", f"ct-gwtar-html.localhost:{port}")
            assert status == 200 and "set-cookie" not in got
            assert got["content-type"] == "application/octet-stream"
