"""The fixture site captured with rendering (once per session, see conftest.py): every page at its
canonical path, every edge case localised, no origin left, the tree and manifest consistent."""

from __future__ import annotations

import hashlib
import json
import re
from urllib.parse import unquote

import pytest
from selectolax.lexbor import LexborHTMLParser

from archiver import urls
from archiver.css_refs import references
from archiver.fixture import JS_MARKER, JS_PAGE, site_root
from archiver.tree import read_header, read_records
from tests.capture.conftest import Captured

pytestmark = pytest.mark.browser

SITE = site_root()
PAGES = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html") if "private" not in p.parts)
BROKEN_ON_PURPOSE = {"docs/this-page-does-not-exist.html"}


def _html(c: Captured, path: str) -> str:
    return (c.out / path).read_text(encoding="utf-8")


def _doc(c: Captured, path: str) -> LexborHTMLParser:
    return LexborHTMLParser(_html(c, path))


def _target(page: str, href: str) -> str:
    """The tree path a relative href in ``page`` points at (query and fragment dropped)."""
    href = href.split("#", 1)[0]
    parts = page.split("/")[:-1]
    for seg in href.split("/"):
        if seg == "..":
            parts.pop()
        elif seg not in ("", "."):
            parts.append(unquote(seg))
    return "/".join(parts)


def _refs_in_html(doc: LexborHTMLParser) -> list[str]:
    out = []
    for node in doc.root.traverse(include_text=False) if doc.root else []:
        for name, value in node.attributes.items():
            if value is None:
                continue
            if name in ("href", "src", "poster", "background", "data", "xlink:href"):
                out.append(value)
            elif name in ("srcset", "imagesrcset"):
                from archiver.srcset import parse

                out += [c.url for c in parse(value)]
            elif name == "style":
                out += [r for r, _ in references(value)]
        if node.tag == "style":
            out += [r for r, _ in references(node.text())]
        if node.tag == "meta" and (node.attributes.get("http-equiv") or "").lower() == "refresh":
            out.append((node.attributes.get("content") or "").split("url=", 1)[-1])
    return out


def _is_relative(ref: str) -> bool:
    return bool(ref) and not ref.startswith("#") and urls.ref_action(ref) == "fetch" and "://" not in ref


# ---- pages and paths


def test_every_page_is_at_its_canonical_path(rendered: Captured) -> None:
    for page in PAGES:
        assert (rendered.out / page).is_file(), page
    assert not (rendered.out / "private").exists()  # robots.txt disallows it
    assert rendered.report.complete


def test_every_local_reference_resolves_to_a_stored_file(rendered: Captured) -> None:
    stored = {r.path for r in read_records(rendered.out)}
    missing = []
    for path in sorted(stored):
        if path.endswith(".html"):
            refs = _refs_in_html(_doc(rendered, path))
        elif path.endswith(".css"):
            refs = [r for r, _ in references(_html(rendered, path))]
        else:
            continue
        for ref in refs:
            if _is_relative(ref):
                target = _target(path, ref)
                if target not in stored and target not in BROKEN_ON_PURPOSE:
                    missing.append((path, ref, target))
    assert missing == []


def test_no_reference_to_the_origin_except_what_the_tree_does_not_hold(rendered: Captured) -> None:
    """Everything captured is reached by a relative link. What the tree does not hold keeps its
    absolute URL, so it still works from disk: robots.txt-disallowed pages and skip-list media
    (tree.md §6.3), and the deliberately broken link; the report lists exactly those."""
    absent = {
        i.url for i in rendered.report.items if i.outcome in ("skipped", "failed", "unconfirmed", "refused")
    }
    pattern = re.compile(re.escape(rendered.origin) + r"[^\"'\s)<>]*")
    for path in [r.path for r in read_records(rendered.out) if r.path.endswith((".html", ".css"))]:
        for url in pattern.findall(_html(rendered, path)):
            key = urls.dedup_key(urls.canonicalize(url))
            assert key in absent, (path, url)
    left = {u.removeprefix(rendered.origin) for u in absent if u.startswith(rendered.origin)}
    assert left == {
        "/private/",
        "/media/field-notes.mp4",
        "/downloads/field-checklist.pdf",
        "/docs/this-page-does-not-exist.html",
    }


