"""A misspelt scheme is a usage error with a suggestion (tree.md §2.4): exit 2, one line, no network
(no DNS query, no connection) and nothing written. Before, ``http//host`` was taken as
``https://http//host``: a DNS query for a host called ``http``."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver import urls
from archiver.capture import capture_main
from archiver.errors import URLError

TYPOS = [
    ("http//{h}/docs/", "http://{h}/docs/"),
    ("https//{h}/", "https://{h}/"),
    ("https:/{h}/", "https://{h}/"),
    ("http:{h}/", "http://{h}/"),
    ("https;//{h}/", "https://{h}/"),
    ("htp://{h}/", "http://{h}/"),
    ("htps://{h}/", "https://{h}/"),
    ("hhttp://{h}/", "http://{h}/"),
    ("HTTP//{h}/", "http://{h}/"),
]


@pytest.mark.parametrize(("typed", "meant"), TYPOS)
def test_scheme_typo_vectors(typed: str, meant: str) -> None:
    h = "example.org"
    assert urls.scheme_typo(typed.format(h=h)) == meant.format(h=h)
    with pytest.raises(URLError, match="did you mean"):
        urls.parse_seed(typed.format(h=h))


@pytest.mark.parametrize(
    "text",
    ["http://example.org/", "example.org", "example.org/http//x", "ftp://example.org/",
     "http.example.org/", "localhost:8080/", "https:///example.org/", "mailto:x@example.org"],
)  # fmt: skip
def test_not_a_typo(text: str) -> None:
    assert urls.scheme_typo(text) is None


def test_a_scheme_is_never_a_host() -> None:
    for text in ("https:8080/x", "http://http/", "https://HTTPS:443/"):
        with pytest.raises(URLError, match="is a scheme, not a host name"):
            urls.parse_seed(text)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[object]]]:
    """A loopback port that counts every connection made to it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)
            conn.close()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield sock.getsockname()[1], accepted
    stop.set()
    thread.join()
    sock.close()


@pytest.mark.parametrize(("typed", "meant"), TYPOS[:7])
def test_typo_on_the_command_line_touches_nothing(
    tmp_path: Path, listener: tuple[int, list[object]], typed: str, meant: str
) -> None:
    port, accepted = listener
    h = f"127.0.0.1:{port}"
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "archiver", "capture", typed.format(h=h), "-o", str(out), "--no-render"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"did you mean {meant.format(h=h)!r}" in lines[0]
    assert not out.exists()
    assert accepted == []


def test_typo_asks_no_resolver(tmp_path: Path) -> None:
    asked: list[str] = []

    async def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    err = io.StringIO()
    for typed in ("http//example.org/", "https:/example.org/", "https:8080/"):
        code = capture_main([typed], tmp_path / "out", render=False, resolver=resolver, stderr=err)
        assert code == 2
    assert asked == []
    assert not (tmp_path / "out").exists()
    assert len(err.getvalue().splitlines()) == 3
