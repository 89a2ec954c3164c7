"""``archiver demo``: the whole pipeline on the bundled demo site, served on 127.0.0.1.

serve the fixture site → capture it in Chromium into a canonical tree → pack the tree into a gwtar
with a PAR2 tail and into a ZIM → verify both → print where everything went. Each stage is the
library function the matching command calls, so the demo shows exactly what the commands do.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from archiver.fixture import FixtureServer, site_root

__all__ = ["run_demo"]


def run_demo(*, out: str, serve: bool, as_json: bool) -> int:
    from archiver import gwtar, zim
    from archiver.capture import capture
    from archiver.search.store import has_index

    out_dir = Path(out)
    tree = out_dir / "tree"
    gwtar_path = out_dir / "demo.gwtar.html"
    zim_path = out_dir / "demo.zim"
    report: dict[str, Any] = {}
    say = (lambda *_: None) if as_json else (lambda text: print(text, flush=True))

    with FixtureServer() as server:
        files = sum(1 for p in site_root().rglob("*") if p.is_file())
        say(f"archiver demo: serving the demo site ({files} files) at {server.url}")
        report["site"] = {"url": server.url, "files": files}

        started = time.monotonic()
        say(f"  capture: rendering every page in Chromium into {tree} …")
        # Every run captures afresh: the server's port, hence the tree's host folder, changes per run.
        # No extension is skipped, so the 10 MiB video is archived too (streamed by the gwtar loader).
        # The site is ours, on loopback: no politeness delay (a stranger's site gets the 1 s default).
        captured = capture(
            [server.url], tree, resume=False, as_json=True, skip_extensions=frozenset(), delay=0.0
        )
        report["capture"] = {
            "tree": str(tree),
            "pages": captured.pages,
            "assets": captured.assets,
            "bytes": captured.bytes,
            "complete": captured.complete,
            "problems": len(captured.problems()),
            "seconds": round(time.monotonic() - started, 1),
        }
        say(
            f"  capture: {captured.pages} pages, {captured.assets} assets, {captured.bytes} bytes in "
            f"{report['capture']['seconds']} s ({len(captured.problems())} URLs not stored, as listed by "
            f"`archiver capture`) → {tree}"
        )

        # the tree's search index (the capture builds it when rendering) goes into both, as `archiver
        # pack` carries it by default: each output's search page works
        indexed = has_index(tree)
        say("  gwtar:   packing the tree with a 10 % PAR2 recovery tail, then verifying it …")
        packed = gwtar.pack(tree, gwtar_path, fec=0.10, search_index=indexed)
        gwtar_report = gwtar.verify(gwtar_path)
        report["gwtar"] = {
            "path": str(gwtar_path),
            "size": gwtar_path.stat().st_size,
            "members": packed.members,
            "fec": True,
            "search": indexed,
            "valid": gwtar_report.ok,
        }
        say(
            f"  gwtar:   {gwtar_path} ({report['gwtar']['size']} bytes, {packed.members} members, PAR2 tail"
            f"{', search page' if indexed else ''}) "
            f"verify: {'valid' if gwtar_report.ok else 'INVALID'}"
        )

        say("  zim:     packing the tree into a ZIM (full-text index), then verifying it …")
        packed_zim = zim.pack(tree, zim_path, search_index=indexed)
        zim_report = zim.verify(zim_path)
        report["zim"] = {
            "path": str(zim_path),
            "size": zim_path.stat().st_size,
            "entries": packed_zim.entries,
            "search": indexed,
            "valid": zim_report.ok,
        }
        say(
            f"  zim:     {zim_path} ({report['zim']['size']} bytes, {packed_zim.entries} entries"
            f"{', search page' if indexed else ''}) "
            f"verify: {'valid' if zim_report.ok else 'INVALID'}"
        )
        for problem in [*gwtar_report.problems, *zim_report.problems][:10]:
            say(f"    problem: {problem}")
        say(f"  next:    archiver serve {gwtar_path} {zim_path}   (then open the printed URL)")
        if as_json:
            print(json.dumps(report, ensure_ascii=False))
        if serve:
            print(f"serving {server.url} until Ctrl-C", file=sys.stderr, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    return 0 if gwtar_report.ok and zim_report.ok else 1
