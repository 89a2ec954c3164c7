"""The reader of a Netscape bookmarks export (:func:`archiver.capture.seeds.parse_bookmarks`), a
module of its own so that a capture without ``--bookmarks`` does not import ``html.parser``."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["Bookmarks"]


class Bookmarks(HTMLParser):
    """Collects ``items``: (href, folder path, title) of every ``<a>``, in file order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[tuple[str, str | None, str]] = []  # (href, folder, title)
        self.folders: list[str] = []
        self.pending_folder: str | None = None
        self.in_h3 = False
        self.h3_text: list[str] = []
        self.in_a = False
        self.a_href: str | None = None
        self.a_text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h3":
            self.in_h3, self.h3_text = True, []
        elif tag == "dl":
            self.folders.append(self.pending_folder or "")
            self.pending_folder = None
        elif tag == "a":
            values = {name.lower(): value for name, value in attrs}
            self.in_a, self.a_href, self.a_text = True, values.get("href"), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3" and self.in_h3:
            self.in_h3 = False
            self.pending_folder = " ".join("".join(self.h3_text).split())
        elif tag == "dl":
            if self.folders:
                self.folders.pop()
        elif tag == "a" and self.in_a:
            self.in_a = False
            if self.a_href:
                folder = "/".join(f for f in self.folders if f) or None
                self.items.append((self.a_href, folder, " ".join("".join(self.a_text).split())))

    def handle_data(self, data: str) -> None:
        if self.in_h3:
            self.h3_text.append(data)
        elif self.in_a:
            self.a_text.append(data)
