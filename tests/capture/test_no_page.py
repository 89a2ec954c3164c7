"""A capture that stored no page has failed: exit 4 and one line saying why in plain words (a host
that is down is "connection refused", not "robots.txt unreachable"), whatever the per-URL outcomes."""

from __future__ import annotations

import io
import socket
from pathlib import Path

from archiver.capture import capture_main
from archiver.fixture import FixtureServer


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(url: str, out: Path, **options: object) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = capture_main([url], out, stdout=stdout, stderr=stderr, render=False, delay=0, **options)
    return code, stdout.getvalue(), stderr.getvalue()


def test_a_host_that_is_down_is_exit_4_connection_refused(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/"
    code, out, err = _run(url, tmp_path / "down")
    assert code == 4
    assert err.count("\n") == 1 and "no page stored" in err and "connection refused" in err
    assert "robots.txt" not in err
    assert "captured 0 pages" in out  # the report is still printed
    code, _out, err = _run(url, tmp_path / "down2", ignore_robots=True)
    assert code == 4 and "connection refused" in err


def test_a_seed_that_answers_404_is_exit_4(tmp_path: Path, site_server: FixtureServer) -> None:
    code, _out, err = _run(f"{site_server.url}_fixture/status/404", tmp_path / "gone")
    assert code == 4 and "[404]" in err and "no page stored" in err


def test_a_capture_that_stored_a_page_is_exit_0(tmp_path: Path, site_server: FixtureServer) -> None:
    code, out, err = _run(f"{site_server.url}about.html", tmp_path / "ok", depth=0)
    assert code == 0 and err == "" and "captured 1 pages" in out
