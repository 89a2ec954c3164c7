"""A signal that lands inside :mod:`zipfile` while ``pack --format wacz`` writes.

CI once sent SIGTERM at the moment ``ZipFile.open`` was building a member's writer: the
KeyboardInterrupt left the archive "writing", closing it raised ValueError in its place, and pack
ended with exit 70 and two tracebacks instead of "interrupted" (exit 130). Here the signal is sent by
the process to itself from exactly that spot (zipfile's ``_get_compressor``, wrapped), and from the
middle of a WARC's copy: pack must end by KeyboardInterrupt and leave nothing, and nothing may be
reported as an exception Python could not raise.
"""

from __future__ import annotations

import os
import signal
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from archiver import safefs
from archiver.warc import wacz
from tests.warc import corpus

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.fixture
def unraisable(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}"))
    return seen


def _pack_with_a_signal_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: Any, name: str, sig: signal.Signals
) -> Path:
    src = tmp_path / "a.warc.gz"
    corpus.warcio_warc(src)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    real = getattr(target, name)
    sent: list[int] = []

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if not sent:
            sent.append(1)
            os.kill(os.getpid(), sig)
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, wrapped)
    with pytest.raises(KeyboardInterrupt, match=sig.name), safefs.interruptible():
        wacz.pack([src], out_dir / "x.wacz")
    assert sent
    return out_dir


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_while_zipfile_opens_a_member_interrupts_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unraisable: list[str], sig: signal.Signals
) -> None:
    out_dir = _pack_with_a_signal_at(tmp_path, monkeypatch, zipfile, "_get_compressor", sig)
    assert list(out_dir.iterdir()) == []
    assert unraisable == []


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_a_signal_while_a_warcs_bytes_are_written_interrupts_at_the_next_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unraisable: list[str], sig: signal.Signals
) -> None:
    # the members go in name order: the WARC (archive/...) is written first
    out_dir = _pack_with_a_signal_at(tmp_path, monkeypatch, zipfile._ZipWriteFile, "write", sig)
    assert list(out_dir.iterdir()) == []
    assert unraisable == []


def test_handlers_come_back_and_a_held_signal_is_raised_once() -> None:
    before = {s: signal.getsignal(s) for s in SIGNALS}
    with pytest.raises(KeyboardInterrupt, match="SIGHUP"), safefs.deferred():
        os.kill(os.getpid(), signal.SIGHUP)
        os.kill(os.getpid(), signal.SIGTERM)  # the first one held is the one raised
        for _ in range(1000):
            pass  # Python runs the handlers here: nothing is raised
    assert {s: signal.getsignal(s) for s in SIGNALS} == before
    with safefs.deferred():
        safefs.checkpoint()  # nothing held: nothing raised
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), safefs.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            safefs.checkpoint()
        safefs.checkpoint()  # raised once only
        raise KeyboardInterrupt("SIGTERM")


def test_an_error_leaving_the_block_is_not_replaced_by_the_held_signal() -> None:
    with pytest.raises(OSError, match="disk full"), safefs.deferred():
        os.kill(os.getpid(), signal.SIGTERM)
        raise OSError("disk full")
    safefs.checkpoint()  # and nothing stays held after the block