def test_an_empty_href_becomes_the_relative_link_to_the_page_itself(rendered: Captured) -> None:
    """``<a href="">`` names the page itself: written like every other in-scope link (a relative
    path), not left empty for link checkers (zimcheck) to trip over; ``href="#"`` stays as written."""
    doc = _doc(rendered, "demo/links.html")
    hrefs = {(a.text(strip=True), a.attributes.get("href")) for a in doc.css("a")}
    assert ("empty href (this page)", "links.html") in hrefs
    assert not [text for text, href in hrefs if href == ""]


def test_external_links_stay_absolute(rendered: Captured) -> None:
    text = _html(rendered, "demo/links.html")
    for href in [
        "https://example.org/birds/heron",
        "https://cdn.example.net/lib.css",
        "http://example.org/protocol-relative",
        "HTTPS://EXAMPLE.ORG/Upper-Case",
        "mailto:field-guide@example.org?subject=Hello",
        "tel:+15555550123",
        "data:text/plain,hello%20marsh",
    ]:
        assert f'href="{href}"' in text, href
    assert f'href="{rendered.server.url}docs/this-page-does-not-exist.html"' in text  # not in the tree: live
    assert 'href="javascript:' not in text
    index = _html(rendered, "index.html")
    assert 'rel="canonical" href="https://fieldguide.example/"' in index


def test_no_scripts_and_a_charset_everywhere(rendered: Captured) -> None:
    for page in PAGES:
        text = _html(rendered, page)
        assert "<script" not in text.lower() and " onclick=" not in text.lower(), page
        assert text.startswith("<!DOCTYPE html>"), page
        assert text.count('<meta charset="utf-8">') == 1, page


# ---- the edge cases, one test each


def test_srcset_with_commas(rendered: Captured) -> None:
    h = rendered.host_dir.replace(":", "%3A")
    gallery = _html(rendered, "gallery/index.html")
    assert (
        f'srcset="../{h}/img/w_300,c_fill/photo.jpg 300w, ../{h}/img/w_600,c_fill/photo.jpg 600w, '
        f'../{h}/img/w_1200,c_fill/photo.jpg 1200w"'
    ) in gallery
    post = _html(rendered, "blog/2026/02/srcset-and-commas.html")
    assert (
        f"../../../{h}/img/w_600,c_fill/photo.jpg 600w, ../../../{h}/img/w_1200,c_fill/photo.jpg 1200w"
        in post
    )
    for size in (300, 600, 1200):
        assert (rendered.out / rendered.host_dir / f"img/w_{size},c_fill/photo.jpg").is_file()


def test_picture_and_source(rendered: Captured) -> None:
    doc = _doc(rendered, "gallery/index.html")
    picture = doc.css_first("picture")
    assert picture is not None
    sources = [s.attributes["srcset"] for s in picture.css("source")]
    assert [s.rsplit("/", 1)[-1] for s in sources] == ["heron-wide.webp", "heron.avif", "heron.webp 1x"]
    img = picture.css_first("img")
    assert img is not None and img.parent is not None and img.parent.tag == "picture"
    for name in ("heron-wide.webp", "heron.avif", "heron.webp", "heron.jpg"):
        assert (rendered.out / rendered.host_dir / "img/picture" / name).is_file()


def test_import_chain_four_levels_and_cycle(rendered: Captured) -> None:
    css = rendered.out / rendered.host_dir / "css"
    chain = [("main.css", "base.css"), ("base.css", "reset.css"), ("reset.css", "vendor/normalize.css")]
    for sheet, imported in chain:
        refs = [r for r, role in references((css / sheet).read_text()) if role == "import"]
        assert imported.rsplit("/", 1)[-1] in [r.rsplit("/", 1)[-1] for r in refs], sheet
    assert "../../img/bg/grid.png" in (css / "vendor/normalize.css").read_text()
    assert (css / "cycle-a.css").is_file() and (css / "cycle-b.css").is_file()
    gets = [r.path for r in rendered.requests]
    assert gets.count("/css/cycle-a.css") == 1 and gets.count("/css/cycle-b.css") == 1


def test_image_set(rendered: Captured) -> None:
    theme = (rendered.out / rendered.host_dir / "css/theme__q-951eba.css").read_text()
    assert 'image-set("../img/bg/texture-1x.png" 1x, "../img/bg/texture-2x.png" 2x)' in theme
    assert 'image-set(url("../img/bg/texture.avif") type("image/avif")' in theme
    assert "-webkit-image-set(url(../img/bg/texture-1x.png) 1x" in theme
    assert (
        "url(../img/we\\(ird\\).png)" in theme
        and (rendered.out / rendered.host_dir / "img/we(ird).png").is_file()
    )


