"""The tree GNU tar extracts from a gwtar's body renders offline in real Chromium: from file://, with
every image, the stylesheets and the font loaded, and not one request leaving the disk."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from archiver.capture import browser
from archiver.gwtar import PackResult

pytestmark = [pytest.mark.browser, pytest.mark.interop]


def test_extracted_tree_renders_offline(tmp_path: Path, mini_gwtar: PackResult) -> None:
    from playwright.sync_api import sync_playwright

    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["bash", "-o", "pipefail", "-c",
                    f"perl -ne'print $_ if $x; $x=1 if /<!-- GWTAR END/' < '{mini_gwtar.path}' | tar x"],
                   cwd=out, check=True)  # fmt: skip
    requests: list[str] = []
    failed: list[str] = []
    with sync_playwright() as pw:
        chromium = browser.launch(pw)
        try:
            page = chromium.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("requestfailed", lambda r: failed.append(r.url))
            for doc in ("index.html", "docs/intro/index.html", "café menu/index.html"):
                page.goto((out / doc).as_uri(), wait_until="load")
                page.wait_for_function("document.fonts.status === 'loaded'")
                images = page.eval_on_selector_all(
                    "img", "els => els.map(e => [e.currentSrc, e.naturalWidth])"
                )
                assert images and all(width > 0 for _, width in images), images
                assert page.evaluate("getComputedStyle(document.body).fontFamily").startswith("Field")
                assert page.evaluate(
                    "[...document.fonts].some(f => f.family === 'Field' && f.status === 'loaded')"
                )
        finally:
            chromium.close()
    for asset in ("main__q-269fc2.css", "base.css", "field.woff2", "diagram.svg", "a%20b.png"):
        assert any(url.endswith(asset) for url in requests), asset
    assert all(url.startswith("file://") for url in requests), [
        u for u in requests if not u.startswith("file:")
    ]
    assert failed == []
