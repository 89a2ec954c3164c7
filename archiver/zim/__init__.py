"""ZIM: pack any tree (or gwtar, or ZIM) into a ZIM file that Kiwix and zimcheck accept; read,
verify, list and extract one. The mapping is specified in ``formats/zim.md``.

Modules, one job each: ``metadata`` (pure: openZIM metadata rules), ``links`` (pure: the link
checker), ``page`` (pure: a main page's head), ``icon`` (pure: the 48×48 illustration),
``compressible`` (pure: compress an entry or not), ``source`` (what ``pack`` reads), ``write`` (the
only importer of libzim's writer), ``read`` (the only importer of libzim's reader), ``pack``,
``verify``, ``extract``.
"""

from __future__ import annotations

from archiver.zim.extract import extract, ls
from archiver.zim.pack import PackResult, pack
from archiver.zim.read import Entry, ZimReader, open_archive
from archiver.zim.verify import Problem, Report, verify

open = open_archive

__all__ = [
    "Entry",
    "PackResult",
    "Problem",
    "Report",
    "ZimReader",
    "extract",
    "ls",
    "open",
    "open_archive",
    "pack",
    "verify",
]
