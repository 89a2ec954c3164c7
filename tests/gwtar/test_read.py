"""archiver.gwtar.open: the reader API on our files and on reference-layout v1 files."""

from __future__ import annotations

import hashlib
import io
import threading
from pathlib import Path

import pytest

from archiver.errors import FormatError
from archiver.gwtar import Member, PackResult
from archiver.gwtar import open as open_gwtar
from tests.gwtar.corpus import MINI, build
from tests.gwtar.v1ref import SAMPLE_HTML, build_v1, sample_assets


def test_reader_attributes(mini_gwtar: PackResult) -> None:
    with open_gwtar(mini_gwtar.path) as g:
        assert (g.overhead, g.total_archive_size) == (mini_gwtar.overhead, mini_gwtar.total_archive_size)
        assert g.trailer_offset == g.total_archive_size and g.trailer_size == 0
        assert g.main == "index.html" and g.member("0") is g.member("index.html")
        m = g.member("_archiver/mini.example/img/a b.png")
        assert (
            isinstance(m, Member)
            and m.media_type == "image/png"
            and m.kind == "asset"
            and m.end == m.offset + m.size
        )
        with open(mini_gwtar.path, "rb") as f:
            f.seek(m.offset)
            assert f.read(m.size) == (MINI / m.path).read_bytes()
        assert len(g) == len(list(g)) == 15
        with pytest.raises(KeyError):
            g.member("nope")
        assert g.has("index.html") and g.has("0") and g.has(m.path)  # a path, a v1 key
        assert not g.has("nope") and not g.has("") and not g.has("1000")


def test_open_member_is_bounded_and_seekable(mini_gwtar: PackResult) -> None:
    with open_gwtar(mini_gwtar.path) as g:
        m = g.member("index.html")
        want = (MINI / "index.html").read_bytes()
        with g.open_member(m) as f:
            assert f.read(10) == want[:10]
            assert f.seek(-5, io.SEEK_END) == m.size - 5
            assert f.read(100) == want[-5:]
            assert f.read(100) == b""
            f.seek(0)
            assert f.read() == want
        buffered = io.BufferedReader(g.open_member("index.html"), buffer_size=7)
        assert buffered.read() == want

        results: dict[str, bytes] = {}

        def read(path: str) -> None:
            results[path] = g.read(path)

        threads = [threading.Thread(target=read, args=(p.path,)) for p in g.members]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for member in g.members:
            assert hashlib.sha256(results[member.path]).hexdigest() == member.sha256


@pytest.mark.parametrize("variant", [{}, {"zero_not_first": True}, {"folder": "doc/x"}])
def test_reference_layout_v1(tmp_path: Path, variant: dict) -> None:
    path = build_v1(tmp_path, "page", SAMPLE_HTML, sample_assets(), **variant)
    prefix = "doc/x/" if variant.get("folder") else ""
    with open_gwtar(path) as g:
        assert g.meta is None
        assert list(g.assets) == [
            "0",
            *[f"page-asset-{i}.{e}" for i, e in enumerate(["js", "svg", "png", "woff2"], 1)],
        ]
        assert g.main == f"{prefix}page.html"
        assert [m.key for m in g.members] == list(g.assets)
        assert [m.path for m in g.members][1] == f"{prefix}page/page-asset-1.js"
        assert g.read("0") == SAMPLE_HTML
        for m, asset in zip(g.members[1:], sample_assets(), strict=True):
            assert g.read(m) == asset.data and m.sha256 == hashlib.sha256(asset.data).hexdigest()
            assert m.media_type == asset.content_type


def test_array_manifest(tmp_path: Path) -> None:
    with open_gwtar(build_v1(tmp_path, "solo", SAMPLE_HTML, [])) as g:
        assert [(m.key, m.path) for m in g.members] == [("0", "solo.html")]


def test_open_on_the_broken_corpus_raises_only_format_errors(tmp_path: Path) -> None:
    build(tmp_path, big=False)
    opened = failed = 0
    for path in sorted((tmp_path / "broken").glob("*.gwtar.html")):
        try:
            with open_gwtar(path) as g:
                for m in g.members:
                    g.read(m)
            opened += 1
        except FormatError as e:
            assert str(e).startswith(str(path) + ": ") and "\n" not in str(e)
            failed += 1
    assert failed > 25 and opened > 5
