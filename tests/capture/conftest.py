"""Shared fixtures of the capture tests: ONE fixture server and ONE rendered capture of the fixture
site per session, which many tests then inspect."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from archiver.capture import CaptureReport, capture
from archiver.fixture import FixtureServer, RequestRecord


@dataclass
class Captured:
    server: FixtureServer
    out: Path
    report: CaptureReport
    requests: list[RequestRecord]

    @property
    def origin(self) -> str:
        return self.server.url.rstrip("/")

    @property
    def host_dir(self) -> str:
        return f"_archiver/127.0.0.1:{self.server.port}"


@pytest.fixture(scope="session")
def site_server() -> Iterator[FixtureServer]:
    with FixtureServer() as server:
        yield server


@pytest.fixture(scope="session")
def rendered(site_server: FixtureServer, tmp_path_factory: pytest.TempPathFactory) -> Captured:
    """The fixture site captured with rendering (depth high enough to reach every page)."""
    out = tmp_path_factory.mktemp("rendered") / "tree"
    site_server.clear_requests()
    report = capture([site_server.url], out, render=True, depth=10, delay=0, tabs=3, progress=False)
    return Captured(site_server, out, report, site_server.requests)
