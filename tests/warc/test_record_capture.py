"""``capture --warc`` of the fixture site in real Chromium (issue 16's acceptance): the WARCs pass
``warcio check`` and ``warcio index``, every stored file's URL has a response record that its
manifest record points at, the JavaScript page's ``fetch()`` answer is recorded, redirects and revisits
are there, the WACZ packed from the capture passes ``wacz validate`` and ``archiver verify``; and
kill -9 of the whole process group at three random moments, resumed each time, leaves every WARC
passing ``warcio check`` with response records for every stored file."""

from __future__ import annotations

import io
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from archiver.capture import capture
from archiver.fixture import JS_MARKER, JS_PAGE, FixtureServer, site_root
from archiver.tree import read_records
from archiver.warc import read
from tests.warc.test_record import _check_manifest_links, _warcs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.browser


@dataclass
class Recorded:
    server: FixtureServer
    out: Path

    @property
    def origin(self) -> str:
        return self.server.url.rstrip("/")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    with FixtureServer() as server:
        out = tmp_path_factory.mktemp("recorded") / "tree"
        capture([server.url], out, render=True, depth=10, delay=0, tabs=3, progress=False, warc=True)
        yield Recorded(server, out)


def _index(warcs: list[Path]) -> list[dict[str, str]]:
    """Every record of ``warcs`` as ``warcio index`` lists it (one JSON object a line)."""
    fields = "warc-type,warc-target-uri,http:status,warc-record-id,warc-refers-to-target-uri,warc-truncated"
    done = subprocess.run([BIN / "warcio", "index", "-f", fields, *warcs], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def _warcio_check(warcs: list[Path]) -> None:
    done = subprocess.run([BIN / "warcio", "check", "-v", *warcs], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "digest fail" not in done.stdout and "saw exception" not in done.stdout


def _covered(out: Path) -> None:
    """Every stored file's URL has a response (or revisit) record; every manifest link is right."""
    targets = {r["warc-target-uri"] for r in _index(_warcs(out)) if r["warc-type"] in ("response", "revisit")}
    records = list(read_records(out))
    assert records
    missing = [r.urls[0] for r in records if r.urls[0] not in targets]
    assert missing == []
    _check_manifest_links(out)


def test_warcio_check_and_index_pass_and_each_file_starts_with_warcinfo(recorded: Recorded) -> None:
    warcs = _warcs(recorded.out)
    _warcio_check(warcs)
    rows = _index(warcs)
    assert rows[0]["warc-type"] == "warcinfo"
    assert {r["warc-type"] for r in rows} == {"warcinfo", "request", "response", "revisit"}
    from archiver.cli import main

    assert main(["verify", *map(str, warcs)]) == 0


def test_every_stored_file_has_a_response_record(recorded: Recorded) -> None:
    _covered(recorded.out)


def test_the_scripts_fetch_answer_and_built_image_are_recorded(recorded: Recorded) -> None:
    # js/app.mjs fetch()es data/notes.json while the page renders; the JS page builds an <img> URL
    warcs = _warcs(recorded.out)
    want = {
        f"{recorded.origin}/data/notes.json": (site_root() / "data" / "notes.json").read_bytes(),
        f"{recorded.origin}/img/js/built.png": None,
        f"{recorded.origin}/js/app.mjs": (site_root() / "js" / "app.mjs").read_bytes(),
    }
    found: dict[str, bytes] = {}
    for path in warcs:
        with path.open("rb") as f:
            for rec in ArchiveIterator(f):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and uri in want:
                    found[uri] = rec.content_stream().read()
    assert set(found) == set(want)
    for uri, body in want.items():
        if body is not None:
            assert found[uri] == body, uri
    page = f"{recorded.origin}/{JS_PAGE}"
    assert page in {r["warc-target-uri"] for r in _index(warcs) if r["warc-type"] == "response"}


def test_redirects_and_revisits_are_recorded(recorded: Recorded) -> None:
    rows = _index(_warcs(recorded.out))
    assert any(r["warc-type"] == "response" and r.get("http:status", "").startswith("3") for r in rows)
    revisits = [r for r in rows if r["warc-type"] == "revisit"]
    assert revisits and all(r["warc-refers-to-target-uri"] for r in revisits)
    ids = {r["warc-record-id"] for r in rows}
    assert len(ids) == len(rows)  # every record id is unique


def test_the_wacz_of_a_recorded_capture_validates(recorded: Recorded, tmp_path: Path) -> None:
    wacz = tmp_path / "site.wacz"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    packed = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", recorded.out, "--format", "wacz", "-o", wacz],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr
    check = subprocess.run(
        [BIN / "wacz", "validate", "-f", wacz], capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    verified = subprocess.run(
        [sys.executable, "-m", "archiver", "verify", wacz],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert verified.returncode == 0 and "OK" in verified.stdout, verified.stdout + verified.stderr
    # ReplayWeb.page (npm, unpacked by tools/bootstrap) in Chromium, all from 127.0.0.1: the page whose
    # content a module script builds shows that content, fetch() answer included, from our records
    package = ROOT / "node_modules" / "replaywebpage-2.4.6"
    assert (package / "ui.js").is_file(), "run `bash tools/bootstrap test` (it unpacks ReplayWeb.page)"
    replay = subprocess.run(
        [sys.executable, str(ROOT / "tools/replay_wacz.py"), str(package), str(wacz),
         f"{recorded.origin}/{JS_PAGE}", "--text", JS_MARKER, "--wait", "60"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stdout + replay.stderr[-2000:]


RENDERED = """
import sys
from pathlib import Path
from archiver.capture import capture
capture([sys.argv[1]], Path(sys.argv[2]), render=True, depth=10, delay=0, tabs=3, progress=False, warc=True)
"""


def _warc_bytes(out: Path) -> int:
    try:
        return sum(p.stat().st_size for p in (out / "_archiver" / "warc").glob("*.warc.gz"))
    except FileNotFoundError:
        return 0


def test_kill_9_three_times_then_resume_keeps_every_warc_readable(recorded: Recorded, tmp_path: Path) -> None:
    seed = int(os.environ.get("ARCHIVER_KILL_SEED", "2026"))
    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    total = _warc_bytes(recorded.out)
    out = tmp_path / "killed"
    done_before = 0
    for fraction in sorted(rng.uniform(0.1, 0.8) for _ in range(3)):
        proc = subprocess.Popen(
            [sys.executable, "-c", RENDERED, recorded.server.url, str(out)],
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 180
        moment = max(int(total * fraction), done_before + 1)
        while _warc_bytes(out) < moment and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert proc.poll() is None, f"the capture ended before {moment} WARC bytes (seed {seed})"
        os.killpg(proc.pid, signal.SIGKILL)  # the capture and its Chromium, no clean-up of any kind
        proc.wait()
        done_before = _warc_bytes(out)
    before = {p.name: p.read_bytes() for p in _warcs(out)}
    assert len(before) >= 2  # a new file on every run
    done = subprocess.run(
        [sys.executable, "-c", RENDERED, recorded.server.url, str(out)], env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0
    warcs = _warcs(out)
    assert warcs[-1].name not in before  # the resume wrote a file of its own
    for name, old in before.items():  # nothing recorded was lost: at most a torn tail was cut
        path = out / "_archiver" / "warc" / name
        kept = path.read_bytes() if path.exists() else b""
        assert old.startswith(kept)
        findings: list[read.Finding] = []
        with path.open("rb") if path.exists() else open(os.devnull, "rb") as f:
            complete = list(read.iter_records(f, findings))
        assert findings == []
        old_findings: list[read.Finding] = []
        assert len(list(read.iter_records(io.BytesIO(old), old_findings))) == len(complete)
    _warcio_check(warcs)
    _covered(out)
    header = json.loads((out / "_archiver" / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert "incomplete" not in header["options"]
