"""No byte of a gwtar's tar body is ever markup (formats/gwtar.md §2), and pages are UTF-8.

The attack: a SingleFile page whose inline script holds, in a string, ``-->`` followed by an
``<img>`` and a ``<script>``. Inside the page that is script text, inert; but in the gwtar file the
page is a member of the tar body, which follows the header's ``<!-- GWTAR END`` comment: a header
that relied on that comment let the first ``-->`` close it, and the browser's parser and preload
scanner then fetched the member's image and ran its script. The same script writes non-ASCII text
into the page, which must read as written (``document.characterSet`` UTF-8), whatever the server
says of the charset. Checked through ``archiver serve`` (Range, member URLs) and a server that
ignores Range (the whole file parsed as it streams in).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser

from archiver.gwtar import pack

from .harness import open_gwtar, serve, solo_pages

pytestmark = pytest.mark.browser

TEXT = "Grüße aus Köln — 東京 ☃"
PAGE = f"""<!DOCTYPE html>
<html lang="de"><head><meta charset="utf-8"><title>Feindlicher Körper</title></head>
<body>
<!-- SingleFile comment with an <img src="probe-in-comment.png"> inside -->
<h1 id="out">…</h1>
<script>
  const trap = "--> <img src='probe-img.png'><script>window.bodyRan = 1; fetch('probe-script')</" + "script>"
    + " <plaintext> <link rel=stylesheet href='probe-css.css'>";
  document.getElementById("out").textContent = "{TEXT}";
  document.title = trap.length ? document.title : "";
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def hostile_gwtar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    page = folder / "saved page.html"
    page.write_text(PAGE, encoding="utf-8")
    out = folder / "hostile.gwtar.html"
    pack(page, out)
    data = out.read_bytes()
    assert b"--> <img src='probe-img.png'>" in data  # the attack is in the body as written
    return out


@pytest.mark.parametrize("mode", ["range", "norange"])
def test_the_body_is_never_markup_and_the_text_reads_as_written(
    browser: Browser, hostile_gwtar: Path, mode: str
) -> None:
    requests: list[str] = []
    with serve(mode, hostile_gwtar) as served, solo_pages(browser, 1) as (page,):
        page.on("request", lambda r: requests.append(r.url))
        open_gwtar(page, served)
        page.wait_for_function(
            "document.getElementById('out') && document.getElementById('out').textContent !== '…'"
        )
        shown = page.evaluate("document.getElementById('out').textContent")
        charset = page.evaluate("document.characterSet")
        ran = page.evaluate("window.bodyRan === 1")
        title = page.title()
        log = served.server_log()
    probes = [u for u in requests if "probe" in u] + [p for _m, p, _r, _s in log if "probe" in p]
    assert probes == [], probes
    assert not ran
    assert shown == TEXT and charset == "UTF-8" and title == "Feindlicher Körper"
