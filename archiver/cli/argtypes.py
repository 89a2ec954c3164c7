"""The argparse types of archiver's command line: each checks a flag's value and says what is wrong
in one line (a usage error, exit 2): counts, sizes, ports, seconds, file extensions, hosts and
``NAME=VALUE`` pairs."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

__all__ = [
    "COUNT_MAX",
    "MAX_WORKERS",
    "allow_host",
    "count",
    "extensions",
    "metadata_pair",
    "port",
    "seconds",
    "size",
    "words",
]


def words(text: str) -> list[str]:
    """``contact,about`` → ``["contact", "about"]`` (blank items dropped)."""
    return [w.strip() for w in text.split(",") if w.strip()]


def extensions(text: str) -> frozenset[str]:
    """``mp4,.ZIP`` → ``{".mp4", ".zip"}``; an empty text is the empty list (store every asset)."""
    out = set()
    for word in words(text):
        ext = "." + word.lower().lstrip(".")
        if ext == "." or "/" in ext:
            raise argparse.ArgumentTypeError(f"not a file extension: {word!r}")
        out.add(ext)
    return frozenset(out)


def allow_host(text: str) -> str:
    """``--allow-host HOST`` or ``HOST:PORT``, checked (any spelling of an address is allowed)."""
    from archiver.capture.fetch import HostRule
    from archiver.errors import URLError

    try:
        HostRule.parse(text)
    except URLError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


#: The largest whole number an option takes unless it says less: what SQLite (a 64-bit signed
#: INTEGER: the crawl state keeps depths, attempts and budgets) and C code take. Above it, `--depth`
#: of 10**23 ended in an internal error ("Python int too large to convert to SQLite INTEGER").
COUNT_MAX = 2**62


def count(least: int | None, most: int = COUNT_MAX) -> Callable[[str], int]:
    """An argparse type: a whole number from ``least`` (None: any, the command checks it) to ``most``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
        if value > most:
            raise argparse.ArgumentTypeError(
                f"must be at most {most}, got {text if len(text) < 30 else text[:27] + '...'}"
            )
        return value

    return parse


#: ``serve --workers`` at most: each is a process with its own socket and open archives (100,000
#: ran out of file descriptors: an internal error), and more processes than this serve no faster
MAX_WORKERS = 256


_SIZE_UNITS = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 1 << 10,
    "mi": 1 << 20,
    "gi": 1 << 30,
}


def size(text: str) -> int:
    """An argparse type: a size in bytes, ``1G``/``1GB`` (10⁹), ``500M``, ``64MiB`` (2²⁰ units), ``4096``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", text.lower())
    if m is None or (m.group(2) or "") not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 1G, 500M or 4096, got {text!r}")
    value = int(float(m.group(1)) * _SIZE_UNITS[m.group(2) or ""])
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 byte, got {text!r}")
    return value


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: the system picks a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, zero or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def metadata_pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value
