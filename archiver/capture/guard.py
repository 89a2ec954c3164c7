"""The address guard and the connection layer under the fetcher (the rules are in the "Address
guard" section of :mod:`archiver.capture.fetch`'s docstring).

:class:`AddressGuard` decides by origin (scheme, host, port; :class:`HostRule` for the allowed ones)
and by the addresses a name resolves to (:data:`Resolver`, :func:`address_is_public`, every spelling
of an address made canonical by :func:`guard_host`). :class:`GuardedBackend`, a network backend
(``connect_tcp`` → a stream with ``read``, ``write``, ``start_tls``, ``get_extra_info`` and
``aclose``, the shape of httpcore's), runs the check inside each connection and opens the socket to a
checked address, never re-resolved; :meth:`GuardedBackend.open` tells it the scheme of each
connection (the fetcher's HTTP/1.1 pool, :mod:`.http1`, opens every connection through it).

The streams raise :mod:`.http1`'s errors (``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``,
``ConnectError``, ``NetworkError``). A backend a test hands in (``network_backend``, an httpcore one)
keeps its own: its errors are translated by their class names, so httpcore is never imported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, NamedTuple

from archiver import urls
from archiver.capture.http1 import ConnectError, ConnectTimeout, NetworkError, ReadTimeout, WriteTimeout
from archiver.capture.wire import Counter as _Counter
from archiver.capture.wire import Stream as _Stream
from archiver.errors import CaptureError, URLError

__all__ = [
    "AddressGuard",
    "AddressRefused",
    "GuardedBackend",
    "HostRule",
    "Resolver",
    "address_is_public",
    "guard_host",
    "system_resolver",
]

#: ``resolver(host, port)`` → the addresses the host name resolves to (strings, IPv4 or IPv6).
Resolver = Callable[[str, int], Awaitable[list[str]]]
#: IPv6 addresses that carry the IPv4 address their packets end up at (NAT64, RFC 6052).
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


async def system_resolver(host: str, port: int) -> list[str]:
    """The host's addresses from the operating system (``getaddrinfo``), in its order, deduplicated."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[str, None] = {}
    for _family, _type, _proto, _name, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]).split("%", 1)[0], None)
    return list(seen)


