"""Write testdata/trees/mini: a small canonical tree (formats/tree.md, format 1) built by hand.

Until `archiver capture` lands, packers, readers and the server need a tree that follows the contract
exactly: pages at their LocalPath, assets under `_archiver/<host>/`, every link made with `urls.rel`,
and a manifest. This script builds one from a few pages written below and files borrowed from the
fixture site, through the real mapping core, so the tree changes only when the contract does.

    python tools/make_mini_tree.py [OUT]     # default: testdata/trees/mini
"""

from __future__ import annotations

import hashlib
import html
import shutil
import sys
from pathlib import Path

from archiver import urls
from archiver.media import media_type_for
from archiver.tree import Header, Record, hash_file, title_from_html, write_records

HOME = "https://mini.example/"
SITE = Path(__file__).resolve().parents[1] / "testdata" / "site"

# URL → file of the fixture site that provides its bytes
ASSETS = {
    "/css/main.css?v=2": None,  # written below
    "/css/base.css": None,
    "/fonts/field.woff2": SITE / "fonts" / "acme-field-sans.woff2",
    "/img/logo.png?v=3": SITE / "img" / "logo.png",
    "/img/a b.png": SITE / "img" / "a b.png",
    "/img/hash%231.png": SITE / "img" / "hash#1.png",
    "https://cdn.mini.example/img/diagram.svg": SITE / "img" / "diagram.svg",
}
PAGES = {
    "/": "Mini home",
    "/docs/": "Docs",
    "/docs/intro": "Introduction",
    "/greatwork.html": "A great work",
    "/what%3F.html": "What?",
    "/caf%C3%A9%20menu/": "Café menu",
    "/search?q=cats": "Search: cats",
}


def _path(url: str, kind: urls.Kind) -> str:
    return urls.local_path(urls.canonicalize(url, HOME), kind=kind, home=HOME)


def _page(url: str, title: str) -> str:
    here = _path(url, "page")
    word = "mini" + hashlib.sha256(here.encode()).hexdigest()[:6]

    def href(target: str, kind: urls.Kind) -> str:
        return html.escape(urls.rel(here, _path(target, kind)))

    links = "\n".join(
        f'    <li><a href="{href(u, "page")}">{html.escape(t)}</a></li>' for u, t in PAGES.items() if u != url
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{html.escape(title)}</title>
  <link rel="stylesheet" href="{href("/css/main.css?v=2", "asset")}">
</head>
<body>
  <h1>{html.escape(title)}</h1>
  <img src="{href("/img/logo.png?v=3", "asset")}" alt="logo" width="64" height="64">
  <img src="{href("/img/a b.png", "asset")}" srcset="{href("/img/a b.png", "asset")} 1x, \
{href("/img/hash%231.png", "asset")} 2x" alt="a b">
  <img src="{href("https://cdn.mini.example/img/diagram.svg", "asset")}" alt="diagram">
  <p>This page lives at <code>{html.escape(here)}</code>. Unique word: {word}.</p>
  <ul>
{links}
  </ul>
  <p><a href="https://example.org/outside">An outside link stays absolute</a></p>
</body>
</html>
"""


def build(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    records: list[Record] = []

    def store(url: str, kind: urls.Kind, data: bytes) -> None:
        path = _path(url, kind)
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        size, sha = hash_file(target)
        records.append(
            Record(
                path=path,
                kind=kind,
                media_type=media_type_for(path),
                size=size,
                sha256=sha,
                urls=[urls.dedup_key(urls.canonicalize(url, HOME))],
                title=title_from_html(data) if kind == "page" else None,
                status=200,
                fetched="2026-11-29T12:00:00Z",
                depth=0 if url == "/" else 1,
                referrer=None if url == "/" else HOME,
            )
        )

    for url, title in PAGES.items():
        store(url, "page", _page(url, title).encode("utf-8"))
    main_css = _path("/css/main.css?v=2", "asset")
    bg = urls.rel(main_css, _path("/img/a b.png", "asset"))
    css = {
        "/css/main.css?v=2": f"""@import url("{urls.rel(main_css, _path("/css/base.css", "asset"))}");
@font-face {{ font-family: Field; src: url("{urls.rel(main_css, _path("/fonts/field.woff2", "asset"))}") \
format("woff2"); }}
body {{ font-family: Field, sans-serif; background: url("{bg}") no-repeat right top; }}
""",
        "/css/base.css": "h1 { color: #225; }\n/* url(not-fetched.png) */\n",
    }
    for url, source in ASSETS.items():
        data = css[url].encode() if source is None else source.read_bytes()
        store(url, "asset", data)
    header = Header(home=HOME, created="2026-11-29T12:00:00Z", seeds=[HOME])
    write_records(out, header, sorted(records, key=lambda r: r.path))


if __name__ == "__main__":
    default = Path(__file__).resolve().parents[1] / "testdata" / "trees" / "mini"
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else default)
