"""Bound the nesting depth of an HTML document before a tree parser sees it (formats/tree.md §
"Nesting depth"). Pure: no network, no filesystem, no clock.

Lexbor (selectolax) takes time with the square of the nesting depth: 20,000 nested ``<div>`` take
seconds, 200,000 never finish. Browsers bound the depth: Blink's HTML tree builder inserts an element
that would be opened past depth :data:`MAX_DEPTH` (512) as a sibling of the deepest open element
instead of its child. :func:`bound_depth` applies that rule to the text, in one linear pass: a start
tag that would open an element past the limit is preceded by the end tag of the deepest counted open
element, so the parser builds at most :data:`MAX_DEPTH` levels. A document that never goes past the
limit is returned as the same string (not a copy), so ordinary pages parse and serialise exactly as
before.

The count is the tokenizer's view, not the tree builder's: void elements and elements the tree builder
closes when the next one opens (``p``, ``li``, ``td``...) do not count; a self-closed tag counts (HTML
ignores the "/" of any other element); comments (ended as the tokenizer ends them) and the text of
raw-text elements (``script``, ``style``...: names in ASCII letters, ended by their own end tag) are
skipped; an end tag closes the deepest counted element of its name if one is open (else it is
ignored, as a stray end tag is). The tree builder does more than this count sees (misnested end
tags, the scope of an end tag, formatting elements it reopens): formats/tree.md §9.5 says what the
count does not bound.
"""

from __future__ import annotations

import re

__all__ = ["MAX_ATTRIBUTES", "MAX_DEPTH", "bound_depth", "bound_depth_bytes"]

#: Blink's limit (HTMLConstructionSite's maximum DOM tree depth).
MAX_DEPTH = 512
#: Attributes kept of one start tag: Lexbor checks each new attribute against the element's others, so
#: its time grows with the square of their number (20,000 attributes: 7 s; 1,000,000 never finish).
MAX_ATTRIBUTES = 1024
_LONG_TAG = 8 * MAX_ATTRIBUTES  # a shorter tag cannot have more attributes
_ATTRIBUTE = r"""[^\s"'<>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'<>=`]+))?"""

# Each alternative is linear: no part can scan past the next '<' (a quoted attribute value holding
# one ends the tag there: the count stays an estimate) except a comment or a raw-text element, and
# an unclosed one of those takes the rest of the document in one match.
# Lexbor parses without scripting, so ``noscript`` holds markup (its elements count).
_RAW_TEXT = "script style textarea title xmp iframe noembed noframes plaintext".split()
# What ends a tag's name in the tokenizer (HTML's whitespace, "/" and ">"), or the document's end.
_NAME_END = r"(?=[\t\n\f\r />]|\Z)"
# A comment as the tokenizer ends it: "<!-->" and "<!--->" are empty comments, "--!>" ends one too.
_COMMENT = r"!--(?:-?>|.*?--!?>|.*\Z)"
# re.A: the tokenizer folds ASCII letters only ("<ſtyle>" is no style element, and "ſ" no letter).
# The walks' patterns are compiled at their first use (:func:`_compiled`): ~1 ms of every start,
# and an ordinary page never needs them (:func:`_may_need` says no first).
_TOKEN = (
    "<" + _COMMENT + r"|<(" + "|".join(_RAW_TEXT) + ")" + _NAME_END + r"[^<>]*>"
    r"(?:.*?</\1" + _NAME_END + r"[^<>]*>?|.*\Z)"
    r"|<(/?)([A-Za-z][^\s/<>]*)((?:[^<>\"']++|\"[^\"<]*+\"|'[^'<]*+')*+)(?:>|\Z)"
)
# The tokens of _TOKEN (the same alternatives in the same order, so the same matches), as findall's
# strings: a tag's "/"-prefixed or bare name; a comment or raw-text element gives "". The raw-text
# names are spelled out, one alternative each, instead of a back-reference, so a match has one
# group. The "<" is written once before the alternatives (the regex engine then skips to each "<"
# at C speed) and the raw-text names behind a look-ahead of their first letters (the other tags try
# none of them): a fifth less CPU, the same matches.
_PAIRS = (
    "<(?:"
    + _COMMENT
    + f"|(?=[{''.join(sorted({name[0] for name in _RAW_TEXT}))}])(?:"
    + "|".join(rf"{name}{_NAME_END}[^<>]*>(?:.*?</{name}{_NAME_END}[^<>]*>?|.*\Z)" for name in _RAW_TEXT)
    + r")|(/?[A-Za-z][^\s/<>]*)(?:[^<>\"']++|\"[^\"<]*+\"|'[^'<]*+')*+(?:>|\Z))"
)
# Start and end tags of one name with no tag between (" name /name" in _fits' joined keys): a pair
# leaves the walk's stack as it found it, one level deeper in between.
_EMPTY_PAIR = r" ([^/ ][^ ]*) /\1(?= |\Z)"
#: Rounds of :data:`_EMPTY_PAIR` taken out before :func:`_fits`' walk (each round an inner level).
_PAIR_ROUNDS = 2
#: The tokenizer lowers ASCII letters only ("<aİ>" and "</ai̇>" are two names).
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
#: Elements that never hold a counted element of their own name: void elements, and those the tree
#: builder closes when the next one opens (``p``, ``li``, ``td``...). Not ``optgroup``, ``menuitem``
#: or the ruby elements: Lexbor nests those without limit (tests/test_html_depth.py checks each).
_NOT_COUNTED = frozenset(
    {
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr",
        "param", "keygen", "frame", "basefont", "bgsound", "image",
        "p", "li", "dt", "dd", "tr", "td", "th", "option", "tbody", "thead", "tfoot", "colgroup", "caption",
        "html", "head", "body",
    }
)  # fmt: skip


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compiled(pattern: str) -> re.Pattern[str]:
    """One of the patterns above (:data:`_TOKEN`, :data:`_PAIRS`, :data:`_EMPTY_PAIR`,
    :data:`_ATTRIBUTE`), compiled once, at its first use; the tokenizer's two with re.S, re.I and
    re.A."""
    found = _COMPILED.get(pattern)
    if found is None:
        found = _COMPILED[pattern] = re.compile(
            pattern, re.S | re.I | re.A if pattern in (_TOKEN, _PAIRS) else 0
        )
    return found


