"""The rows of a capture's resume state (:mod:`.state`, formats/crawl-state.md): a row of ``urls``
as read (:class:`Row`) and a reference to add to the frontier (:class:`NewURL`)."""

from __future__ import annotations

from typing import NamedTuple

import msgspec

__all__ = ["ROW_COLUMNS", "NewURL", "Row", "row_from"]


class Row(msgspec.Struct, frozen=True):
    """One row of ``urls`` (immutable; changed with :func:`msgspec.structs.replace`). A frozen
    :class:`msgspec.Struct`: made by C code (a frozen dataclass's ``__init__`` set each field through
    ``object.__setattr__``, ~5 µs a row, and its generated methods were compiled from source at every
    start of a capture)."""

    key: str
    kind: str
    state: str
    depth: int
    referrer: str | None
    priority: int
    seq: int
    path: str | None
    outcome: str | None
    reason: str | None
    status: int | None
    attempts: int
    final_url: str | None
    stylesheet: bool


class NewURL(NamedTuple):
    """A reference to add to the frontier when the document that revealed it completes. ``source``:
    the key of that document, recorded as a discovery (``found``) with ``step`` and ``inherit``
    (:mod:`.depths`); None for a seed, or a copy of a row known already. A named tuple: every
    reference of every page makes one (a frozen dataclass took 4-5 µs, a tuple 1)."""

    key: str
    kind: str
    depth: int
    referrer: str | None
    priority: int = 1
    stylesheet: bool = False
    path: str | None = None
    state: str = "pending"
    final_url: str | None = None
    reason: str = ""
    source: str | None = None
    step: int = 1
    inherit: bool = False


#: The columns of ``urls`` a :class:`Row` holds, in its order (for ``SELECT`` and ``INSERT``).
ROW_COLUMNS = (
    "key, kind, state, depth, referrer, priority, seq, path, outcome, reason, status, attempts, "
    "final_url, stylesheet"
)


def row_from(values: tuple[object, ...]) -> Row:
    """The :class:`Row` of one ``SELECT {ROW_COLUMNS}`` result: ``Row(*values)`` with ``stylesheet``
    a bool (a re-capture reads every row twice: its first pass, the manifest at the end)."""
    if len(values) != 14:
        raise ValueError(f"a row of urls has 14 columns, not {len(values)}")
    return Row(*values[:13], bool(values[13]))  # type: ignore[arg-type]
