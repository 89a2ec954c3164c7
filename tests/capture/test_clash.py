"""tree.md §4.5 end to end: a file that a later URL needs as a folder is moved to its ``__c-`` name,
and links written to it before the move are pointed at the new name when the run ends."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer

INDEX = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Home</title></head><body>
<img src="/avatar" alt=""> <a href="/a.html">A</a></body></html>"""
PAGE_A = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>A</title></head><body>
<img src="/avatar/small.png" alt=""></body></html>"""


def _site(root: Path) -> Path:
    root.mkdir()
    (root / "index.html").write_text(INDEX)
    (root / "a.html").write_text(PAGE_A)
    # /avatar and /avatar/small.png cannot both be files on disk: the fixture server synthesises them
    files = [
        {"path": p, "size": 64, "media_type": "image/png", "pattern": "repeat", "seed": p}
        for p in ("/avatar", "/avatar/small.png")
    ]
    (root / "_generated.json").write_text(json.dumps({"files": files}))
    return root


def test_links_written_before_a_clash_move_follow_the_file(tmp_path: Path) -> None:
    site = _site(tmp_path / "site")
    out = tmp_path / "tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture([server.url], out, render=False, delay=0, progress=False)
        host = f"127.0.0.1:{server.port}"
    assert report.problems() == []
    moved = [p.name for p in (out / "_archiver" / host).iterdir() if p.name.startswith("avatar__c-")]
    assert len(moved) == 1 and (out / "_archiver" / host / "avatar" / "small.png").is_file()
    for page in ("index.html", "a.html"):
        html = (out / page).read_text(encoding="utf-8")
        srcs = re.findall(r'<img src="([^"]+)"', html)
        assert srcs and all((out / unquote(s)).is_file() for s in srcs), (page, srcs)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert f'src="_archiver/{host.replace(":", "%3A")}/{moved[0]}"' in index
