"""Starting ``archiver serve``: the application over the PATHs given (:func:`make_app`), the
listening sockets, the server's limits (checked, and the connection cap fitted to the open-file
limit), and the uvicorn server that runs it with uvloop and httptools (the protocol of
:mod:`archiver.serve.protocol`).

:func:`serve` runs the application, bound to 127.0.0.1 unless told otherwise; :func:`running` does
the same in a background thread for tests and tools.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from archiver.errors import UsageError
from archiver.serve.app import App
from archiver.serve.policy import Limits
from archiver.serve.protocol import fast_protocol
from archiver.serve.ranges import MAX_RANGES
from archiver.serve.site import Site
from archiver.serve.sources import mounts_for

__all__ = ["make_app", "running", "serve"]


def make_app(
    paths: Sequence[Path | str],
    *,
    gwtar_mime: str = "text/html",
    max_ranges: int = MAX_RANGES,
    allow_live: bool = False,
) -> App:
    """The ASGI application serving ``paths`` (gwtar files, ZIM files, trees, folders of them).
    Everything is opened now; a missing or unreadable PATH is a :class:`UsageError`. ``allow_live``:
    archived content may load from the live web (formats/serve.md §5.3)."""
    _check_mime(gwtar_mime)
    site = Site(mounts_for(paths, gwtar_mime=gwtar_mime), allow_live=allow_live)
    return App(site, max_ranges=max_ranges)


def _check_mime(value: str) -> None:
    if not value or any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise UsageError("not a usable media type", subject=repr(value))


def _server(config: Any) -> Any:
    """A uvicorn server that stops on SIGINT/SIGTERM and then returns, instead of re-raising the
    signal (uvicorn's default), so :func:`serve` can return its exit code."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    return Server(config)


def _config(app: App, *, quiet: bool, limits: Limits) -> Any:
    import uvicorn

    app.send_timeout = limits.send_timeout

    return uvicorn.Config(
        app,
        timeout_keep_alive=limits.keep_alive,  # seconds an idle connection stays open
        loop="uvloop",
        http=fast_protocol(limits),
        ws="none",  # a file server: no WebSocket upgrades
        lifespan="off",
        access_log=False,
        log_level="warning" if quiet else "info",
        server_header=False,
        date_header=True,
        timeout_graceful_shutdown=2,
        proxy_headers=False,  # a local server: no X-Forwarded-* rewriting, one middleware less per request
    )


def _bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as e:  # out of file descriptors (many --workers under a low limit)
        raise UsageError(f"cannot listen: {e.strerror or e}", subject=f"{host}:{port}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.set_inheritable(True)
    except (OSError, OverflowError) as e:  # OverflowError: a port outside 0-65535 (the API's callers)
        sock.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise UsageError(f"cannot listen: {why}", subject=f"{host}:{port}") from None
    return sock


def _base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _check_limits(limits: Limits) -> Limits:
    for name in ("header_timeout", "keep_alive", "send_timeout"):
        value = getattr(limits, name)
        if not value > 0:
            raise UsageError("must be more than 0 seconds", subject=f"{name}={value}")
    if limits.max_connections < 1:
        raise UsageError("must be at least 1", subject=f"max_connections={limits.max_connections}")
    return limits


def _open_files(limits: Limits) -> Limits:
    """Raise the soft open-file limit to the hard one (as nginx's worker_rlimit_nofile), and keep the
    connection cap below what is left after the cache of open tree files."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                soft = hard
    except ImportError:
        return limits
    if soft == resource.RLIM_INFINITY:
        return limits
    room = max(16, soft - min(4096, soft // 4) - 64)
    if limits.max_connections <= room:
        return limits
    return dataclasses.replace(limits, max_connections=room)


#: Connections a server must be able to accept on top of what its mounts hold
#: (--max-connections' own floor, :func:`_open_files`).
MIN_CONNECTIONS = 16
#: Descriptors a mount opens once served, beyond those it holds from the start: its search reader and
#: what its first query reads through it (40 gwtar mounts: 15 + 40 descriptors before the first
#: query, 15 + 3 x 40 after it).
DESCRIPTORS_A_MOUNT = 2


def _check_descriptors(mounts: int) -> None:
    """Refuse to serve, with one line, when the mounts leave too few of the process's open files for
    their search readers (:data:`DESCRIPTORS_A_MOUNT` each, opened at the first query) and
    :data:`MIN_CONNECTIONS` connections: under a low ``ulimit -n`` (64, 20 archives named) requests
    then failed each its own way (a connection reset, a search saying "no search index", an answer
    cut after its head); with 200 archives the mounts could not all be opened ("cannot open as a
    regular file").
    Counted from /proc/self/fd once the mounts are open, before their search tables are built
    (which would open the readers too); where that folder is not there, nothing is checked."""
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return
    try:
        held = len(os.listdir("/proc/self/fd"))
    except OSError:
        return
    need = held + DESCRIPTORS_A_MOUNT * mounts + MIN_CONNECTIONS
    if need > soft:
        raise UsageError(
            f"{mounts:,} archives need about {need:,} open files and the process may hold {soft:,}"
            " (raise it with ulimit -n, or serve fewer archives)",
            subject="serve",
        )


#: The collector's first threshold in a serving process (Python's default: 700 allocations).
GC_THRESHOLD = 10_000


def _settle_gc() -> None:
    """After the mounts and the search's tables are prepared, before the workers fork: what was
    built so far (parsed manifests, the mounts, the tables' samples) is frozen out of the collector's
    walks, and the first generation is collected every 10,000 allocations instead of 700 (a query
    allocates thousands of short-lived objects and few cycles). With distinct queries over 40 mounts
    of the generated corpus (in process, 200 queries, load 6): 369 collections, 2.4 ms of a query's
    16.6 ms of CPU, before; 3 collections, 0.36 ms of 15.5 ms after (the slowest query 200 -> 68 ms:
    no full collection inside it). It was 50,000 while the search kept millions of objects: a
    collection then came rarely and walked hundreds of thousands of them (150-250 ms); since the
    search keeps few (formats/search.md §6.5, The collector), 10,000 gives collections of at most
    ~15 ms (2,200 distinct queries over 100 mounts: 56 collections, 245 ms in all). The frozen
    objects also keep their pages shared with the forked workers (no collector writes into them)."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, second, third)


def _check_domain(domain: str) -> str:
    labels = domain.lower().rstrip(".").split(".")
    if not all(lab and all(c.isascii() and (c.isalnum() or c == "-") for c in lab) for lab in labels):
        raise UsageError("not a host name", subject=repr(domain))
    return ".".join(labels)


def serve(
    paths: Sequence[Path | str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    gwtar_mime: str = "text/html",
    quiet: bool = False,
    workers: int = 1,
    limits: Limits | None = None,
    allow_live: bool = False,
    domain: str = "localhost",
) -> int:
    """Serve ``paths`` until interrupted (Ctrl-C or SIGTERM); returns the exit code (0). The base
    URL is the first line on stdout. ``port`` 0 picks a free port. ``workers`` > 1 forks that many
    processes in all, each with its own listening socket on the same port (``SO_REUSEPORT``, so the
    kernel spreads connections); archives are opened before the fork and shared. Each mount is
    served at its own origin, ``http://<label>.<domain>:<port>`` (formats/serve.md §5.2)."""
    if workers < 1:
        raise UsageError("must be at least 1", subject=f"workers={workers}")
    limits = _open_files(_check_limits(limits or Limits()))
    domain = _check_domain(domain)
    app = make_app(paths, gwtar_mime=gwtar_mime, allow_live=allow_live)
    sock = _bind(host, port, reuse_port=workers > 1)
    try:
        _check_descriptors(len(app.site.mounts))  # before the search's tables are built for them
        app.listening(host, sock.getsockname()[1], domain)
    except BaseException:
        sock.close()
        raise
    socks = [sock]
    try:
        for _ in range(workers - 1):
            socks.append(_bind(host, sock.getsockname()[1], reuse_port=True))
    except UsageError:
        for s in socks:
            s.close()
        raise
    _settle_gc()
    print(_base_url(sock), flush=True)
    if not quiet:
        for mount in app.site.mounts.values():
            print(f"  {mount.kind:5}  {app.site.origin(mount)}{mount.href}", flush=True)
    children: list[int] = []
    try:
        for own in socks[1:]:
            pid = os.fork()
            if pid == 0:  # a worker: serve its own socket, never return into the caller's code
                code = 0
                try:
                    _server(_config(app, quiet=quiet, limits=limits)).run(sockets=[own])
                except BaseException:
                    code = 1
                os._exit(code)
            children.append(pid)
        _server(_config(app, quiet=quiet, limits=limits)).run(sockets=[sock])
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        for s in socks:
            s.close()
        app.site.close()
    return 0


@contextlib.contextmanager
def running(
    paths: Sequence[Path | str] | App,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    gwtar_mime: str = "text/html",
    keep_alive: float = 5.0,
    header_timeout: float = 30.0,
    max_connections: int = 1024,
    send_timeout: float = 60.0,
    allow_live: bool = False,
) -> Iterator[str]:
    """Serve in a background thread for the duration of a ``with`` block, yielding the base URL
    (``http://127.0.0.1:PORT/``). Used by tests and tools; the server is stopped on exit.
    ``keep_alive``: seconds an idle connection stays open; the other limits as :func:`serve`'s."""
    app = paths if isinstance(paths, App) else make_app(paths, gwtar_mime=gwtar_mime, allow_live=allow_live)
    sock = _bind(host, port)
    app.listening(host, sock.getsockname()[1])
    limits = _check_limits(Limits(header_timeout, keep_alive, max_connections, send_timeout=send_timeout))
    server = _server(_config(app, quiet=True, limits=limits))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="archiver-serve", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        yield _base_url(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        if not isinstance(paths, App):
            app.site.close()