def _attributes_cut(tag: str, limit: int) -> str | None:
    """``tag`` (a start tag) cut after its first ``limit`` attributes, or None when it has no more."""
    end = len(tag) - tag.endswith(">")  # a tag the document's end cut has no '>'
    start = tag.find(" ")
    kept = kept_end = 0
    for m in _compiled(_ATTRIBUTE).finditer(tag, start if start >= 0 else end, end):
        if kept == limit:
            return tag[:kept_end] + tag[end:]  # its '>', if it had one
        kept, kept_end = kept + 1, m.end()
    return None


def _over(text: str, limit: int) -> list[tuple[int, int, str]]:
    """Edits ``(start, end, new text)`` that bound ``text``: an end tag before each start tag that
    would open an element past ``limit`` levels, and each start tag of more than
    :data:`MAX_ATTRIBUTES` attributes cut after them."""
    stack: list[str] = []
    counts: dict[str, int] = {}
    edits: list[tuple[int, int, str]] = []
    for m in _compiled(_TOKEN).finditer(text):  # the loop runs once per tag of a large page: kept lean
        _, slash, name, rest = m.groups()
        if name is None:
            continue
        # a tag is at most its "<", name, rest and ">": a shorter one need not be measured
        if not slash and len(name) + len(rest) >= _LONG_TAG - 1 and m.end() - m.start() > _LONG_TAG:
            cut = _attributes_cut(m.group(), MAX_ATTRIBUTES)
            if cut is not None:
                edits.append((m.start(), m.end(), cut))
        name = name.translate(_ASCII_LOWER)
        if name in _NOT_COUNTED:  # a self-closed tag counts: HTML ignores the "/" of a non-void one
            continue
        if slash:
            if counts.get(name):
                while stack:
                    top = stack.pop()
                    counts[top] -= 1
                    if top == name:
                        break
            continue
        if len(stack) >= limit:
            top = stack.pop()
            counts[top] -= 1
            edits.append((m.start(), m.start(), f"</{top}>"))
        stack.append(name)
        counts[name] = counts.get(name, 0) + 1
    edits.sort(key=lambda e: (e[0], e[1]))
    return edits


#: A document with at most this many start tags cannot nest deeper (each level needs one), and
#: Lexbor parses 4,096 levels in a fraction of a second: it skips the counting pass, which costs
#: about 5 ms of CPU on an 86 KB documentation page (most of what parsing it costs).
_FEW_TAGS = 4096
# a start tag that may hold too many attributes: one not ended by a "<" within _LONG_TAG characters
# (a quoted value may hold ">", so only "<" ends the scan; long text after a short tag only costs the pass)
_LONG_START_TAG = re.compile(rf"<[A-Za-z][^<]{{{_LONG_TAG}}}")


