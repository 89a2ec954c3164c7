"""Chromium discovery (README "Browser") and a real launch against the fixture site."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.capture import browser
from archiver.errors import EnvironmentProblem
from archiver.fixture import JS_MARKER, JS_PAGE, FixtureServer, site_root


def test_explicit_path_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "my-chromium"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(browser.ENV_VAR, "/nonexistent/env-chromium")
    assert browser.find_chromium(str(exe)) == exe


def test_env_var_comes_second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "env-chromium"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv(browser.ENV_VAR, str(exe))
    assert browser.find_chromium(playwright_path=str(tmp_path / "pw")) == exe


def test_a_configured_path_that_is_not_executable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(browser.ENV_VAR, "/nonexistent/chromium")
    with pytest.raises(
        EnvironmentProblem, match="ARCHIVER_CHROMIUM /nonexistent/chromium: not an executable"
    ):
        browser.find_chromium()


def test_playwright_browser_before_debian(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(browser.ENV_VAR, raising=False)
    exe = tmp_path / "chrome"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    assert browser.find_chromium(playwright_path=str(exe)) == exe
    assert browser.find_chromium(playwright_path=str(tmp_path / "missing")) == browser.DEBIAN_CHROMIUM


def test_nothing_found_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(browser.ENV_VAR, raising=False)
    monkeypatch.setattr(browser, "DEBIAN_CHROMIUM", Path("/nonexistent/chromium"))
    with pytest.raises(EnvironmentProblem, match="apt-get install chromium"):
        browser.find_chromium()


@pytest.mark.browser
def test_real_chromium_runs_the_fixture_sites_javascript(monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import sync_playwright

    monkeypatch.delenv(browser.ENV_VAR, raising=False)
    with FixtureServer() as server, sync_playwright() as pw:
        chromium = browser.launch(pw)
        try:
            page = chromium.new_page()
            page.goto(server.url + JS_PAGE, wait_until="load")
            assert JS_MARKER not in (site_root() / JS_PAGE).read_text(encoding="utf-8")
            page.wait_for_function(f"document.body.innerText.includes({JS_MARKER!r})", timeout=10_000)
            assert page.evaluate("document.compatMode") == "CSS1Compat"
        finally:
            chromium.close()
