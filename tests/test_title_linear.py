"""A page's title read in linear time, as the attacks: the first MiB of a page (a tree's page, a
gwtar's, a SingleFile page) or the first 256 KiB of a WARC response of nothing but ``<title>``, or a
title followed by ``<meta`` repeated. The old patterns (dab4b1c) were tried from every ``<title`` and
``<meta``, each try reading to the end or to the next ``>``: 112 KB of ``<title>`` took 5 s of CPU,
224 KB 19 s (a WARC record's title, each record); 208 KB of ``<meta charset`` 5.7 s. What is found is
the old patterns' own, checked on generated pages. Each attack runs in a child with a timeout."""

from __future__ import annotations

import html
import random
import re

import pytest

from archiver import tree
from archiver.warc import cdxj
from tests.timebox import child

OLD_TREE_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
OLD_TREE_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.I)
OLD_WARC_TITLE = re.compile(rb"<title\b[^>]*>(.*?)</title", re.I | re.S)

PIECES = [
    b"<title>", b"<TITLE x>", b"<titlex>", b"</title>", b"</TITLE  >", b"</title", b"<meta", b"<META ",
    b" charset=", b"CHARSET = 'latin-1'", b'"', b"'", b"utf-8", b"koi8-r", b"x", b" ", b"\n", b">", b"<",
    b"&amp;", b"\xe9", b"=",
]  # fmt: skip


def test_the_same_title_and_charset_as_the_old_patterns() -> None:
    rng = random.Random(32)
    for _ in range(20_000):
        data = b"".join(rng.choices(PIECES, k=rng.randint(0, 30)))
        old = OLD_TREE_TITLE.search(data)
        assert tree._title_text(data) == (old.group(1) if old else None), data
        cs = OLD_TREE_CHARSET.search(data)
        assert tree._charset(data) == (cs.group(1) if cs else None), data
        assert cdxj.title_of(data, "text/html") == _old_warc_title(data), data


def _old_warc_title(head: bytes) -> str | None:
    m = OLD_WARC_TITLE.search(head)
    if not m:
        return None
    return " ".join(html.unescape(m.group(1).decode("utf-8", "replace")).split())[:300] or None


ATTACKS = {
    "titles": "tree.title_from_html(b'<title>' * 150_000)",
    "metas": "tree.title_from_html(b'<title>x</title>' + b'<meta charset' * 80_000)",
    "metas-no-end": "tree.title_from_html(b'<title>x</title>' + b'<meta' * 200_000)",
    "warc-titles": "cdxj.title_of(b'<title>' * 37_000, 'text/html')",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_a_page_of_repeated_title_or_meta_tags_is_read_in_linear_time(name: str) -> None:
    code = "from archiver import tree\nfrom archiver.warc import cdxj\n"
    code += f"for _ in range(5):\n    {ATTACKS[name]}\n"
    done = child("-c", code)
    assert done.returncode == 0, done.stderr[-2000:]
