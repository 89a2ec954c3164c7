"""What a page needs for its first render: the references of an HTML document and of a stylesheet,
in document order, each with a category that decides its place in a gwtar (formats/gwtar.md §5.2).

Pure: no network, no filesystem, no clock.

HTML is tokenized with the standard library's tolerant ``html.parser``; CSS with tinycss2 tokens
(``@import``, ``url()``, ``image-set()``), never regular expressions over CSS. Nothing here raises
on hostile input: unreadable parts yield no references.
"""

from __future__ import annotations

import contextlib
import posixpath
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Literal
from urllib.parse import unquote

import tinycss2

from archiver.srcset import parse as srcset_candidates

__all__ = ["Category", "Ref", "css_refs", "html_refs", "parse_srcset", "resolve"]

Category = Literal["style", "font", "script", "image", "media", "other"]


@dataclass(frozen=True)
class Ref:
    """One reference as written in the document (entities decoded) and what it is for."""

    url: str
    category: Category


_LINK_AS: dict[str, Category] = {
    "style": "style",
    "font": "font",
    "script": "script",
    "image": "image",
    "audio": "media",
    "video": "media",
}


def parse_srcset(value: str) -> list[str]:
    """The URLs of a ``srcset`` attribute, by the WHATWG parsing steps (:func:`archiver.srcset.parse`)."""
    return [c.url for c in srcset_candidates(value)]


def _css_walk(tokens: list[object], in_font: bool, out: list[Ref]) -> None:
    for token in tokens:
        kind = getattr(token, "type", None)
        if kind == "url":
            out.append(Ref(token.value, "font" if in_font else "image"))  # type: ignore[attr-defined]
        elif kind == "function":
            name = token.lower_name  # type: ignore[attr-defined]
            args = token.arguments  # type: ignore[attr-defined]
            if name in ("url", "src"):
                for arg in args:
                    if getattr(arg, "type", None) == "string":
                        out.append(Ref(arg.value, "font" if in_font else "image"))
                        break
            elif name in ("image-set", "-webkit-image-set"):
                for arg in args:
                    if getattr(arg, "type", None) == "string":
                        out.append(Ref(arg.value, "image"))
            _css_walk(args, in_font, out)
        elif kind in ("() block", "[] block", "{} block"):
            _css_walk(token.content, in_font, out)  # type: ignore[attr-defined]


def _css_rules(rules: list[object], out: list[Ref]) -> None:
    for rule in rules:
        kind = getattr(rule, "type", None)
        if kind == "at-rule":
            name = rule.lower_at_keyword  # type: ignore[attr-defined]
            if name == "import":
                for token in rule.prelude:  # type: ignore[attr-defined]
                    t = getattr(token, "type", None)
                    if t in ("url", "string"):
                        out.append(Ref(token.value, "style"))
                        break
                    if t == "function" and token.lower_name == "url":
                        strings = [a for a in token.arguments if getattr(a, "type", None) == "string"]
                        if strings:
                            out.append(Ref(strings[0].value, "style"))
                        break
                continue
            content = rule.content or []  # type: ignore[attr-defined]
            if name == "font-face":
                _css_walk(content, True, out)
            elif name in ("media", "supports", "layer", "container", "document", "scope"):
                _css_rules(tinycss2.parse_rule_list(content), out)
            else:
                _css_walk(content, False, out)
        elif kind == "qualified-rule":
            _css_walk(rule.content, False, out)  # type: ignore[attr-defined]


def css_refs(text: str) -> list[Ref]:
    """References of a stylesheet in order: ``@import`` (``style``), ``url()`` inside ``@font-face``
    (``font``), every other ``url()``/``image-set()`` (``image``)."""
    out: list[Ref] = []
    with contextlib.suppress(RecursionError):  # absurdly nested blocks: what was found so far
        _css_rules(tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True), out)
    return out


def _style_attr_refs(text: str) -> list[Ref]:
    out: list[Ref] = []
    with contextlib.suppress(RecursionError):
        _css_walk(tinycss2.parse_component_value_list(text), False, out)
    return out


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[Ref] = []
        self._media_depth = 0
        self._in_style = False

    def _add(self, url: str | None, category: Category) -> None:
        if url and url.strip():
            self.refs.append(Ref(url.strip(), category))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if "style" in a:
            self.refs.extend(_style_attr_refs(a["style"]))
        if tag == "link":
            rel = a.get("rel", "").lower().split()
            if "stylesheet" in rel:
                self._add(a.get("href"), "style")
            elif "preload" in rel or "prefetch" in rel:
                self._add(a.get("href"), _LINK_AS.get(a.get("as", "").lower(), "other"))
            elif "modulepreload" in rel:
                self._add(a.get("href"), "script")
            elif any("icon" in r for r in rel):
                self._add(a.get("href"), "image")
            elif "manifest" in rel:
                self._add(a.get("href"), "other")
        elif tag == "script":
            self._add(a.get("src"), "script")
        elif tag in ("img", "source"):
            category: Category = "media" if (tag == "source" and self._media_depth) else "image"
            self._add(a.get("src"), category)
            for url in parse_srcset(a.get("srcset", "")):
                self._add(url, category)
        elif tag in ("video", "audio"):
            self._media_depth += 1
            self._add(a.get("poster"), "image")
            self._add(a.get("src"), "media")
        elif tag == "input" and a.get("type", "").lower() == "image":
            self._add(a.get("src"), "image")
        elif tag in ("image", "use", "feimage"):
            self._add(a.get("href") or a.get("xlink:href"), "image")
        elif tag in ("embed", "track", "iframe", "frame"):
            self._add(a.get("src"), "other")
        elif tag == "object":
            self._add(a.get("data"), "other")
        elif tag == "style":
            self._in_style = True

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in ("video", "audio"):
            self._media_depth -= 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("video", "audio") and self._media_depth:
            self._media_depth -= 1
        elif tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.refs.extend(css_refs(data))


def html_refs(data: bytes | str) -> list[Ref]:
    """References of an HTML document in document order (stylesheets, scripts, images, ``srcset``
    candidates, media, ``style`` attributes and ``<style>`` blocks). Bytes are read as UTF-8 with
    replacement."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    collector = _Collector()
    try:
        collector.feed(text)
        collector.close()
    except (AssertionError, RecursionError):  # html.parser gives up on some malformed markup
        pass
    return collector.refs


def resolve(base: str, ref: str) -> str | None:
    """The tree path ``ref`` reaches from the document at tree path ``base``, or None when it leaves
    the tree (a scheme, ``//host``, ``..`` above the root) or is empty. Query and fragment are
    dropped; the path is percent-decoded once (formats/tree.md §5), so ``a%20b.png`` is ``a b.png``
    and ``a%252Fb`` the file ``a%2Fb``. A root-absolute ``/x`` is taken from the tree's root."""
    ref = ref.strip()
    for cut in ("#", "?"):
        ref = ref.split(cut, 1)[0]
    if not ref or ref.startswith("//"):
        return None
    head = ref.split("/", 1)[0]
    if ":" in head:  # a scheme (http:, data:, javascript:, …)
        return None
    path = unquote(ref) if "%" in ref else ref
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(posixpath.dirname(base), path)
    norm = posixpath.normpath(joined)
    if norm in (".", "", "..") or norm.startswith(("../", "/")):
        return None
    return norm
