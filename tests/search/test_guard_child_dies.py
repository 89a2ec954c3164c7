"""The markup guard's child dies while the index is built (killed from outside, out of memory): the
build fails with the page's one-line error, whether this process or a pool worker asked, and emits
nothing; before, closing the dead child's pipe raised BrokenPipeError (a page left in its buffer) and
the build ended in that traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver import markup_guard
from archiver.errors import FormatError
from archiver.search import store


def _small(i: int) -> bytes:
    return f"<!doctype html><title>small {i}</title><p>word{i} text</p>".encode()


def _big(i: int, sections: int = 800) -> bytes:
    """An ordinary page of more than TRUSTED_TAGS tags (read by the child)."""
    part = f'<div class="s"><h2>T{i}<a href="#x">¶</a></h2><p>Some <code>text</code> {i}.</p></div>'
    head = f"<!doctype html><html><head><title>big {i}</title></head>"
    return f"{head}<body>{part * sections}</body></html>".encode()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_guard_child_that_dies_mid_build_fails_the_build_with_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The child is killed as the third page of many tags is sent to it: the build fails with one
    FormatError naming that page."""
    markup_guard._close()
    for i in range(8):
        (tmp_path / f"p{i}.html").write_bytes(_big(i) if i % 2 else _small(i))
    real_ask = markup_guard._Child.ask

    def ask(child: markup_guard._Child, data: bytes, kind: bytes, seconds: float) -> tuple[bytes, bytes]:
        if b"big 5<" in data:
            child.proc.kill()
            child.proc.wait()  # dead before the page is written: the write fails, not only the read
        return real_ask(child, data, kind, seconds)

    monkeypatch.setattr(markup_guard._Child, "ask", ask)
    files: dict[str, bytes] = {}
    with pytest.raises(FormatError) as caught:
        store.build_index(tmp_path, files.__setitem__, workers=workers)
    assert caught.value.subject == "p5.html"
    assert caught.value.message == f"markup too costly to parse (more than {markup_guard.LIMIT_MIB} MiB)"
    assert files == {}
