"""The temporary names archiver writes under inside a tree, written as the attacks (archiver.atomicfile).

A tree comes from anywhere; a name a capture writes a temporary file under may already be there as a
symbolic link. Before, a resumed capture of a tree holding ``_archiver/manifest.jsonl.tmp -> FILE``
truncated FILE, wrote the whole manifest into it and renamed the link into the manifest's place (a
write outside the tree); the run's report (``report.json.PID.tmp``), the version store's files
(``.versions/.tmp-NAME-PID``) and a re-capture's pending mark were written the same way. Now those
names are removed (never followed) and created anew with ``O_EXCL | O_NOFOLLOW``. The run is made in
this process (``archiver.cli.main``), so the names carrying a process id can be planted."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.tree import read_records


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    top = tmp_path_factory.mktemp("tmpnames")
    site = top / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><body><a href='b.html'>b</a></body></html>")
    (site / "b.html").write_text("<p>b</p>")
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        base = top / "base"
        assert main(["capture", server.url, "-o", str(base), "--no-render", "--delay", "0"]) == 0
        yield server.url, base


def _plant(out: Path, victims: Path, names: list[str]) -> dict[Path, bytes]:
    """A symbolic link under each of ``names`` (relative to ``out``) to a victim file of its own."""
    victims.mkdir()
    kept = {}
    for i, name in enumerate(names):
        victim = victims / f"victim-{i}.txt"
        victim.write_bytes(f"precious {i}\n".encode())
        kept[victim] = victim.read_bytes()
        link = out / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(victim)
    return kept


@pytest.mark.parametrize("extra", [(), ("--new-version",)])
def test_links_under_temporary_names_are_never_written_through(
    served: tuple[str, Path], tmp_path: Path, extra: tuple[str, ...]
) -> None:
    url, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    pid = os.getpid()
    names = ["_archiver/manifest.jsonl.tmp", f"_archiver/report.json.{pid}.tmp"]
    if extra:
        store = "_archiver/.versions"
        names += [f"{store}/.tmp-pending.json-{pid}", f"{store}/.tmp-store.json-{pid}"]
    kept = _plant(out, tmp_path / "victims", names)
    assert main(["capture", url, "-o", str(out), "--no-render", "--delay", "0", *extra]) == 0
    assert {v: v.read_bytes() for v in kept} == kept  # before: the manifest or report written into them
    manifest = out / "_archiver" / "manifest.jsonl"
    assert not manifest.is_symlink() and manifest.is_file()
    assert sorted(r.path for r in read_records(out)) == ["b.html", "index.html"]
    assert not (out / "_archiver" / "report.json").is_symlink()
    assert main(["verify", str(out)]) == 0


def test_a_manifest_that_is_a_link_is_not_appended_to(served: tuple[str, Path], tmp_path: Path) -> None:
    """The manifest itself a link: refused before anything is written (as since stop 41)."""
    url, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    victim = tmp_path / "victim.jsonl"
    shutil.move(out / "_archiver" / "manifest.jsonl", victim)
    (out / "_archiver" / "manifest.jsonl").symlink_to(victim)
    before = victim.read_bytes()
    assert main(["capture", url, "-o", str(out), "--no-render", "--delay", "0"]) == 1
    assert victim.read_bytes() == before
