"""What ``archiver capture`` imports before its first request: every module is a fixed cost of every
run (its code unmarshalled, its classes built), ~0.1 s of CPU in all, a third of an unchanged
re-capture. The modules a plain capture does not use stay out; each is imported where it is used.
(ssl cannot stay out: asyncio imports it; playwright and the page stage are imported by a run that
renders or parses.)"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from archiver.capture import CaptureOptions

#: imported where they are used, never by the capture command's modules themselves
NOT_AT_START = (
    # a frozen dataclass compiles its methods from source at import (archiver.frozen replaces them)
    "dataclasses",
    "copy",
    # shutil (with bz2 and lzma) is for a leftover folder in _archiver/tmp; json for --json's output
    "shutil",
    "bz2",
    "lzma",
    "json",
    # rendering, parsing, other commands and stores
    "playwright",
    "archiver.capture.render",
    "archiver.capture.browser",
    "archiver.capture.page",
    "archiver.capture.rewrite_html",
    "selectolax",
    "tinycss2",
    "archiver.capture.redis",
    "redis",
    "archiver.warc",
    "archiver.versions",
    "archiver.gwtar",
    "archiver.zim",
    "archiver.search",
    "archiver.serve",
    "tempfile",
    "email",
    "mimetypes",
    "idna",
    "html",
)


def test_the_capture_command_imports_only_what_every_capture_uses() -> None:
    code = (
        "import sys\n"
        "import archiver.cli.capture, archiver.capture, archiver.capture.crawl\n"
        "from archiver.cli.parser import _parser\n"
        "_parser('capture').parse_args(['capture', 'http://127.0.0.1:1/', '-o', 'x', '--no-render'])\n"
        "names = sorted(sys.modules)\n"
        "import json\n"  # after the list is made
        "print(json.dumps(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-800:]
    loaded = set(json.loads(done.stdout))
    assert "archiver.capture.crawl" in loaded and "asyncio" in loaded
    assert [m for m in NOT_AT_START if m in loaded] == []


def test_the_page_stage_imports_no_dataclasses_nor_entity_table_and_compiles_no_unused_walk() -> None:
    """The page stage (imported by a run's first page: its parsers and rewriters) builds its result
    classes without dataclasses (their methods compiled from source at every start), leaves html's
    entity table to a page with a search box or a redirect stub, and an ordinary page compiles none
    of html_depth's walk patterns (~1 ms): its cheap check says no first."""
    code = (
        "import sys\n"
        "import archiver.capture, archiver.capture.crawl, archiver.capture.page\n"
        "from archiver import html_depth\n"
        "from archiver.capture import rewrite_html\n"
        "text = '<!DOCTYPE html><title>t</title><p>' + '<a href=x>y</a>' * 100\n"
        "rewrite_html.rewrite(rewrite_html.parse(text), lambda ref, hint: None)\n"
        "names = sorted(sys.modules)\n"
        "import json\n"  # after the list is made
        "print(json.dumps([names, len(html_depth._COMPILED)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-800:]
    names, compiled = json.loads(done.stdout)
    assert "selectolax.lexbor" in names and "tinycss2" in names
    assert [m for m in ("dataclasses", "copy", "html", "html.entities") if m in names] == []
    assert compiled == 0


def test_a_capture_raises_the_collectors_threshold_while_it_runs_and_puts_it_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A capture through the library runs with the collector's first threshold the ``archiver``
    command sets (crawl.GC_THRESHOLD: at 700 allocations the collector walked the page stage's
    modules and every URL's objects again and again), and the process has its own back after; a
    higher threshold, or 0 (automatic collection off), is left as it is."""
    from archiver.capture import crawl

    seen: list[int] = []

    def run(main: Coroutine[Any, Any, Any], terminate: bool) -> str:
        main.close()
        seen.append(gc.get_threshold()[0])
        return "the report"

    monkeypatch.setattr(crawl.interrupt, "run", run)
    before = gc.get_threshold()
    try:
        for first in (700, 100_000, 0):
            gc.set_threshold(first, 10, 10)
            out = tmp_path / f"out-{first}"
            assert (
                crawl.run_capture(["http://127.0.0.1:1/"], out, CaptureOptions(render=False)) == "the report"
            )
            assert seen[-1] == (crawl.GC_THRESHOLD if first == 700 else first)
            assert gc.get_threshold() == (first, 10, 10)
    finally:
        gc.set_threshold(*before)
