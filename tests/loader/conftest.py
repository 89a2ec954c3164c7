"""Fixtures for the loader tests: gwtar files of the fixture site and of the mini tree (packed once per
session with ``archiver.gwtar.pack``), and one Chromium for the whole session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright

from archiver import gwtar
from archiver.capture.browser import launch
from tests.loader.harness import copy_site

MINI = Path(__file__).resolve().parents[2] / "testdata" / "trees" / "mini"


@pytest.fixture(scope="session")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_site(tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="session")
def site_gwtar(site_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site-gwtar") / "site.gwtar.html"
    gwtar.pack(site_dir, out, main="index.html")
    return out


@pytest.fixture(scope="session")
def mini_gwtar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mini-gwtar") / "mini.gwtar.html"
    gwtar.pack(MINI, out)
    return out


# Module scope, not session: a sync Playwright keeps its event loop alive while it is open, and any
# other test that starts Playwright afterwards would fail ("Sync API inside the asyncio loop").
@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    b = launch(playwright)
    yield b
    b.close()
