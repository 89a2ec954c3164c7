"""The link check of ``archiver verify`` for a gwtar file (formats/gwtar.md §8.1), as a ZIM's and a
tree's, for files with archiver's extension (a site index; plain v1 files name their assets by
manifest keys, not paths, and are not checked) whose structure is sound: every HTML (``text/html``,
``application/xhtml+xml``) and CSS member is read and its local references checked by
:func:`archiver.zim.links.check_document` against the member paths of the site index (a folder
reference, ``docs/``, resolves to its ``index.html``). A broken internal link, one that climbs above
the root and a root-absolute one are **problems**; an external resource a page loads is a
**warning** (a capture keeps the absolute URLs of what it did not store; ``--strict`` counts it),
and so is, in a ``--single-page`` gwtar, a navigation link to another page of the site.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from archiver.errors import ArchiverError
from archiver.gwtar.rules import INDEX_PATH, Problem

if TYPE_CHECKING:
    from archiver.gwtar.verify import Report

__all__ = ["check_links"]

_LINKED = ("text/html", "application/xhtml+xml", "text/css")
#: Documents larger than this are not parsed for links (as ``verify TREE``).
_MAX_DOCUMENT = 64 << 20
_EXTERNAL = "external resource"
#: Where a reference only navigates (the page displays without its target).
_NAVIGATION = ("<a href>", "<area href>", "<meta refresh>")


def check_links(path: Path, report: Report) -> None:
    """Add the link findings of the gwtar at ``path`` to ``report`` (nothing when its header or site
    index cannot be read: the structural check has said why)."""
    from archiver import gwtar
    from archiver.zim.links import check_document

    try:
        reader = gwtar.open(path)
    except (ArchiverError, OSError, ValueError):
        return
    with reader:
        paths = {m.path for m in reader.members if m.path != INDEX_PATH}
        # --single-page keeps only the main page and its assets (every member listed in the v1
        # manifest): its links to the site's other pages cannot resolve, and are warnings
        single = all(m.key is not None for m in reader.members if m.path != INDEX_PATH)

        def exists(target: str) -> bool:
            if target == "" or target.endswith("/"):
                target += "index.html"
            return target in paths

        for m in reader.members:
            media = (m.media_type or "").split(";", 1)[0].strip().lower()
            if media not in _LINKED or m.size > _MAX_DOCUMENT or m.path == INDEX_PATH:
                continue
            try:
                with reader.open_member(m) as f:
                    data = f.read()
            except (ArchiverError, OSError, ValueError):
                continue  # the structural check reports a member that cannot be read
            report.documents += 1
            checked, found = check_document(m.path, data, media, exists)
            report.links += checked
            for p in found:
                away = single and p.where in _NAVIGATION and p.message.startswith("broken")
                bucket = report.warnings if away or p.message.startswith(_EXTERNAL) else report.problems
                bucket.append(Problem(m.path, m.offset, f"link: {p}"))