def address_is_public(address: str) -> bool:
    """True for a globally routable unicast address. IPv4-mapped IPv6 (``::ffff:10.0.0.1``) and NAT64
    (``64:ff9b::a00:1``) addresses are judged by their IPv4 address, 6to4 ones by it too; loopback,
    private, link-local, unique-local, multicast, reserved, unspecified and shared (100.64/10)
    addresses are not public."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64:  # NAT64 (64:ff9b::7f00:1 is translated to 127.0.0.1)
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None and not address_is_public(str(ip.sixtofour)):
            return False
    return bool(
        ip.is_global
        and not ip.is_multicast
        and not ip.is_loopback
        and not ip.is_private
        and not ip.is_link_local
        and not ip.is_reserved
        and not ip.is_unspecified
    )


class AddressRefused(CaptureError):
    """The address guard refused to connect (see the module docstring). ``allow`` is the
    ``--allow-host`` value that would have allowed it."""

    def __init__(self, host: str, address: str | None, why: str, *, allow: str | None = None) -> None:
        hint = f"pass --allow-host {allow or host} (or --allow-private) to capture it"
        super().__init__(f"address guard: {why}; {hint}", subject=host)
        self.host = host
        self.address = address


def _strip_brackets(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


_NOT_IN_HOST = frozenset(" \t\r\n\f\v/?#@\\")


@functools.lru_cache(maxsize=4096)
def guard_host(host: str) -> str:
    """``host`` as the guard compares it: the canonical host of :mod:`archiver.urls` (lowercase, no
    trailing dot, IDNA, every WHATWG spelling of an IPv4 address as a dotted quad: ``0x7f000001``,
    ``2130706433`` and ``127.1`` are ``127.0.0.1``), without IPv6 brackets, IPv6 compressed, and an
    IPv4-mapped IPv6 address as the IPv4 address inside it (``::ffff:127.0.0.1`` is ``127.0.0.1``).
    Raises :class:`URLError` for what is no host."""
    name = _strip_brackets(host.strip())
    if not name or any(c in _NOT_IN_HOST for c in name):
        raise URLError("not a host name or address", subject=repr(host))
    if ":" in name:
        try:
            ip6 = ipaddress.IPv6Address(name.split("%", 1)[0])
        except ValueError:
            raise URLError("invalid IPv6 address", subject=repr(host)) from None
        return str(ip6.ipv4_mapped) if ip6.ipv4_mapped is not None else ip6.compressed
    canonical = _strip_brackets(urls.host_of(urls.canonicalize(f"http://{name}/")))
    try:
        ip6 = ipaddress.IPv6Address(canonical)
    except ValueError:
        return canonical
    return str(ip6.ipv4_mapped) if ip6.ipv4_mapped is not None else ip6.compressed


def _shown(host: str, port: int | None = None) -> str:
    """``host[:port]`` as written in a URL and on the command line (IPv6 in brackets)."""
    text = f"[{host}]" if ":" in host else host
    return text if port is None else f"{text}:{port}"


class HostRule(NamedTuple):
    """One origin the guard lets through whatever its address: ``host`` (as :func:`guard_host`
    writes it), ``port`` (None: every port) and ``scheme`` (None: http and https)."""

    host: str
    port: int | None = None
    scheme: str | None = None

    def matches(self, scheme: str | None, host: str, port: int) -> bool:
        return (
            self.host == host
            and (self.port is None or self.port == port)
            and (self.scheme is None or self.scheme == scheme)
        )

    def __str__(self) -> str:
        shown = _shown(self.host, self.port)
        return f"{self.scheme}://{shown}" if self.scheme else shown

    @classmethod
    def parse(cls, text: str) -> HostRule:
        """``--allow-host``'s value: ``HOST`` (every port of it) or ``HOST:PORT`` (that port only);
        an IPv6 address with a port in brackets (``[::1]:8080``), without one bare or in brackets.
        Any spelling of an address is its canonical form. Raises :class:`URLError`."""
        value = text.strip()
        port_text: str | None = None
        if value.startswith("["):
            end = value.find("]")
            if end < 0:
                raise URLError("IPv6 address without its closing ']'", subject=repr(text))
            host, rest = value[: end + 1], value[end + 1 :]
            if rest:
                if not rest.startswith(":"):
                    raise URLError("junk after the IPv6 address", subject=repr(text))
                port_text = rest[1:]
        elif value.count(":") > 1:
            host = value  # a bare IPv6 address: every port
        else:
            host, sep, port_text = value.partition(":")
            port_text = port_text if sep else None
        port: int | None = None
        if port_text is not None:
            if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
                raise URLError(f"invalid port {port_text!r} (1 to 65535)", subject=repr(text))
            port = int(port_text)
        return cls(guard_host(host), port)

    @classmethod
    def origin(cls, url: str) -> HostRule:
        """The origin of an absolute http(s) URL (a seed): scheme, host and port (default 80/443)."""
        scheme = url.split("://", 1)[0].lower()
        netloc = urls.host_of(url)
        if netloc.startswith("["):
            end = netloc.index("]")
            host, rest = netloc[: end + 1], netloc[end + 1 :]
        else:
            host, _, rest = netloc.partition(":")
            rest = ":" + rest if rest else ""
        port = int(rest[1:]) if rest else (443 if scheme == "https" else 80)
        return cls(guard_host(host), port, scheme)


#: The scheme of the request whose connection is being opened (set by :class:`GuardedTransport`).
_SCHEME: contextvars.ContextVar[str | None] = contextvars.ContextVar("archiver_scheme", default=None)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class AddressGuard:
    """Decides which addresses a host may be connected to (see the module docstring).
    ``allow_hosts`` holds :class:`HostRule` objects or ``--allow-host`` texts (``HOST``,
    ``HOST:PORT``), each parsed by :meth:`HostRule.parse`. A plain class: a dataclass's generated
    methods were compiled from source at every start of a capture."""

    def __init__(
        self,
        allow_hosts: frozenset[str | HostRule] | frozenset[str] | frozenset[HostRule] = frozenset(),
        allow_private: bool = False,
        resolver: Resolver = system_resolver,
        refused: list[tuple[str, str]] | None = None,
    ) -> None:
        self.allow_hosts = allow_hosts
        self.allow_private = allow_private
        self.resolver = resolver
        self.refused: list[tuple[str, str]] = [] if refused is None else refused
        self.rules: tuple[HostRule, ...] = tuple(
            r if isinstance(r, HostRule) else HostRule.parse(r) for r in sorted(allow_hosts, key=str)
        )

    def allows(self, scheme: str | None, host: str, port: int) -> bool:
        """Is ``scheme://host:port`` (host as :func:`guard_host` writes it) an allowed origin?"""
        return self.allow_private or any(r.matches(scheme, host, port) for r in self.rules)

    async def _resolve(self, name: str, port: int) -> list[str]:
        if _is_ip(name):
            return [name]
        try:
            found = await self.resolver(name, port)
        except OSError as e:
            raise ConnectError(f"cannot resolve {name}: {e}") from e
        if not found:
            raise ConnectError(f"{name} resolves to no address")
        return found

    async def addresses(self, host: str, port: int, scheme: str | None = None) -> list[str]:
        """The checked addresses to connect to for ``host`` on ``port`` (for a ``scheme`` request;
        None: not known, so only rules for either scheme apply); raises :class:`AddressRefused`.
        An allowed origin may connect to whatever its name resolves to; anything else only to
        public addresses."""
        try:
            name = guard_host(host)
        except URLError as e:
            raise AddressRefused(host, None, f"{host!r} is no host: {e.message}") from None
        found = await self._resolve(name, port)
        if self.allows(scheme, name, port):
            return found
        public = [a for a in found if address_is_public(a)]
        if not public:
            self.refused.append((name, found[0]))
            origin = _shown(name, port)
            if found == [name]:
                why = (
                    f"{origin} is not a seed's origin or an allowed host, and {name} is not a public address"
                )
            else:
                why = (
                    f"{origin} is not a seed's origin or an allowed host, and {name} resolves to "
                    f"{found[0]}, which is not a public address"
                )
            raise AddressRefused(name, found[0], why, allow=origin)
        return public


