"""The tree contract's pure core: canonical URLs, dedup keys, LocalPath, Rel and scope.

Pure: no network, no filesystem, no clock, no global state (the Public Suffix List is bundled data,
loaded once). Every function here is specified in ``formats/tree.md`` (the section named in its
docstring) and held to the vectors in ``formats/vectors/``. Bad input raises :class:`URLError` and
nothing else; references that are not ours to fetch (``mailto:``, ``#top``…) are recognised by
:func:`ref_action` without raising.

The vocabulary:

- a *reference* is what a page says (``../a.css``, ``mailto:x``, ``#top``);
- a *canonical URL* is an absolute http(s) URL in the form of tree.md §2 (:func:`canonicalize`);
- a *dedup key* is the canonical URL with tracking parameters removed (:func:`dedup_key`); it is
  what is fetched and what LocalPath is computed from;
- a *tree path* is a decoded, ``/``-separated path relative to the tree's root (:func:`local_path`);
- an *href* is a percent-encoded relative reference between two tree paths (:func:`rel`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote

import idna

from archiver.errors import URLError

if TYPE_CHECKING:  # the list is read (a tenth of a second) only when a host name needs it
    from publicsuffixlist import PublicSuffixList

__all__ = [
    "DEFAULT_HYGIENE",
    "DEFAULT_SKIP_EXTENSIONS",
    "MAX_URL_LENGTH",
    "NOT_FETCHED_SCHEMES",
    "PRIVATE_NAMES",
    "REPORT_NAME",
    "RESERVED_DIR",
    "RESERVED_NAMES",
    "STATE_NAME",
    "Hygiene",
    "Kind",
    "canonicalize",
    "dedup_key",
    "ext",
    "fold_suffix",
    "guess_kind",
    "host_of",
    "in_scope",
    "likely_page",
    "local_path",
    "parse_seed",
    "ref_action",
    "registrable_domain",
    "rel",
    "same_site",
    "want_asset",
]

Kind = Literal["page", "asset"]

#: The folder at the root of every tree that holds assets (one sub-folder per host) and metadata.
RESERVED_DIR = "_archiver"
#: The capture's resume state (SQLite), directly inside RESERVED_DIR; SQLite names its side files
#: (``-wal``, ``-shm``, ``-journal``…) after it. Re-exported by :mod:`archiver.tree`.
STATE_NAME = "crawl.sqlite"
#: The tree's private files and folders, directly inside RESERVED_DIR: the resume state with its side
#: files (it keeps every URL unredacted), ``tmp`` (files being written, tree.md §9.2) and the
#: capture's report (every URL's outcome, tree.md §9.3) and the WARC files of ``capture --warc``
#: (``warc``: every exchange as received, URLs unredacted; formats/warc.md §7). They belong to the
#: machine that wrote the tree: never served, never packed (serve.md §5.1). Any other name that
#: starts with STATE_NAME or REPORT_NAME is private too (:func:`archiver.tree.is_private`).
#: Re-exported by :mod:`archiver.tree`.
REPORT_NAME = "report.json"
PRIVATE_NAMES = frozenset(
    {
        STATE_NAME,
        f"{STATE_NAME}-wal",
        f"{STATE_NAME}-shm",
        f"{STATE_NAME}-journal",
        "tmp",
        REPORT_NAME,
        "warc",
    }
)
#: Names inside RESERVED_DIR that are metadata, never host folders (tree.md §4.4): the manifest and
#: the private names, exactly as tree.md §4.4 lists them (so without ``-journal``: changing the set
#: changes LocalPath).
RESERVED_NAMES = frozenset({"manifest.jsonl", *(PRIVATE_NAMES - {f"{STATE_NAME}-journal"})})
#: Longer inputs are rejected (tree.md §2.1): nginx's default request-line buffer is 8 KiB.
MAX_URL_LENGTH = 8192
#: References with these schemes stay in pages exactly as written and are never fetched (tree.md §2.2).
NOT_FETCHED_SCHEMES = frozenset(
    {"javascript", "mailto", "tel", "data", "blob", "about", "ftp", "sms", "file"}
)
#: Asset extensions left on the live web unless the user asks for them (tree.md §6.3).
DEFAULT_SKIP_EXTENSIONS = frozenset(
    ".mp4 .m4v .mov .avi .mkv .webm .flv .wmv .m3u8 .ts .mp3 .wav .flac .aac .ogg .oga .dmg .pkg .exe .msi "
    ".deb .rpm .appimage .iso .zip .tar .gz .tgz .bz2 .xz .7z .rar .pdf".split()
)
# LikelyPage: a link whose last segment has one of these extensions is an asset, not a page (tree.md §6.4).
_ASSET_EXTENSIONS = DEFAULT_SKIP_EXTENSIONS | frozenset(
    ".png .jpg .jpeg .gif .webp .avif .svg .ico .bmp .tif .tiff .woff .woff2 .ttf .otf .eot .css .js .mjs "
    ".json .xml .rss .atom .csv .txt .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub .wasm .map".split()
)

_SPLIT = re.compile(r"^(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$", re.DOTALL)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*$")
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_HEX = "0123456789ABCDEF"
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Bytes that stay literal in a canonical path / query (tree.md §2.1); every other byte is %XX-escaped.
_PATH_SAFE = _UNRESERVED | frozenset(b"!$&'()*+,;=:@/")
_QUERY_SAFE = _PATH_SAFE | frozenset(b"?")
# Bytes that stay literal in an href made by rel(): the path set without ':' (a ':' in a first segment
# would read as a scheme) and without '/', which rel() handles as the separator.
_HREF_SAFE = _UNRESERVED | frozenset(b"!$&'()*+,;=@")
# Bytes that keep their %XX escape in a decoded tree path (tree.md §4.1): '/', '%', and control bytes.
_KEEP_ESCAPED_IN_NAMES = frozenset([0x2F, 0x25, *range(0x20), 0x7F])
_FORBIDDEN_HOST = frozenset(" #%/:<>?@[\\]^|")
_DEFAULT_PORTS = {"http": "80", "https": "443"}
_PAGE_LEAF_EXTENSIONS = (".html", ".htm")
_INDEX_NAMES = ("index.html", "index.htm")


# --------------------------------------------------------------------------------------------------
# §2.3 URL hygiene


@dataclass(frozen=True)
class Hygiene:
    """Which query parameters are tracking noise (tree.md §3). Keys compare case-insensitively after
    percent-decoding. ``keep`` wins over both drop lists, so an ambiguous key is never dropped by a
    prefix rule."""

    drop_prefixes: tuple[str, ...] = ("utm_", "mtm_", "hsa_", "pk_")
    drop_exact: frozenset[str] = frozenset(
        {
            "fbclid", "gclid", "dclid", "msclkid", "yclid", "spm", "scm",
            "share_source", "share_medium", "share_plat",
        }
    )  # fmt: skip
    keep: frozenset[str] = frozenset({"ref", "from", "source", "src", "via"})

    def drops(self, key: str) -> bool:
        k = _pct_decode_text(key).lower()
        if k in self.keep:
            return False
        return k in self.drop_exact or k.startswith(self.drop_prefixes)


DEFAULT_HYGIENE = Hygiene()
NO_HYGIENE = Hygiene(drop_prefixes=(), drop_exact=frozenset(), keep=frozenset())


# --------------------------------------------------------------------------------------------------
# §2 canonical URLs


@dataclass(frozen=True)
class _URL:
    scheme: str
    host: str  # lowercased; IPv6 with brackets; IDNA A-labels
    port: str  # "" when default or absent
    path: str  # canonical escaping, starts with "/"
    query: str | None
    fragment: str | None  # only route fragments survive canonicalisation

    @property
    def netloc(self) -> str:
        return f"{self.host}:{self.port}" if self.port else self.host

    def __str__(self) -> str:
        out = f"{self.scheme}://{self.netloc}{self.path}"
        if self.query is not None:
            out += "?" + self.query
        if self.fragment is not None:
            out += "#" + self.fragment
        return out


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _fail(text: str, why: str) -> URLError:
    return URLError(why, subject=repr(_short(text)))


def ref_action(ref: str) -> Literal["fetch", "keep"]:
    """``"keep"`` for a reference that stays in the page exactly as written and is never fetched
    (tree.md §2.2): empty, fragment-only (``#top``), or a scheme other than http/https
    (``javascript: mailto: tel: data: blob: about:`` …); ``"fetch"`` for everything else. Never raises."""
    text = _strip(ref)
    if not text or text.startswith("#"):
        return "keep"
    m = _SPLIT.match(text)
    scheme = m.group(1) if m else None
    if scheme and _SCHEME.match(scheme) and scheme.lower() not in ("http", "https"):
        return "keep"
    return "fetch"


def _strip(text: str) -> str:
    # WHATWG URL parsing: strip leading/trailing C0 controls and space, drop tab and newlines anywhere.
    return text.strip("".join(map(chr, range(0x21)))).replace("\t", "").replace("\n", "").replace("\r", "")


def canonicalize(ref: str, base: str | None = None) -> str:
    """Resolve ``ref`` against ``base`` (itself any URL this module accepts) and return the canonical
    URL of tree.md §2.1. Raises :class:`URLError` for anything that is not an absolute http(s) URL
    with a valid host and port once resolved, and for references that :func:`ref_action` keeps."""
    return str(_canonical(ref, base))


def parse_seed(text: str) -> str:
    """A URL typed by a user (tree.md §2.4): like :func:`canonicalize`, but ``example.com`` means
    ``https://example.com/``."""
    stripped = _strip(text)
    if stripped and "://" not in stripped and not stripped.startswith("//"):
        stripped = "https://" + stripped
    return str(_canonical(stripped, None, original=text))


@lru_cache(maxsize=4096)
def _canonical(ref: str, base: str | None, original: str | None = None) -> _URL:
    shown = ref if original is None else original
    if not isinstance(ref, str):
        raise TypeError(f"URL must be str, not {type(ref).__name__}")
    if len(ref) > MAX_URL_LENGTH:
        raise _fail(shown, f"URL longer than {MAX_URL_LENGTH} characters")
    text = _strip(ref)
    if not text:
        raise _fail(shown, "empty URL")
    if text.startswith("#"):
        raise _fail(shown, "fragment-only reference: it points into the same page, nothing to fetch")
    if _CONTROL.search(text):
        raise _fail(shown, "control character in URL")
    # WHATWG: in http(s) URLs a backslash before the query is a slash (so "http:\\\\host" has a host).
    cut = min((i for i in (text.find("?"), text.find("#")) if i >= 0), default=len(text))
    text = text[:cut].replace("\\", "/") + text[cut:]
    m = _SPLIT.match(text)
    assert m is not None  # the RFC 3986 appendix B expression matches every string
    scheme, authority, path, query, fragment = m.groups()
    if scheme is not None and not _SCHEME.match(scheme):
        # "1a:b" is not a scheme: the whole thing is a relative path
        scheme, authority, path, query, fragment = _SPLIT.match("./" + text).groups()  # type: ignore[union-attr]
    if scheme is not None:
        scheme = scheme.lower()
        if scheme in NOT_FETCHED_SCHEMES:
            raise _fail(shown, f"{scheme}: reference, kept in the page and never fetched")
        if scheme not in ("http", "https"):
            raise _fail(shown, f"unsupported scheme {scheme!r}: only http and https are archived")

    if scheme is not None and (authority is not None or base is None):
        if authority is None:
            raise _fail(shown, "no host in URL")
        target_scheme, target_auth, target_path, target_query = scheme, authority, path, query
    else:
        if base is None:
            raise _fail(shown, "relative reference without a base URL")
        if scheme is not None and scheme != _canonical(base, None).scheme:
            raise _fail(shown, "no host in URL")
        b = _canonical(base, None)
        target_scheme = b.scheme
        if authority is not None:  # scheme-relative "//host/path"
            target_auth, target_path, target_query = authority, path, query
        else:
            target_auth = b.netloc
            if path == "":
                target_path = b.path
                target_query = query if query is not None else b.query
            elif path.startswith("/"):
                target_path, target_query = path, query
            else:
                target_path, target_query = b.path[: b.path.rfind("/") + 1] + path, query
    host, port = _parse_authority(target_auth, target_scheme, shown)
    canon_path = _canonical_path(target_path)
    canon_query = _escape(target_query, _QUERY_SAFE) if target_query else None
    route = None
    if fragment and canon_path == "/" and fragment[0] in "!/":
        route = _escape(fragment, _QUERY_SAFE)  # tree.md §2.1: hash-bang and route fragments survive
    url = _URL(target_scheme, host, port, canon_path, canon_query, route)
    if len(str(url)) > MAX_URL_LENGTH:
        raise _fail(shown, f"URL longer than {MAX_URL_LENGTH} characters once resolved")
    return url


def _parse_authority(authority: str, scheme: str, shown: str) -> tuple[str, str]:
    # userinfo is dropped (tree.md §2.1): credentials never reach the tree or its manifest
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _fail(shown, "IPv6 host without its closing ']'")
        literal, after = hostport[1:end], hostport[end + 1 :]
        if after and not after.startswith(":"):
            raise _fail(shown, "junk after the IPv6 host")
        port = after[1:] if after else ""
        try:
            addr = ipaddress.IPv6Address(literal)
        except ValueError:
            raise _fail(shown, f"invalid IPv6 address [{_short(literal)}]") from None
        host = f"[{addr.compressed}]"
    else:
        name, sep, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        host = _canonical_host(name, shown)
        if sep and not port:
            port = ""
    if port:
        if not port.isascii() or not port.isdigit() or int(port) > 65535:
            raise _fail(shown, f"invalid port {_short(port)!r}")
        port = str(int(port))
        if _DEFAULT_PORTS[scheme] == port:
            port = ""
    return host, port


def _canonical_host(name: str, shown: str) -> str:
    decoded = unquote(name, errors="replace")
    if not decoded:
        raise _fail(shown, "no host in URL")
    if any(c in _FORBIDDEN_HOST for c in decoded) or _CONTROL.search(decoded):
        raise _fail(shown, f"invalid character in host {_short(decoded)!r}")
    if decoded.endswith(".") and len(decoded) > 1:
        decoded = decoded[:-1]  # "example.com." is "example.com"
    if decoded.isascii():
        host = decoded.lower()
    else:
        try:
            host = idna.encode(decoded, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise _fail(shown, f"invalid international host name {_short(decoded)!r}") from None
    if ".." in host or host.startswith(".") or host.endswith(".") or len(host) > 253:
        raise _fail(shown, f"invalid host {_short(host)!r}")
    ipv4 = _whatwg_ipv4(host, shown)
    return host if ipv4 is None else ipv4


def _whatwg_ipv4(host: str, shown: str) -> str | None:
    """WHATWG's IPv4 parser: a host whose last label is a number is an address, in any of the forms
    browsers accept (``0x7f.1``, ``2130706433``, ``0177.0.0.1``); it is written as a dotted quad."""
    parts = host.split(".")
    if not re.fullmatch(r"[0-9]+|0x[0-9a-f]*", parts[-1]):
        return None
    if len(parts) > 4:
        raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    numbers: list[int] = []
    for part in parts:
        if re.fullmatch(r"0x[0-9a-f]*", part):
            numbers.append(int(part[2:] or "0", 16))
        elif re.fullmatch(r"0[0-7]+", part):
            numbers.append(int(part, 8))
        elif re.fullmatch(r"[0-9]+", part) and not (len(part) > 1 and part[0] == "0"):
            numbers.append(int(part))
        else:
            raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    value = numbers[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(numbers[:-1]))
    return str(ipaddress.IPv4Address(value))


def _canonical_path(path: str) -> str:
    escaped = _escape(path, _PATH_SAFE)
    segments = escaped.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        # _escape decoded %2E, so "%2e%2e" is a dot segment here too, as in browsers
        if seg == ".":
            if last:
                out.append("")
        elif seg == "..":
            if out:
                out.pop()
            if last:
                out.append("")
        elif seg or last:  # empty segments (//) collapse; the last one keeps a trailing slash
            out.append(seg)
    return "/" + "/".join(out)


def _escape(text: str, safe: frozenset[int]) -> str:
    """Escape every byte outside ``safe`` as uppercase %XX; keep valid escapes (uppercased hex), and
    decode escapes of unreserved characters (RFC 3986 §6.2.2.2); a '%' not followed by two hex
    digits becomes %25."""
    raw = text.encode("utf-8", "surrogatepass")
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b == 0x25:
            h = raw[i + 1 : i + 3]
            if len(h) == 2 and all(c in b"0123456789abcdefABCDEF" for c in h):
                value = int(h, 16)
                out.append(chr(value) if value in _UNRESERVED else "%" + h.decode().upper())
                i += 3
                continue
            out.append("%25")
        elif b in safe:
            out.append(chr(b))
        else:
            out.append("%" + _HEX[b >> 4] + _HEX[b & 15])
        i += 1
    return "".join(out)


def _pct_decode_text(text: str) -> str:
    return _PCT.sub(lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) < 0x80 else m.group(0), text)


# --------------------------------------------------------------------------------------------------
# §3 dedup key


def dedup_key(url: str, hygiene: Hygiene = DEFAULT_HYGIENE) -> str:
    """The canonical URL without tracking parameters (tree.md §3). Parameter order is kept (not
    sorted): see tree.md §3.2 for why. This is the URL archiver fetches and stores under."""
    return str(_dedup(url, hygiene))


def _dedup(url: str, hygiene: Hygiene) -> _URL:
    u = _canonical(url, None)
    if u.query is None:
        return u
    kept = [p for p in u.query.split("&") if p and not hygiene.drops(p.partition("=")[0])]
    query = "&".join(kept) if kept else None
    return _URL(u.scheme, u.host, u.port, u.path, query, u.fragment)


def host_of(url: str) -> str:
    """The canonical ``host[:port]`` of an absolute URL (IPv6 keeps its brackets)."""
    return _canonical(url, None).netloc


# --------------------------------------------------------------------------------------------------
# §4 LocalPath


def _fold_hash(text: str, length: int) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def fold_suffix(url: str, *, hygiene: Hygiene = DEFAULT_HYGIENE, hash_len: int = 6) -> str:
    """The ``__q-xxxxxx`` / ``__r-xxxxxx`` suffix that LocalPath inserts for the query and the route
    fragment of ``url`` (tree.md §4.2); empty when it has neither."""
    u = _dedup(url, hygiene)
    out = ""
    if u.query is not None:
        out += "__q-" + _fold_hash(u.query, hash_len)
    if u.fragment is not None:
        out += "__r-" + _fold_hash(u.fragment, hash_len)
    return out


def _decode_segment(seg: str) -> str:
    """Percent-decode one canonical path segment into an on-disk name (tree.md §4.1). Escapes of '/',
    '%', control bytes and bytes that do not form UTF-8 stay as the three characters ``%XX``, so the
    mapping stays injective and no name contains a separator or NUL."""
    raw = bytearray()
    parts: list[str] = []

    def flush() -> None:
        if raw:
            parts.append(_bytes_to_name(bytes(raw)))
            raw.clear()

    i = 0
    while i < len(seg):
        if seg[i] == "%":
            value = int(seg[i + 1 : i + 3], 16)
            if value in _KEEP_ESCAPED_IN_NAMES:
                flush()
                parts.append("%" + seg[i + 1 : i + 3])
            else:
                raw.append(value)
            i += 3
        else:
            raw.append(ord(seg[i]))
            i += 1
    flush()
    return "".join(parts)


def _bytes_to_name(data: bytes) -> str:
    out: list[str] = []
    while data:
        try:
            out.append(data.decode("utf-8"))
            break
        except UnicodeDecodeError as e:
            out.append(data[: e.start].decode("utf-8"))
            out.extend(f"%{b:02X}" for b in data[e.start : e.end])
            data = data[e.end :]
    return "".join(out)


def _escape_first_char(name: str) -> str:
    # A decoded name never holds an escape of a printable character, so this cannot meet a real name.
    return "".join(f"%{b:02X}" for b in name[0].encode("utf-8")) + name[1:]


_FOLD_MARKERS = re.compile(r"__([qrc])-")


def _disk_name(seg: str) -> str:
    """A decoded segment as stored: a literal ``__q-``/``__r-``/``__c-`` (our fold markers) gets its
    first underscore escaped, so no URL's own name can equal another URL's folded name."""
    return _FOLD_MARKERS.sub(lambda m: f"%5F_{m.group(1)}-", _decode_segment(seg))


def _host_like(name: str) -> bool:
    """Could ``name`` be the folder of another host at the tree's root (tree.md §4.4)?"""
    if ":" in name or name.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(name)
        return True
    except ValueError:
        pass
    return "." in name and _psl().publicsuffix(name.lower(), accept_unknown=False) is not None


def local_path(
    url: str,
    *,
    kind: Kind,
    home: str,
    hygiene: Hygiene = DEFAULT_HYGIENE,
    hash_len: int = 6,
) -> str:
    """The tree path of ``url`` (tree.md §4): pages at ``docs/intro/index.html`` (``home``'s host at
    the root, other hosts under ``host/``), assets under ``_archiver/<host>/``. ``home`` is the
    tree's home URL. ``hash_len`` lengthens the query hash when the writer meets a
    clash (tree.md §4.5)."""
    if not 4 <= hash_len <= 64:
        raise ValueError("hash_len must be between 4 and 64")
    u = _dedup(url, hygiene)
    home_netloc = host_of(home)
    suffix = fold_suffix(str(u), hygiene=NO_HYGIENE, hash_len=hash_len)
    segments = [_disk_name(s) for s in u.path.split("/")[1:]]
    if kind == "asset":
        host = u.netloc if u.netloc not in RESERVED_NAMES else _escape_first_char(u.netloc)
        if segments[-1] == "":
            segments[-1] = "index"
        leaf = segments[-1]
        dot = leaf.rfind(".")
        segments[-1] = leaf[:dot] + suffix + leaf[dot:] if dot > 0 else leaf + suffix
        return "/".join([RESERVED_DIR, host, *segments])
    if kind != "page":
        raise ValueError(f"kind must be 'page' or 'asset', not {kind!r}")
    leaf = segments.pop()
    if leaf.lower() in _INDEX_NAMES:
        leaf = ""
    if leaf and not leaf.lower().endswith(_PAGE_LEAF_EXTENSIONS):
        segments.append(leaf)
        leaf = ""
    # A folder named like a page file would clash with that file: escape its first character.
    segments = [_escape_first_char(s) if s.lower().endswith(_PAGE_LEAF_EXTENSIONS) else s for s in segments]
    if leaf:
        dot = leaf.rfind(".")
        leaf = leaf[:dot] + suffix + leaf[dot:]
    else:
        leaf = f"index{suffix}.html"
    parts = [*segments, leaf]
    if u.netloc == home_netloc:
        first = parts[0]
        if first.lower() == RESERVED_DIR or _host_like(first):
            parts[0] = _escape_first_char(first)
    else:
        parts.insert(0, u.netloc)
    return "/".join(parts)


# --------------------------------------------------------------------------------------------------
# §5 Rel


def _quote_name(name: str) -> str:
    return "".join(
        chr(b) if b in _HREF_SAFE else "%" + _HEX[b >> 4] + _HEX[b & 15]
        for b in name.encode("utf-8", "surrogatepass")
    )


def rel(from_file: str, to_file: str) -> str:
    """The href from the page (or stylesheet) at tree path ``from_file`` to tree path ``to_file``
    (tree.md §5): relative to ``from_file``'s folder, each segment percent-encoded so that ``?``,
    ``#``, ``%``, ``:``, spaces and non-ASCII survive. Both paths are tree paths as :func:`local_path`
    returns them."""
    src = _clean_tree_path(from_file)
    dst = _clean_tree_path(to_file)
    src_dir = src[:-1]
    common = 0
    while common < min(len(src_dir), len(dst) - 1) and src_dir[common] == dst[common]:
        common += 1
    parts = [".."] * (len(src_dir) - common) + [_quote_name(p) for p in dst[common:]]
    return "/".join(parts)


def _clean_tree_path(path: str) -> list[str]:
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts or ".." in parts or "\x00" in path:
        raise URLError("not a tree path (empty, or with '..' or NUL)", subject=repr(_short(path)))
    return parts


# --------------------------------------------------------------------------------------------------
# §6 scope


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def _hostname(netloc: str) -> str:
    if netloc.startswith("["):
        return netloc[: netloc.index("]") + 1]
    return netloc.partition(":")[0]


def _is_ip(host: str) -> bool:
    if host.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(host)
        return True
    except ValueError:
        return False


def registrable_domain(host: str) -> str:
    """eTLD+1 of a canonical host by the Public Suffix List, private section included (tree.md §6.2).
    IP literals, ``localhost`` and hosts that are themselves public suffixes stand for themselves."""
    name = _hostname(host)
    if _is_ip(name):
        return name
    return _psl().privatesuffix(name) or name


def same_site(home: str, url: str, *, subdomains: bool = False) -> bool:
    """Is ``url`` on the site of ``home`` (tree.md §6.1)? Same host name (ports ignored); with
    ``subdomains``, same registrable domain. IP literals only ever match themselves."""
    a = _hostname(host_of(home))
    b = _hostname(host_of(url))
    if a == b:
        return True
    if not subdomains or _is_ip(a) or _is_ip(b):
        return False
    return registrable_domain(a) == registrable_domain(b)


def _prefix_matches(path: str, prefix: str) -> bool:
    prefix = "/" + prefix.strip("/")
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def in_scope(
    home: str,
    url: str,
    *,
    subdomains: bool = False,
    prefix: str | None = None,
    exclude: Iterable[str] = (),
) -> bool:
    """Is ``url`` a page to crawl (tree.md §6.1)? Same site, under ``prefix`` and under no ``exclude``
    prefix; prefixes are whole segments (``/api`` matches ``/api/x``, not ``/apiv1``)."""
    if not same_site(home, url, subdomains=subdomains):
        return False
    path = _dedup(url, NO_HYGIENE).path
    if prefix is not None and not _prefix_matches(path, prefix):
        return False
    return not any(_prefix_matches(path, p) for p in exclude)


def ext(url: str) -> str:
    """Lowercased extension of the last path segment, with its dot; the query is ignored."""
    leaf = _canonical(url, None).path.rsplit("/", 1)[-1]
    dot = leaf.rfind(".")
    return _decode_segment(leaf[dot:]).lower() if dot > 0 else ""


def likely_page(url: str) -> bool:
    """False when the extension says the target is a file (image, archive, font, CSS…; tree.md §6.4)."""
    return ext(url) not in _ASSET_EXTENSIONS


def guess_kind(url: str) -> Kind:
    """``"page"`` or ``"asset"`` from the URL alone, for links (``<a href>``) whose target is unknown."""
    return "page" if likely_page(url) else "asset"


def want_asset(
    home: str,
    url: str,
    *,
    same_domain: bool = True,
    skip: frozenset[str] = DEFAULT_SKIP_EXTENSIONS,
) -> bool:
    """Should the asset at ``url`` be stored (tree.md §6.3)? Its extension is not skipped and, with
    ``same_domain``, it shares ``home``'s registrable domain (IP literals: the same address)."""
    if ext(url) in skip:
        return False
    return not same_domain or same_site(home, url, subdomains=True)
