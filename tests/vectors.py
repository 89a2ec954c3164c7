"""Load the table-driven vectors of formats/vectors/ for pytest.mark.parametrize."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

VECTORS = Path(__file__).resolve().parents[1] / "formats" / "vectors"


def rows(file: str, table: str) -> list[Any]:
    """The rows of one table, each wrapped in pytest.param with a readable id."""
    data = json.loads((VECTORS / file).read_text(encoding="utf-8"))
    out = []
    for i, row in enumerate(data[table]):
        label = row.get("in", row.get("url", row.get("to", row.get("host", ""))))
        out.append(pytest.param(row, id=f"{table}-{i}-{row['source']}-{str(label)[:40]}"))
    return out