class _AsyncioBackend:
    """Opens TCP connections to an address (the guard has already resolved the name) as
    :class:`_Stream` objects, counting their writes in ``counter``."""

    def __init__(self, counter: _Counter | None = None) -> None:
        self.counter = counter

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            for option in socket_options or ():
                sock.setsockopt(*option)
            if local_address:
                sock.bind((local_address, 0))
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_connect(sock, (host, port))
            stream = await _Stream.over(sock, self.counter)
        except TimeoutError as e:
            sock.close()
            raise ConnectTimeout(f"timed out connecting to {host}") from e
        except OSError as e:
            sock.close()
            raise ConnectError(str(e) or type(e).__name__) from e
        except BaseException:
            sock.close()
            raise
        return stream

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> _Stream:
        raise ConnectError("unix sockets are not used by a capture")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _ours(e: Exception, network: type[NetworkError] = NetworkError) -> Exception:
    """A foreign backend's error as :mod:`.http1`'s, by the names of its classes (httpcore's
    ``ConnectTimeout``, ``ReadTimeout``, ``WriteTimeout``, other ``TimeoutException``, and
    ``NetworkError``: ``ConnectError``, ``ReadError``, ``WriteError``); ``e`` itself otherwise."""
    if isinstance(e, OSError):  # ours already, or the system's (a network error to the fetcher)
        return e
    names = {c.__name__ for c in type(e).__mro__}
    text = str(e) or type(e).__name__
    if "ConnectTimeout" in names:
        return ConnectTimeout(text)
    if "WriteTimeout" in names:
        return WriteTimeout(text)
    if "TimeoutException" in names:
        return ReadTimeout(text)
    if "ConnectError" in names:
        return ConnectError(text)
    if "NetworkError" in names:
        return network(text)
    return e


class _ForeignStream:
    """A foreign backend's stream (see the module docstring) raising :mod:`.http1`'s errors."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            data: bytes = await self.inner.read(max_bytes, timeout)
        except Exception as e:
            if (mapped := _ours(e)) is e:
                raise
            raise mapped from e
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            await self.inner.write(buffer, timeout)
        except Exception as e:
            if (mapped := _ours(e)) is e:
                raise
            raise mapped from e

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> _ForeignStream:
        try:
            inner = await self.inner.start_tls(ssl_context, server_hostname=server_hostname, timeout=timeout)
        except Exception as e:
            if (mapped := _ours(e, ConnectError)) is e:
                raise
            raise mapped from e
        return _ForeignStream(inner)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Foreign:
    """A foreign network backend (a test's ``network_backend``) whose streams and errors are
    :mod:`.http1`'s."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _ForeignStream:
        try:
            stream = await self.inner.connect_tcp(
                host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
            )
        except Exception as e:
            if (mapped := _ours(e, ConnectError)) is e:
                raise
            raise mapped from e
        return _ForeignStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class GuardedBackend:
    """A network backend that opens sockets only to addresses the guard checked: through the
    fetcher's own streams (:mod:`.wire`), or through ``inner``, a test's backend (see the module
    docstring)."""

    def __init__(self, guard: AddressGuard, inner: Any = None) -> None:
        self.guard = guard
        self.counter = _Counter()  # stays 0 with an injected ``inner``
        self.inner: _AsyncioBackend | _Foreign = (
            _Foreign(inner) if inner is not None else _AsyncioBackend(self.counter)
        )

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream | _ForeignStream:
        addresses = await self.guard.addresses(host, port, _SCHEME.get())
        error: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (ConnectError, ConnectTimeout) as e:
                error = e
        assert error is not None
        raise error

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> _Stream:
        raise ConnectError("unix sockets are not used by a capture")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)

    async def open(self, scheme: str, host: str, port: int, timeout: float) -> _Stream | _ForeignStream:
        """A stream to ``host:port`` for a ``scheme`` request (the guard decides by that origin),
        TLS done for ``https`` (:mod:`.http1`'s ``Pool.connect``)."""
        token = _SCHEME.set(scheme)
        try:
            stream = await self.connect_tcp(host, port, timeout=timeout)
        finally:
            _SCHEME.reset(token)
        if scheme != "https":
            return stream
        try:
            return await stream.start_tls(_ssl_context(), server_hostname=host, timeout=timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await stream.aclose()
            raise


@functools.lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds: do it once per process, and only for https:
    # certifi's bundle, no environment (httpx.create_ssl_context(trust_env=False) of httpx 0.28,
    # what every earlier release used, without importing httpx and httpcore for it).
    import certifi

    return ssl.create_default_context(cafile=certifi.where())
