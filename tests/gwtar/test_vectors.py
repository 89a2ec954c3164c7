"""The gwtar tables of formats/vectors/gwtar/: v1 offsets, header fields, manifest order (ustar names
are in test_tar.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from archiver.gwtar import parse, rules

VECTORS = Path(__file__).resolve().parents[2] / "formats" / "vectors" / "gwtar"


def vector_rows(file: str, table: str) -> list[Any]:
    data = json.loads((VECTORS / file).read_text(encoding="utf-8"))
    return [pytest.param(row, id=f"{table}-{i}-{str(row.get('in', row.get('sizes')))[:30]}")
            for i, row in enumerate(data[table])]  # fmt: skip


@pytest.mark.parametrize("row", vector_rows("v1_offsets.json", "offsets"))
def test_v1_offsets(row: dict) -> None:
    assert rules.v1_data_offsets(row["sizes"]) == row["offsets"]


@pytest.mark.parametrize("row", vector_rows("manifest_order.json", "order"))
def test_manifest_order(row: dict) -> None:
    pairs = [(k, i) for i, k in enumerate(row["in"])]
    assert [k for k, _ in parse.js_order(pairs)] == row["order"]


@pytest.mark.parametrize("row", vector_rows("header_fields.json", "fields"))
def test_header_fields(row: dict) -> None:
    other = {
        "overhead": 'let totalArchiveSize = parseInt("000000000000000000099999");',
        "totalArchiveSize": 'let overhead = parseInt("000000000512");',
    }[row["field"]]
    text = (
        "<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\n<body>\n<script>\n"
        'let assets = {"0": {"size": 1, "content-type": "text/html", "basename": "a", "hash": "'
        + "0"
        * 64
        + '"}}\n'
        f"</script>\n<script>\n{row['in']}\n{other}\n</script>\n</body>\n</html>\n<!-- GWTAR END\n"
    )
    ph = parse.parse_header(text.encode("utf-8"))
    value = ph.overhead if row["field"] == "overhead" else ph.total
    assert value == row["value"]
    messages = [
        p.message
        for p in ph.problems
        if row["field"] + " " in p.message and "ends the header" not in p.message
    ]
    if row["problem"] is None:
        assert messages == []
    else:
        assert any(row["problem"] in m for m in messages), messages
