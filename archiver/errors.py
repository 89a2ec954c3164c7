"""The one exception tree of archiver, and the exit code each family maps to.

Pure: no network, no filesystem, no clock.

::

    ArchiverError                 exit 1  (anything we raise on purpose)
    ├── URLError                  exit 2  bad input to the URL mapping core (also a ValueError)
    ├── UsageError                exit 2  a command line that cannot be carried out
    ├── FormatError               exit 1  a tree, manifest or archive that breaks its spec
    ├── CaptureError              exit 4  fetching or rendering failed
    └── EnvironmentProblem        exit 5  a required outside program or library is missing

The CLI turns any of them into one line, ``archiver: <input>: <what is wrong>``, and the exit code above;
a traceback is printed only with ``--debug``. Errors that are bugs (``TypeError`` and friends) are not
caught: they get exit 70 and a traceback, because a user cannot act on them.
"""

from __future__ import annotations

__all__ = [
    "EXIT_BUG",
    "EXIT_PARTIAL",
    "ArchiverError",
    "CaptureError",
    "EnvironmentProblem",
    "FormatError",
    "URLError",
    "UsageError",
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


class CaptureError(ArchiverError):
    """A fetch or a render failed in a way that stops the command."""

    exit_code = 4


class EnvironmentProblem(ArchiverError):
    """A program or library archiver needs is not installed; the message names the fix."""

    exit_code = 5
