"""The loader as the writer embeds it, and the header it makes: js/loader.js is the build of
js/src/loader.js, ASCII, with nothing that ends or re-opens the script element; the header is at
most 48 KB plus the v1 manifest whatever the size of the site."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from archiver import gwtar

JS = Path(__file__).resolve().parents[2] / "js"
LIMIT = 48 * 1024


def test_embedded_loader_is_the_current_build() -> None:
    done = subprocess.run(
        [shutil.which("node") or "node", str(JS / "build.js"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    text = (JS / "loader.js").read_text(encoding="utf-8")
    assert gwtar.loader_source() == text
    assert text.isascii()
    for bad in ("</script", "<!--", "<script", "-->"):
        assert bad not in text.lower(), bad
    assert text.rstrip().endswith("})();")


def _header(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    end = data.index(b"<!-- GWTAR END\n") + len(b"<!-- GWTAR END\n")
    start = data.index(b"let assets = ")
    return end, data.index(b"\n</script>", start) - start


@pytest.mark.parametrize("archive", ["mini_gwtar", "site_gwtar"])
def test_header_is_small_whatever_the_site(archive: str, request: pytest.FixtureRequest) -> None:
    path: Path = request.getfixturevalue(archive)
    overhead, manifest = _header(path)
    assert overhead == gwtar.open(path).overhead
    assert overhead - manifest <= LIMIT, f"{overhead - manifest} bytes besides the manifest"
