"""A crawl state found in the output folder is checked before a resumed run or a re-capture trusts
it (formats/crawl-state.md §1.1): the folder may come from elsewhere, and SQLite keeps any value in
any column (a hostile state's ``depth`` may be text, a record any bytes). Every column of every table
is checked in SQL (one scan a table, in C: a state of a million URLs costs a fraction of a second),
and every manifest record is decoded and must name the tree path it is stored under. A damaged or
hostile state is a :class:`FormatError` naming the table, the column and how many rows are wrong;
it was a traceback (exit 70) at the first row read, or a version whose manifest lists a file twice.

The checks are the SQL text below: a table of (table, column, what it must be) read as data, each
turned into one ``WHERE`` clause.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import msgspec

from archiver.errors import FormatError
from archiver.tree import Record, is_private

__all__ = ["COLUMNS", "check", "check_schema", "problem_clause", "refuse_special"]

# What a column must hold: "text", "int" (an integer, not negative), "sint" (any integer: a time
# before 1970), "kind" ('page' or 'asset'), "state" (one of the seven), "blob" (bytes or text),
# "text?" / "int?" (or NULL),
# "path" (a relative tree path: not empty, no leading '/', no '', '.' or '..' part), "path?".
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "meta": (("key", "text"), ("value", "text")),
    "urls": (
        ("key", "text"), ("kind", "kind"), ("state", "state"), ("depth", "int"), ("referrer", "text?"),
        ("priority", "int"), ("seq", "int"), ("path", "path?"), ("outcome", "text?"), ("reason", "text?"),
        ("status", "int?"), ("attempts", "int"), ("final_url", "text?"), ("stylesheet", "int"),
    ),
    "paths": (("path", "path"), ("key", "text")),
    "records": (("path", "path"), ("record", "blob")),
    "moves": (("path", "path"), ("key", "text")),
    "blobs": (("sha256", "text"), ("path", "path")),
    "links": (("src", "text"), ("key", "text"), ("local", "int")),
    "seeds": (("url", "text"), ("seq", "int"), ("folder", "text?"), ("title", "text?")),
    "found": (("src", "text"), ("step", "int"), ("inherit", "int"), ("keys", "text")),
    "verified": (
        ("path", "path"), ("sha256", "text"), ("size", "int"), ("mtime_ns", "sint"), ("ctime_ns", "sint"),
        ("ino", "int"),
    ),
}  # fmt: skip

_TEXT = "(typeof({c}) != 'text' OR instr({c}, char(0)) > 0)"
_INT = "(typeof({c}) != 'integer' OR {c} < 0)"
# a path wrapped in '/' holds no '//', '/./' or '/../': no empty, '.' or '..' part, no leading '/'
_WRAPPED = "('/' || {c} || '/')"
_PATH = (
    f"({_TEXT} OR {{c}} = '' OR "
    + " OR ".join(f"{_WRAPPED} GLOB '{g}'" for g in ("*//*", "*/./*", "*/../*"))
    + ")"
)
_STATES = ("pending", "done", "failed", "unconfirmed", "skipped", "refused", "merged")  # crawl-state.md
_CLAUSES = {
    "text": _TEXT,
    "int": _INT,
    "sint": "(typeof({c}) != 'integer')",
    "path": _PATH,
    "kind": "({c} IS NOT 'page' AND {c} IS NOT 'asset')",
    "state": "(typeof({c}) != 'text' OR {c} NOT IN (" + ", ".join(f"'{x}'" for x in _STATES) + "))",
    "blob": "(typeof({c}) NOT IN ('blob', 'text'))",
}


_WORDS = {
    "text": "text",
    "int": "an integer of at least 0",
    "sint": "an integer",
    "path": "a relative tree path",
    "kind": "'page' or 'asset'",
    "state": "a state (" + ", ".join(_STATES) + ")",
    "blob": "bytes",
}


def problem_clause(column: str, rule: str) -> str:
    """The SQL condition true for a row whose ``column`` breaks ``rule`` (see :data:`COLUMNS`). Pure."""
    optional = rule.endswith("?")
    clause = _CLAUSES[rule.rstrip("?")].format(c=column)
    return f"({column} IS NOT NULL AND {clause})" if optional else f"({column} IS NULL OR {clause})"


_decoder = msgspec.json.Decoder(Record)


def check(db: sqlite3.Connection, path: Path) -> None:
    """Raise :class:`FormatError` naming ``path`` when a table of the state ``db`` holds a value it
    never writes (see the module's docstring)."""
    try:
        for table, columns in COLUMNS.items():
            for column, rule in columns:
                sql = f"SELECT count(*) FROM {table} WHERE {problem_clause(column, rule)}"
                (bad,) = db.execute(sql).fetchone()
                if bad:
                    wanted = _WORDS[rule.rstrip("?")] + (" or NULL" if rule.endswith("?") else "")
                    raise FormatError(
                        f"damaged crawl state: table {table}, column {column}: {bad} row(s) not {wanted}",
                        subject=str(path),
                    )
        for stored, blob in db.execute("SELECT path, record FROM records"):
            try:
                record = _decoder.decode(blob)
            except (msgspec.DecodeError, RecursionError) as e:  # msgspec: RecursionError when nested too deep
                raise FormatError(
                    f"damaged crawl state: the record of {stored[:200]!r}: {e}", subject=str(path)
                ) from None
            if record.path != stored or is_private(record.path):
                raise FormatError(
                    f"damaged crawl state: the record stored under {stored[:200]!r} "
                    f"names {record.path[:200]!r}",
                    subject=str(path),
                )
    except sqlite3.Error as e:
        raise FormatError(f"unreadable crawl state: {e}", subject=str(path)) from None


def refuse_special(path: Path) -> bool:
    """Whether a state is at ``path`` already. It and SQLite's files beside it must be regular files
    of the tree: a symbolic link (SQLite would follow it out of the tree) or a FIFO there is refused,
    naming it (FormatError)."""
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"):
        try:
            st = os.lstat(path.with_name(name))
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(
                "is not a regular file (a crawl state's files are its own)", subject=str(path.with_name(name))
            )
    return path.exists()


def check_schema(version: str | None, newest: int, path: Path) -> None:
    """A state's ``schema`` meta value (None: a new state) is a number this archiver reads."""
    if version is None:
        return
    if not (version.isdecimal() and len(version) < 10):
        raise FormatError(f"crawl state of a malformed schema ({version[:20]!r})", subject=str(path))
    if int(version) > newest:
        raise FormatError(
            f"crawl state schema {version} is newer than this archiver reads", subject=str(path)
        )
