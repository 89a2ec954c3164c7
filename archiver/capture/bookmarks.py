"""The reader of a Netscape bookmarks export (:func:`archiver.capture.seeds.parse_bookmarks`), a
module of its own so that a capture without ``--bookmarks`` does not import ``html.parser``."""

from __future__ import annotations

from archiver.html_close import Parser

__all__ = ["Bookmarks"]


#: Folder levels named in a bookmark's folder path (``A/B/…``); deeper folders add nothing to it. A
#: bookmarks file is someone else's input: 20,000 nested folders with a bookmark in each made each
#: bookmark's path a string of 10,000 names (1.5 MB of file: 2.2 GB of memory, 12 s).
MAX_DEPTH = 32
#: Characters kept of a folder's name and of a bookmark's title (the rest of the text is not kept).
MAX_NAME = 256
MAX_TITLE = 1024


class Bookmarks(Parser):
    """Collects ``items``: (href, folder path, title) of every ``<a>``, in file order. Bounded by the
    file's size: each level of folders holds its path once (shared by its bookmarks), at most
    :data:`MAX_DEPTH` names long, and names and titles are cut at :data:`MAX_NAME` and
    :data:`MAX_TITLE` characters."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, str | None, str]] = []  # (href, folder, title)
        self.folders: list[tuple[str, int]] = []  # each open <dl>: (its folder path, its named depth)
        self.pending_folder: str | None = None
        self.in_h3 = False
        self.in_a = False
        self.a_href: str | None = None
        self.text: list[str] = []  # the open <h3>'s or <a>'s text, at most _TEXT_KEPT characters
        self.kept = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h3":
            self.in_h3, self.text, self.kept = True, [], 0
        elif tag == "dl":
            path, depth = self.folders[-1] if self.folders else ("", 0)
            name = self.pending_folder
            if name and depth < MAX_DEPTH:
                path, depth = (f"{path}/{name}" if path else name), depth + 1
            self.folders.append((path, depth))
            self.pending_folder = None
        elif tag == "a":
            values = {name.lower(): value for name, value in attrs}
            self.in_a, self.a_href, self.text, self.kept = True, values.get("href"), [], 0

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3" and self.in_h3:
            self.in_h3 = False
            self.pending_folder = _plain(self.text, MAX_NAME)
        elif tag == "dl":
            if self.folders:
                self.folders.pop()
        elif tag == "a" and self.in_a:
            self.in_a = False
            if self.a_href:
                folder = self.folders[-1][0] if self.folders else ""
                self.items.append((self.a_href, folder or None, _plain(self.text, MAX_TITLE)))

    def handle_data(self, data: str) -> None:
        if (self.in_h3 or self.in_a) and self.kept < _TEXT_KEPT:
            piece = data[: _TEXT_KEPT - self.kept]
            self.text.append(piece)
            self.kept += len(piece)


#: Characters of an open <h3>'s or <a>'s text kept before its spaces are folded (a name or title is
#: cut after folding: this keeps enough for the longest of them with runs of spaces inside)
_TEXT_KEPT = 4 * MAX_TITLE


def _plain(text: list[str], limit: int) -> str:
    return " ".join("".join(text).split())[:limit]
