"""Isolation and limits of ``archiver serve`` (formats/serve.md §5.2–§5.4): the host name each mount is
served at, which Host headers are answered, and the security headers of every response.

No IO here: everything is computed once, when the server starts, so a request only looks values up.

- Every mount has an origin of its own, ``http://<label>.<domain>:<port>`` (``domain`` defaults to
  ``localhost``: browsers resolve ``*.localhost`` to loopback), so a script in one archive is
  cross-origin to every other archive and to the index page, and the same-origin policy keeps it out.
- The *bare* host (the bound address, ``localhost``, ``<domain>``) serves the index, the server pages
  and, for clients that are not browsers, the mounts' bytes inside a CSP ``sandbox`` (an opaque
  origin, no scripts); a browser request there (it carries ``Sec-Fetch-Mode``) for a mount's path is
  redirected to the mount's own origin.
- Any other Host header is answered 421 (DNS rebinding: a name that resolves to 127.0.0.1 reaches the
  socket, but is not answered).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ERROR_HEADERS",
    "PAGE_HEADERS",
    "Limits",
    "content_headers",
    "host_labels",
    "host_table",
    "is_ip_literal",
]

Header = tuple[bytes, bytes]

#: Request line plus header fields, at most this many bytes: more → 431 and the connection closes.
MAX_HEAD: Final = 64 << 10


@dataclass(frozen=True, slots=True)
class Limits:
    """Server limits (formats/serve.md §5.4; nginx's defaults there for comparison)."""

    header_timeout: float = 30.0  # seconds from a request's first byte to the end of its header
    keep_alive: float = 75.0  # seconds an idle connection stays open between requests
    max_connections: int = 1024  # open connections; at the cap the oldest idle one is closed
    max_head: int = MAX_HEAD  # bytes of request line and headers
    send_timeout: float = 60.0  # seconds a response may make no progress (a client that stopped reading)


# The policy of archived content on its own origin: everything it loads comes from that origin or is
# inline (data:, blob:); no request reaches the live web; forms post only to the origin; no other
# origin may frame it. 'unsafe-inline'/'unsafe-eval' keep archived pages' own scripts working.
_OWN_CSP: Final = (
    "default-src 'self' data: blob: 'unsafe-inline' 'unsafe-eval'; form-action 'self'; "
    "base-uri 'self'; frame-ancestors 'self'"
)
#: With ``--allow-live``: archived content may load from anywhere; other origins still may not frame it.
_LIVE_CSP: Final = "frame-ancestors 'self'"
_COMMON: Final[tuple[Header, ...]] = (
    (b"x-content-type-options", b"nosniff"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-dns-prefetch-control", b"off"),
)
#: The index and search pages: no script, nothing from anywhere but inline style; never framed.
PAGE_HEADERS: Final[tuple[Header, ...]] = (
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; "
        b"frame-ancestors 'none'",
    ),
    *_COMMON,
)
#: Error answers and redirects (plain text, never framed, never sniffed).
ERROR_HEADERS: Final[tuple[Header, ...]] = (
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
)


def content_csp(*, allow_live: bool = False, sandbox: bool = False) -> str:
    """The Content-Security-Policy of a mount's content: on its own origin, or (``sandbox``) on the
    bare host, where it gets an opaque origin and no scripts."""
    policy = _LIVE_CSP if allow_live else _OWN_CSP
    return "sandbox; " + policy if sandbox else policy


def content_headers(*, allow_live: bool = False, sandbox: bool = False) -> tuple[Header, ...]:
    """The headers every response of a mount's content carries (built once per server)."""
    csp = content_csp(allow_live=allow_live, sandbox=sandbox).encode("ascii")
    return ((b"content-security-policy", csp), *_COMMON)


def host_labels(names: Iterable[str]) -> list[str]:
    """One DNS label per mount name, in order: lower-case ASCII letters and digits, every other run of
    characters a ``-``, at most 63 characters, unique (``-2``, ``-3``… on a clash), never empty
    (``archive``). ``site.gwtar.html`` → ``site-gwtar-html``, ``My Tree`` → ``my-tree``."""
    out: list[str] = []
    taken: set[str] = set()
    for name in names:
        chars: list[str] = []
        for c in name.lower():
            if ("a" <= c <= "z") or ("0" <= c <= "9"):
                chars.append(c)
            elif chars and chars[-1] != "-":
                chars.append("-")
        base = "".join(chars).strip("-")[:56].strip("-") or "archive"
        label, n = base, 2
        while label in taken:
            label = f"{base}-{n}"
            n += 1
        taken.add(label)
        out.append(label)
    return out


def is_ip_literal(host: str) -> bool:
    """Whether a Host header's host part is an IP address (``192.0.2.1``, ``[2001:db8::1]``)."""
    if host.startswith("[") and host.endswith("]"):
        inner = host[1:-1]
        return bool(inner) and all(c in "0123456789abcdefABCDEF:." for c in inner)
    parts = host.split(".")
    return len(parts) == 4 and all(p.isdigit() and len(p) <= 3 and int(p) < 256 for p in parts)


def bracket(host: str) -> str:
    """A host as it appears in a URL or Host header (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_table(bound: str, port: int, domain: str, mounts: Sequence[tuple[str, Any]]) -> dict[bytes, Any]:
    """Every Host header value answered, lower-case, mapped to its mount (None: the bare host).
    ``mounts`` are (label, mount) pairs. Each name is answered with ``:port`` and without a port
    (what a client behind a port forward may send; a rebinding page always sends its own name)."""
    bare = {"127.0.0.1", "localhost", "[::1]", domain.lower(), bracket(bound.lower())}
    if bound in ("0.0.0.0", "::"):
        bare.discard(bracket(bound))
    table: dict[bytes, Any] = {}

    def add(host: str, value: Any) -> None:
        table[f"{host}:{port}".encode("ascii")] = value
        table[host.encode("ascii")] = value

    for host in sorted(bare):
        add(host, None)
    for label, mount in mounts:
        add(f"{label}.{domain.lower()}", mount)
    return table
