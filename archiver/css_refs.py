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
its ``value`` and its ``representation`` set, since tinycss2's serializer writes the representation;
untouched tokens serialise as they were read (quotes may be normalised to ``"``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import tinycss2
from tinycss2.bytes import decode_stylesheet_bytes
from tinycss2.serializer import serialize_string_value, serialize_url

__all__ = [
    "CSSResult",
    "Change",
    "Reference",
    "Role",
    "decode",
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


@dataclass
class CSSResult:
    """The rewritten CSS and every reference found in it, in order (as written, with its role)."""

    text: str
    refs: list[tuple[str, Role]] = field(default_factory=list)


@dataclass(frozen=True)
class Reference:
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

    def _visit(self, token: Any, role: Role, font: bool, setter: Callable[[Any, str], None]) -> None:
        ref = token.value
        self.found.append(Reference(ref, role, font, token.source_line, token.source_column))
        new = self.change(ref, role)
        if new is not None and new != ref:
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
    walker = _Walker(change)
    try:
        tokens = tinycss2.parse_component_value_list(css, skip_comments=False)
        walker.walk(tokens)
        text = tinycss2.serialize(tokens) if walker.changed else css
    except RecursionError:  # absurdly nested blocks: the CSS as it was, with what was found so far
        text = css
    return CSSResult(text, [(r.url, r.role) for r in walker.found])


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
