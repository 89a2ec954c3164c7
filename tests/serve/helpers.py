"""Shared helpers of the serve tests: the vector table, a raw HTTP client, and nginx in a temp dir."""

from __future__ import annotations

import contextlib
import email.utils
import getpass
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archiver.serve import print_config

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "formats" / "vectors" / "serve" / "ranges.json"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
DAY = 86400


def load_vectors() -> dict[str, Any]:
    return json.loads(VECTORS.read_text(encoding="utf-8"))


def resource_bytes(resource: dict[str, Any]) -> bytes:
    assert resource["content"] == "byte i is i % 251"
    return bytes(i % 251 for i in range(resource["size"]))


def write_resource(folder: Path, resource: dict[str, Any]) -> Path:
    path = folder / resource["path"].lstrip("/")
    path.write_bytes(resource_bytes(resource))
    os.utime(path, (resource["mtime"], resource["mtime"]))
    return path


@dataclass
class Reply:
    status: int
    headers: dict[str, list[str]]
    body: bytes

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return ", ".join(values) if values else None


def request(
    base: str, method: str, path: str, headers: dict[str, str] | None = None, *, host: str | None = None
) -> Reply:
    """One request on a fresh connection, headers sent exactly as given (no Accept-Encoding added);
    ``host``: the Host header to send instead of the address's (a mount's own origin)."""
    address, port = base.split("//", 1)[1].rstrip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(address.strip("[]"), int(port), timeout=30)
    try:
        conn.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
        if host is not None:
            conn.putheader("Host", host)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        found: dict[str, list[str]] = {}
        for name, value in response.getheaders():
            found.setdefault(name.lower(), []).append(value)
        return Reply(response.status, found, body)
    finally:
        conn.close()


