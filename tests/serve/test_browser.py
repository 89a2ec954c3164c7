"""The gwtar loader under ``archiver serve``: media play from the archive's member URL, by Range,
before the whole member has arrived (real Chromium, network throttled to 2 Mbit/s).

Playwright's sync API refuses to start in a thread where another sync Playwright is active (a
session-scoped one from another test folder, for instance), so this test drives Chromium from a
thread of its own."""

from __future__ import annotations

import math
import struct
import wave
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Response, sync_playwright

from archiver import gwtar
from archiver.capture.browser import launch
from archiver.serve import running

SECONDS = 30
RATE = 22050
SOUND = "_archiver/ex.com/media/tone.wav"


def _tree(root: Path) -> Path:
    (root / "_archiver/ex.com/media").mkdir(parents=True)
    (root / "index.html").write_text(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sound</title></head>'
        f'<body><h1>Listen</h1><audio controls preload="none" src="{SOUND}"></audio></body></html>\n',
        encoding="utf-8",
    )
    frames = bytearray()
    for i in range(SECONDS * RATE):
        sample = int(8000 * math.sin(2 * math.pi * 440 * i / RATE))
        frames += struct.pack("<hh", sample, sample)
    with wave.open(str(root / SOUND), "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(bytes(frames))
    return root


def _play(url: str) -> tuple[dict[str, Any], list[tuple[int, str | None, str | None]]]:
    """Open ``url`` in Chromium at 2 Mbit/s, play the page's audio; (its state once it plays, the
    responses to member URLs)."""
    with sync_playwright() as p:
        browser = launch(p, args=("--autoplay-policy=no-user-gesture-required",))
        try:
            return _play_in(browser, url)
        finally:
            browser.close()


def _play_in(browser: Browser, url: str) -> tuple[dict[str, Any], list[tuple[int, str | None, str | None]]]:
    context = browser.new_context()
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send(
            "Network.emulateNetworkConditions",
            {"offline": False, "latency": 5, "downloadThroughput": 250_000, "uploadThroughput": 250_000},
        )
        member_responses: list[tuple[int, str | None, str | None]] = []

        def seen(response: Response) -> None:
            if "/~/" in response.url and response.request.method == "GET":
                asked = response.request.headers.get("range")
                member_responses.append((response.status, asked, response.headers.get("content-range")))

        page.on("response", seen)
        page.goto(url)
        page.wait_for_function("() => window.gwtar && gwtar.state === 'ready'", timeout=60_000)
        audio = "document.querySelector('audio')"
        page.evaluate(f"() => {{ const a = {audio}; a.muted = true; a.play().catch(() => {{}}); }}")
        page.wait_for_function(
            f"() => {{ const a = {audio}; return a && a.currentTime > 0.3; }}", timeout=60_000
        )
        state = page.evaluate(
            """() => { const a = document.querySelector('audio');
                 const b = a.buffered;
                 return {src: a.currentSrc, time: a.currentTime, duration: a.duration,
                         buffered: b.length ? b.end(b.length - 1) : 0}; }"""
        )
        return state, member_responses
    finally:
        context.close()


@pytest.mark.browser
def test_audio_streams_from_member_url(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "site")
    archive = tmp_path / "sound.gwtar.html"
    gwtar.pack(tree, archive)
    size = (tree / SOUND).stat().st_size  # about 2.6 MB: 10 s to arrive at 2 Mbit/s
    with running([archive]) as base, ThreadPoolExecutor(1) as pool:
        state, member_responses = pool.submit(_play, base + "sound.gwtar.html").result(timeout=240)
    assert "/sound.gwtar.html/~/" + SOUND in state["src"], state
    assert state["time"] > 0.3
    # Playing, with most of the sound still on its way: the element streams from the member URL.
    assert state["buffered"] < 0.8 * SECONDS, state
    assert member_responses, "the audio element fetched the member URL"
    status, range_header, content_range = member_responses[0]
    assert status == 206 and range_header is not None
    assert content_range is not None and content_range.endswith(f"/{size}")
