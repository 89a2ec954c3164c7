"""The builder's files compressed, hashed and emitted by a thread of their own
(``Builder(files=filethread.ThreadedFiles(...))``, what ``build_index`` uses): the same files as the
builder's own thread makes them (the batches the thread is behind on made by the builder's thread),
an error in that thread is the build's, and a build given up leaves no such thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from archiver.search import build, filethread, store
from archiver.search.text import extract
from tests.search.helpers import html

_SMALL = {"shard_bytes": 300, "group_bytes": 200, "text_bytes": 150}  # many files of each kind


def _pages(count: int) -> list[tuple[str, str]]:
    return [
        (
            f"p{i:03}.html",
            html(f"Page {i}", f"<h2>Part {i}</h2><p>{i} words about widget{i % 7} and gadgets</p>"),
        )
        for i in range(count)
    ]


def _files_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "search-index-files"]


class _Held(filethread.ThreadedFiles):
    """The thread's first batch waits for :attr:`release`: the queue fills behind it (the first
    batch is handed over once the thread has it)."""

    def __init__(self, emit: build.Emit, version: int) -> None:
        super().__init__(emit, version)
        self.release = threading.Event()
        self._taken = threading.Event()

    def make(self, jobs: list[build.Job]) -> None:
        super().make(jobs)
        assert self._taken.wait(30)

    def _make(self, jobs: list[build.Job]) -> None:
        if threading.current_thread().name == "search-index-files":
            self._taken.set()
            assert self.release.wait(30)
        super()._make(jobs)


def _made(
    threaded: bool, emit_error: str | None = None, by: set[str] | None = None, held: bool = False
) -> tuple[list[tuple[str, bytes]], bytes]:
    made: list[tuple[str, bytes]] = []

    def emit(name: str, data: bytes) -> None:
        if name == emit_error:
            raise OSError(f"cannot write {name}")
        made.append((name, data))
        if by is not None:
            by.add(threading.current_thread().name)

    files = (_Held if held else filethread.ThreadedFiles)(emit, build.VERSION) if threaded else None
    builder = build.Builder(emit, files=files, **_SMALL)
    for path, page in _pages(120 if held else 40):
        builder.add(path, extract(page.encode()))
    if isinstance(files, _Held):
        files.release.set()
    manifest = build.manifest_bytes(builder.finish())
    return sorted(made), manifest


def test_a_thread_makes_the_files_one_thread_makes() -> None:
    alone, manifest = _made(threaded=False)
    assert {name[0] for name, _ in alone} == {"x", "d", "t"} and len(alone) > 20
    assert _made(threaded=True) == (alone, manifest)
    assert _files_threads() == []  # finish waited for it


def test_the_batches_the_thread_is_behind_on_are_made_by_the_builders_thread() -> None:
    """The thread held on its first batch: past :data:`filethread.FILES_AHEAD` queued batches the
    builder's thread makes each itself instead of waiting, and ``finish`` makes those still queued;
    the same files and manifest as one thread makes."""
    by: set[str] = set()
    made = _made(threaded=True, by=by, held=True)
    assert made == _made(threaded=False, held=True)
    assert by == {"MainThread", "search-index-files"}
    assert _files_threads() == []


def test_a_file_the_thread_cannot_emit_is_the_builds_error() -> None:
    with pytest.raises(OSError, match="cannot write x/3"):
        _made(threaded=True, emit_error="x/3")
    assert _files_threads() == []


def test_a_build_given_up_ends_the_files_thread(tmp_path: Path) -> None:
    """Pages of 8 KB of text: a fragment group (with its text files) is handed to the thread every
    dozen pages or so, and the build is stopped at the 30th."""
    for i in range(40):
        text = " ".join(f"word{i}x{k}" for k in range(800))
        (tmp_path / f"p{i:03}.html").write_text(html(f"Page {i}", f"<p>{text}</p>"), encoding="utf-8")
    started: list[str] = []

    def progress(done: int) -> None:
        started.extend(t.name for t in _files_threads())
        if done == 30:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        store.build_index(tmp_path, {}.__setitem__, progress, workers=1)
    assert started and _files_threads() == []
