"""Find and launch the Chromium that Playwright drives.

Playwright's own browser download is impossible on the machines archiver targets, so Chromium is
launched by path, found in this order (README "Browser"):

1. an explicit path (the ``--chromium`` option of a command);
2. the ``ARCHIVER_CHROMIUM`` environment variable;
3. the browser Playwright installed for itself, when it exists;
4. Debian's ``/usr/bin/chromium`` (``apt-get install chromium``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from archiver.errors import EnvironmentProblem

if TYPE_CHECKING:
    from playwright.async_api import Browser as AsyncBrowser
    from playwright.async_api import Playwright as AsyncPlaywright
    from playwright.sync_api import Browser, Playwright

__all__ = [
    "CHROMIUM_ARGS",
    "DEBIAN_CHROMIUM",
    "ENV_VAR",
    "NO_NETWORK_ARGS",
    "find_chromium",
    "launch",
    "launch_async",
]

ENV_VAR = "ARCHIVER_CHROMIUM"
DEBIAN_CHROMIUM = Path("/usr/bin/chromium")
#: Flags on top of Playwright's own: no GPU in a headless server, and none of Chromium's background
#: traffic (updates, sync, QUIC probes), which a closed network refuses noisily.
CHROMIUM_ARGS = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

#: Flags for a browser whose every request is routed through archiver's fetcher: Chromium resolves no
#: host name and no IP literal itself (``MAP * ~NOTFOUND`` maps all of them to "not found"), so a
#: request that escapes routing fails instead of reaching the network; WebRTC may not open its own
#: UDP sockets. Site isolation is off (``--disable-site-isolation-trials``): a frame of another site
#: then stays in its tab's process and target, whose CDP session routes its requests (in a process of
#: its own it would be a target of its own, which the tab's session does not route: its requests would
#: fail). The browser holds nothing of the user's to isolate: every byte it sees is what archiver
#: fetched for it.
NO_NETWORK_ARGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-site-isolation-trials",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def _usable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_chromium(
    explicit: str | os.PathLike[str] | None = None, *, playwright_path: str | None = None
) -> Path:
    """The Chromium executable to launch, by the order in the module docstring. An explicit path or
    environment variable that does not name an executable is an error (never silently skipped)."""
    for source, value in (("--chromium", explicit), (ENV_VAR, os.environ.get(ENV_VAR))):
        if value:
            path = Path(value)
            if not _usable(path):
                raise EnvironmentProblem("not an executable file", subject=f"{source} {value}")
            return path
    if playwright_path and _usable(Path(playwright_path)):
        return Path(playwright_path)
    if _usable(DEBIAN_CHROMIUM):
        return DEBIAN_CHROMIUM
    raise EnvironmentProblem(
        "no Chromium found: run `apt-get install chromium` (or set ARCHIVER_CHROMIUM to a Chromium binary)",
        subject="chromium",
    )


def launch(playwright: Playwright, explicit: str | None = None, *, args: tuple[str, ...] = ()) -> Browser:
    """Launch headless Chromium under ``playwright`` from :func:`find_chromium`'s choice."""
    try:
        own = playwright.chromium.executable_path
    except Exception:  # Playwright raises when it has no browser of its own registered
        own = None
    path = find_chromium(explicit, playwright_path=own)
    return playwright.chromium.launch(executable_path=str(path), args=[*CHROMIUM_ARGS, *args])


async def launch_async(
    playwright: AsyncPlaywright, explicit: str | None = None, *, args: tuple[str, ...] = ()
) -> AsyncBrowser:
    """:func:`launch` for Playwright's async API."""
    try:
        own = playwright.chromium.executable_path
    except Exception:  # Playwright raises when it has no browser of its own registered
        own = None
    path = find_chromium(explicit, playwright_path=own)
    return await playwright.chromium.launch(executable_path=str(path), args=[*CHROMIUM_ARGS, *args])
