"""Hostile tar numbers and names (issue 14 point 7): base-256 sizes and mtimes (negative, huge), pax
``size`` records of thousands of digits or of non-ASCII digits give one error line and exit 1 from
``verify``, ``ls`` and ``extract``, never a traceback (exit 70) or a hang; ``ls`` prints names with
control characters and non-UTF-8 bytes escaped, one line each, and ``--json`` keeps them exact."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from archiver.cli import main
from tests.gwtar.corpus import raw_v1
from tests.gwtar.test_extract_attack import header, member


def pax(records: bytes, then: bytes) -> bytes:
    return (
        header("././@PaxHeader", size=len(records), typeflag=b"x")
        + records
        + bytes(-len(records) % 512)
        + then
    )


def _record(key: bytes, value: bytes) -> bytes:
    body = b" " + key + b"=" + value + b"\n"
    n = len(body) + 1
    while len(str(n)) + len(body) != n:
        n = len(str(n)) + len(body)
    return str(n).encode() + body


def base256(value: int) -> bytes:
    """A 12-byte GNU base-256 field: the marker bit then big-endian, two's complement when negative."""
    if value >= 0:
        return b"\x80" + value.to_bytes(11, "big")
    return (value % (1 << 96)).to_bytes(12, "big")


ABC = b"abc".ljust(512, b"\0")
P = member("file", "p.bin", data=b"x")
CASES = {
    "negative base-256 size": header("neg.bin", size_field=base256(-1024)) + bytes(1024),
    "huge base-256 size": header("huge.bin", size_field=b"\x80" + b"\xff" * 11),
    "base-256 size past the end": header("far.bin", size_field=base256(1 << 62)),
    "negative base-256 mtime": header("old.bin", size=3, mtime_field=base256(-(1 << 40))) + ABC,
    "huge base-256 mtime": header("late.bin", size=3, mtime_field=b"\x80" + b"\xff" * 11) + ABC,
    "pax size of 5000 digits": pax(_record(b"size", b"9" * 5000), P),
    "pax size in Arabic-Indic digits": pax(_record(b"size", "١٢".encode()), P),
    "pax record length of 5000 digits": pax(b"1" * 5000 + b" size=1\n", P),
    "pax size negative": pax(_record(b"size", b"-5"), P),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_numbers_give_one_line_and_exit_1(
    tmp_path: Path, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "hostile.gwtar.html"
    archive.write_bytes(raw_v1([CASES[case]]))
    out = tmp_path / "out"
    assert main(["verify", str(archive)]) == 1
    captured = capfd.readouterr()
    assert "INVALID" in captured.out and "Traceback" not in captured.err + captured.out
    assert main(["ls", str(archive)]) in (0, 1)
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and len(captured.err.splitlines()) <= 1
    assert main(["extract", str(archive), "-o", str(out)]) == 1
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err
    assert len(captured.err.splitlines()) == 1 and captured.err.startswith("archiver: ")
    assert not os.path.lexists(out)
    assert sorted(os.listdir(tmp_path)) == ["hostile.gwtar.html"]


NAMES = [
    "a\nb.png",
    "c\rd.png",
    "\x1b[31mred.png",
    "del\x7f.png",
    "tab\there.png",
    "\udcff\udcfe.png",
    "ok.png",
]


def test_ls_escapes_control_characters(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "names.gwtar.html"
    archive.write_bytes(raw_v1([member("file", name, data=b"x") for name in NAMES]))
    assert main(["ls", str(archive)]) == 0
    out = capfd.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 2 + len(NAMES)  # the page, the asset, then ours: one line each
    assert not any(ch in out.replace("\n", "") for ch in "\r\x1b\x7f\t")
    shown = [line.split()[-1] for line in lines[2:]]
    assert shown == ["a\\nb.png", "c\\rd.png", "\\x1b[31mred.png", "del\\x7f.png", "tab\\there.png",
                     "\\xff\\xfe.png", "ok.png"]  # fmt: skip
    assert main(["ls", "--json", str(archive)]) == 0
    docs = [json.loads(line) for line in capfd.readouterr().out.splitlines()]
    assert [d["path"] for d in docs[2:]] == NAMES
