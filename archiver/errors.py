"""The one exception tree of archiver, and the exit code each family maps to.

Pure: no network, no filesystem, no clock.

::

    ArchiverError                 exit 1  (anything we raise on purpose)
    ├── URLError                  exit 2  bad input to the URL mapping core (also a ValueError)
    ├── UsageError                exit 2  a command line that cannot be carried out
    ├── FormatError               exit 1  a tree, manifest or archive that breaks its spec
    ├── StoreError                exit 1  the output cannot be written (disk full, read-only, linked out)
    ├── CaptureError              exit 4  fetching or rendering failed
    └── EnvironmentProblem        exit 5  a required outside program or library is missing

The CLI turns any of them into one line, ``archiver: <input>: <what is wrong>``, and the exit code above;
a traceback is printed only with ``--debug``. Errors that are bugs (``TypeError`` and friends) are not
caught: they get exit 70 and a traceback, because a user cannot act on them.
"""

from __future__ import annotations

import errno

__all__ = [
    "EXIT_BUG",
    "EXIT_PARTIAL",
    "ArchiverError",
    "CaptureError",
    "EnvironmentProblem",
    "FormatError",
    "StoreError",
    "URLError",
    "UsageError",
    "out_of_descriptors",
    "store_error",
]

EXIT_BUG = 70  # sysexits EX_SOFTWARE
#: ``capture`` stored pages but lost in-scope URLs to the network or the server (timeouts, 5xx,
#: 429, refused or reset connections, unreadable robots.txt): run it again to retry them. The
#: site's own answers (404, 410, 401, 403) and what the options leave out are not losses.
EXIT_PARTIAL = 3


class ArchiverError(Exception):
    """Base of every error archiver raises on purpose. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, subject: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.subject = subject

    def __str__(self) -> str:
        if self.subject is None:
            return self.message
        return f"{self.subject}: {self.message}"


class URLError(ArchiverError, ValueError):
    """A URL (or reference) that the mapping core cannot accept: empty, not http(s), malformed host or
    port, control characters, longer than ``urls.MAX_URL_LENGTH``. ``subject`` is the input, shortened."""

    exit_code = 2


class UsageError(ArchiverError):
    """The command line names something that cannot be done (missing path, conflicting options)."""

    exit_code = 2


class FormatError(ArchiverError):
    """A tree, manifest or archive that does not follow its spec in ``formats/`` (invalid, damaged
    or hostile input: the same exit code as ``verify`` finding an archive invalid)."""

    exit_code = 1


class StoreError(ArchiverError):
    """What a command writes cannot be written, whatever the input: the disk is full, read-only or
    failing, a quota or file-size limit is reached, permission is refused, or a folder of the output
    links out of it. Not one URL's or one member's failure: the command stops (a capture keeps what
    it stored and resumes when run again; README, exit codes)."""

    exit_code = 1


#: errno values that say the output cannot be written at all (not this one file's name or content)
_NO_STORE = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO, errno.EACCES, errno.EPERM}
)
#: SQLite's primary result codes for the same (sqlite3.Error.sqlite_errorcode & 0xFF): READONLY,
#: IOERR, FULL
_NO_STORE_SQLITE = frozenset({8, 10, 13})


def store_error(e: BaseException, subject: str) -> StoreError | None:
    """The :class:`StoreError` that ``e`` amounts to, or None when ``e`` is not the output's failure:
    an ``OSError`` whose errno says the disk cannot take a write (named by its file when it has one,
    else ``subject``), an SQLite error that says the same of a database (``subject``), a
    :class:`StoreError` as it is; else None. Walks ``e``'s context (an error raised while another
    was handled): the first failure is the one named."""
    found: StoreError | None = None
    seen = 0
    while e is not None and seen < 16:  # the innermost cause wins: it came first
        here = _one_store_error(e, subject)
        found = here or found
        e = e.__context__  # type: ignore[assignment]
        seen += 1
    return found


def _one_store_error(e: BaseException, subject: str) -> StoreError | None:
    if isinstance(e, StoreError):
        return e
    if isinstance(e, OSError) and e.errno in _NO_STORE:
        what = "no space left on device" if e.errno == errno.ENOSPC else (e.strerror or str(e)).lower()
        return StoreError(what, subject=str(e.filename) if e.filename else subject)
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _NO_STORE_SQLITE:
        return StoreError(str(e), subject=subject)
    return None


def out_of_descriptors(e: BaseException) -> bool:
    """Is ``e``, or an error it was raised from or while handling, the process's (or the system's)
    limit on open files (EMFILE, ENFILE)? The error line then says so and names the limit, in place
    of "cannot read" or "cannot open" (README, exit codes)."""
    seen = 0
    while e is not None and seen < 16:
        if isinstance(e, OSError) and e.errno in (errno.EMFILE, errno.ENFILE):
            return True
        e = e.__cause__ or e.__context__  # type: ignore[assignment]
        seen += 1
    return False


class CaptureError(ArchiverError):
    """A fetch or a render failed in a way that stops the command."""

    exit_code = 4


class EnvironmentProblem(ArchiverError):
    """A program or library archiver needs is not installed; the message names the fix."""

    exit_code = 5
