"""A page that links to and loads from private and link-local addresses (and a host name that resolves
to one): no connection is attempted, and the report lists each as refused. The resolver and the socket
layer are injected, so no packet can leave loopback even if the guard were broken."""

from __future__ import annotations

from pathlib import Path

import httpcore
import pytest

from archiver.capture import capture
from archiver.fixture import FixtureConfig, FixtureServer

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>Guarded</title>
<link rel="stylesheet" href="http://intranet.test/site.css"></head><body>
<img src="http://10.0.0.7/secret.png">
<img src="http://169.254.169.254/latest/meta-data.png">
<img src="http://[fd00::5]/ula.png">
<a href="http://intranet.test/admin/">admin</a>
<a href="http://metadata.test/computeMetadata/">metadata</a>
<a href="/_fixture/redirect/chain/0?to=http://10.1.2.3/internal/">a redirect into the network</a>
</body></html>
"""
ZONE = {"intranet.test": ["10.20.30.40"], "metadata.test": ["169.254.169.254"]}


async def resolver(host: str, port: int) -> list[str]:
    if host in ZONE:
        return ZONE[host]
    raise OSError(f"test resolver: unknown host {host}")


class LoopbackOnly(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore.AnyIOBackend()
        self.connects: list[str] = []

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):  # type: ignore[no-untyped-def]
        self.connects.append(host)
        if host != "127.0.0.1":
            raise httpcore.ConnectError(f"test backend: no connections beyond loopback ({host})")
        return await self.inner.connect_tcp(host, port, timeout=timeout)

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):  # type: ignore[no-untyped-def]
        raise httpcore.ConnectError("no")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


REFUSED = [
    "http://10.0.0.7/secret.png",
    "http://169.254.169.254/latest/meta-data.png",
    "http://[fd00::5]/ula.png",
    "http://intranet.test/admin/",
    "http://intranet.test/site.css",
    "http://metadata.test/computeMetadata/",
]


@pytest.mark.parametrize("render", [False, pytest.param(True, marks=pytest.mark.browser)])
def test_private_addresses_are_refused_without_a_connection(tmp_path: Path, render: bool) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE)
    backend = LoopbackOnly()
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture(
            [server.url],
            tmp_path / "tree",
            render=render,
            depth=2,
            delay=0,
            progress=False,
            retries=0,
            assets_any_host=True,
            allow_domains=[
                "intranet.test",
                "metadata.test",
                "10.0.0.7",
                "169.254.169.254",
                "[fd00::5]",
                "10.1.2.3",
            ],
            resolver=resolver,
            network_backend=backend,
        )
        home = server.url
    assert set(backend.connects) == {"127.0.0.1"}
    for url in REFUSED:
        item = report.outcome(url)
        assert item is not None and item.outcome == "refused", (url, item)
        assert "--allow-private" in item.reason
    hop = report.outcome(home + "_fixture/redirect/chain/0?to=http://10.1.2.3/internal/")
    assert hop is not None and hop.outcome == "refused"
    assert report.outcome(home) is not None and report.outcome(home).outcome == "ok"  # type: ignore[union-attr]
