"""``archiver verify`` of many archives: the reports in the order given (before: WARCs first, then
trees and ZIMs, then gwtar files, whatever the order on the command line), checked in parallel
(``-j``, every core by default), and ``--junit FILE`` for CI (one test case per archive, a failure
with the problem lines, an error for an unreadable one; names that XML cannot carry escaped)."""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from archiver import verify_many
from archiver.cli import main

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"


def _warc(path: Path) -> Path:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as f:
        writer = WARCWriter(f, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            "http://example.test/", "response", payload=io.BytesIO(b"<html>hi</html>"), http_headers=headers
        )
        writer.write_record(record)
    return path


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("many")
    out = {
        "tree": d / "tree",
        "gwtar": d / "mini.gwtar.html",
        "zim": d / "mini.zim",
        "warc": d / "one.warc.gz",
    }
    shutil.copytree(MINI, out["tree"])
    assert main(["pack", str(MINI), "--format", "gwtar", "-o", str(out["gwtar"])]) == 0
    assert main(["pack", str(MINI), "--format", "zim", "-o", str(out["zim"])]) == 0
    _warc(out["warc"])
    bad = d / "bad.gwtar.html"
    data = bytearray(out["gwtar"].read_bytes())
    data[-2000] ^= 0xFF  # a flipped byte in the last member
    bad.write_bytes(bytes(data))
    out["bad"] = bad
    return out


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", "verify", *args], capture_output=True, text=True, timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_reports_come_in_the_order_given(archives: dict[str, Path], jobs: str) -> None:
    order = [archives[k] for k in ("gwtar", "warc", "bad", "zim", "tree")]
    proc = _verify("-j", jobs, *map(str, order))
    assert proc.returncode == 1, proc.stderr
    verdicts = [
        line
        for line in proc.stdout.splitlines()
        if line.endswith(")") and (": OK" in line or ": INVALID" in line)
    ]
    assert [line.split(": ")[0] for line in verdicts] == [str(p) for p in order], proc.stdout
    doc = json.loads(_verify("--json", "-j", jobs, *map(str, order)).stdout)
    assert [f["path"] for f in doc["files"]] == [str(p) for p in order]


def test_recursive_in_parallel_equals_one_by_one(archives: dict[str, Path]) -> None:
    folder = archives["tree"].parent
    one = _verify("-r", "-j", "1", str(folder))
    many = _verify("-r", "-j", "2", str(folder))
    assert one.returncode == many.returncode == 1
    assert one.stdout == many.stdout and one.stdout.count(": OK") >= 4


def test_junit_report(archives: dict[str, Path], tmp_path: Path) -> None:
    odd = tmp_path / "odd\x01name\udcff.gwtar.html"  # a control character and a byte that is not UTF-8
    shutil.copy(archives["bad"], odd)
    junit = tmp_path / "report.xml"
    args = [
        archives["gwtar"],
        archives["bad"],
        tmp_path / "missing.zim",
        odd,
        archives["zim"],
        archives["tree"],
    ]
    proc = _verify("--junit", str(junit), *map(str, args))
    assert proc.returncode == 2  # the worst wins: an unreadable file
    root = ET.parse(junit).getroot()  # well-formed XML, whatever the names hold
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "2", "1")
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == [
        "archiver.verify.gwtar", "archiver.verify.gwtar", "archiver.verify.other", "archiver.verify.gwtar",
        "archiver.verify.zim", "archiver.verify.tree",
    ]  # fmt: skip
    assert cases[0].find("failure") is None and cases[0].find("error") is None
    failure = cases[1].find("failure")
    assert (
        failure is not None and failure.get("type") == "INVALID" and "bad.gwtar.html" in (failure.text or "")
    )
    error = cases[2].find("error")
    assert error is not None and "missing.zim" in (error.text or "")
    assert cases[3].get("name") == str(odd).replace("\x01", "\\u0001").replace("\udcff", "\\xff")
    assert not list(tmp_path.glob(".report.xml.*"))  # written atomically: no temporary file left


def test_junit_xml_is_pure_and_escapes_what_xml_cannot_carry() -> None:
    verdicts = [
        verify_many.Verdict(
            "a\x00b", "gwtar", 1, problems=["x <y> & \x1b[31m"], out=["a: INVALID (1 problem)"]
        ),
        verify_many.Verdict("c", "tree", 0, warnings=["w"], out=["c: OK"]),
    ]
    data = verify_many.junit_xml(verdicts, seconds=1.5, timestamp="2026-12-01T00:00:00")
    root = ET.fromstring(data)
    assert root.get("tests") == "2" and root.get("failures") == "1"
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "a\\u0000b"
    assert (case.findtext("failure") or "") == "x <y> & \\u001b[31m"
    assert gzip.compress(data)  # bytes, UTF-8 with the declaration
    assert data.startswith(b"<?xml version='1.0' encoding='utf-8'?>")


def test_ctrl_c_of_a_parallel_verify_is_one_line_from_the_parent(
    archives: dict[str, Path], tmp_path: Path
) -> None:
    """Ctrl-C reaches the whole process group: the workers printed a KeyboardInterrupt traceback each
    (archiver/forks.py); now they ignore it and the parent says "interrupted" once, exit code 130."""
    import os
    import signal

    copies = []
    for i in range(60):
        copies.append(tmp_path / f"c{i}.zim")
        shutil.copyfile(archives["zim"], copies[-1])
    p = subprocess.Popen(
        [sys.executable, "-m", "archiver", "verify", "-j", "2", *map(str, copies)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert p.stdout is not None
    first = p.stdout.readline()  # the workers have started and are busy
    os.killpg(p.pid, signal.SIGINT)
    _out, err = p.communicate(timeout=120)
    assert "c0.zim" in first
    assert (p.returncode, err) == (130, "archiver: interrupted\n")
