"""A WARC recorded by pywb's recording proxy (``wayback --record --proxy-record``, pywb 2.10), made at
test time: wget mirrors the fixture site through the proxy, then ``archiver pack`` converts the WARC
to gwtar and ZIM with the fixture server stopped and sockets forbidden. Every page is in both, both
verify, the ZIM passes zimcheck with formats/zim.md's flags.

pywb cannot live in the project's venv (it pins ``redis==2.10.6`` against the redis client the tests
use, and its ``brotlipy`` shadows the ``brotli`` module the import decodes with), so
``tools/bootstrap test`` puts it in a venv of its own, ``.venv-pywb``; ``ARCHIVER_PYWB`` may name
another folder holding its ``wayback`` and ``wb-manager``. Without either the test is skipped and
says why. The rendering path is covered by test_import_render.py and test_import_pack.py; this one
imports without a browser."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from archiver.fixture import FixtureServer
from tests.warc.conftest import no_network
from tests.warc.test_warc import ROOT, run
from tests.zim.test_interop import ZIMCHECK


def _pywb_bin() -> Path | None:
    for folder in (os.environ.get("ARCHIVER_PYWB"), ROOT / ".venv-pywb" / "bin"):
        if folder and (Path(folder) / "wayback").is_file() and (Path(folder) / "wb-manager").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(port: int, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):  # bounded: 60 s
        if proc.poll() is not None:
            raise AssertionError(f"wayback exited with {proc.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError("wayback did not listen within 60 s")


def test_pywb_recording_proxy_warc_to_gwtar_and_zim(tmp_path: Path) -> None:
    pywb = _pywb_bin()
    if pywb is None:
        pytest.skip("pywb not installed: `bash tools/bootstrap test` makes .venv-pywb (or set ARCHIVER_PYWB)")
    work = tmp_path / "pywb"
    work.mkdir()
    subprocess.run(
        [pywb / "wb-manager", "init", "rec"], cwd=work, check=True, capture_output=True, timeout=60
    )
    (work / "config.yaml").write_text("proxy:\n  enable_banner: false\n  enable_content_rewrite: false\n")
    port = _free_port()
    with FixtureServer() as server:
        proxy = subprocess.Popen(
            [pywb / "wayback", "--record", "--proxy", "rec", "--proxy-record", "-p", str(port)],
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(port, proxy)
            env = {k: v for k, v in os.environ.items() if k.lower() != "no_proxy"}
            env["http_proxy"] = f"http://127.0.0.1:{port}"
            subprocess.run(
                ["wget", "-q", "-r", "-l", "inf", "-p", "-e", "robots=off", "-P", "dl", server.url],
                cwd=tmp_path,
                env=env,
                timeout=300,
                check=False,
            )
        finally:
            proxy.terminate()
            try:
                proxy.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait(timeout=20)
        site = tmp_path / "dl" / f"127.0.0.1:{server.port}"
    pages = sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if "?" not in p.name and "private" not in p.parts and p.name != "this-page-does-not-exist.html"
    )
    assert len(pages) >= 30
    (warc,) = (work / "collections" / "rec" / "archive").glob("*.warc.gz")
    assert run("verify", warc).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    with no_network() as tried:
        for fmt, name in (("gwtar", "site.gwtar.html"), ("zim", "site.zim")):
            r = run("pack", warc, "--format", fmt, "-o", out / name, "--no-render")
            assert r.returncode == 0, r.stderr
    assert tried == []
    assert sorted(p.name for p in out.iterdir()) == ["site.gwtar.html", "site.zim"]
    r = run("verify", out / "site.gwtar.html", out / "site.zim")
    assert r.returncode == 0, r.stdout
    for name in ("site.gwtar.html", "site.zim"):
        listed = {json.loads(x)["path"] for x in run("ls", "--json", out / name).stdout.splitlines()}
        assert [p for p in pages if p not in listed] == [], name
    check = subprocess.run([*ZIMCHECK, str(out / "site.zim")], capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout[-3000:]
