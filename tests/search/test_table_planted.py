"""A search table in the cache folder whose SHA-256 checks but whose header lies (planted, or written
by a broken build): refused as malformed (a ValueError, which open_table answers by removing the file
and building it again), never a KeyError or TypeError out of the server."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from archiver.search import table

_BODY = bytes(64)


def _planted(header: dict[str, Any]) -> bytes:
    h = {"table": table.VERSION, "identity": "x", "documents": 1, "body": hashlib.sha256(_BODY).hexdigest()}
    raw = json.dumps({**h, **header}).encode()
    return table.MAGIC + len(raw).to_bytes(4, "little") + raw + _BODY


_LIES = {
    "no sections": {"terms": 1, "heavy": 0, "mask": 0},
    "sections not a mapping": {"terms": 1, "heavy": 0, "mask": 0, "sections": [1, 2]},
    "a section of three numbers": {"terms": 1, "heavy": 0, "mask": 0, "sections": {"docs": [0, 8, 1]}},
    "a count not a number": {"terms": "many", "heavy": 0, "mask": 0, "sections": {}},
    "a count of another kind": {"terms": [1], "heavy": 0, "mask": 0, "sections": {}},
    "a section missing": {"terms": 1, "heavy": 0, "mask": 0, "sections": {"keys": [0, 8]}},
    "a section not of whole items": {"terms": 1, "heavy": 0, "mask": 0, "sections": {"kstart": [0, 6]}},
    "no body hash": {"body": None},
}


@pytest.mark.parametrize("lie", sorted(_LIES))
def test_a_planted_header_is_refused_as_malformed(lie: str) -> None:
    data = _planted(_LIES[lie])
    with pytest.raises(ValueError):
        table.Table(data, "x", 1)