def get_on(
    base: str, target: str, host: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """GET ``target`` with ``Host: host``: (status, headers lower-cased with their values joined, body)."""
    reply = request(base, "GET", target, headers, host=host)
    return reply.status, {k: ", ".join(v) for k, v in reply.headers.items()}, reply.body


def placeholders(mtime: int, etag: str) -> dict[str, str]:
    def imf(t: float) -> str:
        return email.utils.formatdate(t, usegmt=True)

    moment = time.gmtime(mtime)
    return {
        "{etag}": etag,
        "{lm}": imf(mtime),
        "{lm-1d}": imf(mtime - DAY),
        "{lm+1d}": imf(mtime + DAY),
        "{lm-rfc850}": time.strftime("%A, %d-%b-%y %H:%M:%S GMT", moment),
        "{lm-asctime}": time.strftime("%a %b ", moment)
        + f"{moment.tm_mday:2d}"
        + time.strftime(" %H:%M:%S %Y", moment),
    }


def fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def parse_multipart(reply: Reply) -> list[tuple[str, str, bytes]] | None:
    """(Content-Type, Content-Range, bytes) of each part of a multipart/byteranges body."""
    ctype = reply.header("content-type") or ""
    if not ctype.startswith("multipart/byteranges"):
        return None
    boundary = ctype.split("boundary=", 1)[1].strip('"')
    delimiter = b"--" + boundary.encode("ascii")
    chunks = reply.body.split(delimiter)
    parts: list[tuple[str, str, bytes]] = []
    for chunk in chunks[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.partition(b"\r\n\r\n")
        fields = {}
        for line in head.decode("latin-1").split("\r\n"):
            if ":" in line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        assert data.endswith(b"\r\n"), "a part must end with CRLF before the next delimiter"
        parts.append((fields.get("content-type", ""), fields.get("content-range", ""), data[:-2]))
    return parts


def check(
    case: dict[str, Any], reply: Reply, content: bytes, values: dict[str, str], content_type: str
) -> list[str]:
    """What is wrong with ``reply`` for this case (empty when it conforms)."""
    problems: list[str] = []
    size = len(content)
    if reply.status != case["status"]:
        problems.append(f"status {reply.status}, want {case['status']}")
        return problems
    for name, want in case.get("expect_headers", {}).items():
        got = reply.header(name)
        if got != fill(want, values):
            problems.append(f"{name}: {got!r}, want {fill(want, values)!r}")
    for name in case.get("absent_headers", []):
        if reply.header(name) is not None:
            problems.append(f"{name} sent: {reply.header(name)!r}")
    if "parts" in case:
        parts = parse_multipart(reply)
        if parts is None:
            return [*problems, f"not multipart: {reply.header('content-type')!r}"]
        want_parts = [(content_type, f"bytes {a}-{b - 1}/{size}", content[a:b]) for a, b in case["parts"]]
        if parts != want_parts:
            got_short = [(t, r, len(d)) for t, r, d in parts][:5]
            want_short = [(t, r, len(d)) for t, r, d in want_parts][:5]
            problems.append(f"parts {got_short}…, want {want_short}…")
        length = reply.header("content-length")
        if length is not None and int(length) != len(reply.body):
            problems.append(f"content-length {length} but {len(reply.body)} bytes")
    else:
        body = case.get("body")
        if body == "empty":
            if reply.body:
                problems.append(f"a body of {len(reply.body)} bytes, want none")
        elif isinstance(body, list):
            want = b"".join(content[a:b] for a, b in body)
            if reply.body != want:
                problems.append(f"body of {len(reply.body)} bytes differs from the {len(want)} wanted")
            if body == [[0, size]] and case["status"] == 200 and reply.header("content-type") != content_type:
                problems.append(f"content-type {reply.header('content-type')!r}, want {content_type!r}")
    return problems


def as_nginx(case: dict[str, Any]) -> dict[str, Any]:
    """The case as nginx is expected to answer it (its override merged in)."""
    override = case.get("nginx")
    if not override:
        return case
    merged = {
        k: v
        for k, v in case.items()
        if k not in ("nginx", "parts", "body", "expect_headers", "absent_headers")
    }
    merged.update({k: v for k, v in override.items() if k != "note"})
    return merged


# ------------------------------------------------------------------------------------ nginx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(folder: Path, server_block: str, *, workers: int = 1, http_extra: str = "") -> Path:
    """A complete nginx.conf in ``folder`` around a server block (no daemon, files in ``folder``)."""
    temp = folder / "nginx-temp"
    temp.mkdir(exist_ok=True)
    conf = folder / "nginx.conf"
    conf.write_text(
        # Workers run as whoever runs the test (nginx ignores `user` when not started as root), so
        # they can read the test's private temp folders.
        f"daemon off;\nuser {getpass.getuser()};\nworker_processes {workers};\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'nginx-error.log'} warn;\n"
        "events { worker_connections 1024; }\n"
        "http {\n    include /etc/nginx/mime.types;\n    default_type application/octet-stream;\n"
        "    access_log off;\n"
        f"{http_extra}"
        f"    client_body_temp_path {temp}/body;\n    proxy_temp_path {temp}/proxy;\n"
        f"    fastcgi_temp_path {temp}/fastcgi;\n    uwsgi_temp_path {temp}/uwsgi;\n"
        f"    scgi_temp_path {temp}/scgi;\n" + server_block + "}\n",
        encoding="utf-8",
    )
    return conf


@contextlib.contextmanager
def nginx(
    folder: Path, paths: list[Path], *, gwtar_mime: str = "text/html", workers: int = 1, http_extra: str = ""
) -> Iterator[str]:
    """Debian's nginx serving ``paths`` with the configuration ``archiver serve --print-config nginx``
    prints, on a free loopback port; yields the base URL and stops nginx by its PID."""
    port = free_port()
    block = print_config("nginx", paths, gwtar_mime=gwtar_mime, listen=f"127.0.0.1:{port}")
    with nginx_block(folder, block, port, workers=workers, http_extra=http_extra) as base:
        yield base


@contextlib.contextmanager
def nginx_block(
    folder: Path, block: str, port: int, *, workers: int = 1, http_extra: str = ""
) -> Iterator[str]:
    """Debian's nginx running ``block`` (a ``server`` block listening on 127.0.0.1:``port``) after
    ``nginx -t`` accepts it; yields the base URL and stops nginx by its PID."""
    conf = nginx_conf(folder, block, workers=workers, http_extra=http_extra)
    check_run = subprocess.run(
        [NGINX, "-t", "-c", str(conf), "-p", str(folder)], capture_output=True, text=True
    )
    assert check_run.returncode == 0, check_run.stderr
    proc = subprocess.Popen(
        [NGINX, "-c", str(conf), "-p", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"nginx did not start: {proc.stderr.read() if proc.stderr else ''}"
                    ) from None
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


CADDY = shutil.which("caddy") or "/usr/bin/caddy"


@contextlib.contextmanager
def caddy_file(folder: Path, caddyfile: str, port: int) -> Iterator[str]:
    """Debian's Caddy running ``caddyfile`` (as ``--print-config caddy`` prints it, listening on
    ``port``) after ``caddy validate`` accepts it, its admin endpoint off and its data and config
    folders in ``folder``; yields the base URL and stops Caddy by its PID."""
    text = caddyfile.replace("{\n    servers", "{\n    admin off\n    servers", 1)
    assert "admin off" in text
    conf = folder / "Caddyfile"
    conf.write_text(text, encoding="utf-8")
    env = {**os.environ, "HOME": str(folder), "XDG_DATA_HOME": str(folder / "data"),
           "XDG_CONFIG_HOME": str(folder / "config")}  # fmt: skip
    argv = ["--config", str(conf), "--adapter", "caddyfile"]
    check_run = subprocess.run([CADDY, "validate", *argv], capture_output=True, text=True, env=env)
    assert check_run.returncode == 0, check_run.stderr
    proc = subprocess.Popen([CADDY, "run", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"caddy did not start: {proc.stderr.read() if proc.stderr else ''}"
                    ) from None
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
