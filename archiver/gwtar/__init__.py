"""gwtar: one ``.gwtar.html`` file holding a page, its assets and the rest of its site
(formats/gwtar.md): v1-compatible, with archiver's extension 1.

::

    from archiver import gwtar

    result = gwtar.pack(Path("tree"), Path("site.gwtar.html"))
    with gwtar.open(result.path) as g:
        for m in g.members:
            with g.open_member(m) as f:
                ...
    report = gwtar.verify(result.path)
    gwtar.extract(result.path, Path("out"))
"""

from __future__ import annotations

from archiver.gwtar.extract import extract, ls
from archiver.gwtar.loader import loader_source
from archiver.gwtar.read import GwtarReader, Member, MemberReader, open
from archiver.gwtar.rules import Problem
from archiver.gwtar.verify import Report, verify, verify_main
from archiver.gwtar.write import PackResult, pack

__all__ = [
    "GwtarReader",
    "Member",
    "MemberReader",
    "PackResult",
    "Problem",
    "Report",
    "extract",
    "loader_source",
    "ls",
    "open",
    "pack",
    "verify",
    "verify_main",
]
