"""SingleFile input: split a self-contained HTML page's ``data:`` URIs out into v1-named assets
(formats/gwtar.md §3): ``BASE.html`` and ``BASE/BASE-asset-N.EXT``.

Every ``data:`` URI a page loads is decoded (base64 or percent-encoded, any media type, any
parameters such as ``charset``; WHATWG's data: URL rules), written once per distinct (media type,
bytes) and replaced by its relative asset URL: the value of a URL attribute of an embedded resource
(the shared table :mod:`archiver.html_refs`, ``srcset``-like attributes candidate by candidate, plus the
lazy-loading ``data-src`` / ``data-srcset`` a script copies), and every reference the CSS walker
:mod:`archiver.css_refs` finds in a ``<style>`` block or a ``style`` attribute (``url()``, ``@import``,
``image-set()`` strings; never a comment or another string). A URI that does not decode is left
inline; navigation and never-loaded URLs (``<a href>``, ``<form action>``, ``<link rel=canonical>``)
and ``<meta>`` values stay as they are. The ``Content-Security-Policy`` ``<meta>`` SingleFile adds is
removed (it would block the loader).

The page itself is read whole (it must be parsed and rewritten); each decoded asset goes straight to
its own file, so assets never accumulate in memory.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote_to_bytes

from archiver import css_refs, srcset, tree
from archiver.errors import UsageError
from archiver.gwtar import refs
from archiver.gwtar.layout import MemberSpec, Meta
from archiver.gwtar.sources import TOOL, Source, _epoch, _fallback_created
from archiver.html_close import Parser
from archiver.html_refs import EMBEDDED, LAZY_SRC, LAZY_SRCSET, LAZY_TAGS, Found, attribute_refs
from archiver.walk import makedirs

__all__ = ["EXTENSIONS", "DataURI", "parse_data_uri", "rewrite", "safe_base", "singlefile_source"]

#: Media type → file extension; anything else is ``.dat`` (as v1). Every JavaScript type is ``.js``.
EXTENSIONS = {
    "image/png": "png", "image/apng": "png", "image/jpeg": "jpg", "image/jpg": "jpg", "image/pjpeg": "jpg",
    "image/gif": "gif", "image/webp": "webp", "image/avif": "avif", "image/svg+xml": "svg",
    "image/bmp": "bmp",
    "image/x-icon": "ico", "image/vnd.microsoft.icon": "ico", "image/tiff": "tiff", "image/jxl": "jxl",
    "text/css": "css", "text/html": "html", "text/plain": "txt", "text/xml": "xml", "application/xml": "xml",
    "application/json": "json", "application/pdf": "pdf", "application/wasm": "wasm",
    "text/javascript": "js", "application/javascript": "js", "application/x-javascript": "js",
    "text/ecmascript": "js", "application/ecmascript": "js", "text/x-javascript": "js", "module": "js",
    "font/woff": "woff", "font/woff2": "woff2", "font/ttf": "ttf", "font/otf": "otf", "font/sfnt": "ttf",
    "application/font-woff": "woff", "application/font-woff2": "woff2", "application/x-font-woff": "woff",
    "application/x-font-ttf": "ttf", "application/x-font-truetype": "ttf", "application/x-font-otf": "otf",
    "application/font-sfnt": "ttf", "application/vnd.ms-fontobject": "eot",
    "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/ogg": "ogg", "audio/wav": "wav", "audio/x-wav": "wav",
    "audio/webm": "weba", "audio/flac": "flac", "audio/aac": "aac", "audio/mp4": "m4a",
    "video/mp4": "mp4", "video/webm": "webm", "video/ogg": "ogv", "text/vtt": "vtt",
}  # fmt: skip
_TYPE_FOR_EXT = {"js": "text/javascript", "jpg": "image/jpeg", "ttf": "font/ttf", "woff": "font/woff",
                 "woff2": "font/woff2", "otf": "font/otf"}  # fmt: skip

_ASCII_WS = " \t\n\f\r"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*")
# An attribute: its space, name and value. A match starts only where a run of space starts (the
# look-behind): tried at every space of a run, as it was, a tag of 50,000 spaces took 12 s (each try
# ran to the run's end); a match could never start inside a run (a name holds no space), so the
# matches are the same.
_ATTR = re.compile(r"""(?<!\s)(\s+)([^\s"'>/=]+)(\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
# SingleFile's "url: <address>" line, read from "url:" (see _saved_url).
_SAVED_URL = re.compile(r"url:\s*(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class DataURI:
    """A decoded ``data:`` URI: its media type (lowercased, parameters dropped; ``text/plain`` when
    empty), its parameters and its bytes."""

    media_type: str
    params: tuple[str, ...]
    data: bytes


def parse_data_uri(text: str) -> DataURI | None:
    """Decode a ``data:`` URI by the WHATWG data: URL processor (percent-decoding, then forgiving
    base64 when the last parameter is ``base64``), or None when it is not one or does not decode."""
    text = text.strip(_ASCII_WS)
    if text[:5].lower() != "data:" or "," not in text:
        return None
    head, _, body = text[5:].partition(",")
    parts = [p.strip(_ASCII_WS) for p in head.split(";")]
    is_base64 = len(parts) > 1 and parts[-1].lower() == "base64"
    if is_base64:
        parts.pop()
    media = parts[0].lower() if parts[0] else "text/plain"
    if "/" not in media:
        media = "text/plain"
    try:
        raw = unquote_to_bytes(body)
    except ValueError:
        return None
    if is_base64:
        try:
            compact = "".join(raw.decode("ascii").split())
        except UnicodeDecodeError:
            return None
        if len(compact) % 4 == 0:
            compact = compact[:-2] if compact.endswith("==") else compact.removesuffix("=")
        if len(compact) % 4 == 1 or not _BASE64.fullmatch(compact):
            return None
        try:
            raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
        except (binascii.Error, ValueError):
            return None
    return DataURI(media, tuple(parts[1:]), raw)


def safe_base(stem: str) -> str:
    """The v1 BASE name for an input file stem: ``[A-Za-z0-9._-]`` only (others become ``_``), no
    leading dot, at most 64 characters, so every member name fits one ustar header and the v1 loader's
    unescaped regular expression matches it."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", stem).lstrip(".")[:64]
    return base or "page"


@dataclass
class _Assets:
    """Assigns ``BASE/BASE-asset-N.EXT`` names, one per distinct (media type, bytes), writing each
    file as it is first seen."""

    base: str
    folder: Path
    names: dict[tuple[str, str], str] = field(default_factory=dict)
    order: list[tuple[str, str, int]] = field(default_factory=list)  # (path, media type, size)

    def url_for(self, uri: DataURI) -> str:
        key = (uri.media_type, hashlib.sha256(uri.data).hexdigest())
        found = self.names.get(key)
        if found is not None:
            return found
        ext = EXTENSIONS.get(uri.media_type, "dat")
        path = f"{self.base}/{self.base}-asset-{len(self.order) + 1}.{ext}"
        target = self.folder / path
        makedirs(target.parent)
        target.write_bytes(uri.data)
        self.names[key] = path
        self.order.append((path, uri.media_type, len(uri.data)))
        return path


def _may_hold_data(text: str) -> bool:
    # a data: URL in CSS may be spelt with escapes (d\61ta:, data\:), which only the tokenizer decodes
    return "data:" in text.lower() or "\\" in text


#: Runs of these characters (base64 and percent-encoded payloads) at least this long are shortened
#: before the CSS is tokenized (:func:`_shorten`).
_RUN_CHARS = "A-Za-z0-9+/%="
_LONG = 256
_RUN = re.compile(f"[{_RUN_CHARS}]{{{_LONG},}}")
_DIGITS = "abcdefghij"


def _shorten(css: str, avoid: str, long: int = _LONG) -> tuple[str, Callable[[str], str]]:
    """``css`` with the middle of each long run of ``[A-Za-z0-9+/%=]`` replaced by a short letter-only
    placeholder, and the function that puts the runs back into any text made from it.

    tinycss2 walks a string or an unquoted url() character by character in Python, so a megabyte of
    base64 in a SingleFile ``<style>`` costs about a second to tokenize. The shortening cannot change
    what the tokenizer sees: none of these characters opens or closes a string, url(), comment, block
    or escape, and the middle replaced runs from just after one ``/`` to just before a later ``/`` of
    the run (at least 8 characters in, so an escape before the run ends before it, and never last, so
    the ``/`` is not the start of ``/*``). Outside a string, url() or comment a ``/`` is a token of its
    own, so the tokens up to the first ``/`` and from the second are those of the original text; a
    reference (``url(``, a quote, ``@import``) can never lie inside the middle. Inside a string,
    url() or comment the placeholder is part of the value, and is put back by the returned function.
    """
    if len(css) < long:
        return css, lambda text: text
    nonce = "QsfRun"
    while nonce in css or nonce in avoid:
        nonce += "Q"
    cuts: list[str] = []
    out: list[str] = []
    pos = 0
    runs = _RUN if long == _LONG else re.compile(f"[{_RUN_CHARS}]{{{long},}}")
    for m in runs.finditer(css):
        if len(cuts) == 10**6:  # six placeholder digits
            break
        start, end = m.span()
        first = css.find("/", start + 7, end)
        last = css.rfind("/", first + 1, end - 1)
        if first < 0 or last - first < long // 2:
            continue
        index = str(len(cuts)).zfill(6)
        out += [css[pos : first + 1], nonce, "".join(_DIGITS[int(d)] for d in index)]
        cuts.append(css[first + 1 : last])
        pos = last
    if not cuts:
        return css, lambda text: text
    out.append(css[pos:])

    def expand(text: str) -> str:
        if nonce not in text:
            return text
        head, *parts = text.split(nonce)
        whole = [head]
        for part in parts:
            whole += [cuts[int("".join(str(_DIGITS.index(c)) for c in part[:6]))], part[6:]]
        return "".join(whole)

    return "".join(out), expand


def _rewrite_css(text: str, assets: _Assets, *, declarations: bool = False, long: int = _LONG) -> str:
    if not _may_hold_data(text):
        return text
    short, expand = _shorten(text, assets.base, long)

    def change(ref: str, role: css_refs.Role) -> str | None:
        uri = parse_data_uri(expand(ref))
        return assets.url_for(uri) if uri is not None else None

    rewrite_css = css_refs.rewrite_declarations if declarations else css_refs.rewrite_stylesheet
    try:
        result = rewrite_css(short, change).text
    except RecursionError:  # absurdly nested CSS: kept as it is, its data: URIs inline
        return text
    return text if result == short else expand(result)


def _rewrite_value(value: str, is_srcset: bool, assets: _Assets) -> str:
    if is_srcset:
        out = value
        for candidate in srcset.urls(value):
            uri = parse_data_uri(candidate)
            if uri is not None:
                out = out.replace(candidate, assets.url_for(uri), 1)
        return out
    uri = parse_data_uri(value)
    return assets.url_for(uri) if uri is not None else value


def _url_attributes(tag: str, attrs: dict[str, str]) -> dict[str, Found]:
    """The attributes of this element that may hold a data: URI to split out, by name: the embedded
    resources of the shared table (archiver.html_refs; navigation and never-loaded URLs stay), and the
    lazy-loading attributes a script copies into ``src`` / ``srcset``."""
    out = {f.attr: f for f in attribute_refs(tag, attrs) if f.use in EMBEDDED}
    if tag in LAZY_TAGS:
        for name in LAZY_SRC:
            if name in attrs:
                out[name] = Found(name, attrs[name], "image")
        if LAZY_SRCSET in attrs:
            out[LAZY_SRCSET] = Found(LAZY_SRCSET, attrs[LAZY_SRCSET], "image", srcset=True)
    return out


def _rewrite_tag(raw: str, tag: str, attrs: dict[str, str], assets: _Assets) -> str:
    if tag == "meta" or not (_may_hold_data(raw) if "style" in attrs else "data:" in raw.lower()):
        return raw
    urls = _url_attributes(tag, attrs)
    if not urls and "style" not in attrs:
        return raw

    def replace(m: re.Match[str]) -> str:
        name = m.group(2).lower()
        value_raw = next((g for g in (m.group(4), m.group(5), m.group(6)) if g is not None), None)
        if value_raw is None:
            return m.group(0)
        if name == "style":
            if not _may_hold_data(value_raw):
                return m.group(0)
            value = html.unescape(value_raw)
            new = _rewrite_css(value, assets, declarations=True)
        elif name in urls and "data:" in value_raw.lower():
            value = html.unescape(value_raw)
            new = _rewrite_value(value, urls[name].srcset, assets)
        else:
            return m.group(0)
        if new == value:
            return m.group(0)
        return f'{m.group(1)}{m.group(2)}="{html.escape(new, quote=True)}"'

    head = re.match(r"<[^\s/>]+", raw)
    if head is None:
        return raw
    return head.group(0) + _ATTR.sub(replace, raw[head.end() :])


#: An "&#" that starts no character reference. Python 3.11's HTMLParser with convert_charrefs off stops
#: its parse there (its goahead breaks out of its loop): after two of them the rest of the page was
#: text, and its data: URIs stayed inline. The scanner reads "&\x01" in their place: it takes only
#: where the tags are, with their names and attributes, from what it reads; the bytes it rewrites
#: are the page's own.
_NOT_A_CHARREF = re.compile(r"&#(?!(?:[0-9]+|[xX][0-9a-fA-F]+)[^0-9a-fA-F])")


class _Scanner(Parser):
    """Collects (start, end, kind, tag, attributes) spans of start tags and ``<style>`` text, in
    source order (attributes: the first value of each name, entities decoded)."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=False)
        self._lines = [0]
        for m in re.finditer("\n", text):
            self._lines.append(m.end())
        self.spans: list[tuple[int, int, str, str, dict[str, str]]] = []
        self.comments: list[str] = []
        self._style = False

    def _at(self) -> int:
        line, col = self.getpos()
        return self._lines[line - 1] + col

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        raw = self.get_starttag_text() or ""
        start = self._at()
        kind = "tag"
        if tag == "meta" and any(
            k == "http-equiv" and (v or "").strip().lower().startswith("content-security-policy")
            for k, v in attrs
        ):
            kind = "csp"
        first: dict[str, str] = {}
        for k, v in attrs:
            first.setdefault(k, v or "")
        self.spans.append((start, start + len(raw), kind, tag, first))
        self._style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self._style = False

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        if self._style:
            start = self._at()
            self.spans.append((start, start + len(data), "style", "style", {}))

    def handle_comment(self, data: str) -> None:
        if len(self.comments) < 4:
            self.comments.append(data)


def rewrite(text: str, assets: _Assets) -> tuple[str, str | None]:
    """The page with its data: URIs replaced and the CSP meta removed, and the URL SingleFile recorded
    in its "Page saved with SingleFile" comment (None when there is none)."""
    scanner = _Scanner(text)
    try:  # the parser reads a copy of the same length: positions are the page's
        scanner.feed(_NOT_A_CHARREF.sub("&\x01", text))
        scanner.close()
    except (AssertionError, RecursionError):
        pass
    out: list[str] = []
    pos = 0
    for start, end, kind, tag, attrs in scanner.spans:
        if start < pos or text[start:end] == "":
            continue
        out.append(text[pos:start])
        piece = text[start:end]
        if kind == "csp":
            piece = ""
        elif kind == "tag":
            piece = _rewrite_tag(piece, tag, attrs, assets)
        else:
            piece = _rewrite_css(piece, assets)
        out.append(piece)
        pos = end
    out.append(text[pos:])
    home = None
    for comment in scanner.comments:
        if "SingleFile" in comment:
            found = _saved_url(comment)
            if found is not None:
                home = found
    return "".join(out), home


def _saved_url(comment: str) -> str | None:
    """The address of the first line ``url: <address>`` of ``comment``, as ``re.search(r"^\\s*url:
    \\s*(\\S+)\\s*$", comment, re.M)`` finds it, in time linear in the comment's size: that search
    tried ``^\\s*`` at each line's start, and across every blank line after it (a comment of 100,000
    newlines: 7 s). Each ``url:`` is tried once: it starts such a line when only space comes before
    it back to the comment's start or to a newline."""
    at = comment.find("url:")
    while at >= 0:
        before = at
        while before > 0 and comment[before - 1].isspace() and comment[before - 1] != "\n":
            before -= 1
        if before == 0 or comment[before - 1] == "\n":
            m = _SAVED_URL.match(comment, at)
            if m:
                return m.group(1)
        at = comment.find("url:", at + 1)
    return None


def _category(media_type: str) -> refs.Category:
    if media_type == "text/css":
        return "style"
    if media_type.startswith("font/") or "font" in media_type:
        return "font"
    if EXTENSIONS.get(media_type) == "js":
        return "script"
    if media_type.startswith(("audio/", "video/")):
        return "media"
    if media_type.startswith("image/"):
        return "image"
    return "other"


def singlefile_source(src: Path, work: Path, *, created: str | None = None) -> Source:
    """Split ``src`` (a SingleFile-style page) into ``work`` and describe the result as a
    :class:`~archiver.gwtar.sources.Source` with v1 names."""
    try:
        data = src.read_bytes()
        mtime = src.stat().st_mtime
    except OSError as e:
        raise UsageError(f"cannot read: {e.strerror}", subject=str(src)) from None
    base = safe_base(src.name.rsplit(".", 1)[0])
    text = data.decode("utf-8", "surrogateescape")
    assets = _Assets(base, work)
    page, home = rewrite(text, assets)
    page_bytes = page.encode("utf-8", "surrogateescape")
    main = f"{base}.html"
    (work / main).write_bytes(page_bytes)
    title = tree.title_from_html(page_bytes[: 1 << 20])
    specs = {main: MemberSpec(main, len(page_bytes), "text/html", "page", title)}
    files = {main: work / main}
    for path, media_type, size in assets.order:
        specs[path] = MemberSpec(path, size, media_type)
        files[path] = work / path
    when = created or _fallback_created(mtime)
    meta = Meta(
        tool=TOOL,
        created=when,
        main=main,
        basename=base,
        source="singlefile",
        home=home,
        title=title,
        original={"name": src.name, "sha256": hashlib.sha256(data).hexdigest()},
    )
    main_assets = [(p, _category(t)) for p, t, _ in assets.order]
    return Source(
        specs, files, dict.fromkeys(specs), meta, _epoch(when, "created"), main_assets, v1_names=True
    )
