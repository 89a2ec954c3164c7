"""A run stopped while the end of the crawl relinks its documents (formats/tree.md §6): the next run
leaves every record naming the bytes of its file. Before, a document replaced by the relink whose
record had not been committed yet was found relinked already by the next run, nothing to change,
and kept its old record: the manifest named other bytes and ``verify`` said INVALID (a random
SIGTERM stress of ``capture --from-warc`` found it: 1 run of 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.capture import relink as relink_module
from archiver.capture.writer import TreeWriter
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree_verify import verify_tree


def _site(root: Path) -> None:
    root.mkdir()
    (root / "index.html").write_text(
        "<!DOCTYPE html><html><head><title>Home</title></head><body>"
        '<a href="/a.html">A</a> <a href="/gone.html">gone</a></body></html>'
    )
    (root / "a.html").write_text(
        '<!DOCTYPE html><html><head><title>A</title></head><body><a href="/gone.html">gone</a></body></html>'
    )


def _records(out: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    lines = (out / "_archiver" / "manifest.jsonl").read_text().splitlines()[1:]
    return {r["path"]: r for r in map(json.loads, lines)}


@pytest.mark.parametrize("where", ["after the file", "before the file"])
def test_a_run_stopped_in_the_relink_resumes_to_records_that_match_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    _site(tmp_path / "live")
    out = tmp_path / "tree"
    real_write = TreeWriter.write
    real_relink = relink_module._relink_one
    relinking = {"on": False, "stopped": False}

    def relink_one(*args, **kwargs):  # type: ignore[no-untyped-def]
        relinking["on"] = True
        try:
            return real_relink(*args, **kwargs)
        finally:
            relinking["on"] = False

    def write(self, path, data=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        if relinking["on"] and not relinking["stopped"]:
            relinking["stopped"] = True
            if where == "before the file":
                raise KeyboardInterrupt
            real_write(self, path, data, *args, **kwargs)
            raise KeyboardInterrupt  # the file replaced, nothing after it done
        return real_write(self, path, data, *args, **kwargs)

    options = {"render": False, "delay": 0, "retries": 0, "progress": False}
    with FixtureServer(FixtureConfig(root=tmp_path / "live", robots=None)) as server:
        monkeypatch.setattr(relink_module, "_relink_one", relink_one)
        monkeypatch.setattr(TreeWriter, "write", write)
        with pytest.raises(KeyboardInterrupt):
            capture([server.url], out, **options)  # type: ignore[arg-type]
        assert relinking["stopped"]
        monkeypatch.undo()
        report = capture([server.url], out, **options)  # type: ignore[arg-type]
        assert report.pages == 2
    for path, record in _records(out).items():
        data = (out / path).read_bytes()
        assert record["size"] == len(data), path
    assert "gone.html" in (out / "index.html").read_text()
    checked = verify_tree(out)
    assert checked.ok, checked.problems
