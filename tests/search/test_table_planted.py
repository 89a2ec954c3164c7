"""A search table in the cache folder whose SHA-256 checks but whose header lies (planted, or written
by a broken build): refused as malformed (a ValueError, which open_table answers by removing the file
and building it again), never a KeyError or TypeError out of the server."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from archiver.search import query, table
from tests.search.helpers import build_files, html

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


def test_a_header_nested_thousands_deep_is_refused_as_malformed() -> None:
    """A header of 5,000 nested arrays: json raises RecursionError, which the old code (dab4b1c) let
    out of Table (open_table removes a table that raises ValueError; this one ended the search)."""
    raw = b"[" * 5000 + b"]" * 5000
    data = table.MAGIC + len(raw).to_bytes(4, "little") + raw + _BODY
    with pytest.raises(ValueError, match="malformed"):
        table.Table(data, "x", 1)


def test_a_table_whose_prefixes_lie_is_refused() -> None:
    """Version 2's prefix sections (a prefix's terms, its merged list) naming terms or documents past
    the table's, in a body whose SHA-256 was computed again: refused, not an IndexError at query time."""
    rng = random.Random(7)
    words = [f"ba{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(120)]
    text = ["<p>" + " ".join(rng.choices(words, k=200)) + "</p>" for _ in range(30)]
    pages = [(f"p/{i}.html", html("t", t)) for i, t in enumerate(text)]
    ix = query.Index(build_files(pages, shard_bytes=4096).__getitem__, "mem")
    data = table.build(ix, "me")
    assert data is not None
    good = table.Table(data, "me", ix.documents)
    assert good.prefixes and good.merges
    n = int.from_bytes(data[len(table.MAGIC) : len(table.MAGIC) + 4], "little")
    start = len(table.MAGIC) + 4 + n
    header = json.loads(data[len(table.MAGIC) + 4 : start])
    for name, value in [("pids", 10**6), ("pidstart", 10**6), ("mstart", 10**6), ("pmerged", 10**6)]:
        body = bytearray(data[start:])
        off = header["sections"][name][0]
        body[off : off + 4] = value.to_bytes(4, "little")
        lie = {**header, "body": hashlib.sha256(body).hexdigest()}
        raw = json.dumps(lie, sort_keys=True).encode("ascii")
        raw += b" " * (n - len(raw))
        planted = table.MAGIC + len(raw).to_bytes(4, "little") + raw + bytes(body)
        with pytest.raises(ValueError):
            table.Table(planted, "me", ix.documents)
