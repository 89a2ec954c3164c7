"""verify(): checksum, full read, metadata rules, main page and every link of every HTML/CSS entry."""

from __future__ import annotations

import json
from pathlib import Path

from archiver.zim import icon, pack, verify
from archiver.zim.write import ItemSpec, write_zim

from .conftest import MakeTree, page


def test_the_mini_zim_passes(mini_zim: Path) -> None:
    report = verify(mini_zim)
    assert report.ok, report.problems
    assert report.checksum is True
    assert (report.entries, report.redirects, report.documents) == (15, 0, 9)
    assert report.links >= 90
    assert json.loads(json.dumps(report.to_json()))["ok"] is True


def test_broken_srcset_and_css_url_fail_with_clear_reasons(make_tree: MakeTree, tmp_path: Path) -> None:
    css = b'body { background: url("../img/gone.png") }\n@import "missing.css";\n'
    body = (
        '<link rel="stylesheet" href="_archiver/ex.test/css/site.css">'
        '<img src="_archiver/ex.test/img/ok.png" '
        'srcset="_archiver/ex.test/img/ok.png 1x, _archiver/ex.test/img/ok@2x.png 2x">'
        '<a href="/root/absolute.html">r</a><img src="https://cdn.test/external.png">'
    )
    tree = make_tree(
        {
            "index.html": page("Home", body),
            "_archiver/ex.test/css/site.css": css,
            "_archiver/ex.test/img/ok.png": b"\x89PNG fake",
        }
    )
    result = pack(tree, tmp_path / "broken.zim")
    assert any("1 reference(s) to other sites" in w for w in result.warnings)  # the external <img>
    report = verify(result.path)
    assert not report.ok
    shown = sorted(str(p) for p in report.problems)
    assert shown == [
        "_archiver/ex.test/css/site.css: css '../img/gone.png': broken: "
        "'_archiver/ex.test/img/gone.png' is not in the archive",
        "_archiver/ex.test/css/site.css: css @import 'missing.css': broken: "
        "'_archiver/ex.test/css/missing.css' is not in the archive",
        "index.html: <a href> '/root/absolute.html': root-absolute link: readers serve the archive under "
        "a prefix, so it never resolves",
        "index.html: <img srcset> '_archiver/ex.test/img/ok@2x.png': broken: "
        "'_archiver/ex.test/img/ok@2x.png' is not in the archive",
    ]
    assert {p["entry"] for p in report.to_json()["problems"]} == {
        "index.html",
        "_archiver/ex.test/css/site.css",
    }


def test_a_corrupt_byte_fails_the_checksum(mini_zim: Path, tmp_path: Path) -> None:
    data = bytearray(mini_zim.read_bytes())
    png = (
        Path(__file__).resolve().parents[2] / "testdata/trees/mini/_archiver/mini.example/img/hash#1.png"
    ).read_bytes()
    at = bytes(data).index(png[100:140])  # inside an uncompressed cluster: the read itself still works
    data[at] ^= 0xFF
    bad = tmp_path / "bad.zim"
    bad.write_bytes(bytes(data))
    report = verify(bad)
    assert report.checksum is False
    assert [str(p) for p in report.problems] == ["the MD5 checksum does not match: the file is corrupt"]


def test_metadata_rules_main_page_and_empty_entries(tmp_path: Path) -> None:
    def item(path: str, data: bytes) -> ItemSpec:
        return ItemSpec(
            path=path,
            title="",
            mimetype="text/plain",
            size=len(data),
            front=False,
            compress=True,
            chunks=lambda: [data],
        )

    zim = tmp_path / "meta.zim"
    write_zim(
        zim,
        items=[item("a.txt", b"text"), item("empty.txt", b"")],
        redirects=list,
        main="gone.html",
        metadata=lambda: {
            "Title": "A title that is much too long for a ZIM",
            "Language": "en",
            "Date": "2026-1-1",
        },
        illustration=icon._png(16, 16, b"".join(b"\0" + b"\0\0\0" * 16 for _ in range(16))),
        index_language="eng",
    )
    report = verify(zim)
    # metadata rules are warnings (formats/zim.md §6.2); an empty entry and a missing main page are
    # problems
    shown = {str(p) for p in report.problems}
    warned = {str(p) for p in report.warnings}
    assert "empty.txt: is empty (ZIM forbids empty entries)" in shown
    assert any(p.startswith("W/mainPage") for p in shown), shown
    for want in [
        "M/Name: is missing (mandatory)",
        "M/Creator: is missing (mandatory)",
        "M/Title: has 39 characters, at most 30 allowed",
        "M/Language: 'en' is not ISO 639-3 codes separated by commas (like 'eng' or 'eng,fra')",
        "M/Date: '2026-1-1' is not YYYY-MM-DD",
        "M/Illustration_48x48@1: is 16×16 pixels, not 48×48",
    ]:
        assert want in warned and want not in shown, (want, warned)


def test_not_a_zim_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    bad = tmp_path / "x.zim"
    bad.write_bytes(b"ZIM\x04 but then nothing")
    report = verify(bad)
    assert not report.ok and "not a readable ZIM file" in report.problems[0].message


def test_an_external_resource_in_another_tools_zim_is_a_problem(tmp_path: Path) -> None:
    """pack switches such references off (formats/zim.md §3.3); a ZIM written otherwise keeps them."""
    from libzim.writer import ContentProvider, Creator, Hint, Item, StringProvider  # as another tool writes

    body = page("Other", '<img src="https://cdn.test/external.png"><a href="https://away.test/">ok</a>')

    class Page(Item):  # type: ignore[misc]
        def get_path(self) -> str:
            return "index.html"

        def get_title(self) -> str:
            return "Other"

        def get_mimetype(self) -> str:
            return "text/html"

        def get_contentprovider(self) -> ContentProvider:
            return StringProvider(body.decode())

        def get_hints(self) -> dict[Hint, int]:
            return {Hint.FRONT_ARTICLE: True}

    out = tmp_path / "other.zim"
    with Creator(str(out)) as creator:
        creator.set_mainpath("index.html")
        creator.add_item(Page())
    report = verify(out)
    assert [str(p) for p in report.problems if "external" in str(p)] == [
        "index.html: <img src> 'https://cdn.test/external.png': external resource: the page needs it and "
        "it is not in the archive"
    ]
