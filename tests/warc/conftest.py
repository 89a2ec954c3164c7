"""Shared by the import tests: a guard that forbids every socket connection and the live fetcher,
and one Chromium with two contexts (pages from disk, live pages) for the pixel comparisons."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from archiver.capture import browser, fetch


@contextlib.contextmanager
def no_network() -> Iterator[list[object]]:
    tried: list[object] = []

    def connect(self: socket.socket, address: object) -> None:
        tried.append(address)
        raise OSError("the import must not connect")

    def no_fetcher(*args: object, **kwargs: object) -> None:
        tried.append("Fetcher")
        raise AssertionError("the live Fetcher was built")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket.socket, "connect_ex", connect)
        mp.setattr(fetch.Fetcher, "__init__", no_fetcher)
        yield tried


@pytest.fixture(scope="module")
def contexts() -> Iterator[tuple[Any, Any]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = browser.launch(pw)
        try:
            yield (
                b.new_context(viewport={"width": 1280, "height": 800}),
                b.new_context(viewport={"width": 1280, "height": 800}),
            )
        finally:
            b.close()
