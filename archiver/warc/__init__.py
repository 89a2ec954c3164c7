"""WARC and WACZ: a streaming WARC reader with digest checks (:mod:`.read`), CDXJ and SURT
(:mod:`.cdxj`), the WACZ writer (:mod:`.wacz`), ``verify``/``ls`` of both (:mod:`.verify`) and the
recorder of ``capture --warc`` (:mod:`.record`, imported by a recording capture only).
The spec is formats/warc.md."""

from __future__ import annotations

from archiver.warc.verify import Report, is_wacz, ls, verify
from archiver.warc.wacz import PackResult, pack

__all__ = ["PackResult", "Report", "is_wacz", "ls", "pack", "verify"]
