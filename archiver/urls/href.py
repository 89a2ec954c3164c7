"""Rel (tree.md §5): the relative, percent-encoded href from one tree path to another.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

from archiver.errors import URLError
from archiver.urls.percent import _HEX, _UNRESERVED
from archiver.urls.syntax import _short

__all__ = ["rel"]

# Bytes that stay literal in an href made by rel(): the path set without ':' (a ':' in a first segment
# would read as a scheme) and without '/', which rel() handles as the separator.
_HREF_SAFE = _UNRESERVED | frozenset(b"!$&'()*+,;=@")


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
