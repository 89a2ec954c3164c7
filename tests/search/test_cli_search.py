"""``archiver index`` and ``archiver search`` on trees, and ``verify TREE`` checking the index
(formats/search.md §4.5, §5, §6; README exit codes): written atomically and idempotently, searched
with or without an index, several trees ranked together, damage named by file, one error line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.search import store

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"
SITE = ROOT / "testdata" / "site"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def mini(tmp_path: Path) -> Path:
    return Path(shutil.copytree(MINI, tmp_path / "mini"))


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SITE, tmp_path / "site"))


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_index_writes_the_index_and_the_page_idempotently(mini: Path) -> None:
    done = run("index", str(mini), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["pages"] == 7 and doc["shards"] >= 1  # the HTML pages of the manifest
    folder = mini / "_archiver" / "search"
    first = _files(folder)
    assert {"index.html", "search.js", "manifest.js", "t/0.js", "d/0.js"} <= set(first)
    assert run("index", str(mini)).returncode == 0
    assert _files(folder) == first  # same tree, same bytes
    assert not list((mini / "_archiver" / "tmp").glob("search-*"))  # nothing half-written left
    verified = run("verify", str(mini))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "not in the manifest" not in verified.stdout  # the index is checked on its own terms


def test_search_with_and_without_an_index(mini: Path) -> None:
    without = run("search", str(mini), "-q", "great work", "--json")
    assert without.returncode == 0, without.stderr
    assert run("index", str(mini)).returncode == 0
    with_index = run("search", str(mini), "-q", "great work", "--json")
    assert json.loads(with_index.stdout)["results"] == json.loads(without.stdout)["results"]
    text = run("search", str(mini), "-q", "caf")
    assert text.returncode == 0 and "café menu/index.html" in text.stdout


def test_search_ranks_several_trees_together(mini: Path, site: Path) -> None:
    assert run("index", str(site)).returncode == 0
    done = run("search", str(site), str(mini), "-q", "index", "--json", "--limit", "50")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert {r["archive"] for r in doc["results"]} == {str(site), str(mini)}
    assert doc["total"] == len(doc["results"])
    page2 = json.loads(
        run("search", str(site), str(mini), "-q", "index", "--json", "--limit", "3", "--offset", "3").stdout
    )
    assert [r["path"] for r in page2["results"]] == [r["path"] for r in doc["results"][3:6]]


def test_a_damaged_shard_is_named_by_verify_and_search(site: Path) -> None:
    assert run("index", str(site)).returncode == 0
    shard = site / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    verified = run("verify", str(site), "--no-links")
    assert verified.returncode == 1
    assert (
        "_archiver/search/t/0.js: search index: its SHA-256 does not match the manifest's" in verified.stdout
    )
    searched = run("search", str(site), "-q", "guide")
    assert searched.returncode == 1
    assert (
        searched.stderr.count("\n") == 1
        and "t/0.js" in searched.stderr
        and "Traceback" not in searched.stderr
    )
    shard.unlink()
    assert "t/0.js: search index: cannot be read" in run("verify", str(site), "--no-links").stdout


def test_one_damaged_archive_does_not_blank_the_others(mini: Path, site: Path) -> None:
    """Several archives searched together: a damaged index is named on stderr (exit 1), the others'
    results are printed as usual (the attack: one archive's damage blanked the whole answer)."""
    for tree in (site, mini):
        assert run("index", str(tree)).returncode == 0
    alone = json.loads(run("search", str(mini), "-q", "index", "--json", "--limit", "50").stdout)
    assert alone["total"] > 0
    shard = site / "_archiver" / "search" / "t" / "0.js"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    done = run("search", str(site), str(mini), "-q", "index", "--json", "--limit", "50")
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert doc["results"] == alone["results"] and doc["total"] == alone["total"]
    assert [s["archive"] for s in doc["skipped"]] == [str(site)]
    assert done.stderr.count("\n") == 1 and "t/0.js" in done.stderr and "searched without it" in done.stderr
    text = run("search", str(mini), str(site), "-q", "index")
    assert text.returncode == 1 and f"of {alone['total']} results" in text.stdout
    (site / "_archiver" / "search" / "manifest.js").write_text("not a manifest")  # damaged as it opens
    opened = run("search", str(site), str(mini), "-q", "index", "--json", "--limit", "50")
    assert opened.returncode == 1 and json.loads(opened.stdout)["results"] == alone["results"]
    assert "manifest.js" in opened.stderr and "Traceback" not in opened.stderr


def test_nothing_found_names_a_long_query_cut(mini: Path) -> None:
    done = run("search", str(mini), "-q", "zqx" * 40_000)
    assert done.returncode == 0 and len(done.stdout) < 200
    assert done.stdout.startswith("nothing found for zqxzqx") and "(120000 characters)" in done.stdout


def test_usage_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    for args in (["index", str(tmp_path / "missing")], ["search", str(tmp_path / "missing"), "-q", "x"],
                 ["search", str(MINI)], ["search", str(MINI), "-q", "x", "--limit", "0"]):  # fmt: skip
        done = run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("archiver: ") and done.stderr.count("\n") == 1, done.stderr


def test_an_index_folder_that_is_a_hosts_assets_is_refused(mini: Path) -> None:
    """A dotless host named ``search`` has its assets in _archiver/search/: never overwritten."""
    (mini / "_archiver" / "search").mkdir()
    (mini / "_archiver" / "search" / "logo.png").write_bytes(b"png")
    manifest = mini / "_archiver" / "manifest.jsonl"
    record = {"path": "_archiver/search/logo.png", "kind": "asset", "media_type": "image/png", "size": 3,
              "sha256": "0" * 64, "urls": ["https://search/logo.png"]}  # fmt: skip
    manifest.write_text(manifest.read_text() + json.dumps(record) + "\n")
    done = run("index", str(mini))
    assert done.returncode == 1 and "holds files of the capture" in done.stderr
    assert (mini / "_archiver" / "search" / "logo.png").read_bytes() == b"png"


def test_an_index_from_another_tokenizer_is_refused(mini: Path) -> None:
    store.write_index(mini)
    manifest = mini / "_archiver" / "search" / "manifest.js"
    manifest.write_bytes(manifest.read_bytes().replace(b'"tokenizer":1', b'"tokenizer":99'))
    done = run("search", str(mini), "-q", "work")
    assert done.returncode == 1 and "tokenizer 99" in done.stderr and "archiver index" in done.stderr