def test_url_in_a_css_comment_is_not_fetched(rendered: Captured) -> None:
    assert "/img/commented-out.png" not in [r.path for r in rendered.requests]
    main = (rendered.out / rendered.host_dir / "css/main.css").read_text()
    assert "url(/img/commented-out.png)" in main  # the comment is kept as it was


def test_data_uri_in_css_is_left_alone(rendered: Captured) -> None:
    theme = (rendered.out / rendered.host_dir / "css/theme__q-951eba.css").read_text()
    assert "url(data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==)" in theme
    assert "data:image/svg+xml,%3Csvg" in theme


def test_inline_style_and_style_element(rendered: Captured) -> None:
    h = rendered.host_dir.replace(":", "%3A")
    text = _html(rendered, "demo/styles.html")
    assert f'@import url("../{h}/css/print.css") print;' in text
    assert f"url(../{h}/img/inline/banner.png)" in text
    # each keeps its own quotes (css_refs rewrites only the changed value)
    assert f"url(&quot;../{h}/img/inline/tile.png&quot;)" in text
    assert f"url('../{h}/img/inline/tile.png')" in text


def test_web_fonts(rendered: Captured) -> None:
    base = (rendered.out / rendered.host_dir / "css/base.css").read_text()
    for ext in ("woff2", "woff", "ttf"):
        assert f"../fonts/acme-field-sans.{ext}" in base
        stored = rendered.out / rendered.host_dir / f"fonts/acme-field-sans.{ext}"
        assert stored.read_bytes() == (SITE / f"fonts/acme-field-sans.{ext}").read_bytes()


def test_lazy_images(rendered: Captured) -> None:
    doc = _doc(rendered, "demo/lazy.html")
    srcs = [i.attributes.get("src", "") for i in doc.css("img")]
    assert any(s.endswith("img/lazy/deferred.png") for s in srcs)
    assert not any("placeholder.gif" in s for s in srcs)
    text = _html(rendered, "demo/lazy.html")
    assert "data-src" not in text and 'loading="lazy"' not in text
    assert (rendered.out / rendered.host_dir / "img/lazy/deferred@2x.png").is_file()


def test_iframe(rendered: Captured) -> None:
    doc = _doc(rendered, "demo/iframe.html")
    frames = doc.css("iframe")
    assert frames[0].attributes["src"] == "embedded.html"
    assert frames[1].attributes.get("srcdoc") is not None
    embedded = _html(rendered, "demo/embedded.html")
    assert "img/embedded/map.png" in embedded and 'href="../docs/index.html"' in embedded


def test_query_string_assets(rendered: Captured) -> None:
    h = rendered.host_dir.replace(":", "%3A")
    index = _html(rendered, "index.html")
    assert f'href="{h}/css/theme__q-951eba.css"' in index
    logo = urls.local_path(
        rendered.server.url + "img/logo.png?v=3&size=2", kind="asset", home=rendered.server.url
    )
    assert (rendered.out / logo).is_file() and logo.rsplit("/", 1)[-1].startswith("logo__q-")


def test_odd_names_spaces_non_ascii_question_mark_hash(rendered: Captured) -> None:
    h = rendered.host_dir.replace(":", "%3A")
    assert (rendered.out / "café menu/index.html").is_file() and (rendered.out / "demo/what?.html").is_file()
    assert (rendered.out / rendered.host_dir / "img/a b.png").is_file()
    assert (rendered.out / rendered.host_dir / "img/hash#1.png").is_file()
    gallery = _html(rendered, "gallery/index.html")
    assert f'src="../{h}/img/a%20b.png"' in gallery and f'src="../{h}/img/hash%231.png"' in gallery
    demo = _html(rendered, "demo/index.html")
    assert 'href="what%3F.html"' in demo and 'href="../caf%C3%A9%20menu/index.html"' in demo


def test_javascript_generated_content(rendered: Captured) -> None:
    text = _html(rendered, JS_PAGE)
    assert JS_MARKER in text and 'data-state="ready"' in text and 'data-module="ready"' in text
    assert "img/js/built.png" in text and (rendered.out / rendered.host_dir / "img/js/built.png").is_file()


