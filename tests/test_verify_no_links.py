"""``verify --no-links``: integrity only (sizes, hashes, structure) for trees, gwtar and ZIM files;
the internal-link check that ``verify`` runs by default is left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver import cli

PAGE = b'<!DOCTYPE html><title>Page</title><p>FLIP-ME</p><a href="index.html">home</a>'


def _tree(root: Path) -> Path:
    root.mkdir()
    (root / "index.html").write_text('<!DOCTYPE html><title>Home</title><a href="gone.html">gone</a>')
    (root / "page.html").write_bytes(PAGE)
    return root


@pytest.mark.parametrize("fmt", ["tree", "gwtar", "zim"])
def test_no_links_skips_the_link_check_only(
    tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = _tree(tmp_path / "site")
    if fmt != "tree":
        target = tmp_path / ("site.gwtar.html" if fmt == "gwtar" else "site.zim")
        assert cli.main(["pack", str(tmp_path / "site"), "--format", fmt, "-o", str(target)]) == 0
    capsys.readouterr()
    assert cli.main(["verify", str(target)]) == 1  # the broken link is a problem
    assert "gone.html" in capsys.readouterr().out
    assert cli.main(["verify", "--no-links", str(target)]) == 0
    assert "gone.html" not in capsys.readouterr().out


def test_no_links_still_checks_every_byte(tmp_path: Path) -> None:
    target = tmp_path / "site.gwtar.html"
    assert cli.main(["pack", str(_tree(tmp_path / "site")), "--format", "gwtar", "-o", str(target)]) == 0
    data = target.read_bytes()
    at = data.index(b"FLIP-ME")
    target.write_bytes(data[:at] + b"FLOP-ME" + data[at + 7 :])
    assert cli.main(["verify", "--no-links", str(target)]) == 1
