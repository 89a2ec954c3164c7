"""Server limits against a running ``archiver serve`` (formats/serve.md §5.4), as attacks: a 1 MiB
header, a connection that never finishes its header, one that stays idle, 50 slowloris connections
(a header byte every half second), 2,000 idle connections, and more busy connections than the cap.
The server's memory is read from /proc/<pid>/status (VmRSS); it must grow by less than 50 MB, and a
normal request is answered within a 1 s wait while the attack runs. The timeouts are given small
values (``--header-timeout 1 --keep-alive-timeout 2``) so the tests stay fast."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

MB = 1 << 20
NORMAL = b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


@contextlib.contextmanager
def _serve(root: Path, *flags: str) -> Iterator[tuple[int, int]]:
    """``archiver serve`` in a process of its own: (its pid, its port)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "archiver", "serve", str(root), "--port", "0", "--quiet", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("http://127.0.0.1:"), line
        yield proc.pid, int(line.strip().rstrip("/").rsplit(":", 1)[1])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _read_all(s: socket.socket) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        while chunk := s.recv(65536):
            data += chunk
    return data


def _read_to_the_end(s: socket.socket) -> tuple[bytes, bool]:
    """What arrives until the server ends the connection; False when the wait ran out first."""
    data = b""
    try:
        while chunk := s.recv(65536):
            data += chunk
    except TimeoutError:
        return data, False
    except OSError:  # reset by the server: an end too
        pass
    return data, True


def _normal(port: int) -> bytes:
    """A normal request, answered within a 1 s wait (the acceptance bound)."""
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
        s.sendall(NORMAL)
        data = _read_all(s)
    assert data.startswith(b"HTTP/1.1 200 "), data[:100]
    assert b"<title>Home</title>" in data
    return data


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limits") / "t"
    root.mkdir()
    (root / "index.html").write_bytes(b"<!doctype html><title>Home</title>\n")
    # more than the kernel's largest send buffer here (tcp_wmem, 4 MiB), so a response can stall
    (root / "big.bin").write_bytes(bytes(range(256)) * (48 << 10))  # 12 MiB
    return root


@pytest.fixture(scope="module")
def server(tree: Path) -> Iterator[tuple[int, int]]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4500 <= hard or soft < hard < 4500:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))  # 2,000 sockets of ours
    with _serve(tree, "--header-timeout", "1", "--keep-alive-timeout", "2", "--send-timeout", "1") as running:
        _normal(running[1])
        yield running


def test_a_1_mib_header_is_refused_with_431(server: tuple[int, int]) -> None:
    pid, port = server
    before = _rss(pid)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with contextlib.suppress(OSError):  # the server may close before it has all of it
            s.sendall(b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * MB + b"\r\n\r\n")
        reply = _read_all(s)
    assert reply.startswith(b"HTTP/1.1 431 "), reply[:100]
    assert b"connection: close" in reply.lower()
    assert _rss(pid) - before < 50 * MB
    _normal(port)


def test_a_header_sent_while_a_response_goes_out_is_counted_too(server: tuple[int, int]) -> None:
    """A client asks for 12 MiB, reads none of it, and sends a 1 MiB header meanwhile: the connection
    is cut (no clean answer is possible in the middle of a body), the header is never parsed."""
    pid, port = server
    before = _rss(pid)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /t/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.2)
        with contextlib.suppress(OSError):
            s.sendall(b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * MB + b"\r\n\r\n")
        reply, ended = _read_to_the_end(s)
    assert ended, "the server cut the connection within the 10 s wait"
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.count(b"HTTP/1.1 ") == 1
    assert len(reply) < 12 * MB  # cut before the whole body
    assert _rss(pid) - before < 50 * MB
    _normal(port)


def test_a_header_not_finished_in_time_gets_408(server: tuple[int, int]) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        reply = _read_all(s)  # the server answers and closes: recv ends (the wait is bounded)
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:100]


