"""The pure core stays pure (layout.md, anchors-style pattern 5): every pure module, whatever its area,
imports nothing that does network, disk or browser IO, calls no file-opening builtins, and says so in
its docstring. One table, one check: a module joins by being listed with the imports its area allows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "archiver"
FORBIDDEN_CALLS = {"open", "exec", "eval", "__import__"}
#: modules that read bundled read-only data of a library they may import (once, as that library does),
#: with what they read: the only open() a pure module may call
BUNDLED_DATA = {"urls/domains.py": "publicsuffixlist's public_suffix_list.dat (the rules' last labels)"}
SAYS = "Pure: no network, no filesystem, no clock"

CORE = {
    "__future__", "collections", "collections.abc", "dataclasses", "functools", "hashlib", "ipaddress",
    "mimetypes", "re", "typing", "urllib.parse", "zlib", "idna", "publicsuffixlist", "archiver.errors",
    "archiver.media", "archiver.frozen",
}  # fmt: skip
GWTAR = {
    "__future__", "collections.abc", "dataclasses", "html.parser", "json", "posixpath", "re", "typing",
    "urllib.parse", "tinycss2", "archiver", "archiver.errors", "archiver.srcset", "archiver.tar",
    "archiver.gwtar.refs", "archiver.gwtar.rules", "contextlib", "archiver.css_refs", "archiver.html_refs",
    "archiver.urls", "archiver.html_depth", "archiver.html_close",
    "functools", "operator", "json.encoder",  # tar.py: cached header fields; layout.py: sort key, JSON
    "itertools",  # layout.py: the bundled files' offsets
}  # fmt: skip
PAR2 = {
    "__future__", "collections.abc", "dataclasses", "hashlib", "math", "re", "struct", "typing", "zlib",
    "pathlib",  # results.py: type annotations only, under TYPE_CHECKING
    "archiver.errors", "archiver.par2.packets",
}  # fmt: skip
ZIM = {
    "__future__", "collections.abc", "dataclasses", "datetime", "hashlib", "io", "posixpath", "re", "regex",
    "struct", "typing", "urllib.parse", "zlib", "lxml.etree", "lxml.html", "tinycss2", "tinycss2.ast", "PIL",
    "archiver.errors", "archiver.srcset", "archiver.urls", "archiver.zim.links", "archiver.css_refs",
    "archiver.html_refs", "archiver.zim.zimsafe", "html", "json", "selectolax.lexbor", "archiver.html_depth",
}  # fmt: skip
CAPTURE = {
    "__future__", "codecs", "collections.abc", "contextlib", "dataclasses", "functools", "math", "re",
    "typing", "urllib.parse", "tinycss2", "tinycss2.serializer", "selectolax.lexbor", "archiver",
    "archiver.urls", "archiver.errors", "archiver.capture", "archiver.srcset", "archiver.capture.policy",
    "archiver.css_refs", "archiver.html_refs", "archiver.html_depth", "archiver.frozen",
}  # fmt: skip
REFS = {
    "__future__", "collections.abc", "contextlib", "dataclasses", "re", "typing", "tinycss2",
    "tinycss2.bytes", "tinycss2.serializer",
}  # fmt: skip

SERVE = {"__future__", "dataclasses", "datetime", "typing"}
WARC = {
    "__future__", "base64", "dataclasses", "hashlib", "html", "json", "re", "typing", "urllib.parse", "zlib",
}  # fmt: skip

SEARCH = {
    "__future__", "array", "base64", "bisect", "codecs", "collections", "collections.abc", "dataclasses",
    "functools",
    "hashlib", "heapq", "itertools", "json", "math", "operator", "re", "regex", "typing", "unicodedata",
    "zlib", "selectolax.lexbor", "archiver.errors",
    "archiver.search.build", "archiver.search.prepare", "archiver.search.snippet", "archiver.search.text",
    "archiver.search.tokens", "archiver.html_depth",
}  # fmt: skip

HISTORY = {
    "__future__", "bisect", "collections.abc", "dataclasses", "datetime", "difflib", "re", "typing",
    "urllib.parse", "archiver.versions.volatile",
}  # fmt: skip

URLS = CORE | {
    "archiver.urls.canonical", "archiver.urls.dedup", "archiver.urls.domains", "archiver.urls.host",
    "archiver.urls.href", "archiver.urls.percent", "archiver.urls.scope", "archiver.urls.syntax",
    "archiver.urls.tree_path",
}  # fmt: skip

PURE: dict[str, set[str]] = {
    "urls/__init__.py": URLS, "urls/canonical.py": URLS, "urls/dedup.py": URLS, "urls/domains.py": URLS,
    "urls/host.py": URLS, "urls/href.py": URLS, "urls/percent.py": URLS, "urls/scope.py": URLS,
    "urls/syntax.py": URLS, "urls/tree_path.py": URLS,
    "media.py": CORE, "errors.py": CORE | {"errno"},  # errno: the constants store_error compares
    "frozen.py": CORE, "srcset.py": CORE, "zim/compressible.py": CORE,
    "css_refs.py": REFS, "html_refs.py": REFS, "html_depth.py": {"__future__", "re"},
    "html_close.py": {"__future__", "html", "html.parser", "re"},
    "tar.py": GWTAR, "gwtar/rules.py": GWTAR, "gwtar/layout.py": GWTAR, "gwtar/parse.py": GWTAR,
    "gwtar/refs.py": GWTAR,
    "par2/packets.py": PAR2, "par2/layout.py": PAR2, "par2/results.py": PAR2,
    "zim/metadata.py": ZIM, "zim/links.py": ZIM, "zim/page.py": ZIM, "zim/icon.py": ZIM,
    "zim/zimsafe.py": ZIM, "zim/offline.py": ZIM,
    "capture/rewrite_html.py": CAPTURE | {"archiver.capture.searchbox"}, "capture/policy.py": CAPTURE,
    "capture/searchbox.py": {
        "__future__", "html", "re", "urllib.parse", "selectolax.lexbor", "archiver.frozen",
    },
    "capture/robots.py": CAPTURE, "capture/textcodec.py": CAPTURE,
    "codings.py": {"__future__", "collections.abc", "functools", "typing", "zlib", "brotli"},
    "capture/depths.py": {"__future__", "collections.abc", "heapq"},
    "capture/hosts.py": {"__future__", "collections.abc", "functools", "re", "typing"},
    "serve/ranges.py": SERVE,
    "warc/digest.py": WARC, "warc/cdxj.py": WARC,
    "search/tokens.py": SEARCH, "search/text.py": SEARCH, "search/build.py": SEARCH,
    "search/prepare.py": SEARCH,
    "search/query.py": SEARCH, "search/snippet.py": SEARCH,
    "search/engine.py": SEARCH | {
        "weakref", "archiver.search.query", "archiver.search.postings", "archiver.search.table",
        "archiver.search.words",
    },
    "search/words.py": SEARCH | {"archiver.search.query", "archiver.search.postings"},
    "search/table.py": SEARCH | {"archiver.search.query", "archiver.search.postings"},
    "search/postings.py": SEARCH | {"archiver.search.query"},
    "versions/dates.py": HISTORY, "versions/volatile.py": HISTORY, "versions/diff.py": HISTORY,
    "warc/replay_rules.py": WARC | {
        "collections.abc", "archiver", "archiver.errors", "archiver.media", "archiver.codings",
    },
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(PURE))
def test_pure_module(name: str) -> None:
    tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
    assert SAYS in (ast.get_docstring(tree) or ""), f"{name}'s docstring does not say it is pure"
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "open" and name in BUNDLED_DATA:
                continue
            assert node.func.id not in FORBIDDEN_CALLS, f"{name} calls {node.func.id}()"
    allowed = PURE[name]
    assert imported <= allowed, f"{name} imports {sorted(imported - allowed)}"


def test_every_module_says_whether_it_is_listed() -> None:
    """A module whose docstring claims purity is in the table (so the claim is checked)."""
    claimed = {
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if SAYS in (ast.get_docstring(ast.parse(p.read_text(encoding="utf-8"))) or "")
    }
    assert claimed <= set(PURE), f"claim purity but are not checked: {sorted(claimed - set(PURE))}"


def test_mimetypes_reads_no_system_files() -> None:
    from archiver import media

    assert media.media_type_for("a/b__q-951eba.PNG") == "image/png"
    assert media.media_type_for("x.woff2") == "font/woff2"
    assert media.media_type_for(".htaccess") == "application/octet-stream"
    assert media.media_type_for("noext") == "application/octet-stream"
