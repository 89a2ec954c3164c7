"""relink.final_records: its path for a record of one URL that nothing was merged into or redirected
to gives what the general one gives (the records of any rows and records, against the general
algorithm written out here)."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from archiver.capture.relink import final_records
from archiver.capture.state import Row
from archiver.tree import Record

_KEYS = [f"http://h/{c}" for c in "abcde"]


class _State:
    def __init__(self, rows: list[Row], records: list[Record]) -> None:
        self._rows = rows
        self._records = records

    def rows(self) -> Iterator[Row]:
        return iter(self._rows)

    def records(self) -> Iterator[Record]:
        return iter([msgspec.structs.replace(r) for r in self._records])  # fresh, as decoded


def _general(rows: list[Row], records: list[Record]) -> list[Record]:
    """final_records as it was before its one-URL path: every record through the general case."""
    known_rows = {r.key: r for r in rows}
    merged: dict[str, list[str]] = {}
    moved_here: dict[str, list[tuple[str, str | None]]] = {}
    for r in rows:
        if r.state == "merged" and r.final_url:
            merged.setdefault(r.final_url, []).append(r.key)
        if r.outcome == "redirected" and r.final_url:
            moved_here.setdefault(r.final_url, []).append((r.key, r.path))
    out = []
    for original in records:
        record = msgspec.structs.replace(original)
        if record.kind == "page" and not 300 <= (record.status or 200) < 400:
            sources = {k for key in record.urls for k, p in moved_here.get(key, []) if p != record.path}
            if not sources <= set(record.redirects):
                record.redirects = sorted({*record.redirects, *sources})
        if record.urls:
            keys = set(record.urls)
            for k in list(keys):
                keys.update(merged.get(k, []))
            record.urls = [record.urls[0], *sorted(keys - {record.urls[0]})]
            known = [known_rows[k] for k in record.urls if k in known_rows]
            known = [r for r in known if r.referrer is not None or r.depth == 0] or known
            if known and not 300 <= (record.status or 200) < 400:
                top = min(known, key=lambda r: (r.depth, r.referrer or ""))
                record.depth, record.referrer = top.depth, top.referrer
        out.append(record)
    return out


_ROW = st.builds(
    lambda key, state, outcome, depth, referrer, path, final: Row(
        key, "page", state, depth, referrer, 1, 0, path, outcome, "", 200, 1, final, False
    ),
    st.sampled_from(_KEYS),
    st.sampled_from(["done", "merged", "failed"]),
    st.sampled_from(["ok", "redirected", "merged", None]),
    st.integers(0, 3),
    st.sampled_from([None, *_KEYS]),
    st.sampled_from([None, "a.html", "b.html"]),
    st.sampled_from([None, *_KEYS]),
)
_RECORD = st.builds(
    lambda path, kind, urls, status, redirects, depth: Record(
        path=path,
        kind=kind,
        media_type="text/html",
        size=1,
        sha256="0" * 64,
        urls=urls,
        status=status,
        redirects=redirects,
        depth=depth,
    ),
    st.sampled_from(["a.html", "b.html", "c.html"]),
    st.sampled_from(["page", "asset"]),
    st.lists(st.sampled_from(_KEYS), min_size=0, max_size=3, unique=True),
    st.sampled_from([None, 200, 301]),
    st.lists(st.sampled_from(_KEYS), max_size=2),
    st.sampled_from([None, 0, 5]),
)


@given(st.lists(_ROW, max_size=8), st.lists(_RECORD, max_size=5))
def test_one_url_records_come_out_as_the_general_case_makes_them(
    rows: list[Row], records: list[Record]
) -> None:
    assert list(final_records(_State(rows, records))) == _general(rows, records)  # type: ignore[arg-type]
