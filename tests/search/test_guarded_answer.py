"""The markup guard's answer for a page of many tags (archiver/search/guarded.py): the page the
child read, decoded with the standard library's JSON (msgspec's typed decoder is no longer imported
by ``archiver index``), and anything but ``[title, [[heading, text], ...], cut]`` the one-line
FormatError, whatever the child sent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.errors import FormatError
from archiver.search import guarded
from archiver.search.text import Page, extract

ROOT = Path(__file__).resolve().parents[2]


def test_the_childs_page_is_the_page_read_here() -> None:
    sections = "".join(f"<h2>Part {i} ¶</h2><p>Text <b>{i}</b> é</p>" for i in range(600))
    html = f"<!doctype html><title>Big</title><body>{sections}</body>".encode()
    assert html.count(b"<") > 1500  # read by the child
    page = guarded.extract(html)
    assert page == extract(html) and page.blocks[0] == (True, "Part 0 ¶")
    assert guarded.page_from(json.dumps(["t", [[True, "h"], [False, "b"]], True]).encode()) == Page(
        "t", [(True, "h"), (False, "b")], True
    )


@pytest.mark.parametrize(
    "answer",
    [
        b"",
        b"not json",
        b"[",
        b"{}",
        b'"text"',
        b'["t", [], false, 1]',
        b'["t", []]',
        b"[1, [], false]",
        b'["t", [], 0]',
        b'["t", {}, false]',
        b'["t", [[true]], false]',
        b'["t", [[true, "a", "b"]], false]',
        b'["t", [[1, "a"]], false]',
        b'["t", [[true, 2]], false]',
        b'["t", [["ab", "cd"]], false]',
        b'["t", ["ab"], false]',
        b'["t", [7], false]',
        b'["t", [null], false]',
        b'["t", [{"a": 1, "b": 2}], false]',
        b"[" * 100_000,
    ],
)
def test_anything_else_from_the_child_is_one_error(answer: bytes) -> None:
    with pytest.raises(FormatError, match="answered garbage"):
        guarded.page_from(answer)


def test_archiver_index_imports_no_msgspec(tmp_path: Path) -> None:
    """The index command of a tree without a manifest: msgspec (~10 ms of every start) stays out."""
    (tmp_path / "index.html").write_text("<!doctype html><title>Home</title><p>words here</p>")
    code = (
        "import sys, runpy; sys.argv = ['archiver', 'index', sys.argv[1]]\n"
        "try:\n    runpy.run_module('archiver', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "assert 'msgspec' not in sys.modules, 'msgspec imported'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "_archiver" / "search" / "manifest.js").is_file()
