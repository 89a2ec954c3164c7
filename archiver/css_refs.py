"""What a URL is in CSS, for every part of the archiver: capture rewrites these references, gwtar
orders them (formats/gwtar.md §5.2), the ZIM link checker checks them (formats/zim.md §7). One
walker over tinycss2 tokens, never a regular expression.

Pure: no network, no filesystem, no clock.

What counts as a reference (CSS Syntax 3 tokens, at any nesting depth, so ``@media`` inside
``@supports`` inside ``@layer`` is covered):

- an unquoted ``url(x)`` token and a ``url("x")`` / ``src("x")`` function with a string argument;
- the string or url of an ``@import`` prelude (role ``"import"``: the target is a stylesheet);
- a bare string inside ``image-set()`` / ``-webkit-image-set()`` (an image URL there).

Whether a reference sits inside an ``@font-face`` block (a font) is reported by
:func:`references_detailed`. An ``@namespace`` prelude names a namespace and is never fetched: it is
not a reference. Comments are tokens of their own, so ``/* url(x.png) */`` is never seen as a
reference; escapes (``url(we\\(ird\\).png)``) are decoded by the tokenizer. A rewritten token gets both
its ``value`` and its ``representation`` set, and the output is the input with only the changed
tokens' text replaced (:func:`_splice`: every other byte as it was, a string keeping its quote
character), so rewriting a reference back and forth gives back the same bytes.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal, NamedTuple

import tinycss2
from tinycss2.bytes import decode_stylesheet_bytes
from tinycss2.serializer import serialize_string_value, serialize_url

__all__ = [
    "CSSResult",
    "Change",
    "Reference",
    "Role",
    "decode",
    "may_reference",
    "may_reference_bytes",
    "references",
    "references_detailed",
    "rewrite_declarations",
    "rewrite_stylesheet",
]

Role = Literal["import", "url"]
#: ``change(reference, role)`` returns the text that replaces a reference, or None to leave it.
Change = Callable[[str, Role], "str | None"]

_IMAGE_SET = frozenset({"image-set", "-webkit-image-set"})
_URL_FUNCTIONS = frozenset({"url", "src"})
_SKIPPED = ("whitespace", "comment")
#: An escape as CSS Syntax 3 §4.3.7 reads it: up to six hex digits and one optional whitespace
#: (``\r\n`` counts as one: preprocessing makes it a newline), or any other character but a newline.
#: (Compiled at its use, as :data:`_LETTER_ESCAPE`: only a stylesheet with a backslash needs it.)
_ESCAPE = r"\\(?:[0-9a-fA-F]{1,6}(?:\r\n|[ \t\n\r\f])?|[^\n\r\f0-9a-fA-F])"


def _unescape(match: re.Match[str]) -> str:
    body = match.group(0)[1:]
    digits = body.rstrip(" \t\n\r\f")
    if digits and all(c in "0123456789abcdefABCDEF" for c in digits):
        code = int(digits, 16)
        return "\ufffd" if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)
    return body[:1]


def may_reference(css: str) -> bool:
    """False only when ``css`` holds no reference at all (then nothing needs parsing): no function
    or url token named ``url``, ``src``, ``image-set`` or ``-webkit-image-set`` and no ``@import``,
    however escaped. A cheap scan (no tokenizing); true for any stylesheet that mentions one of
    them, even in a comment or a string, after which the tokenizer decides."""
    # Every escape replaced by what it stands for, left to right as the tokenizer reads them: a name
    # spelled with escapes then appears as it is, and an escape elsewhere (in a string, a comment)
    # only adds text, so nothing the tokenizer would read as one of the names can be missed.
    if "\\" in css:
        css = re.sub(_ESCAPE, _unescape, css)
    low = css.lower()
    return "url(" in low or "src(" in low or "image-set(" in low or "@import" in low


#: The letters of the names :func:`may_reference` looks for (``url``, ``src``, ``image-set``,
#: ``-webkit-image-set``, ``import``), either case, and ``-``: only an escape of one of them can help
#: spell such a name. A hex escape of one (``\75``, ``\000055 ``) is exactly two significant digits
#: with up to four leading zeros and no further hex digit; a non-hex letter may also be escaped as
#: itself (``\u``; ``a``, ``b``, ``c``, ``e`` are hex digits, so ``\a`` is U+000A). Compiled at its
#: use (re keeps it): only a stylesheet with a backslash needs it, and compiling it took a tenth of
#: a millisecond of every capture's start.
_NAME_LETTERS = "urlscimagetwbkpo-"
_LETTER_ESCAPE = (
    rb"\\(?:0{0,4}("
    + b"|".join(
        sorted({f"{ord(c):x}".encode() for c in _NAME_LETTERS + _NAME_LETTERS.upper()}, key=len, reverse=True)
    )
    + rb")(?![0-9a-fA-F])(?:\r\n|[ \t\n\r\f])?|([g-zG-Z-]))"
)
_ASCII_INCOMPATIBLE_BOM = (b"\xfe\xff", b"\xff\xfe")


def _letter(match: re.Match[bytes]) -> bytes:
    code, plain = match.group(1), match.group(2)
    return bytes([int(code, 16)]) if code is not None else plain


def may_reference_bytes(data: bytes) -> bool:
    """:func:`may_reference` of a stylesheet's bytes, without decoding them when they are ASCII-
    compatible (no UTF-16 byte order mark, no ``@charset``): the names are ASCII, which UTF-8 and
    every such encoding write as themselves. Only escapes of the names' letters are undone (any other
    escape stands for a character no name holds). Decodes and asks :func:`may_reference` otherwise."""
    if data.startswith(_ASCII_INCOMPATIBLE_BOM) or data.lstrip(b"\xef\xbb\xbf").startswith(b"@charset"):
        return may_reference(decode(data))
    if b"\\" in data:
        data = re.sub(_LETTER_ESCAPE, _letter, data)
    low = data.lower()
    return b"url(" in low or b"src(" in low or b"image-set(" in low or b"@import" in low


class CSSResult:
    """The rewritten CSS and every reference found in it, in order (as written, with its role). (A
    plain class, compared and shown as the dataclass it was: a dataclass's generated methods were
    compiled from source at every start of a capture, and its module imported for it.)"""

    __slots__ = ("refs", "text")

    def __init__(self, text: str, refs: list[tuple[str, Role]] | None = None) -> None:
        self.text = text
        self.refs: list[tuple[str, Role]] = [] if refs is None else refs

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CSSResult) and other.__class__ is self.__class__:
            return (self.text, self.refs) == (other.text, other.refs)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass was

    def __repr__(self) -> str:
        return f"CSSResult(text={self.text!r}, refs={self.refs!r})"


class Reference(NamedTuple):
    """One reference as written, its role, whether it sits inside an ``@font-face`` block, and where
    the token that holds it starts (1-based line and column as tinycss2 counts them: ``url(`` of an
    unquoted url, the opening quote of a string)."""

    url: str
    role: Role
    font_face: bool = False
    line: int = 0
    column: int = 0


def _set_string(token: Any, value: str) -> None:
    token.value = value
    token.representation = f'"{serialize_string_value(value)}"'


def _set_url(token: Any, value: str) -> None:
    token.value = value
    token.representation = f"url({serialize_url(value)})"


def _keep(ref: str, role: Role) -> None:
    return None


class _Walker:
    def __init__(self, change: Change) -> None:
        self.change = change
        self.found: list[Reference] = []
        self.changed = False
        #: (line, column, "string" | "url", new value) of every changed token, for :func:`_splice`
        self.edits: list[tuple[int, int, str, str]] = []

    def _visit(self, token: Any, role: Role, font: bool, setter: Callable[[Any, str], None]) -> None:
        ref = token.value
        self.found.append(Reference(ref, role, font, token.source_line, token.source_column))
        new = self.change(ref, role)
        if new is not None and new != ref:
            self.edits.append((token.source_line, token.source_column, token.type, new))
            setter(token, new)
            self.changed = True

    def _url_function(self, token: Any, role: Role, font: bool) -> bool:
        """A ``url("x")`` function: rewrite its string argument. True when it was one."""
        if token.type != "function" or token.lower_name not in _URL_FUNCTIONS:
            return False
        for arg in token.arguments:
            if arg.type == "string":
                self._visit(arg, role, font, _set_string)
                break
            if arg.type not in _SKIPPED:
                break
        return True

    def _import(self, target: Any, font: bool) -> None:
        if target.type == "string":
            self._visit(target, "import", font, _set_string)
        elif target.type == "url":
            self._visit(target, "import", font, _set_url)
        else:
            self._url_function(target, "import", font)

    def walk(self, tokens: Iterable[Any], font: bool = False) -> None:
        items = list(tokens)
        font_block = False  # the next {} block is an @font-face body
        i = 0
        while i < len(items):
            token = items[i]
            kind = token.type
            if kind == "at-keyword":
                name = token.lower_value
                font_block = name == "font-face"
                if name in ("import", "namespace"):
                    j = i + 1
                    while j < len(items) and items[j].type in _SKIPPED:
                        j += 1
                    if name == "import" and j < len(items):
                        self._import(items[j], font)
                        i = j + 1
                        continue
                    if name == "namespace":  # a name, never fetched: skip to the end of the rule
                        while j < len(items) and not (items[j].type == "literal" and items[j].value == ";"):
                            j += 1
                        i = j + 1
                        continue
            elif kind == "url":
                self._visit(token, "url", font, _set_url)
            elif kind == "function":
                if not self._url_function(token, "url", font):
                    if token.lower_name in _IMAGE_SET:
                        for arg in token.arguments:
                            if arg.type == "string":
                                self._visit(arg, "url", font, _set_string)
                    self.walk(token.arguments, font)
            elif kind == "{} block":
                self.walk(token.content, font or font_block)
                font_block = False
            elif kind in ("[] block", "() block"):
                self.walk(token.content, font)
            elif kind == "literal" and token.value == ";":
                font_block = False
            i += 1


def _run(css: str, change: Change) -> CSSResult:
    if not may_reference(css):
        return CSSResult(css, [])
    walker = _Walker(change)
    try:
        tokens = tinycss2.parse_component_value_list(css, skip_comments=False)
        walker.walk(tokens)
        text = (_splice(css, walker.edits) or tinycss2.serialize(tokens)) if walker.changed else css
    except RecursionError:  # absurdly nested blocks: the CSS as it was, with what was found so far
        text = css
    return CSSResult(text, [(r.url, r.role) for r in walker.found])


_LINE_BREAK = re.compile(r"\r\n|[\r\n\f]")


def _token_end(css: str, start: int, kind: str) -> int | None:
    """Where the string or url token that starts at ``start`` of ``css`` ends (one past it), or None
    when the text there is not such a token (then the caller serialises the tokens instead)."""
    n = len(css)
    if kind == "string":
        quote = css[start] if start < n else ""
        if quote not in ("'", '"'):
            return None
        i = start + 1
        while i < n:
            c = css[i]
            if c == "\\":
                i += 3 if css.startswith("\r\n", i + 1) else 2
            elif c == quote:
                return i + 1
            elif c in "\n\r\f":
                return None
            else:
                i += 1
        return None
    paren = css.find("(", start, start + 200)  # after the function name (``url``, maybe escaped)
    if paren < 0:
        return None
    i = paren + 1
    while i < n:
        c = css[i]
        if c == "\\":
            i += 2
        elif c == ")":
            return i + 1
        elif c in "\"'(":
            return None
        else:
            i += 1
    return None


def _splice(css: str, edits: list[tuple[int, int, str, str]]) -> str | None:
    """``css`` with only the changed tokens replaced, every other byte as it was (a string keeps its
    quote character). tinycss2 counts lines after turning ``\r\n``, ``\r`` and ``\f`` into
    newlines, and columns in code points from 1; the offsets are mapped back to ``css`` the same way.
    None when a token is not where its position says (the caller then serialises the tokens)."""
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(css)]
    spans: list[tuple[int, int, str]] = []
    for line, column, kind, value in edits:
        if not 1 <= line <= len(starts) or column < 1:
            return None
        start = starts[line - 1] + column - 1
        end = _token_end(css, start, kind)
        if end is None:
            return None
        if kind == "string":
            quote = css[start]
            body = serialize_string_value(value)
            if quote == "'":
                body = body.replace("'", "\\'")
            spans.append((start, end, f"{quote}{body}{quote}"))
        else:  # only the value between the parentheses: the name's spelling and spaces stay
            inner = css.index("(", start) + 1
            close = end - 1
            while inner < close and css[inner] in " \t\n\r\f":
                inner += 1
            while close > inner and css[close - 1] in " \t\n\r\f" and css[close - 2] != "\\":
                close -= 1
            spans.append((inner, close, serialize_url(value)))
    spans.sort()
    out: list[str] = []
    at = 0
    for start, end, text in spans:
        if start < at:  # overlapping edits: not what a well-formed token list gives
            return None
        out += [css[at:start], text]
        at = end
    out.append(css[at:])
    return "".join(out)


def rewrite_stylesheet(css: str, change: Change) -> CSSResult:
    """Rewrite every reference in a stylesheet (a ``.css`` file or a ``<style>`` element's text).
    CSS in which nothing changes is returned as it was, byte for byte; so is CSS nested too deeply
    for the walker (thousands of open blocks), never an exception."""
    return _run(css, change)


def rewrite_declarations(css: str, change: Change) -> CSSResult:
    """Rewrite every reference in a ``style=""`` attribute's declarations."""
    return _run(css, change)


def references_detailed(css: str) -> list[Reference]:
    """Every reference in ``css`` in order, as written, with its role and whether it is in an
    ``@font-face`` block. Absurdly nested input yields the references found before the limit."""
    if not may_reference(css):
        return []
    walker = _Walker(_keep)
    with contextlib.suppress(RecursionError):
        walker.walk(tinycss2.parse_component_value_list(css, skip_comments=False))
    return walker.found


def references(css: str) -> list[tuple[str, Role]]:
    """Every reference in ``css`` as written, with its role, without changing anything."""
    return [(r.url, r.role) for r in references_detailed(css)]


def decode(data: bytes) -> str:
    """A stylesheet's text from its bytes as CSS says: a BOM, else ``@charset``, else UTF-8."""
    text, _ = decode_stylesheet_bytes(data)
    return str(text)
