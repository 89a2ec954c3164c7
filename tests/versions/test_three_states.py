"""Three states of a site captured as three versions of one tree (issue 25 acceptance; formats/
history.md §3, §6): each version, read back with ``extract --version``, equals a fresh single capture
of that state: the same files, byte for byte, and the same manifest records but their fetch times.
The states change a page, remove one (a 404), turn one into a redirect to the home page (a soft-404),
change only a volatile "generated at" line of another, and add pages; ``diff`` names each of them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records
from archiver.versions import store
from tests.versions.helpers import tree_files


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html><html><head><meta charset=utf-8><title>{title}</title>"
        f'<link rel=stylesheet href="/s.css"></head><body><main><h1>{title}</h1>{body}</main></body></html>\n'
    )


def _index(names: list[str]) -> str:
    return _page("Home", "<p>" + " ".join(f'<a href="/{n}.html">{n}</a>' for n in names) + "</p>")


#: name → page body, per state; a name missing from a state is a 404 unless it is in REDIRECTED
def _volatile(day: str) -> str:
    return f"<p>The same text.</p><p>Generated on 2026-{day} 09:00:00.</p>"


STATES: list[dict[str, str]] = [
    {"a": "<p>A, first words.</p>", "b": "<p>B stays a while.</p>", "c": "<p>C will move.</p>",
     "d": _volatile("11-30"), "e": "<p>E is steady.</p>"},
    {"a": "<p>A, second words.</p>", "c": "", "d": _volatile("12-01"), "e": "<p>E is steady.</p>",
     "f": "<p>F is new.</p>"},
    {"a": "<p>A, third words.</p>", "c": "", "d": _volatile("12-02"), "f": "<p>F is new.</p>",
     "g": "<p>G is newer.</p>"},
]  # fmt: skip
REDIRECTED = {1: {"c"}, 2: {"c"}}  # states whose "c" answers 301 to the home page


def _write_state(root: Path, n: int) -> None:
    for p in root.glob("*.html"):
        p.unlink()
    (root / "s.css").write_text("body { color: #123 }")
    state = STATES[n]
    names = sorted(set(state) | {"b"})  # b stays linked after it is removed: a 404
    (root / "index.html").write_text(_index(names))
    for name, body in state.items():
        if name not in REDIRECTED.get(n, set()):
            (root / f"{name}.html").write_text(_page(name.upper(), body))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=180
    )


def _capture(url: str, out: Path, *more: str) -> None:
    done = _cli("capture", url, "-o", str(out), "--no-render", "--delay", "0", *more)
    assert done.returncode == 0, done.stderr


def _records(root: Path) -> dict[str, dict[str, object]]:
    out = {}
    for r in read_records(root):
        doc = msgspec.to_builtins(r)
        doc.pop("fetched", None)
        out[r.path] = doc
    return out


@pytest.mark.timeout(600)
def test_each_version_equals_a_fresh_capture_of_its_state(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    versioned = tmp_path / "versioned"
    port = 0
    fresh: list[Path] = []
    for n in range(3):
        _write_state(live, n)
        status = {f"/{c}.html": 301 for c in REDIRECTED.get(n, set())}
        with FixtureServer(FixtureConfig(root=live, robots=None, status=status), port=port) as server:
            port = server.port
            if n:
                time.sleep(1.1)  # versions are named by the second their run started
            _capture(server.url, versioned, *(["--new-version"] if n else []))
            fresh.append(tmp_path / f"fresh-{n}")
            _capture(server.url, fresh[-1])
    versions = store.versions(versioned)
    assert [v.recorded for v in versions] == [True, True, True]
    for n, v in enumerate(versions):
        back = tmp_path / f"back-{n}"
        done = _cli("extract", str(versioned), "--version", v.id, "-o", str(back))
        assert done.returncode == 0, done.stderr
        assert tree_files(back) == tree_files(fresh[n]), f"state {n}: files"
        assert _records(back) == _records(fresh[n]), f"state {n}: records"
    diff = _cli("diff", str(versioned), "--from", versions[0].id, "--to", versions[1].id, "--json")
    assert diff.returncode == 0, diff.stderr
    rows = {r["path"]: r for r in map(json.loads, diff.stdout.splitlines()) if "class" in r}
    assert {p: r["class"] for p, r in rows.items()} == {
        "a.html": "changed", "b.html": "gone", "c.html": "redirected", "d.html": "volatile",
        "f.html": "added", "index.html": "changed",
    }  # fmt: skip
    assert rows["c.html"]["outcome"] == "soft-404"
    later = _cli("diff", str(versioned), "--json")  # the newest two
    rows = {r["path"]: r for r in map(json.loads, later.stdout.splitlines()) if "class" in r}
    assert {p: r["class"] for p, r in rows.items()} == {
        "a.html": "changed", "d.html": "volatile", "e.html": "gone", "g.html": "added",
        "index.html": "changed",
    }  # fmt: skip
