"""Replay a WACZ in ReplayWeb.page in headless Chromium, all from 127.0.0.1, and print the title the
replayed page shows (formats/warc.md §5.3; the recipe of ../shared/research/warc-wacz.md §4).

Needs the npm package ``replaywebpage`` unpacked (``npm pack replaywebpage@2.4.6 && tar xzf
replaywebpage-2.4.6.tgz`` gives ``package/`` with ui.js and sw.js). Not run in CI.

    python tools/replay_wacz.py package/ X.wacz http://127.0.0.1:PORT/ --title "Expected title"
    python tools/replay_wacz.py package/ X.wacz http://127.0.0.1:PORT/demo/js-generated.html \
        --text JS-GENERATED-MARKER     # the page's scripts ran in the replay
    python tools/replay_wacz.py package/ X.wacz http://127.0.0.1:PORT/a.html --ts 20261130090000 \
        --text "first"                 # the capture of that time (a versioned --warc capture)
"""

from __future__ import annotations

import argparse
import html
import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from archiver.capture.browser import launch
from archiver.fixture import FixtureConfig, FixtureServer


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", help="the unpacked replaywebpage npm package (with ui.js, sw.js)")
    ap.add_argument("wacz")
    ap.add_argument("url", help="the archived URL to replay")
    ap.add_argument("--title", help="exit 1 unless the replayed page shows this title")
    ap.add_argument("--text", help="exit 1 unless the replayed page's text comes to contain this")
    ap.add_argument("--wait", type=float, default=20.0, help="seconds to wait for the title (20)")
    ap.add_argument("--ts", help="the capture to show: a 14-digit timestamp (ReplayWeb.page's closest)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copy(Path(args.package) / "ui.js", root / "ui.js")
        shutil.copy(Path(args.package) / "sw.js", root / "sw.js")
        (root / "replay").mkdir()
        (root / "replay" / "sw.js").write_text('importScripts("../sw.js");\n')
        shutil.copy(args.wacz, root / "t.wacz")
        (root / "index.html").write_text(
            '<!doctype html><meta charset="utf-8"><script src="ui.js"></script>'
            f'<replay-web-page source="t.wacz" url="{html.escape(args.url)}" embed="replayonly"'
            + (f' ts="{html.escape(args.ts)}"' if args.ts else "")
            + ">"
            "</replay-web-page>\n"
        )
        with FixtureServer(FixtureConfig(root=root, range=True)) as server, sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page()
            page.goto(server.url + "index.html")
            title = None
            text = ""
            steps = int(args.wait * 4)
            for step in range(steps):
                page.wait_for_timeout(250)
                if step == steps // 2 and title is None:
                    # a service worker installed by this load may only control the next one (its
                    # lifecycle, not the archive): nothing replayed by half the wait, load once more
                    page.reload()
                for frame in page.frames:
                    if "mp_/" in frame.url:
                        try:
                            title = frame.title() or None
                            text = frame.inner_text("body") if args.text else ""
                        except Exception:  # the frame navigated meanwhile
                            title, text = None, ""
                if title and (args.title is None or title == args.title) and (args.text or "") in text:
                    break
            browser.close()
    found = args.text is None or args.text in text
    print(
        f"replayed {args.url}: title {title!r}"
        + (f", text {'has' if found else 'lacks'} {args.text!r}" if args.text else "")
    )
    return 0 if title and (args.title is None or title == args.title) and found else 1


if __name__ == "__main__":
    sys.exit(main())
