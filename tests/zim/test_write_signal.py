"""A SIGTERM that arrives while libzim is inside one of our callbacks (an item's mimetype, path,
title…) is an interruption (exit 130, nothing left), not an entry libzim refused: libzim turns the
KeyboardInterrupt the handler raised in the callback into a RuntimeError of its own (seen in a CI run:
`archiver pack` of test_hostile_kill exited 1 with "libzim refused entry 'a/f107.txt'")."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from archiver import safefs
from archiver.errors import FormatError
from archiver.zim import icon, write


def _spec(n: int) -> write.ItemSpec:
    body = f"<p>{n}</p>".encode()
    path = f"a/{n}.html"
    return write.ItemSpec(path, str(n), "text/html", len(body), True, True, lambda: [body], data=body)


def test_a_signal_inside_a_libzim_callback_is_an_interruption(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = write._Item.get_mimetype

    def mimetype(self: write._Item) -> str:
        if self.spec.path == "a/3.html":
            os.kill(os.getpid(), signal.SIGTERM)  # the handler raises here, inside libzim's call
        return real(self)

    monkeypatch.setattr(write._Item, "get_mimetype", mimetype)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), safefs.interruptible():
        write.write_zim(
            tmp_path / "x.zim",
            items=(_spec(n) for n in range(6)),
            redirects=list,
            main="a/0.html",
            metadata=dict,
            illustration=icon.generated_png("x"),
            index_language="eng",
        )
    assert safefs.signalled() is None  # the block is over


def test_a_refused_entry_outside_a_signal_is_still_a_format_error(tmp_path: Path) -> None:
    twice = [_spec(1), _spec(1)]  # the same path twice: libzim refuses the second
    with pytest.raises(FormatError, match="libzim refused entry"), safefs.interruptible():
        write.write_zim(
            tmp_path / "x.zim",
            items=twice,
            redirects=list,
            main="a/1.html",
            metadata=dict,
            illustration=icon.generated_png("x"),
            index_language="eng",
        )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize(
    "callback", ["get_path", "get_title", "get_mimetype", "get_contentprovider", "get_hints"]
)
def test_a_signal_in_any_callback_is_an_interruption_raised_between_items(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, callback: str, sig: signal.Signals
) -> None:
    """Every callback libzim makes into an item of ours, and Ctrl-C too: the signal is held while
    libzim runs and raised before the next item. Raised inside the callback (before), some of them
    ended in SystemError ("<cyfunction _Creator.add_item> returned a result with an exception
    set"): an internal error, exit 70 with a traceback (a random-signal stress of `pack --format
    zim`: 5 of 10 runs)."""
    real = getattr(write._Item, callback)
    seen: list[str] = []

    def trap(self: write._Item) -> object:
        if self.spec.path == "a/3.html" and not seen:
            seen.append(self.spec.path)
            os.kill(os.getpid(), sig)
        return real(self)

    monkeypatch.setattr(write._Item, callback, trap)
    added: list[str] = []

    def specs() -> object:
        for n in range(6):
            added.append(f"a/{n}.html")
            yield _spec(n)

    with pytest.raises(KeyboardInterrupt, match=sig.name), safefs.interruptible():
        write.write_zim(
            tmp_path / "x.zim",
            items=specs(),  # type: ignore[arg-type]
            redirects=list,
            main="a/0.html",
            metadata=dict,
            illustration=icon.generated_png("x"),
            index_language="eng",
        )
    assert seen == ["a/3.html"]
    assert added[-1] == "a/4.html"  # raised before a/4.html was added: between items, not inside one
