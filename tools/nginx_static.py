"""Debian's nginx serving one folder as it is, on a free 127.0.0.1 port, for the benchmarks and tools
that read a real documentation package the way a reader's browser would (``tools/bench_capture.py
--site``, ``tools/search_quality.py``). Symbolic links are followed, as Debian's documentation
packages need (their Sphinx scripts link to ``/usr/share/javascript``); no access log; stopped by its
PID on leaving the ``with``."""

from __future__ import annotations

import getpass
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_folder(
    root: Path, work: Path, *, workers: int = 1, access_log: Path | None = None
) -> Iterator[str]:
    """nginx serving ``root``, its configuration and temporary files in ``work``; yields the base URL.
    ``access_log``: a file that gets one line per request, ``<status> <body bytes sent>``."""
    work.mkdir(parents=True, exist_ok=True)
    port = free_port()
    conf = work / "nginx.conf"
    log = (
        f" log_format sizes '$status $body_bytes_sent';\n access_log {access_log} sizes;"
        if access_log is not None
        else " access_log off;"
    )
    temp = "\n".join(
        f" {k}_temp_path {work}/nt-{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    conf.write_text(
        f"daemon off;\nuser {getpass.getuser()};\nworker_processes {workers};\npid {work / 'nginx.pid'};\n"
        f"error_log {work / 'nginx-error.log'} warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{\n include /etc/nginx/mime.types;\n{log}\n{temp}\n"
        f" server {{ listen 127.0.0.1:{port}; root {root.resolve()}; }}\n}}\n",
        encoding="utf-8",
    )
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    proc = subprocess.Popen([nginx, "-c", str(conf), "-p", str(work)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    why = proc.stderr.read().decode() if proc.stderr else ""
                    raise SystemExit(f"nginx did not start: {why}") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