@pytest.mark.parametrize(
    "asked", ["", "Range: bytes=0-5999999,6100000-12000000\r\n"], ids=["sendfile", "multipart"]
)
def test_a_client_that_stops_reading_is_cut_off(server: tuple[int, int], asked: str) -> None:
    """Slow reading (nginx's send_timeout): a client asks for 12 MiB and reads nothing; after the send
    timeout (1 s here) the server cuts the connection, whether the body leaves by sendfile(2) or
    in chunks (a multipart answer), instead of holding it, and a place under the cap, for ever."""
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(f"GET /t/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n{asked}\r\n".encode())
        time.sleep(4)  # nothing read meanwhile: longer than the send timeout and the timer's period
        data, ended = b"", False
        deadline = time.monotonic() + 5
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            else:
                ended = None  # type: ignore[assignment]
        ended = ended is not None
    assert ended, f"still sending after 5 s more ({len(data)} bytes read)"
    assert len(data) < 2 * MB


def test_a_header_begun_during_a_response_is_timed_too(server: tuple[int, int]) -> None:
    """A pipelined header that begins while a large response goes out, and never ends: once the
    response is out, the header time runs (408), not the longer keep-alive time."""
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET /t/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /t/ HTTP/1.1\r\nHost: 1")
        reply, ended = _read_to_the_end(s)
    assert ended and reply.startswith(b"HTTP/1.1 200 ")
    assert reply.count(b"HTTP/1.1 ") == 2 and b"\r\n\r\n408 request timeout\n" in reply[-300:], reply[-300:]


def test_a_connection_that_sends_nothing_is_closed(server: tuple[int, int]) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        assert _read_all(s) == b""  # closed by the server, nothing said


def test_an_idle_keep_alive_connection_is_closed(server: tuple[int, int]) -> None:
    _, port = server
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        reply = _read_all(s)  # the answer, then the end once the keep-alive time is over
    assert reply.startswith(b"HTTP/1.1 200 ") and reply.endswith(b"<title>Home</title>\n")


def test_slowloris_connections_are_cut_off(server: tuple[int, int]) -> None:
    pid, port = server
    before = _rss(pid)
    socks = [socket.create_connection(("127.0.0.1", port), timeout=15) for _ in range(50)]
    head = b"GET /t/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
    stop = threading.Event()
    cut: set[int] = set()

    def trickle() -> None:
        for i in range(len(head)):
            for n, s in enumerate(socks):
                if n in cut:
                    continue
                try:
                    s.sendall(head[i : i + 1])
                except OSError:
                    cut.add(n)
            if stop.wait(0.5) or len(cut) == len(socks):
                return

    worker = threading.Thread(target=trickle)
    worker.start()
    try:
        time.sleep(0.6)
        _normal(port)  # answered while 50 connections trickle
        replies = [_read_all(s) for s in socks]  # each ends: the server cut it off
    finally:
        stop.set()
        worker.join()
        for s in socks:
            s.close()
    assert all(r.startswith(b"HTTP/1.1 408 ") for r in replies), {r[:40] for r in replies}
    assert _rss(pid) - before < 50 * MB
    _normal(port)


def test_2000_idle_connections(server: tuple[int, int]) -> None:
    pid, port = server
    before = _rss(pid)
    socks = []
    try:
        for _ in range(2000):
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        time.sleep(0.3)
        grown = _rss(pid) - before
        _normal(port)  # answered, the cap notwithstanding: the longest-idle connection made room
        closed = 0
        for s in socks:
            s.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                closed += s.recv(1) == b""
    finally:
        for s in socks:
            s.close()
    assert grown < 50 * MB, grown
    assert closed >= 2000 - 1024, closed  # at most --max-connections (1024) stay open
    _normal(port)


def test_beyond_the_cap_busy_connections_get_503(tree: Path) -> None:
    with _serve(tree, "--max-connections", "8", "--header-timeout", "10") as (_, port):
        busy = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(8)]
        try:
            for s in busy:
                s.sendall(b"GET /t/ HTTP/1.1\r\n")  # each is reading a header: none is idle
            time.sleep(0.3)
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                with contextlib.suppress(OSError):
                    s.sendall(NORMAL)
                reply = _read_all(s)
            assert reply.startswith(b"HTTP/1.1 503 "), reply[:100]
        finally:
            for s in busy:
                s.close()
        time.sleep(0.3)
        _normal(port)  # room again once they are gone
