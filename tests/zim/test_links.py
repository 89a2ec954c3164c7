"""The link checker (archiver.zim.links) against formats/vectors/zim/links.json, plus purity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.srcset import urls as srcset_urls
from archiver.zim.links import check_document, css_refs, resolve

ROOT = Path(__file__).resolve().parents[2]
VECTORS = json.loads((ROOT / "formats" / "vectors" / "zim" / "links.json").read_text("utf-8"))


@pytest.mark.parametrize("row", VECTORS["rows"], ids=lambda r: r["note"])
def test_check_document(row: dict) -> None:
    exists = set(row["exists"])
    checked, problems = check_document(
        row["doc"], row["text"].encode("utf-8"), row["type"], exists.__contains__
    )
    shown = [str(p) for p in problems]
    assert checked == row["checked"], shown
    assert len(shown) == len(row["want"]), shown
    for want in row["want"]:
        assert any(want in p for p in shown), (want, shown)


@pytest.mark.parametrize("row", VECTORS["srcset"], ids=lambda r: r.get("note", r["in"]))
def test_parse_srcset(row: dict) -> None:
    assert srcset_urls(row["in"]) == row["want"]


@pytest.mark.parametrize(
    ("doc", "ref", "want"),
    [
        ("index.html", "a.html", "a.html"),
        ("a/b/c.html", "../d.html", "a/d.html"),
        ("a/b/c.html", "./././d.html", "a/b/d.html"),
        ("a/b/c.html", "../../x%20y.png?v=1#f", "x y.png"),
        ("a/c.html", "../../x.png", None),
        ("a/c.html", "?q=1", ""),
        ("a/c.html", "%252F.png", "a/%2F.png"),
        ("a/c.html", "..", ""),
        ("a/b/c.html", "..", "a/"),
    ],
)
def test_resolve(doc: str, ref: str, want: str | None) -> None:
    assert resolve(doc, ref) == want


def test_every_mini_tree_document_is_clean() -> None:
    mini = ROOT / "testdata" / "trees" / "mini"
    files = {p.relative_to(mini).as_posix() for p in mini.rglob("*") if p.is_file()}
    seen = 0
    for path in sorted(files):
        kind = "text/css" if path.endswith(".css") else "text/html" if path.endswith(".html") else None
        if kind:
            checked, problems = check_document(path, (mini / path).read_bytes(), kind, files.__contains__)
            assert problems == [], (path, problems)
            seen += checked
    assert seen > 60


def test_css_comment_is_not_a_reference() -> None:
    refs = [r.ref for r in css_refs(b"/* url(a.png) */ b { background: url(b.png) }")]
    assert refs == ["b.png"]


def test_only_write_imports_the_writer_and_only_read_the_reader() -> None:
    for path in (ROOT / "archiver" / "zim").glob("*.py"):
        text = path.read_text("utf-8")
        if "libzim.writer" in text.replace("``libzim.writer``", ""):
            assert path.name == "write.py", path
        for module in ("libzim.reader", "libzim.search", "libzim.suggestion"):
            if f"from {module}" in text or f"import {module}" in text:
                assert path.name == "read.py", path


def test_the_fixture_site_is_read_without_error_and_its_absolute_links_are_flagged() -> None:
    # testdata/site is a live site (root-absolute links), not a tree: every such link is a problem
    site = ROOT / "testdata" / "site"
    files = {p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()}
    absolute = 0
    for path in sorted(files):
        kind = "text/css" if path.endswith(".css") else "text/html" if path.endswith(".html") else None
        if kind:
            _, problems = check_document(path, (site / path).read_bytes(), kind, files.__contains__)
            absolute += sum("root-absolute" in p.message for p in problems)
    assert absolute > 400
    srcset = (site / "blog/2026/02/srcset-and-commas.html").read_bytes()
    doc = "blog/2026/02/srcset-and-commas.html"
    _, problems = check_document(doc, srcset, "text/html", files.__contains__)
    assert {"/img/w_300,c_fill/photo.jpg", "/img/w_1200,c_fill/photo.jpg"} <= {p.ref for p in problems}


@settings(max_examples=200)
@given(st.binary(max_size=400), st.sampled_from(["text/html", "text/css"]))
def test_any_bytes_are_checked_without_raising(data: bytes, media_type: str) -> None:
    checked, problems = check_document("a/b.html", data, media_type, lambda p: False)
    # every problem but a bad <base href> belongs to a counted reference
    assert len([p for p in problems if p.where != "<base href>"]) <= checked


@settings(max_examples=200)
@given(st.text(alphabet="<>=\"' /abcimgsrcetlyhfu():;,.#?%\n", max_size=200))
def test_html_like_text_is_checked_without_raising(text: str) -> None:
    check_document("index.html", text.encode(), "text/html", lambda p: True)
    check_document("s.css", text.encode(), "text/css", lambda p: True)
