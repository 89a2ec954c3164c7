"""Find and rewrite the URLs in CSS with a real tokenizer (tinycss2), never a regular expression.

Pure: no network, no filesystem, no clock.

What counts as a reference (CSS Syntax 3 tokens, at any nesting depth, so ``@media`` inside
``@supports`` inside ``@layer`` is covered):

- an unquoted ``url(x)`` token and a ``url("x")`` / ``src("x")`` function with a string argument;
- the string or url of an ``@import`` prelude (role ``"import"``: the target is a stylesheet);
- a bare string inside ``image-set()`` / ``-webkit-image-set()`` (an image URL there).

Comments are tokens of their own, so ``/* url(x.png) */`` is never seen as a reference; escapes
(``url(we\\(ird\\).png)``) are decoded by the tokenizer. A rewritten token gets both its ``value``
and its ``representation`` set, since tinycss2's serializer writes the representation; untouched
tokens serialise as they were read (quotes may be normalised to ``"``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import tinycss2
from tinycss2.serializer import serialize_string_value, serialize_url

__all__ = ["CSSResult", "Change", "Role", "references", "rewrite_declarations", "rewrite_stylesheet"]

Role = Literal["import", "url"]
#: ``change(reference, role)`` returns the text that replaces a reference, or None to leave it.
Change = Callable[[str, Role], "str | None"]

_IMAGE_SET = frozenset({"image-set", "-webkit-image-set"})
_URL_FUNCTIONS = frozenset({"url", "src"})


@dataclass
class CSSResult:
    """The rewritten CSS and every reference found in it, in order (as written, with its role)."""

    text: str
    refs: list[tuple[str, Role]] = field(default_factory=list)


def _set_string(token: Any, value: str) -> None:
    token.value = value
    token.representation = f'"{serialize_string_value(value)}"'


def _set_url(token: Any, value: str) -> None:
    token.value = value
    token.representation = f"url({serialize_url(value)})"


class _Walker:
    def __init__(self, change: Change) -> None:
        self.change = change
        self.refs: list[tuple[str, Role]] = []
        self.changed = False

    def _visit(self, token: Any, role: Role, setter: Callable[[Any, str], None]) -> None:
        ref = token.value
        self.refs.append((ref, role))
        new = self.change(ref, role)
        if new is not None and new != ref:
            setter(token, new)
            self.changed = True

    def _url_function(self, token: Any, role: Role) -> bool:
        """A ``url("x")`` function: rewrite its string argument. True when it was one."""
        if token.type != "function" or token.lower_name not in _URL_FUNCTIONS:
            return False
        for arg in token.arguments:
            if arg.type == "string":
                self._visit(arg, role, _set_string)
                break
            if arg.type not in ("whitespace", "comment"):
                break
        return True

    def walk(self, tokens: Iterable[Any]) -> None:
        items = list(tokens)
        i = 0
        while i < len(items):
            token = items[i]
            kind = token.type
            if kind == "at-keyword" and token.lower_value == "import":
                j = i + 1
                while j < len(items) and items[j].type in ("whitespace", "comment"):
                    j += 1
                if j < len(items):
                    target = items[j]
                    if target.type == "string":
                        self._visit(target, "import", _set_string)
                    elif target.type == "url":
                        self._visit(target, "import", _set_url)
                    else:
                        self._url_function(target, "import")
                    i = j + 1
                    continue
            elif kind == "url":
                self._visit(token, "url", _set_url)
            elif kind == "function":
                if not self._url_function(token, "url"):
                    if token.lower_name in _IMAGE_SET:
                        for arg in token.arguments:
                            if arg.type == "string":
                                self._visit(arg, "url", _set_string)
                    self.walk(token.arguments)
            elif kind in ("{} block", "[] block", "() block"):
                self.walk(token.content)
            i += 1


def _run(css: str, change: Change) -> CSSResult:
    tokens = tinycss2.parse_component_value_list(css, skip_comments=False)
    walker = _Walker(change)
    walker.walk(tokens)
    if not walker.changed:
        return CSSResult(css, walker.refs)
    return CSSResult(tinycss2.serialize(tokens), walker.refs)


def rewrite_stylesheet(css: str, change: Change) -> CSSResult:
    """Rewrite every reference in a stylesheet (a ``.css`` file or a ``<style>`` element's text).
    CSS in which nothing changes is returned as it was, byte for byte."""
    return _run(css, change)


def rewrite_declarations(css: str, change: Change) -> CSSResult:
    """Rewrite every reference in a ``style=""`` attribute's declarations."""
    return _run(css, change)


def references(css: str) -> list[tuple[str, Role]]:
    """Every reference in ``css`` as written, with its role, without changing anything."""
    return _run(css, lambda ref, role: None).refs
