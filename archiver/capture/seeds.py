"""Seed URLs from the command line, a seeds file and a browser's bookmarks export, deduplicated.

Seeds file: one URL a line; blank lines and lines starting with ``#`` are ignored; ``example.com``
means ``https://example.com/`` (tree.md §2.4).

Bookmarks: the "Netscape bookmark file" every browser exports (``<!DOCTYPE NETSCAPE-Bookmark-file-1>``):
``<DT><A HREF="…" ADD_DATE="…">title</A>`` entries inside ``<DL>`` lists, with ``<DT><H3>folder</H3>``
opening a nested ``<DL>``. Browsers write the attributes in different orders and cases, and some omit
closing tags, so the file is read with an HTML tokenizer (attributes by name) and a folder stack, not
with patterns. Each bookmark keeps its folder path (``Work/Docs``) and title. Bookmarks that are not
http(s) (``javascript:`` bookmarklets, ``place:`` queries, ``file:``) are left out. A bookmarks file is
someone else's input: a folder path names at most 32 folders, names and titles are cut (256 and 1,024
characters), and a file over :data:`MAX_SEEDS_FILE` is refused (:mod:`archiver.capture.bookmarks`).

Every seed is deduplicated by its dedup key (tree.md §3), so the same page written with another case
of host, a default port, a tracking parameter or a fragment is captured once; the first spelling's
folder and title are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from archiver import urls
from archiver.errors import URLError, UsageError

__all__ = ["Seed", "collect_seeds", "parse_bookmarks", "parse_seeds_file"]


class Seed(NamedTuple):
    """A seed: its dedup key, and the bookmark folder (``"A/B"``) and title it came with."""

    url: str
    folder: str | None = None
    title: str | None = None


def parse_seeds_file(text: str) -> list[str]:
    """The URLs of a seeds file, in order (not yet canonicalised)."""
    out = []
    for line in text.splitlines():
        item = line.strip()
        if item and not item.startswith("#"):
            out.append(item)
    return out


def parse_bookmarks(text: str, source: str | None = None) -> list[Seed]:
    """Every http(s) bookmark of a Netscape bookmarks export, in file order, with its folder path and
    title (URLs not yet canonicalised). A file html.parser gives up on (an unknown ``<![name[``
    section) is a :class:`UsageError` about ``source``, not a traceback."""
    from archiver.capture.bookmarks import Bookmarks  # html.parser: only for a bookmarks file

    parser = Bookmarks()
    try:
        parser.feed(text)
        parser.close()
    except AssertionError:  # html.parser's way of giving up
        raise UsageError(
            "not a bookmarks file: markup html.parser cannot read (a '<![' section)", subject=source
        ) from None
    out = []
    for href, folder, title in parser.items:
        if urls.ref_action(href) == "fetch" and "://" in href:
            out.append(Seed(href.strip(), folder, title or None))
    return out


#: The largest seeds or bookmarks file read (a browser's export of 100,000 bookmarks with their
#: icons is ~100 MB); a larger one is refused before it is read.
MAX_SEEDS_FILE = 256 << 20


def _read(path: Path, what: str) -> str:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SEEDS_FILE + 1)
    except OSError as e:
        raise UsageError(f"cannot read the {what}: {e.strerror}", subject=str(path)) from None
    if len(data) > MAX_SEEDS_FILE:
        raise UsageError(f"the {what} is larger than {MAX_SEEDS_FILE >> 20} MiB", subject=str(path))
    return data.decode("utf-8-sig", errors="replace")


def dedup(seeds: Iterable[Seed]) -> list[Seed]:
    """``seeds`` canonicalised to dedup keys, first occurrence kept. Bad URLs raise URLError."""
    out: dict[str, Seed] = {}
    for seed in seeds:
        key = urls.dedup_key(urls.parse_seed(seed.url))
        if key not in out:
            out[key] = Seed(key, seed.folder, seed.title)
    return list(out.values())


def collect_seeds(
    args: Iterable[str], *, seeds_file: Path | None = None, bookmarks: Path | None = None
) -> list[Seed]:
    """All seeds: the arguments, then the seeds file, then the bookmarks, deduplicated by dedup key.
    A bad URL is a :class:`UsageError` naming where it came from; no seed at all is one too."""
    items: list[tuple[Seed, str]] = [(Seed(a), "argument") for a in args]
    if seeds_file is not None:
        items += [(Seed(u), str(seeds_file)) for u in parse_seeds_file(_read(seeds_file, "seeds file"))]
    if bookmarks is not None:
        items += [
            (s, str(bookmarks)) for s in parse_bookmarks(_read(bookmarks, "bookmarks file"), str(bookmarks))
        ]
    checked = []
    for seed, source in items:
        try:
            urls.parse_seed(seed.url)
        except URLError as e:
            raise UsageError(f"bad seed URL: {e}", subject=source) from None
        checked.append(seed)
    if not checked:
        raise UsageError("no seed URL given (arguments, --seeds FILE or --bookmarks FILE)", subject="capture")
    return dedup(checked)
