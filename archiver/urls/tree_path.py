"""LocalPath (tree.md §4): the tree path of a URL, with the reserved folder and its names (§4.4), the
query and route fold suffixes (§4.2) and the escapes that keep the mapping injective.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from functools import lru_cache
from typing import Literal

from archiver.urls.canonical import host_of
from archiver.urls.dedup import DEFAULT_HYGIENE, NO_HYGIENE, Hygiene, _dedup
from archiver.urls.domains import has_public_suffix
from archiver.urls.percent import _decode_segment

__all__ = [
    "NAME_MAX",
    "PATH_BUDGET",
    "PRIVATE_NAMES",
    "REPORT_NAME",
    "RESERVED_DIR",
    "RESERVED_NAMES",
    "SEARCH_DIR",
    "STATE_NAME",
    "VERSIONS_NAME",
    "Kind",
    "fit_name",
    "fold_suffix",
    "local_path",
]

#: What a URL is stored as: a page (under its host at the tree's root) or an asset (under RESERVED_DIR).
Kind = Literal["page", "asset"]

#: The folder at the root of every tree that holds assets (one sub-folder per host) and metadata.
RESERVED_DIR = "_archiver"
#: Where a tree keeps its search index and search page (formats/search.md §4.1), relative to its
#: root: named here so that what must know the folder (pack's walk, a tree's verify) need not
#: import the search.
SEARCH_DIR = f"{RESERVED_DIR}/search"
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
#: The version store (formats/history.md §1): earlier versions' manifests and every version's bytes.
#: Dot-first, so no host folder can have the name (hosts are canonical, never dot-first).
VERSIONS_NAME = ".versions"
PRIVATE_NAMES = frozenset(
    {
        STATE_NAME,
        f"{STATE_NAME}-wal",
        f"{STATE_NAME}-shm",
        f"{STATE_NAME}-journal",
        "tmp",
        REPORT_NAME,
        "warc",
        VERSIONS_NAME,
    }
)
#: Names inside RESERVED_DIR that are metadata, never host folders (tree.md §4.4): the manifest and
#: the private names, exactly as tree.md §4.4 lists them (so without ``-journal``: changing the set
#: changes LocalPath).
RESERVED_NAMES = frozenset({"manifest.jsonl", *(PRIVATE_NAMES - {f"{STATE_NAME}-journal"})})

_PAGE_LEAF_EXTENSIONS = (".html", ".htm")
_INDEX_NAMES = ("index.html", "index.htm")


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


def _escape_first_char(name: str) -> str:
    # A decoded name never holds an escape of a printable character, so this cannot meet a real name.
    return "".join(f"%{b:02X}" for b in name[0].encode("utf-8")) + name[1:]


_FOLD_MARKERS = re.compile(r"__([qrcl])-")
#: The longest name (UTF-8 bytes) of a file or folder on the file systems trees live on (ext4, XFS,
#: btrfs, tmpfs, ZFS: 255). A longer name is shortened (tree.md §4.7).
NAME_MAX = 255
#: What a shortened name is cut to: room left for the writer's ``__c-`` suffix (10 bytes, §4.5).
_SHORT = 240
_KEPT_EXTENSION = 16  # bytes of a long name's extension kept after the shortening mark
#: The longest tree path (UTF-8 bytes): Linux refuses a path over 4,095 bytes (PATH_MAX), and a tree
#: must still open from a folder ~1,000 bytes deep. A longer one is folded (tree.md §4.7).
PATH_BUDGET = 3072
_PATH_KEPT = 2048  # a folded path keeps its first folders up to this many bytes


def fit_name(name: str, hash_len: int = 6) -> str:
    """``name`` when it is at most :data:`NAME_MAX` bytes of UTF-8, else shortened (tree.md §4.7):
    its first characters (at most ~200 bytes, cut between characters and never inside a ``%XX``
    escape), ``__l-`` and the first ``hash_len`` hex digits of SHA-256 over the whole name, then its
    extension when that is short (``.html``, ``.png``)."""
    if len(name) <= NAME_MAX // 4 or len(name.encode("utf-8")) <= NAME_MAX:
        return name
    tail = _extension(name)
    mark = "__l-" + _fold_hash(name, hash_len)
    room = _SHORT - len(mark) - len(tail.encode("utf-8"))
    head = name[: len(name) - len(tail)].encode("utf-8")[:room].decode("utf-8", "ignore")
    escape = head.rfind("%", len(head) - 2)
    if escape >= 0:  # never half an escape: a name holds % only in whole %XX escapes (§4.1)
        head = head[:escape]
    return head + mark + tail


def _extension(name: str) -> str:
    dot = name.rfind(".")
    return name[dot:] if dot > 0 and len(name[dot:].encode("utf-8")) <= _KEPT_EXTENSION else ""


def _fit_path(parts: list[str], hash_len: int) -> str:
    """``parts`` joined, each name fitted (:func:`fit_name`); a path over :data:`PATH_BUDGET` bytes
    keeps its first folders (up to ~2 KB) and holds the rest as one name: ``__l-``, the hash of the
    rest, the last name's extension (tree.md §4.7)."""
    parts = [fit_name(p, hash_len) for p in parts]
    path = "/".join(parts)
    if len(path) <= PATH_BUDGET // 4 or len(path.encode("utf-8")) <= PATH_BUDGET:
        return path
    kept: list[str] = []
    size = 0
    for part in parts[:-1]:
        size += len(part.encode("utf-8")) + 1
        if size > _PATH_KEPT:
            break
        kept.append(part)
    rest = "/".join(parts[len(kept) :])
    return "/".join([*kept, "__l-" + _fold_hash(rest, hash_len) + _extension(parts[-1])])


def _disk_name(seg: str) -> str:
    """A decoded segment as stored: a literal ``__q-``/``__r-``/``__c-`` (our fold markers) gets its
    first underscore escaped, so no URL's own name can equal another URL's folded name."""
    name = _decode_segment(seg)
    if "__" not in name:
        return name  # no fold marker to escape (each starts with two underscores)
    return _FOLD_MARKERS.sub(lambda m: f"%5F_{m.group(1)}-", name)


@lru_cache(maxsize=1024)  # asked of the first folder of every page path: a few names
def _host_like(name: str) -> bool:
    """Could ``name`` be the folder of another host at the tree's root (tree.md §4.4)?"""
    if ":" in name or name.startswith("["):
        return True
    try:
        ipaddress.IPv4Address(name)
        return True
    except ValueError:
        pass
    return "." in name and has_public_suffix(name)


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
        return _fit_path([RESERVED_DIR, host, *segments], hash_len)
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
    return _fit_path(parts, hash_len)
