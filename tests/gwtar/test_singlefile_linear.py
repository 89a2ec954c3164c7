"""SingleFile's split in time linear in the page's size, as the attacks: a start tag holding 200,000
spaces (its attributes were matched from every space of the run: 50,000 took 12.4 s of CPU to pack
on dab4b1c, four times that for each doubling), a "Page saved with SingleFile" comment of 400,000
newlines and no ``url:`` line (``^\\s*`` tried from every line's start across the rest: 100,000 took
7.4 s). Each runs in a child with a timeout; what is found is the old patterns' own, checked against
them on generated input."""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest

from archiver.gwtar import singlefile
from tests.timebox import child

OLD_ATTR = re.compile(r"""(\s+)([^\s"'>/=]+)(\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
OLD_SAVED_URL = re.compile(r"^\s*url:\s*(\S+)\s*$", re.MULTILINE)


def test_the_same_attributes_and_saved_url_as_the_old_patterns() -> None:
    rng = random.Random(32)
    tag_pieces = [" ", "  ", "\t", "\n", "a", "src", "=", '"', "'", "x y", "data:,z", "/", ">", "`", "<"]
    url_pieces = ["url:", " ", "\n", "\t", "\r", "\u2003", "x", "http://a/", "u", "rl:", ":", "\n\n"]
    for _ in range(5000):
        tag = "".join(rng.choices(tag_pieces, k=rng.randint(0, 30)))
        assert [m.groups() for m in singlefile._ATTR.finditer(tag)] == [
            m.groups() for m in OLD_ATTR.finditer(tag)
        ]
        comment = "".join(rng.choices(url_pieces, k=rng.randint(0, 30)))
        old = OLD_SAVED_URL.search(comment)
        assert singlefile._saved_url(comment) == (old.group(1) if old else None), repr(comment)


def _pack(tmp_path: Path, page: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "page.html"
    src.write_text(page)
    return child(
        "-m", "archiver", "pack", str(src), "--format", "gwtar", "-o", str(tmp_path / "p.gwtar.html")
    )


SAVED = "<!DOCTYPE html><html><!-- Page saved with SingleFile \n url: https://example.com/ \n-->"


@pytest.mark.parametrize(
    "page",
    [
        SAVED + '<body><img src="data:image/png;base64,iVBORw0KGgo="' + " " * 200_000 + ">",
        "<!DOCTYPE html><html><!-- Page saved with SingleFile" + "\n" * 400_000 + " x --><body><p>x</p>",
    ],
    ids=["spaces-in-a-tag", "newlines-in-the-comment"],
)
def test_a_hostile_singlefile_page_packs_in_linear_time(tmp_path: Path, page: str) -> None:
    done = _pack(tmp_path, page)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