def test_inline_svg(rendered: Captured) -> None:
    h = rendered.host_dir.replace(":", "%3A")
    text = _html(rendered, "gallery/svg.html")
    assert '<circle cx="60" cy="50" r="24" fill="#aa7828"></circle>' in text
    assert f'<image href="../{h}/img/svg/badge.png"' in text
    assert (
        f'xlink:href="../{h}/img/icons.svg#icon-leaf"' in text
        and f'href="../{h}/img/icons.svg#icon-bird"' in text
    )


def test_base_href_resolution(rendered: Captured) -> None:
    text = _html(rendered, "demo/base-href.html")
    assert "<base" not in text
    assert (
        'href="../docs/guide/install/index.html"' in text and 'href="../docs/reference/glossary.html"' in text
    )


def test_legacy_markup(rendered: Captured) -> None:
    text = _html(rendered, "legacy.html")
    h = rendered.host_dir.replace(":", "%3A")
    assert f'background="{h}/img/bg/paper.png"' in text
    assert 'href="docs/index.html"' in text and 'href="gallery/index.html"' in text
    assert (rendered.out / rendered.host_dir / "img/legacy/SPACER.GIF").is_file()


# ---- manifest and report


def test_manifest_matches_the_files(rendered: Captured) -> None:
    header = read_header(rendered.out)
    assert header is not None and header.home == rendered.server.url and "incomplete" not in header.options
    records = list(read_records(rendered.out))
    paths = [r.path for r in records]
    assert paths == sorted(paths) and len(paths) == len(set(paths))
    on_disk = sorted(
        p.relative_to(rendered.out).as_posix()
        for p in rendered.out.rglob("*")
        if p.is_file()
        and p.parent != rendered.out / "_archiver"
        and not p.is_relative_to(rendered.out / "_archiver/search")  # the index (tree.md §9.4): no record
    )
    assert on_disk == paths
    assert (rendered.out / "_archiver/search/manifest.js").is_file()
    for r in records:
        data = (rendered.out / r.path).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (r.size, r.sha256), r.path
    by_path = {r.path: r for r in records}
    assert by_path["index.html"].title == "Home — Acme Field Guide" and by_path["index.html"].depth == 0
    assert set(by_path["docs/guide/index.html"].urls) >= {
        rendered.server.url + "docs/guide/",
        rendered.server.url + "docs/guide/index.html",
    }
    lines = (rendered.out / "_archiver/manifest.jsonl").read_text().splitlines()
    assert len(lines) == len(records) + 1 and json.loads(lines[0])["format"] == "archiver-tree"


def test_report_outcomes(rendered: Captured) -> None:
    report = rendered.report
    # every fixture page, plus /blog/index.html?page=2 (a query makes it another page: tree.md §4.2)
    assert report.pages == len(PAGES) + 1 and report.complete
    assert (
        rendered.out
        / urls.local_path(
            rendered.server.url + "blog/index.html?page=2", kind="page", home=rendered.server.url
        )
    ).is_file()
    broken = report.outcome(rendered.server.url + "docs/this-page-does-not-exist.html")
    assert broken is not None and (broken.outcome, broken.status) == ("failed", 404)
    private = report.outcome(rendered.server.url + "private/")
    assert private is not None and (private.outcome, private.reason) == (
        "skipped",
        "disallowed by robots.txt",
    )
    video = report.outcome(rendered.server.url + "media/field-notes.mp4")
    assert video is not None and (video.outcome, video.reason) == ("skipped", "skip list")
    assert not [i for i in report.items if "internal error" in i.reason]
    assert "/media/field-notes.mp4" not in [
        r.path for r in rendered.requests
    ]  # never fetched, even by the browser


def test_each_resource_is_fetched_once(rendered: Captured) -> None:
    from collections import Counter

    gets = Counter(r.target for r in rendered.requests if r.method == "GET")
    assert {t: n for t, n in gets.items() if n > 1} == {}


def test_identical_pages_are_stored_once(rendered: Captured) -> None:
    """/blog/index.html?page=2 is the same document as /blog/ (the server ignores the query), in the
    same folder, so the same bytes: the second file is a hard link to the first."""
    first = rendered.out / "blog/index.html"
    second = rendered.out / urls.local_path(
        rendered.server.url + "blog/index.html?page=2", kind="page", home=rendered.server.url
    )
    assert first.read_bytes() == second.read_bytes()
    assert first.stat().st_ino == second.stat().st_ino
