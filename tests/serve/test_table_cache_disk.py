"""``archiver serve`` whose search-table cache folder (``$XDG_CACHE_HOME/archiver/search-tables``)
is full or read-only: every mount is served and searched (the search reads the indexes without
tables), the folder's refusal is said once on stderr, no traceback, no temporary table left.

Before (dab4b1c): the OSError of the table's temporary file ended the server before it served
anything (``OSError: [Errno 28] No space left on device`` in tables.build_file, exit 70)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.disks import ROOT, small_disk

MINI = ROOT / "testdata" / "trees" / "mini"


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("served")
    first = folder / "a0.gwtar.html"
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "pack", str(MINI), "--format", "gwtar", "--search-index",
         "-o", str(first)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for i in (1, 2):  # more than one: the tables are built by worker processes
        os.link(first, folder / f"a{i}.gwtar.html")
    return sorted(folder.glob("*.gwtar.html"))


@pytest.mark.parametrize("read_only", [False, True])
def test_a_full_or_read_only_table_cache_still_serves_and_searches(
    archives: list[Path], tmp_path: Path, read_only: bool
) -> None:
    with small_disk(tmp_path / "cache", 8 << 10, read_only=read_only) as disk:
        if not read_only:
            (disk.path / "fill").write_bytes(b"\0" * (8 << 10))  # refused past what fits: full
            assert (disk.path / "fill").stat().st_size <= 8 << 10
        env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(disk.path)}
        proc = subprocess.Popen(
            [sys.executable, "-m", "archiver", "serve", *map(str, archives), "--port", "0", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=disk.preexec,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("http://127.0.0.1:"), line
            with urllib.request.urlopen(f"{line.strip().rstrip('/')}/~/api/search?q=work", timeout=30) as r:
                answer = json.load(r)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert answer["total"] > 0 and answer["skipped"] == [], answer
        assert {r["mount"] for r in answer["results"]} == {a.name for a in archives}
        said = [s for s in err.splitlines() if s.startswith("archiver serve: ")]
        assert "Traceback" not in err and len(said) == 1, err
        assert said[0].startswith(f"archiver serve: {disk.path}/archiver/search-tables: "), said
        assert "the search tables are not kept" in said[0]
        assert not [n for n in disk.contents() if ".tmp-" in n], disk.contents()
