"""Helpers the commands print and write with: a JSON document on one line, names escaped onto one
line (control characters, backslashes, bytes that are not UTF-8), and a failed write as one error line."""

from __future__ import annotations

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


_UNPRINTABLE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
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
    return _UNPRINTABLE.sub(_escape_one, text)


def _writing(run: Callable[[], Any], out: Path) -> Any:
    """``run()``, with a failed write (a full disk, an I/O error) as one error line (exit 1)."""
    from archiver import safefs

    try:
        return run()
    except OSError as e:
        raise safefs.io_error(e, str(out), "while writing") from None
