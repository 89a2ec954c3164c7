"""The fixture site (testdata/site) covers the edge cases every later test relies on.

Pure file checks: nothing is served here (tests/test_fixture.py does that). Pages are parsed with lxml,
CSS with tinycss2; URLs are resolved like a browser would, against the page's URL (or its <base href>)
on a pretend host, then mapped back to files.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections import deque
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import lxml.etree
import lxml.html
import pytest
import tinycss2

from archiver.fixture import load_generated, site_root

SITE = site_root()
HOST = "http://site.test/"
GENERATED = load_generated(SITE)
MISSING_ON_PURPOSE = {"/img/commented-out.png"}  # named only inside a CSS comment
BROKEN_LINKS_ON_PURPOSE = {"/docs/this-page-does-not-exist.html"}
AUTO_LOADED_LINK_RELS = {"stylesheet", "icon", "shortcut", "preload", "manifest", "apple-touch-icon"}


# --------------------------------------------------------------------------------------------- helpers


def rel(path: Path) -> str:
    return path.relative_to(SITE).as_posix()


def url_of(path: Path) -> str:
    return HOST + quote(rel(path))


def html_files() -> list[Path]:
    return sorted(SITE.rglob("*.html"))


def css_files() -> list[Path]:
    return sorted(SITE.rglob("*.css"))


def is_local(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "http" and parts.netloc == "site.test"


def url_path(url: str) -> str:
    """The decoded path of a local URL (query and fragment dropped)."""
    return unquote(urlsplit(urldefrag(url)[0]).path)


def file_for(url: str) -> Path | None:
    """The file a local URL names (a directory means its index.html), or None if nothing is there."""
    path = url_path(url)
    target = SITE.joinpath(*[segment for segment in path.split("/") if segment])
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def exists(url: str) -> bool:
    return file_for(url) is not None or url_path(url) in GENERATED


@cache
def document(path: Path) -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(path.read_text(encoding="utf-8"))


def base_of(path: Path) -> str:
    doc = document(path)
    base = doc.find(".//head/base[@href]")
    return urljoin(url_of(path), base.get("href").strip()) if base is not None else url_of(path)


def anchors(path: Path) -> list[tuple[str, str]]:
    """(raw href, resolved URL) of every <a href> on a page."""
    base = base_of(path)
    return [
        (a.get("href"), urljoin(base, a.get("href").strip()))
        for a in document(path).iter("a")
        if a.get("href") is not None
    ]


def parse_srcset(value: str) -> list[str]:
    """The URLs of a srcset, per the HTML parsing rules (a comma inside a URL belongs to the URL)."""
    urls: list[str] = []
    pos, n = 0, len(value)
    while True:
        while pos < n and (value[pos].isspace() or value[pos] == ","):
            pos += 1
        if pos >= n:
            return urls
        start = pos
        while pos < n and not value[pos].isspace():
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            urls.append(url.rstrip(","))
            continue
        urls.append(url)
        depth = 0
        while pos < n:
            char = value[pos]
            pos += 1
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(0, depth - 1)
            elif char == "," and depth == 0:
                break


def css_token_urls(tokens: list) -> Iterator[str]:
    """URLs in component values: url(...) in both forms, and bare strings inside image-set()."""
    for token in tokens:
        if token.type == "url":
            yield token.value
        elif token.type == "function":
            if token.lower_name == "url":
                yield from (arg.value for arg in token.arguments if arg.type == "string")
                continue
            if token.lower_name in ("image-set", "-webkit-image-set"):
                yield from (arg.value for arg in token.arguments if arg.type == "string")
            yield from css_token_urls(token.arguments)
        elif token.type in ("() block", "[] block", "{} block"):
            yield from css_token_urls(token.content)


def import_target(rule: tinycss2.ast.AtRule) -> str | None:
    for token in rule.prelude:
        if token.type in ("string", "url"):
            return token.value
        if token.type == "function" and token.lower_name == "url":
            return next(arg.value for arg in token.arguments if arg.type == "string")
    return None


def css_rules(text: str) -> list:
    return tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)


def css_urls(text: str) -> tuple[list[str], list[str]]:
    """(imports, other URLs) of a stylesheet, as written, comments skipped."""
    imports: list[str] = []
    urls: list[str] = []
    for rule in css_rules(text):
        if rule.type == "at-rule" and rule.lower_at_keyword == "import":
            target = import_target(rule)
            if target is not None:
                imports.append(target)
            continue
        if rule.type in ("qualified-rule", "at-rule"):
            urls.extend(css_token_urls(rule.prelude))
            urls.extend(css_token_urls(rule.content or []))
    return imports, urls


def declaration_urls(style: str) -> list[str]:
    return list(css_token_urls(tinycss2.parse_component_value_list(style, skip_comments=True)))


def import_graph() -> dict[str, list[str]]:
    graph: dict[str, list[str]] = {}
    for css in css_files():
        imports, _ = css_urls(css.read_text(encoding="utf-8"))
        graph[url_of(css)] = [urljoin(url_of(css), target) for target in imports]
    return graph


def html_references(path: Path) -> list[tuple[str, str]]:
    """(what, resolved URL) of everything a browser loads by itself from a page."""
    doc = document(path)
    base = base_of(path)
    found: list[tuple[str, str]] = []

    def add(what: str, value: str | None) -> None:
        if value is not None and value.strip():
            found.append((what, urljoin(base, value.strip())))

    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if tag == "img":
            add("img src", el.get("src"))
            add("img data-src", el.get("data-src"))
            for attr in ("srcset", "data-srcset"):
                for url in parse_srcset(el.get(attr) or ""):
                    add(f"img {attr}", url)
        elif tag == "source":
            add("source src", el.get("src"))
            for url in parse_srcset(el.get("srcset") or ""):
                add("source srcset", url)
        elif tag == "link":
            rels = set((el.get("rel") or "").lower().split())
            if rels & AUTO_LOADED_LINK_RELS:
                add("link href", el.get("href"))
            for url in parse_srcset(el.get("imagesrcset") or ""):
                add("link imagesrcset", url)
        elif tag in ("script", "iframe", "video", "audio", "track", "embed"):
            add(f"{tag} src", el.get("src"))
            add(f"{tag} poster", el.get("poster"))
        elif tag == "body":
            add("body background", el.get("background"))
        elif tag in ("image", "use"):
            add(f"svg {tag}", el.get("href") or el.get("xlink:href"))
        elif tag == "style":
            imports, urls = css_urls(el.text or "")
            for url in imports + urls:
                add("<style>", url)
        if el.get("style"):
            for url in declaration_urls(el.get("style")):
                add("style attribute", url)
    return [(what, url) for what, url in found if not url.startswith("data:")]


def crawl() -> tuple[set[Path], set[str]]:
    """BFS over <a href> from /index.html: (pages reached, local paths that name nothing)."""
    start = SITE / "index.html"
    seen = {start}
    missing: set[str] = set()
    queue = deque([start])
    while queue:
        page = queue.popleft()
        for _, url in anchors(page):
            if not is_local(url):
                continue
            target = file_for(url)
            if target is None:
                if url_path(url) not in GENERATED:
                    missing.add(url_path(url))
            elif target.suffix == ".html" and target not in seen:
                seen.add(target)
                queue.append(target)
    return seen, missing


def all_css_text() -> str:
    return "\n".join(css.read_text(encoding="utf-8") for css in css_files())


def all_anchor_hrefs() -> list[str]:
    return [href for page in html_files() for href, _ in anchors(page)]


# ------------------------------------------------------------------------------------ size and shape


def test_at_least_30_pages_over_3_directory_levels() -> None:
    pages = html_files()
    assert len(pages) >= 30
    depths = {len(page.relative_to(SITE).parts) - 1 for page in pages}
    assert max(depths) >= 3
    assert {0, 1, 2, 3} <= depths


def test_every_page_is_reachable_from_the_home_page_by_links() -> None:
    reached, missing = crawl()
    assert set(html_files()) - reached == set()
    assert missing == BROKEN_LINKS_ON_PURPOSE


@pytest.mark.parametrize("page", html_files(), ids=rel)
def test_every_page_has_doctype_lang_charset_title(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert re.match(r"<!DOCTYPE html>\n", text, re.IGNORECASE)
    assert '<html lang="en">' in text
    doc = document(page)
    assert doc.get("lang") == "en"
    assert [m.get("charset").lower() for m in doc.iter("meta") if m.get("charset")] == ["utf-8"]
    assert doc.findtext(".//title").strip()


def test_committed_site_is_small() -> None:
    total = sum(path.stat().st_size for path in SITE.rglob("*") if path.is_file())
    assert total < 1_000_000


def test_readme_describes_every_page() -> None:
    readme = (SITE / "README.md").read_text(encoding="utf-8")
    for page in html_files():
        assert rel(page) in readme, rel(page)


# ------------------------------------------------------------------------------------------- links


def test_link_forms() -> None:
    pairs = [(page, href, url) for page in html_files() for href, url in anchors(page)]
    hrefs = [href.strip() for _, href, _ in pairs]
    assert any(h.startswith("../") for h in hrefs), "relative parent link"
    assert any(h.startswith("./") for h in hrefs), "relative ./ link"
    assert any(h.startswith("/") and h.endswith("/") and len(h) > 1 for h in hrefs), "root-absolute directory"
    assert any(h.endswith("index.html") for h in hrefs), "explicit index.html"
    assert any("utm_source=" in h for h in hrefs), "tracking parameters"
    assert any(re.search(r"\.html#\w", h) for h in hrefs), "link to a #fragment of another page"
    no_slash = [
        url
        for _, href, url in pairs
        if is_local(url) and not url_path(url).endswith("/") and (SITE / url_path(url).lstrip("/")).is_dir()
    ]
    assert any(urlsplit(u).path.startswith("/docs/guide") for u in no_slash), (
        "directory link, no trailing slash"
    )
    assert any(not h.startswith(("/", ".", "#")) and ":" not in h and "/" not in h.rstrip("/") for h in hrefs)


def test_non_page_links() -> None:
    hrefs = all_anchor_hrefs()
    assert any(h.startswith("mailto:") for h in hrefs)
    assert any(h.startswith("tel:") for h in hrefs)
    assert "javascript:void(0)" in hrefs
    assert "#top" in hrefs
    assert any(h.startswith("data:") for h in hrefs)


def test_external_links_are_links_only() -> None:
    hrefs = all_anchor_hrefs()
    assert any(h.startswith("https://example.org/") for h in hrefs)
    assert "https://cdn.example.net/lib.css" in hrefs
    assert any(h.startswith("//example.org/") for h in hrefs)
    # Nothing outside the site is ever loaded by itself: a browser capture never leaves 127.0.0.1.
    for page in html_files():
        for what, url in html_references(page):
            assert is_local(url), (rel(page), what, url)
    for css in css_files():
        imports, urls = css_urls(css.read_text(encoding="utf-8"))
        for url in imports + urls:
            assert url.startswith("data:") or is_local(urljoin(url_of(css), url)), (rel(css), url)


def test_broken_link_on_purpose() -> None:
    hrefs = all_anchor_hrefs()
    for path in BROKEN_LINKS_ON_PURPOSE:
        assert path in hrefs
        assert not exists(HOST + path.lstrip("/"))


def test_base_href_changes_resolution() -> None:
    page = SITE / "demo" / "base-href.html"
    assert base_of(page) == HOST + "docs/guide/"
    hrefs = dict(anchors(page))
    assert file_for(hrefs["install/"]) == SITE / "docs/guide/install/index.html"
    assert file_for(urljoin(url_of(page), "install/")) is None  # wrong without the base
    assert (("img src", HOST + "img/w_300,c_fill/photo.jpg")) in html_references(page)


def test_meta_refresh_page() -> None:
    page = SITE / "start.html"
    metas = [m for m in document(page).iter("meta") if (m.get("http-equiv") or "").lower() == "refresh"]
    assert len(metas) == 1
    target = metas[0].get("content").split("url=", 1)[1]
    assert file_for(urljoin(url_of(page), target)) == SITE / "docs/guide/index.html"


def test_legacy_markup_page() -> None:
    text = (SITE / "legacy.html").read_text(encoding="utf-8")
    assert "<IMG SRC=/img/legacy/SPACER.GIF" in text  # upper case, unquoted
    assert "HREF=' /docs/ '" in text or 'HREF=" /docs/ "' in text  # whitespace around a URL
    assert 'BACKGROUND="/img/bg/paper.png"' in text
    assert "&#47;gallery&#47;" in text
    resolved = {url for _, url in anchors(SITE / "legacy.html")}
    assert HOST + "docs/" in resolved and HOST + "gallery/" in resolved
    assert ("body background", HOST + "img/bg/paper.png") in html_references(SITE / "legacy.html")


# ------------------------------------------------------------------------------------------ images


def all_references() -> list[tuple[Path, str, str]]:
    return [(page, what, url) for page in html_files() for what, url in html_references(page)]


def test_srcset_url_with_commas() -> None:
    urls = [url for _, what, url in all_references() if "srcset" in what]
    with_comma = [url for url in urls if "," in url_path(url)]
    assert HOST + "img/w_300,c_fill/photo.jpg" in with_comma
    assert all(exists(url) for url in with_comma)
    # the naive reading (split on every comma) names files that do not exist
    value = document(SITE / "gallery/index.html").find(".//img[@srcset]").get("srcset")
    assert not exists(HOST + value.split(",")[0].strip().lstrip("/"))
    # a candidate with no descriptor followed directly by a comma, and "600w," with no space after it
    assert any(
        re.search(r"\.png, ", img.get("srcset") or "")
        for img in document(SITE / "gallery/index.html").iter("img")
    )
    assert "600w,/img/" in (SITE / "blog/2026/02/srcset-and-commas.html").read_text(encoding="utf-8")


def test_picture_with_typed_sources() -> None:
    pictures = [p for page in html_files() for p in document(page).iter("picture")]
    assert pictures
    sources = list(pictures[0].iter("source"))  # lxml's HTML parser nests <source> elements
    assert len(sources) >= 2
    assert {s.get("type") for s in sources} >= {"image/avif", "image/webp"}
    assert any(s.get("media") for s in sources)
    assert next(pictures[0].iter("img")).get("src")


def test_preload_imagesrcset() -> None:
    links = [
        link
        for link in document(SITE / "index.html").iter("link")
        if link.get("rel") == "preload" and link.get("as") == "image"
    ]
    assert links and links[0].get("imagesrcset") and links[0].get("imagesizes")
    assert len(parse_srcset(links[0].get("imagesrcset"))) == 2


def test_lazy_images_far_below_the_fold() -> None:
    doc = document(SITE / "demo/lazy.html")
    order = {el: i for i, el in enumerate(doc.iter())}
    spacers = [
        el
        for el in doc.iter()
        if int((re.search(r"height:\s*(\d+)px", el.get("style") or "") or [0, 0])[1]) >= 3000
    ]
    assert spacers
    lazy = [img for img in doc.iter("img") if img.get("loading") == "lazy"]
    assert lazy and all(order[img] > order[spacers[0]] for img in lazy)
    deferred = [img for img in doc.iter("img") if img.get("data-src")]
    assert deferred
    img = deferred[0]
    assert img.get("src").endswith("placeholder.gif") and img.get("src") != img.get("data-src")
    assert img.get("data-srcset") and len(parse_srcset(img.get("data-srcset"))) == 2
    assert order[img] > order[spacers[0]]


def test_iframe_points_at_a_site_page() -> None:
    frames = [(page, f) for page in html_files() for f in document(page).iter("iframe") if f.get("src")]
    assert frames
    page, frame = frames[0]
    target = file_for(urljoin(base_of(page), frame.get("src")))
    assert target is not None and target.suffix == ".html"
    assert any(f.get("srcdoc") for page in html_files() for f in document(page).iter("iframe"))


def test_query_string_assets() -> None:
    refs = {url for _, _, url in all_references()}
    assert HOST + "css/theme.css?v=3" in refs
    assert HOST + "img/logo.png?v=3&size=2" in refs  # written &amp; in the HTML
    assert "/img/logo.png?v=3&amp;size=2" in (SITE / "index.html").read_text(encoding="utf-8")
    assert (SITE / "css/theme.css").is_file() and (SITE / "img/logo.png").is_file()


def test_paths_with_spaces_non_ascii_and_reserved_characters() -> None:
    for name in (
        "café menu/index.html",
        "café menu/specials.html",
        "img/a b.png",
        "demo/what?.html",
        "img/hash#1.png",
    ):
        assert (SITE / name).is_file(), name
    assert (SITE / "img/we(ird).png").is_file()
    hrefs = all_anchor_hrefs()
    assert "what%3F.html" in hrefs
    assert "/caf%C3%A9%20menu/" in hrefs
    assert "/café menu/specials.html" in hrefs  # written raw, as some sites do
    srcs = [img.get("src") for page in html_files() for img in document(page).iter("img")]
    assert "/img/hash%231.png" in srcs
    assert "/img/a%20b.png" in srcs


def test_svg_inline_and_references() -> None:
    page = SITE / "gallery/svg.html"
    text = page.read_text(encoding="utf-8")
    assert re.search(r"<svg [^>]*viewBox", text)
    assert '<image href="/img/svg/badge.png"' in text
    assert '<use xlink:href="/img/icons.svg#icon-leaf"/>' in text
    refs = {url for what, url in html_references(page) if what.startswith("svg")}
    assert {
        HOST + "img/svg/badge.png",
        HOST + "img/icons.svg#icon-leaf",
        HOST + "img/icons.svg#icon-bird",
    } <= refs
    sprite = lxml.etree.parse(str(SITE / "img/icons.svg")).getroot()
    ids = {el.get("id") for el in sprite.iter("{http://www.w3.org/2000/svg}symbol")}
    assert {"icon-leaf", "icon-bird"} <= ids


def test_inline_style_attribute_and_style_block() -> None:
    page = SITE / "demo/styles.html"
    refs = html_references(page)
    assert ("style attribute", HOST + "img/inline/tile.png") in refs
    assert [url for what, url in refs if what == "style attribute"].count(HOST + "img/inline/tile.png") == 2
    # url() in a <style> block resolves against the page, not against a stylesheet
    assert ("<style>", HOST + "img/inline/banner.png") in refs
    assert "&quot;../img/inline/tile.png&quot;" in page.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------------------- CSS


def test_import_chain_at_least_3_deep_in_mixed_forms() -> None:
    graph = import_graph()
    depth, node = 1, HOST + "css/main.css"
    chain = [node]
    while True:
        nexts = [n for n in graph.get(node, []) if n.endswith(("base.css", "reset.css", "normalize.css"))]
        if not nexts:
            break
        node = nexts[0]
        chain.append(node)
        depth += 1
    assert depth >= 3, chain
    assert chain[:3] == [HOST + "css/main.css", HOST + "css/base.css", HOST + "css/reset.css"]
    text = all_css_text()
    assert re.search(r'@import\s+"', text) and re.search(r"@import\s+url\(", text)


def test_import_cycle() -> None:
    graph = import_graph()
    a, b = HOST + "css/cycle-a.css", HOST + "css/cycle-b.css"
    assert b in graph[a] and a in graph[b]


def test_image_set() -> None:
    functions = set()
    for css in css_files():
        for rule in css_rules(css.read_text(encoding="utf-8")):
            stack = list(getattr(rule, "content", None) or [])
            while stack:
                token = stack.pop()
                if token.type == "function":
                    functions.add(token.lower_name)
                    stack.extend(token.arguments)
                elif hasattr(token, "content") and isinstance(token.content, list):
                    stack.extend(token.content)
    assert {"image-set", "-webkit-image-set"} <= functions
    _, urls = css_urls((SITE / "css/theme.css").read_text(encoding="utf-8"))
    assert "../img/bg/texture-2x.png" in urls  # a bare string inside image-set() is a URL


def test_url_in_comment_points_at_missing_file() -> None:
    text = (SITE / "css/main.css").read_text(encoding="utf-8")
    in_comments = [
        u for c in re.findall(r"/\*.*?\*/", text, re.DOTALL) for u in re.findall(r"url\(([^)]*)\)", c)
    ]
    assert "/img/commented-out.png" in in_comments
    assert not exists(HOST + "img/commented-out.png")
    for css in css_files():
        _, urls = css_urls(css.read_text(encoding="utf-8"))
        assert all("commented-out" not in url for url in urls)


def test_uppercase_url_with_spaces_and_escaped_parens() -> None:
    text = (SITE / "css/theme.css").read_text(encoding="utf-8")
    assert "URL( ../img/spaced.png )" in text
    assert r"url(../img/we\(ird\).png)" in text
    _, urls = css_urls(text)
    assert "../img/spaced.png" in urls
    assert "../img/we(ird).png" in urls


def test_nested_media_and_supports_with_urls() -> None:
    nested = []
    for rule in css_rules((SITE / "css/theme.css").read_text(encoding="utf-8")):
        if rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports"):
            inner = tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True)
            for child in inner:
                if child.type == "at-rule" and child.lower_at_keyword in ("media", "supports"):
                    nested.append(
                        (rule.lower_at_keyword, child.lower_at_keyword, list(css_token_urls(child.content)))
                    )
    assert ("media", "supports") in {(a, b) for a, b, urls in nested if urls}
    assert ("supports", "media") in {(a, b) for a, b, urls in nested if urls}


def test_data_uris_in_css() -> None:
    _, urls = css_urls((SITE / "css/theme.css").read_text(encoding="utf-8"))
    assert any(u.startswith("data:image/svg+xml,") for u in urls)
    assert any(u.startswith("data:image/gif;base64,") for u in urls)


def test_font_face_with_real_fonts() -> None:
    rules = [r for r in css_rules((SITE / "css/base.css").read_text(encoding="utf-8")) if r.type == "at-rule"]
    faces = [r for r in rules if r.lower_at_keyword == "font-face"]
    assert faces
    src = tinycss2.serialize(faces[0].content)
    assert 'format("woff2")' in src and 'format("woff")' in src
    urls = list(css_token_urls(faces[0].content))
    assert [u.rsplit(".", 1)[1] for u in urls] == ["woff2", "woff", "ttf"]
    magic = {"woff2": b"wOF2", "woff": b"wOFF", "ttf": b"\x00\x01\x00\x00"}
    for url in urls:
        data = file_for(urljoin(HOST + "css/base.css", url)).read_bytes()
        assert data.startswith(magic[url.rsplit(".", 1)[1]])
    assert (SITE / "fonts/LICENSE-DejaVu.txt").is_file()


def test_relative_urls_in_imported_sheets_resolve_against_the_sheet() -> None:
    _, urls = css_urls((SITE / "css/vendor/normalize.css").read_text(encoding="utf-8"))
    assert urls == ["../../img/bg/grid.png"]
    assert exists(urljoin(HOST + "css/vendor/normalize.css", urls[0]))
    assert not exists(urljoin(HOST + "index.html", urls[0]).replace("/img/", "/css/img/"))


# ---------------------------------------------------------------------------------- JS and media


def test_javascript_generated_page() -> None:
    page = SITE / "demo/js-generated.html"
    scripts = [s.text or "" for s in document(page).iter("script") if not s.get("src")]
    assert any(
        "createElement" in s and re.search(r"setTimeout\(function \(\) \{.*\}, 300\)", s, re.S)
        for s in scripts
    )
    assert any('"JS-GENERATED-" + "MARKER"' in s for s in scripts)
    modules = [s.get("src") for s in document(page).iter("script") if s.get("type") == "module"]
    assert modules == ["/js/app.mjs"]
    assert 'from "./lib/dom.mjs"' in (SITE / "js/app.mjs").read_text(encoding="utf-8")
    # Neither the marker nor the script-built image URL appears literally anywhere in the site:
    # only a rendered DOM has them.
    for path in SITE.rglob("*"):
        if path.is_file() and path.name != "README.md":
            data = path.read_bytes()
            assert b"JS-GENERATED-MARKER" not in data, rel(path)
            assert b"img/js/built.png" not in data, rel(path)
    assert (SITE / "img/js/built.png").is_file()
    assert (SITE / "data/notes.json").is_file()


def test_large_generated_media_below_the_fold() -> None:
    video = GENERATED["/media/field-notes.mp4"]
    assert video.size >= 10 * 1024 * 1024
    assert video.media_type.startswith("video/")
    assert not (SITE / "media/field-notes.mp4").exists()
    page = SITE / "blog/2026/04/field-recording.html"
    doc = document(page)
    order = {el: i for i, el in enumerate(doc.iter())}
    spacer = next(el for el in doc.iter() if "height:2400px" in (el.get("style") or ""))
    element = doc.find(".//video")
    assert element.get("src") == "/media/field-notes.mp4" and element.get("preload") == "none"
    assert order[element] > order[spacer]
    assert exists(HOST + element.get("poster").lstrip("/"))
    assert "/media/field-notes.mp4" in [href for href, _ in anchors(page)]


def test_generated_files_do_not_shadow_real_ones() -> None:
    assert GENERATED
    for path in GENERATED:
        assert not (SITE / path.lstrip("/")).exists()
        assert any(path in href for page in html_files() for href, _ in anchors(page)) or any(
            url_path(url) == path for _, _, url in all_references()
        )


# ---------------------------------------------------------------------------------- every asset


def test_every_referenced_asset_exists() -> None:
    missing = [(rel(page), what, url) for page, what, url in all_references() if not exists(url)]
    assert missing == []
    for css in css_files():
        imports, urls = css_urls(css.read_text(encoding="utf-8"))
        for url in imports + urls:
            if url.startswith("data:"):
                continue
            resolved = urljoin(url_of(css), url)
            assert exists(resolved) or url_path(resolved) in MISSING_ON_PURPOSE, (rel(css), url)


# Files that no page, stylesheet or link names directly, and why.
UNREFERENCED_ON_PURPOSE = {
    "README.md": "documentation of the site",
    "_generated.json": "read by the server",
    "robots.txt": "fetched by crawlers by convention",
    "fonts/LICENSE-DejaVu.txt": "licence of the fonts",
    "img/js/built.png": "URL built by a script at run time",
    "img/icon-192.png": "named by site.webmanifest",
    "js/lib/dom.mjs": "imported by js/app.mjs",
    "data/notes.json": "fetched by js/app.mjs",
}


def test_no_orphan_files() -> None:
    named = {url_path(url) for _, _, url in all_references()}
    named |= {url_path(url) for page in html_files() for _, url in anchors(page) if is_local(url)}
    for css in css_files():
        imports, urls = css_urls(css.read_text(encoding="utf-8"))
        named |= {
            url_path(urljoin(url_of(css), url)) for url in imports + urls if not url.startswith("data:")
        }
    named_files = {file_for(HOST + quote(path.lstrip("/"))) for path in named}
    for path in SITE.rglob("*"):
        if path.is_file() and path not in named_files:
            assert rel(path) in UNREFERENCED_ON_PURPOSE, rel(path)
    for path in UNREFERENCED_ON_PURPOSE:
        assert (SITE / path).is_file(), path


def png_is_valid(data: bytes) -> bool:
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    pos, seen = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            return False
        seen.append(kind)
        pos += 12 + length
    return seen[0] == b"IHDR" and seen[-1] == b"IEND"


@pytest.mark.parametrize(
    "image",
    sorted(
        p
        for p in SITE.rglob("*")
        if p.suffix.lower() in {".png", ".jpg", ".gif", ".ico", ".webp", ".avif", ".svg"}
    ),
    ids=rel,
)
def test_images_are_real(image: Path) -> None:
    data = image.read_bytes()
    kind = image.suffix.lower()
    if kind == ".png":
        assert png_is_valid(data)
    elif kind == ".jpg":
        assert data.startswith(b"\xff\xd8\xff") and data.endswith(b"\xff\xd9")
    elif kind == ".gif":
        assert data[:6] in (b"GIF87a", b"GIF89a") and data.endswith(b";")
    elif kind == ".ico":
        assert data[:4] == b"\x00\x00\x01\x00" and struct.unpack("<H", data[4:6])[0] >= 1
    elif kind == ".webp":
        assert data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    elif kind == ".avif":
        assert data[4:12] == b"ftypavif"
    else:
        assert lxml.etree.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"


def test_favicon() -> None:
    assert (SITE / "favicon.ico").is_file()
    assert all(
        any(link.get("href") == "/favicon.ico" for link in document(page).iter("link"))
        for page in html_files()
        if page.name != "embedded.html"
    )


# ------------------------------------------------------------------------------ robots and sitemap


def test_robots_txt_and_private_page() -> None:
    text = (SITE / "robots.txt").read_text(encoding="utf-8")
    parser = RobotFileParser()
    parser.parse(text.splitlines())
    assert not parser.can_fetch("archiver", "/private/")
    assert not parser.can_fetch("archiver", "/private/index.html")
    assert parser.can_fetch("archiver", "/docs/")
    assert parser.crawl_delay("archiver") == 0
    assert (SITE / "private/index.html").is_file()
    assert "/private/" in all_anchor_hrefs()


def test_sitemap() -> None:
    root = lxml.etree.parse(str(SITE / "sitemap.xml")).getroot()
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    locs = [loc.text for loc in root.findall("s:url/s:loc", ns)]
    assert len(locs) >= 30
    for loc in locs:
        local = HOST + urlsplit(loc).path.lstrip("/")
        assert file_for(local) is not None, loc
        assert not url_path(local).startswith("/private/")
    assert "https://fieldguide.example/caf%C3%A9%20menu/" in locs
