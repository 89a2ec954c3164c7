"""Helpers the commands print and write with: a JSON document on one line, names escaped onto one
line (control characters, backslashes, bytes that are not UTF-8), and a failed write as one error line."""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO


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
    """``text`` on one line: control characters, backslashes and bytes that are not UTF-8 as escapes.
    A printable text without a backslash is itself (``str.isprintable`` is false for every character
    of :func:`_unprintable`'s class but the backslash): most names, and no pattern compiled (~2 ms
    of the command that prints one, ``archiver index``'s figures)."""
    if text.isprintable() and "\\" not in text:
        return text
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


#: How many bytes of a listing :func:`_print_checked` holds in memory before it moves them to an
#: unnamed temporary file (a site index of a million entries lists ~80 MB).
HOLD_IN_MEMORY = 4 << 20


def _print_checked(lines: Iterable[str]) -> None:
    """Print ``lines`` (each without its newline) only once the last one was made: a reader that finds
    damage part way (a malformed site index entry, a version manifest's bad line) raises before
    anything is printed, so the command gives its one error line and nothing on stdout, as ``verify``
    and ``extract`` do. The bytes are those ``print`` writes; up to :data:`HOLD_IN_MEMORY` of them
    are held in memory, the rest in an unnamed temporary file (memory stays bounded for any size; a
    temporary file that cannot be written is one error line)."""
    import codecs
    import sys
    import tempfile

    out = sys.stdout
    encoding, errors = out.encoding or "utf-8", out.errors or "strict"
    chunks: list[bytes] = []
    held = 0
    with contextlib.ExitStack() as stack:
        spill: BinaryIO | None = None
        for line in lines:
            data = f"{line}\n".encode(encoding, errors)
            chunks.append(data)
            held += len(data)
            if held > HOLD_IN_MEMORY:
                try:
                    if spill is None:
                        spill = stack.enter_context(tempfile.TemporaryFile())
                    spill.write(b"".join(chunks))
                except OSError as e:
                    from archiver import safefs

                    raise safefs.io_error(e, tempfile.gettempdir(), "while holding the listing") from None
                chunks, held = [], 0

        def blocks(spill: BinaryIO | None = spill) -> Iterator[bytes]:
            if spill is not None:
                spill.seek(0)
                yield from iter(functools.partial(spill.read, 1 << 20), b"")
            yield b"".join(chunks)

        buffer: BinaryIO | None = getattr(out, "buffer", None)
        out.flush()
        if buffer is not None:
            for block in blocks():
                buffer.write(block)
            buffer.flush()
        else:  # a text-only stdout (a test's StringIO)
            decode = codecs.getincrementaldecoder(encoding)(errors).decode
            for block in blocks():
                out.write(decode(block))
