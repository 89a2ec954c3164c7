"""Helpers the commands print and write with: a JSON document on one line, names escaped onto one
line (control characters, backslashes, bytes that are not UTF-8), and a failed write as one error line."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _print_json(doc: Any) -> None:
    print(json.dumps(doc, ensure_ascii=False, default=str))


def _encodable(*texts: str | None) -> bool:
    try:
        for text in texts:
            (text or "").encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@functools.cache
def _unprintable() -> re.Pattern[str]:
    """What :func:`_escaped` escapes, compiled on first use: the class with the surrogates' range takes
    ~4 M instructions to compile, paid at every start of every command that imports this module."""
    return re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


_NAMED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_one(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escaped(text: str) -> str:
    """``text`` on one line: control characters, backslashes and bytes that are not UTF-8 as escapes."""
    return _unprintable().sub(_escape_one, text)


def _writing(run: Callable[[], Any], out: Path) -> Any:
    """``run()``, with a failed write (a full disk, an I/O error) as one error line (exit 1)."""
    from archiver import safefs

    try:
        return run()
    except OSError as e:
        raise safefs.io_error(e, str(out), "while writing") from None


#: What sets or silences a warning, by the words it starts with (named after it in parentheses).
_WARNING_FLAGS = (
    ("has no usable <html lang>", "set it with --metadata Language=CODE"),
    ("metadata ", "--metadata NAME=VALUE sets the keys that go in"),
    ("reference(s) to other sites", "--format gwtar keeps them; a ZIM reader is offline"),
)


def _warn(subject: str, text: str) -> None:
    """A warning on stderr, ``archiver: warning: <subject>: <text> (<the flag that sets or silences
    it>)``: one line, told apart from an error (``archiver: <subject>: …``) at a glance."""
    import sys

    flag = next((f for start, f in _WARNING_FLAGS if start in text), None)
    line = f"archiver: warning: {_escaped(subject)}: {_escaped(text)}" + (f" ({flag})" if flag else "")
    print(line, file=sys.stderr)
