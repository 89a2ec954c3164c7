"""Progress meters draw on a real terminal (a pseudo-terminal here) and nowhere else."""

from __future__ import annotations

import os
import pty
import select
import struct
import termios
import time
from fcntl import ioctl

from archiver.progress import bytes_meter, wanted


def _drain(fd: int) -> bytes:
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out


def test_wanted_on_a_terminal_only() -> None:
    master, slave = pty.openpty()
    read_end, write_end = os.pipe()
    try:
        with open(slave, "w", closefd=False) as tty, open(write_end, "w", closefd=False) as pipe:
            assert wanted(stream=tty)
            assert not wanted(stream=tty, as_json=True)
            assert not wanted(stream=pipe)
    finally:
        for fd in (master, slave, read_end, write_end):
            os.close(fd)


def _terminal() -> tuple[int, int]:
    master, slave = pty.openpty()
    ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a real terminal has a size
    return master, slave


def test_meter_shows_bytes_rate_and_clears_itself() -> None:
    master, slave = _terminal()
    try:
        with open(slave, "w", closefd=False) as tty:
            with bytes_meter("pack", show=True, stream=tty) as meter:
                meter.start(4 * 1024 * 1024)
                for _ in range(4):
                    time.sleep(0.3)  # past the redraw interval, so each step is drawn
                    meter.advance(1024 * 1024)
            tty.flush()
        text = _drain(master).decode("utf-8", "replace")
    finally:
        os.close(master)
        os.close(slave)
    assert "pack" in text
    assert "4.00M/4.00M" in text  # bytes done / total, binary units
    assert "B/s" in text  # the rate


def test_hidden_meter_writes_nothing() -> None:
    master, slave = pty.openpty()
    try:
        with open(slave, "w", closefd=False) as tty:
            with bytes_meter("pack", show=False, stream=tty) as meter:
                meter.start(100)
                meter.advance(100)
            tty.flush()
        assert _drain(master) == b""
    finally:
        os.close(master)
        os.close(slave)
