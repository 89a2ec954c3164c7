"""archiver/html_close.py: ``html.parser`` in linear time, as the attacks, and the same handler calls
as the standard library's parser on thousands of generated documents.

The old code (dab4b1c) fed pages to Python 3.11's ``HTMLParser``, whose ``close`` parses again from
each ``<`` of an unended construct: ``<a b='`` written 20,000 times took 18 s of CPU, ``<!--`` 1.7 s
(10.5 s for ``pack`` of a 200 KB SingleFile page). Each attack runs in a child process with a timeout
(a hang fails the test; no timing is asserted but the bound)."""

from __future__ import annotations

import random
from html.parser import HTMLParser
from pathlib import Path

import pytest

from archiver.html_close import Parser
from tests.timebox import child

#: Pieces the documents are made of: every construct's start and end, quotes, text, references.
PIECES = [
    "<", ">", "<!--", "-->", "--", "<a", "<img", " src='x.png'", " b='", "'", '"', "=", "/", " ", "\n",
    "<![CDATA[", "]]>", "]>", "<![if", "<![endif]", "<![foo", "</", "</a>", "<?", "?>", "<!", "<!DOCTYPE",
    "&#", "&#65;", "&amp;", "&amp", ";", "x", "<style>", "</style>", "url(y.png)", "<script>", "</script>",
]  # fmt: skip


class _Record:
    """The handler calls, text merged: what comes out of a parser, whatever the pieces of its text."""

    def _start(self) -> None:
        self.events: list[tuple[object, ...]] = []

    def _add(self, *event: object) -> None:
        if event[0] == "data" and self.events and self.events[-1][0] == "data":
            self.events[-1] = ("data", str(self.events[-1][1]) + str(event[1]))
        elif event != ("data", ""):
            self.events.append(event)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("start", tag, tuple(attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add("startend", tag, tuple(attrs))

    def handle_endtag(self, tag: str) -> None:
        self._add("end", tag)

    def handle_data(self, data: str) -> None:
        self._add("data", data)

    def handle_comment(self, data: str) -> None:
        self._add("comment", data)

    def handle_decl(self, decl: str) -> None:
        self._add("decl", decl)

    def handle_pi(self, data: str) -> None:
        self._add("pi", data)

    def unknown_decl(self, data: str) -> None:
        self._add("unknown", data)

    def handle_entityref(self, name: str) -> None:
        self._add("entity", name)

    def handle_charref(self, name: str) -> None:
        self._add("charref", name)


class _Old(_Record, HTMLParser):
    def __init__(self, convert: bool) -> None:
        self._start()
        HTMLParser.__init__(self, convert_charrefs=convert)


class _New(_Record, Parser):
    def __init__(self, convert: bool) -> None:
        self._start()
        Parser.__init__(self, convert_charrefs=convert)


def _parse(cls: type[_Old] | type[_New], text: str, convert: bool) -> tuple[list[tuple[object, ...]], bool]:
    parser = cls(convert)
    try:
        parser.feed(text)
        parser.close()
    except AssertionError:  # html.parser gives up on some markup (an unknown marked section)
        return parser.events, False
    return parser.events, True


_TEXT = ("data", "entity", "charref")


def _markup(events: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    return [e for e in events if e[0] not in _TEXT]


@pytest.mark.parametrize("convert", [True, False])
def test_the_same_calls_as_html_parser_on_generated_documents(convert: bool) -> None:
    """Every tag, comment, declaration and processing instruction as html.parser reports it; the text
    too when references in it are converted (as every reader of archiver's does). Unconverted, the
    text after the last ``>`` comes as text where html.parser reported a reference in it."""
    rng = random.Random(32)
    for _ in range(4000):
        text = "".join(rng.choices(PIECES, k=rng.randint(1, 40)))
        old, old_done = _parse(_Old, text, convert)
        new, new_done = _parse(_New, text, convert)
        if old_done:
            assert new_done, text
            assert (new if convert else _markup(new)) == (old if convert else _markup(old)), text
        else:  # the old parser stopped in the text after the last '>': this one hands it out as text
            assert _markup(new)[: len(_markup(old))] == _markup(old), text


ATTACKS = {
    "attribute quote": "<a b='",
    "slash": "<a/",
    "equals": "<a =",
    "comment": "<!--",
    "comment with a '>'": "<!--x>",
    "cdata with a '>'": "<![CDATA[x>",
    "ms section with a '>'": "<![if x>",
    "start tag": "<a",
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_unended_constructs_repeated_parse_in_linear_time(name: str) -> None:
    """200,000 of each (0.6 to 1.4 MB) after a page's start: the old code took from a minute to hours."""
    code = (
        "import sys\nfrom archiver.gwtar.refs import html_refs\n"
        "piece = sys.argv[1]\n"
        "page = '<html><body><img src=\"a.png\">' + piece * 200_000\n"
        "print([r.url for r in html_refs(page)])\n"
    )
    done = child("-c", code, ATTACKS[name])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0].startswith("['a.png'"), done.stdout[:200]


def test_a_singlefile_page_ending_in_unended_comments_packs(tmp_path: Path) -> None:
    """``pack`` of a SingleFile page ending in 200,000 ``<!--`` (800 KB): the old code, 10.5 s of CPU
    at 50,000, four times that for each doubling; now it ends well within the bound."""
    page = tmp_path / "page.html"
    page.write_text(
        "<!DOCTYPE html><html><!-- Page saved with SingleFile url: https://example.com/ -->"
        '<body><img src="data:image/png;base64,iVBORw0KGgo=">' + "<!--" * 200_000
    )
    done = child(
        "-m", "archiver", "pack", str(page), "--format", "gwtar", "-o", str(tmp_path / "p.gwtar.html")
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