#: A page of more ``<`` than this is decided by :func:`_over`'s walk itself, one match at a time:
#: findall's list holds a pair a tag (about 70 bytes), so :func:`_fits` stays under 20 MB.
_QUICK_TAGS = 1 << 18


def _fits(text: str, limit: int) -> bool:
    """Whether :func:`_over`'s walk surely never opens an element past ``limit`` levels (False when
    it may): the same walk over :data:`_PAIRS`' strings (no match objects, names lowered in one
    call), less the pairs of a start and an end tag of one name with nothing between, taken out at
    C speed in :data:`_PAIR_ROUNDS` rounds (the tags of a documentation page: about a third fewer
    steps; the walk then stops that many levels early, as a pair nested so deep would reach past
    the levels it sees)."""
    keys = [key for key in _compiled(_PAIRS).findall(text) if key]
    if not keys:
        return True
    # names hold no space (the tag's name ends at one): joined by spaces, lowered, split back
    joined = " " + " ".join(keys).translate(_ASCII_LOWER)
    # A pair taken out in round r reached r levels past the stack the walk sees where it was, and
    # that stack passed the walk's check (at least r levels under ``limit``) when it was built, so
    # only a pair at the top level needs ``limit`` >= the rounds.
    rounds = _PAIR_ROUNDS if limit >= _PAIR_ROUNDS else 0
    empty_pair = _compiled(_EMPTY_PAIR)
    for _ in range(rounds):
        joined = empty_pair.sub("", joined)
    limit -= rounds
    stack: list[str] = []
    counts: dict[str, int] = {}
    for key in joined.split(" ")[1:]:
        if key[0] == "/":
            name = key[1:]
            if name in _NOT_COUNTED or not counts.get(name):
                continue
            while stack:
                top = stack.pop()
                counts[top] -= 1
                if top == name:
                    break
        elif key not in _NOT_COUNTED:
            if len(stack) >= limit:
                return False
            stack.append(key)
            counts[key] = counts.get(key, 0) + 1
    return True


def _may_need(text: str, limit: int) -> bool:
    """Whether :func:`_over` may find something to cut (False: surely nothing), cheaply: a count of
    ``<`` (C speed) and a search for a start tag longer than any of :data:`MAX_ATTRIBUTES`
    attributes can be (each tag scanned once)."""
    if len(text) <= _LONG_TAG and text.count("<") <= limit:
        return False
    # every level needs a start tag, and each start tag is a "<" not followed by "/"
    starts = text.count("<") - text.count("</")
    return starts > max(limit, _FEW_TAGS) or _LONG_START_TAG.search(text) is not None


def bound_depth(text: str, limit: int = MAX_DEPTH) -> str:
    """``text`` with an end tag before each start tag that would open an element past ``limit``
    levels (Blink's rule: that element becomes a sibling of the deepest one) and the attributes of a
    start tag past the first :data:`MAX_ATTRIBUTES` left out; ``text`` itself when nothing is cut."""
    if not _may_need(text, limit):  # nothing to cut
        return text
    quick = text.count("<") <= _QUICK_TAGS
    if quick and (len(text) <= _LONG_TAG or _LONG_START_TAG.search(text) is None) and _fits(text, limit):
        return text  # no start tag can hold too many attributes, and none is too deep
    cuts = _over(text, limit)
    if not cuts:
        return text
    parts: list[str] = []
    last = 0
    for start, end, new in cuts:
        parts.append(text[last:start])
        parts.append(new)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def bound_depth_bytes(data: bytes, limit: int = MAX_DEPTH) -> bytes:
    """:func:`bound_depth` of a document not yet decoded: read byte for byte as Latin-1, so every
    byte but the inserted ASCII end tags comes back as it was; ``data`` itself when nothing is cut."""
    if data.count(b"<") - data.count(b"</") <= max(limit, _FEW_TAGS) and (
        len(data) <= _LONG_TAG or _LONG_START_TAG.search(data.decode("latin-1")) is None
    ):
        return data
    text = data.decode("latin-1")
    out = bound_depth(text, limit)
    return data if out is text else out.encode("latin-1")
