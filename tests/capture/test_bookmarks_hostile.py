"""A bookmarks file as the attack (``capture --bookmarks``): 200,000 ``<a b='`` with no ``>`` (Python
3.11's html.parser parsed again from each ``<``, each time to the end: 20,000 took 18 s of CPU on
dab4b1c, 200,000 would take half an hour) is read in linear time (archiver/html_close.py) and found to
hold no seed; a ``<![foo[`` section, on which html.parser raises AssertionError, is one line and exit 2
(the old code: a traceback, exit 70). Each run is a child with a timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HANG = 60  # seconds: a guard against a hang, not a timing check
HEAD = "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n"  # no bookmark: nothing is fetched


@pytest.mark.parametrize(
    ("tail", "says"),
    [("<a b='" * 200_000, "no seed"), ("<![foo[ x ]]>\n", "not a bookmarks file")],
    ids=["unended-tags", "unknown-marked-section"],
)
def test_a_hostile_bookmarks_file_is_one_line(tmp_path: Path, tail: str, says: str) -> None:
    marks = tmp_path / "bookmarks.html"
    marks.write_text(HEAD + tail)
    done = subprocess.run(
        [sys.executable, "-m", "archiver", "capture", "--bookmarks", str(marks), "-o", str(tmp_path / "out"),
         "--no-render"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=HANG,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
