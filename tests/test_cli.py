"""The command line, called as users call it (a subprocess) and through main(argv)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from archiver.cli import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_map_prints_tree_paths(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--home", "https://ex.com/", "/docs", "/img/logo.png?v=3&utm_source=x"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "docs/index.html\thttps://ex.com/docs",
        "_archiver/ex.com/img/logo__q-951eba.png\thttps://ex.com/img/logo.png?v=3",
    ]


def test_map_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["map", "--json", "--kind", "page", "EX.com/a?b=1"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row == {
        "input": "EX.com/a?b=1",
        "canonical": "https://ex.com/a?b=1",
        "dedup_key": "https://ex.com/a?b=1",
        "kind": "page",
        "path": "a/index__q-cbe78b.html",
    }


def test_bad_url_is_one_line_and_exit_2() -> None:
    result = run("map", "http://[::1")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "archiver: 'http://[::1': IPv6 host without its closing ']'\n"


def test_debug_adds_the_traceback() -> None:
    result = run("--debug", "map", "http://")
    assert result.returncode == 2
    assert "Traceback" in result.stderr and result.stderr.endswith("archiver: 'http://': no host in URL\n")


@pytest.mark.parametrize("command", ["capture", "pack", "serve", "verify"])
def test_commands_not_there_yet_say_so(command: str) -> None:
    result = run(command, "x")
    assert result.returncode == 2
    assert result.stderr.startswith(f"archiver: {command}: not implemented yet")
    assert "Traceback" not in result.stderr


def test_version_and_help() -> None:
    assert run("--version").stdout.startswith("archiver ")
    helptext = run("--help").stdout
    for command in ("demo", "map", "capture", "pack", "serve", "verify"):
        assert command in helptext
