"""The command's standard output, whose failure is one error line (README, exit codes).

A listing sent to a full disk (``archiver ls X > /dev/full``, or a file on a full or failing disk)
ended in a traceback (exit 70: the OSError of ``print`` is no archiver error), and buffered output
the interpreter flushed at exit after a closed pipe (``archiver verify -r DIR | head -1``) printed
``Exception ignored … BrokenPipeError`` and exited 120. :func:`guarded` puts in place of
``sys.stdout`` the same text stream over :class:`_Stdout`, a raw writer of descriptor 1 whose
refused write is a :class:`~archiver.errors.StoreError` naming ``stdout`` (``archiver: stdout: no
space left on device``, exit 1; a closed pipe stays a BrokenPipeError, which the command line ends
silently). After its first failure the writer takes and drops everything: nothing is left for the
exit's flush to fail on again."""

from __future__ import annotations

import errno
import io
import os
import sys

from archiver.errors import store_error

__all__ = ["guarded"]


class _Stdout(io.RawIOBase):
    """Descriptor ``fd`` written with ``os.write``; never closed by this object."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.failed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        if self.failed:
            return len(memoryview(data))
        try:
            return os.write(self._fd, data)
        except OSError as e:
            self.failed = True
            stop = None if e.errno == errno.EPIPE else store_error(e, "stdout")
            if stop is None:
                raise
            raise stop from None


def guarded() -> None:
    """Put a guarded stream in place of ``sys.stdout`` when it is the process's own (descriptor 1,
    as the interpreter made it): same encoding, errors, buffering and line buffering. Anything
    else (a test's capture, a stream already replaced) is left as it is."""
    out = sys.stdout
    if out is None or out is not sys.__stdout__ or not isinstance(out, io.TextIOWrapper):
        return
    try:
        fd = out.fileno()
    except (OSError, ValueError):
        return
    if fd != 1:
        return
    out.flush()
    raw = _Stdout(fd)
    buffer: io.RawIOBase | io.BufferedWriter = raw
    if isinstance(out.buffer, io.BufferedWriter):
        buffer = io.BufferedWriter(raw)
    sys.stdout = io.TextIOWrapper(
        buffer,  # type: ignore[arg-type]
        encoding=out.encoding,
        errors=out.errors,
        line_buffering=out.line_buffering,
        write_through=out.write_through,
    )
