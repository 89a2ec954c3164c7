"""References to other sites that a page loads are switched off in the ZIM (formats/zim.md §3.3):
the ZIM passes verify and zimcheck -X, navigation links stay, and extract gives the original bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from archiver.html_refs import EMBEDDED, attribute_refs
from archiver.zim import extract, pack, verify
from archiver.zim.links import check_document, external, html_refs
from archiver.zim.offline import CSS_MARK, PREFIX, stylesheet, switch_off, undo_markers
from archiver.zim.zimsafe import restore, start_tags, zimcheck_safe

from .conftest import MakeTree, page, tree_files
from .test_interop import ZIMCHECK

# Every (tag, attribute) that may hold a URL, loading or not, each with an external URL of its own.
ROWS = [
    '<img src="https://ext.test/1.png">',
    '<img srcset="https://ext.test/2.png 1x, local.png 2x">',
    '<picture><source srcset="https://ext.test/3.webp"><source src="https://ext.test/4.webm"></picture>',
    '<video src="https://ext.test/5.mp4" poster="https://ext.test/6.jpg"><track src="https://ext.test/7.vtt"></video>',
    '<audio src="https://ext.test/8.mp3"></audio>',
    '<iframe src="https://ext.test/9.html"></iframe>',
    '<embed src="https://ext.test/10.swf">',
    '<object data="https://ext.test/11.pdf"></object>',
    '<input type="image" src="https://ext.test/12.png">',
    '<input type="text" src="https://ext.test/13.png">',
    '<table background="https://ext.test/14.png"><tr background="https://ext.test/15.png">'
    '<td background="https://ext.test/16.png">x</td></tr></table>',
    '<link rel="stylesheet" href="https://ext.test/17.css">',
    '<link rel="icon" href="//ext.test/18.ico">',
    '<link rel="preload" as="image" href="https://ext.test/19.png" imagesrcset="https://ext.test/20.png 2x">',
    '<link rel="canonical" href="https://ext.test/21.html">',
    '<a href="https://ext.test/22.html">away</a>',
    '<area href="https://ext.test/23.html">',
    '<form action="https://ext.test/24"></form>',
    '<blockquote cite="https://ext.test/25"></blockquote>',
    '<svg><image href="https://ext.test/26.png"></image><use xlink:href="https://ext.test/27.svg#a"></use></svg>',
    '<script src="https://ext.test/28.js"></script>',
    '<frameset><frame src="https://ext.test/29.html"></frameset>',
]
DOC = page("Rows", "\n".join(ROWS))


def _loaded_by_table(data: bytes) -> set[str]:
    urls = set()
    for tag in start_tags(data):
        first: dict[str, str] = {}
        for a in tag.attributes:
            first.setdefault(a.name, a.value)
        for found in attribute_refs(tag.name, first):
            if found.use in EMBEDDED:
                urls.update(found.value.replace(",", " ").split() if found.srcset else [found.value])
    return {u for u in urls if u.startswith(("https://ext.test/", "//ext.test/"))}


def test_the_byte_walker_finds_what_the_link_checker_parses() -> None:
    checked = {r.ref for r in html_refs(DOC) if r.embedded and "ext.test" in r.ref}
    assert checked == _loaded_by_table(DOC)
    assert {"https://ext.test/22.html", "https://ext.test/21.html", "https://ext.test/13.png"}.isdisjoint(
        checked
    )


def test_external() -> None:
    assert external("https://a.test/x") and external(" HTTP://a.test/") and external("//a.test/x")
    assert not any(
        external(r) for r in ("x.png", "../a/b.png", "data:,x", "#top", "", "mailto:a@b", "a:b/c"[4:])
    )


def test_switched_off_page_keeps_its_dom_and_gives_the_bytes_back() -> None:
    renames = switch_off(DOC)
    out, edits = zimcheck_safe(DOC, renames, undo_markers)
    assert len([e for e in edits if e.new == PREFIX]) == len(renames) >= 20
    assert restore(out, edits) == DOC
    renamed_dom = (LexborHTMLParser(out).html or "").replace(" " + PREFIX.decode(), " ")
    assert renamed_dom == LexborHTMLParser(DOC).html
    _, problems = check_document("rows.html", out, "text/html", lambda p: p == "local.png")
    assert [p for p in problems if "external" in p.message] == []
    for kept in (
        b'<a href="https://ext.test/22.html"',
        b'<form action="https://ext.test/24"',
        b'rel="canonical"',
    ):
        assert kept in out


def test_an_external_srcset_candidate_after_local_ones_is_seen() -> None:
    """The first look finds an external candidate that is not a srcset's first (an import keeps the
    absolute URL of a candidate its archive lacks after the ones it holds): switched off too."""
    for tag in (
        '<img src="a.png" srcset="a.png 1x, https://ext.test/b.png 2x">',
        "<img src=a.png srcset='a.png 300w,\n //ext.test/b.png 600w'>",
        '<link rel="preload" as="image" href="a.png" imagesrcset="a.png 1x, https://ext.test/b.png 2x">',
    ):
        doc = page("Later", tag)
        out, _ = zimcheck_safe(doc, switch_off(doc), undo_markers)
        assert PREFIX + b"srcset" in out or PREFIX + b"imagesrcset" in out, tag
        _, problems = check_document("later.html", out, "text/html", lambda p: p == "a.png")
        assert [p for p in problems if "external" in p.message] == [], tag


def test_what_is_never_touched() -> None:
    body = (
        "<script>document.write('<img src=\"https://ext.test/a.png\">')</script>"
        '<!-- <img src="https://ext.test/b.png"> --><textarea><img src="https://ext.test/c.png"></textarea>'
        '<p>text: &lt;img src="https://ext.test/d.png"&gt;</p><img src="local.png" alt="https://ext.test/e">'
    )
    assert switch_off(page("Untouched", body)) == []
    holder = page("Holder", f'<img {PREFIX.decode()}src="https://x.test/" src="https://ext.test/f.png">')
    assert switch_off(holder) == []  # could not be undone by name alone


def test_a_duplicate_attribute_cannot_take_the_first_ones_place() -> None:
    doc = page("Dup", '<img src="https://ext.test/a.png" SRC="local.png">')
    out, _ = zimcheck_safe(doc, switch_off(doc), undo_markers)
    img = LexborHTMLParser(out).css_first("img")
    assert img is not None and "src" not in img.attributes


CSS = (
    '@charset "utf-8";\r\n@import url("https://fonts.test/css?family=A");\r\n'
    "body { background: URL( https://cdn.test/a.png ) }\n/* url(https://cdn.test/comment.png) */\n"
    '.a { background-image: image-set("https://cdn.test/1.png" 1x, "local.png" 2x) }\n'
    "@font-face { font-family: X; src: url(local.woff2), url('//cdn.test/x.woff2') }\n"
    ".é { background: url(//cdn.test/é.png) } .b { background: url(#frag) url(data:,x) url(local.png) }\n"
).encode()


def test_a_stylesheet_is_switched_off_and_given_back() -> None:
    out, edits = stylesheet(CSS)
    assert len(edits) == 5 and all(e.new == CSS_MARK for e in edits)
    text = out.decode()
    assert 'url("about:invalid#https://fonts.test/css?family=A")' in text
    assert (
        "URL( about:invalid#https://cdn.test/a.png )" in text
        and "url(about:invalid#//cdn.test/é.png)" in text
    )
    assert "/* url(https://cdn.test/comment.png) */" in text  # comments are not references
    assert "url(local.png)" in text and '"local.png" 2x' in text
    assert restore(out, edits) == CSS
    assert stylesheet(out) == (out, [])  # a marked file is left alone
    assert stylesheet(b"\xef\xbb\xbf" + CSS)[0][3:] == out  # a BOM
    assert stylesheet(CSS.replace(b"\xc3\xa9", b"\xe9")) == (
        CSS.replace(b"\xc3\xa9", b"\xe9"),
        [],
    )  # not UTF-8
    _, problems = check_document("site.css", out, "text/css", lambda p: True)
    assert problems == []


def test_style_elements_and_attributes() -> None:
    body = (
        '<style>.h { background: url("https://cdn.test/h.png") }</style>'
        '<div style="background:url(https://cdn.test/d.png)">d</div>'
        '<div style="background:url(&quot;https://cdn.test/e.png&quot;)">e</div>'
    )
    doc = page("Styles", body)
    out, edits = zimcheck_safe(doc, switch_off(doc), undo_markers)
    assert (
        out.count(CSS_MARK) == 2 and b"https://cdn.test/e.png&quot;" in out
    )  # written with a reference: kept
    assert restore(out, edits) == doc
    assert undo_markers(LexborHTMLParser(out).html or "") == LexborHTMLParser(doc).html


def test_pack_verify_zimcheck_extract(make_tree: MakeTree, tmp_path: Path) -> None:
    files = {
        "index.html": page(
            "Home", '<a href="video.html">video</a> <a href="https://elsewhere.test/">away</a>'
        ),
        "video.html": page(
            "Video",
            '<video src="https://cdn.test/clip.mp4" poster="_archiver/ex.test/p.png"></video>'
            '<img src="https://www.tracker.test/pixel.gif" alt=""><iframe src="https://video.test/embed/1"></iframe>',
            head='<link rel="stylesheet" href="https://fonts.test/css?family=X">'
            '<link rel="stylesheet" href="_archiver/ex.test/site.css">',
        ),
        "_archiver/ex.test/p.png": b"\x89PNG\r\n\x1a\n" + b"\0" * 64,
        "_archiver/ex.test/site.css": b'@import "https://fonts.test/a.css";\nbody { background: url(p.png) }',
    }
    tree = make_tree(files)
    result = pack(tree, tmp_path / "out.zim")
    assert any("5 reference(s) to other sites" in w and "2 file(s)" in w for w in result.warnings)
    report = verify(result.path)
    assert report.ok, report
    run = subprocess.run(
        [*ZIMCHECK, str(result.path)], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0 and "[ERROR]" not in run.stdout, run.stdout
    extract(result.path, tmp_path / "back")
    assert tree_files(tmp_path / "back") == tree_files(tree)


def _pack_command(tree: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "archiver", "pack", str(tree), "--format", "zim", "-o", str(out), *flags]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def test_the_command_says_what_it_switched_off(make_tree: MakeTree, tmp_path: Path) -> None:
    tree = make_tree({"index.html": page("Home", '<img src="https://cdn.test/a.png" alt="">')})
    run = _pack_command(tree, tmp_path / "a.zim")
    assert run.returncode == 0, run.stderr
    assert "1 reference(s) to other sites that pages load" in run.stderr and "index.html" in run.stderr
    run = _pack_command(tree, tmp_path / "b.zim", "--json")
    assert run.returncode == 0 and run.stderr == ""
    assert any("switched off" in w for w in json.loads(run.stdout)["warnings"])
