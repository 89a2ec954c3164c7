"""The authority of a URL made canonical (tree.md §2.1): userinfo dropped, IPv6 literals compressed,
host names lowercased or IDNA-encoded (UTS #46), IPv4 in any form browsers accept written as a dotted
quad, default ports removed.

Pure: no network, no filesystem, no clock, no global state.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote

from archiver.urls.syntax import _CONTROL, _fail, _short

__all__: list[str] = []  # archiver.urls' own helpers: callers use the names archiver.urls exports

_FORBIDDEN_HOST = frozenset(" #%/:<>?@[\\]^|")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _parse_authority(authority: str, scheme: str, shown: str) -> tuple[str, str]:
    # userinfo is dropped (tree.md §2.1): credentials never reach the tree or its manifest
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _fail(shown, "IPv6 host without its closing ']'")
        literal, after = hostport[1:end], hostport[end + 1 :]
        if after and not after.startswith(":"):
            raise _fail(shown, "junk after the IPv6 host")
        port = after[1:] if after else ""
        try:
            addr = ipaddress.IPv6Address(literal)
        except ValueError:
            raise _fail(shown, f"invalid IPv6 address [{_short(literal)}]") from None
        host = f"[{addr.compressed}]"
    else:
        name, sep, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        host = _canonical_host(name, shown)
        if sep and not port:
            port = ""
    if port:
        if not port.isascii() or not port.isdigit() or int(port) > 65535:
            raise _fail(shown, f"invalid port {_short(port)!r}")
        port = str(int(port))
        if _DEFAULT_PORTS[scheme] == port:
            port = ""
    return host, port


def _canonical_host(name: str, shown: str) -> str:
    decoded = unquote(name, errors="replace")
    if not decoded:
        raise _fail(shown, "no host in URL")
    if any(c in _FORBIDDEN_HOST for c in decoded) or _CONTROL.search(decoded):
        raise _fail(shown, f"invalid character in host {_short(decoded)!r}")
    if decoded.endswith(".") and len(decoded) > 1:
        decoded = decoded[:-1]  # "example.com." is "example.com"
    if decoded.isascii():
        host = decoded.lower()
    else:
        import idna  # ~4 ms of CPU to import: only for an international name

        try:
            host = idna.encode(decoded, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise _fail(shown, f"invalid international host name {_short(decoded)!r}") from None
    if ".." in host or host.startswith(".") or host.endswith(".") or len(host) > 253:
        raise _fail(shown, f"invalid host {_short(host)!r}")
    ipv4 = _whatwg_ipv4(host, shown)
    return host if ipv4 is None else ipv4


def _whatwg_ipv4(host: str, shown: str) -> str | None:
    """WHATWG's IPv4 parser: a host whose last label is a number is an address, in any of the forms
    browsers accept (``0x7f.1``, ``2130706433``, ``0177.0.0.1``); it is written as a dotted quad."""
    parts = host.split(".")
    if not re.fullmatch(r"[0-9]+|0x[0-9a-f]*", parts[-1]):
        return None
    if len(parts) > 4:
        raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    numbers: list[int] = []
    for part in parts:
        if re.fullmatch(r"0x[0-9a-f]*", part):
            numbers.append(int(part[2:] or "0", 16))
        elif re.fullmatch(r"0[0-7]+", part):
            numbers.append(int(part, 8))
        elif re.fullmatch(r"[0-9]+", part) and not (len(part) > 1 and part[0] == "0"):
            numbers.append(int(part))
        else:
            raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise _fail(shown, f"invalid IPv4 address {_short(host)!r}")
    value = numbers[-1] + sum(n << (8 * (3 - i)) for i, n in enumerate(numbers[:-1]))
    return str(ipaddress.IPv4Address(value))
