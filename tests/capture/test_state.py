"""The resume state and the writer's tree-path rules (tree.md §3.3, §4.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver import urls
from archiver.capture.crawl import CaptureOptions, Crawler
from archiver.capture.state import NewURL, State
from archiver.errors import UsageError
from archiver.tree import Record

HOME = "https://ex.com/"


def _crawler(tmp_path: Path) -> Crawler:
    return Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False))


def test_same_file_urls_merge_into_one_path(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    assert c.assign("https://ex.com/docs/", "page") == ("docs/index.html", None)
    assert c.assign("https://ex.com/docs", "page") == ("docs/index.html", "https://ex.com/docs/")
    assert c.assign("http://ex.com/docs/index.html", "page") == ("docs/index.html", "https://ex.com/docs/")


def test_query_hash_collision_gets_a_longer_hash(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    taken = urls.local_path("https://ex.com/s?q=1", kind="page", home=HOME)
    c.state.claim("https://ex.com/s?q=other", taken)  # pretend another query hashed to the same 6 digits
    path, owner = c.assign("https://ex.com/s?q=1", "page")
    assert owner is None and path == urls.local_path(
        "https://ex.com/s?q=1", kind="page", home=HOME, hash_len=8
    )


def test_file_folder_clash_moves_the_file(tmp_path: Path) -> None:
    c = _crawler(tmp_path)
    first, _ = c.assign("https://ex.com/avatar", "asset")
    assert first == "_archiver/ex.com/avatar"
    (c.out / first).parent.mkdir(parents=True)
    (c.out / first).write_bytes(b"file")
    second, _ = c.assign("https://ex.com/avatar/small.png", "asset")
    assert second == "_archiver/ex.com/avatar/small.png"
    moved, _ = c.assign("https://ex.com/avatar", "asset")
    assert moved.startswith("_archiver/ex.com/avatar__c-") and (c.out / moved).read_bytes() == b"file"
    # the other way round: the folder exists first, so the file takes the __c- name at once
    c.assign("https://ex.com/a/b.png", "asset")
    path, _ = c.assign("https://ex.com/a", "asset")
    assert path.startswith("_archiver/ex.com/a__c-")


def test_finish_is_one_transaction(tmp_path: Path) -> None:
    state = State(tmp_path / "crawl.sqlite")
    state.add([NewURL("https://ex.com/", "page", 0, None)])
    record = Record(path="index.html", kind="page", media_type="text/html", size=1, sha256="0" * 64)
    good = NewURL("https://ex.com/a", "page", 1, "https://ex.com/")
    with pytest.raises(AttributeError):  # a failure half-way through: nothing of it may stay
        state.finish("https://ex.com/", state="done", outcome="ok", record=record, new=[good, None])  # type: ignore[list-item]
    assert state.row("https://ex.com/a") is None
    row = state.row("https://ex.com/")
    assert row is not None and row.state == "pending" and state.record("index.html") is None
    state.finish("https://ex.com/", state="done", outcome="ok", record=record)
    assert state.row("https://ex.com/").state == "done"  # type: ignore[union-attr]
    state.close()


def test_requeue_and_depth_improvement(tmp_path: Path) -> None:
    state = State(tmp_path / "crawl.sqlite")
    state.add(
        [
            NewURL(
                "https://ex.com/x",
                "page",
                4,
                "https://ex.com/deep",
                state="skipped",
                reason="beyond the depth limit",
            )
        ]
    )
    state.add([NewURL("https://ex.com/x", "page", 2, "https://ex.com/b")])
    row = state.row("https://ex.com/x")
    assert row is not None and (row.state, row.depth, row.referrer) == ("pending", 2, "https://ex.com/b")
    state.finish("https://ex.com/x", state="unconfirmed", outcome="unconfirmed")
    assert state.requeue(("failed", "unconfirmed"), max_attempts=1) == 0  # tried once already
    assert state.requeue(("failed", "unconfirmed"), max_attempts=5) == 1
    state.close()


def test_a_non_empty_folder_without_a_capture_is_refused(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "mine.txt").write_text("x")
    with pytest.raises(UsageError, match="holds no capture"):
        _crawler(tmp_path)


def test_no_resume_discards_the_previous_capture_only(tmp_path: Path) -> None:
    c = Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False))
    path, _ = c.assign("https://ex.com/a.css", "asset")
    c._flush_claims()
    (c.out / path).parent.mkdir(parents=True)
    (c.out / path).write_text("old")
    (c.out / "notes.txt").write_text("the user's own file")
    c.state.close()
    fresh = Crawler([HOME], tmp_path / "tree", CaptureOptions(render=False, resume=False))
    assert not (fresh.out / path).exists() and not (fresh.out / "_archiver/ex.com").exists()
    assert (fresh.out / "notes.txt").read_text() == "the user's own file"
    assert fresh.state.count() == 0
    fresh.state.close()
