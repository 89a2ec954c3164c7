"""``archiver verify`` of a gwtar checks its internal links as a ZIM's does (issue 15): a broken link,
one above the root and a root-absolute one are problems (exit 1, the member and its offset named); an
external resource a page loads is a warning (exit 0, 1 with ``--strict``); a folder link resolves to
its ``index.html``; CSS ``url()`` counts. Attacks: each kind of bad link is planted in a tree, packed,
and must be found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver import gwtar
from archiver.cli import main

PAGE = (
    '<!DOCTYPE html><html><head><meta charset="utf-8"><title>{t}</title>{head}</head>'
    "<body>{body}</body></html>"
)


def _pack(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "tree"
    for path, text in files.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    out = tmp_path / "site.gwtar.html"
    assert main(["pack", str(tree), "--format", "gwtar", "-o", str(out)]) == 0
    return out


GOOD = {
    "index.html": PAGE.format(
        t="Home",
        head='<link rel="stylesheet" href="css/site.css">',
        body='<a href="docs/">docs</a> <a href="docs/a.html#x">a</a> <img src="img/p.png"> '
        '<a href="https://elsewhere.example/">out</a> <a href="mailto:x@example.com">m</a>',
    ),
    "docs/index.html": PAGE.format(t="Docs", head="", body='<a href="../index.html">up</a>'),
    "docs/a.html": PAGE.format(t="A", head="", body='<a href="index.html">docs</a>'),
    "css/site.css": "body { background: url(../img/p.png); }",
    "img/p.png": "png",
}


def test_a_sound_gwtar_is_ok_and_counts_its_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    archive = _pack(tmp_path, GOOD)
    report = gwtar.verify(archive)
    assert report.ok and report.problems == [] and report.warnings == []
    assert report.documents == 4 and report.links >= 7
    assert main(["verify", "--strict", str(archive)]) == 0


BAD = {
    **GOOD,
    "docs/a.html": PAGE.format(
        t="A",
        head="",
        body='<a href="missing.html">x</a> <a href="../../../etc/passwd">up</a> '
        '<a href="/index.html">root</a>',
    ),
    "css/site.css": "body { background: url(../img/gone.png); }",
}


def test_broken_links_are_problems_naming_member_and_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = _pack(tmp_path, BAD)
    with gwtar.open(archive) as g:
        offsets = {m.path: m.offset for m in g.members}
    capsys.readouterr()
    assert main(["verify", "--json", str(archive)]) == 1
    doc = json.loads(capsys.readouterr().out)["files"][0]
    assert doc["ok"] is False and doc["warnings"] == []
    found = [(p["member"], p["offset"], p["message"]) for p in doc["problems"]]
    assert len(found) == 4
    messages = " | ".join(m for _, _, m in found)
    assert "'docs/missing.html' is not in the archive" in messages
    assert "climbs above the archive's root" in messages
    assert "root-absolute link" in messages
    assert "'img/gone.png' is not in the archive" in messages
    assert {m for m, _, _ in found} == {"docs/a.html", "css/site.css"}
    assert all(offset == offsets[m] for m, offset, _ in found)
    assert main(["verify", str(archive)]) == 1
    out = capsys.readouterr().out
    assert f"offset {offsets['docs/a.html']}, member \"docs/a.html\": link: <a href> 'missing.html'" in out
    assert out.splitlines()[-1].endswith("INVALID (4 problems; 5 members; archiver extension 1)")


def test_external_resources_are_warnings_and_strict_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {
        **GOOD,
        "docs/a.html": PAGE.format(t="A", head="", body='<img src="https://cdn.example/pic.png">'),
    }
    archive = _pack(tmp_path, files)
    report = gwtar.verify(archive)
    assert report.ok and [w.member for w in report.warnings] == ["docs/a.html"]
    assert "external resource" in report.warnings[0].message
    capsys.readouterr()
    assert main(["verify", str(archive)]) == 0
    out = capsys.readouterr().out
    assert ": warning: offset " in out and "1 warning(s) (--strict counts them as problems)" in out
    assert main(["verify", "--strict", str(archive)]) == 1
    assert "INVALID (1 problem;" in capsys.readouterr().out
    assert main(["verify", "--strict", "--json", str(archive)]) == 1
    doc = json.loads(capsys.readouterr().out)["files"][0]
    assert doc["warnings"] == [] and "external resource" in doc["problems"][0]["message"]


def test_a_single_page_gwtar_warns_of_its_links_to_other_pages(tmp_path: Path) -> None:
    tree = _pack(tmp_path, GOOD).parent / "tree"
    out = tmp_path / "one.gwtar.html"
    assert main(["pack", str(tree), "--format", "gwtar", "-o", str(out), "--single-page"]) == 0
    report = gwtar.verify(out)
    assert report.ok and report.problems == []
    assert any("<a href> 'docs/a.html#x': broken" in w.message for w in report.warnings)
    assert main(["verify", "--strict", str(out)]) == 1
