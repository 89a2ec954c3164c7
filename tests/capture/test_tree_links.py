"""A tree from elsewhere whose folders link out of it (formats/tree.md §8, ``tree.own_folders``),
written as the attacks: a re-capture of a tree whose ``_archiver/tmp`` linked to another folder
**deleted every file of that folder** (the writer empties its temporary folder at the start of a run)
and wrote its temporary files there; ``archiver index`` built the index in it; a page folder linked
elsewhere got the re-captured pages written through the link. Now the reserved folder and those
archiver writes and empties in it must be the tree's own (one line, exit 1, nothing touched), and
the writer checks each folder it writes into the first time it meets it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver.fixture import FixtureConfig, FixtureServer
from tests.search.test_cli_search import run


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    top = tmp_path_factory.mktemp("links")
    site = top / "site"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_text("<html><body><a href='docs/b.html'>b</a></body></html>")
    (site / "docs" / "b.html").write_text("<p>b</p>")
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        base = top / "base"
        assert run("capture", server.url, "-o", str(base), "--no-render").returncode == 0
        yield server.url, base


def _victim(folder: Path) -> list[str]:
    folder.mkdir()
    (folder / "precious.txt").write_text("keep me")
    (folder / "sub").mkdir()
    (folder / "sub" / "f.txt").write_text("and me")
    return _listing(folder)


def _listing(folder: Path) -> list[str]:
    return sorted(
        f"{p.relative_to(folder)}={p.read_bytes().hex() if p.is_file() else ''}" for p in folder.rglob("*")
    )


@pytest.mark.parametrize("linked", ["_archiver/tmp", "_archiver/warc", "_archiver/.versions", "_archiver"])
@pytest.mark.parametrize("extra", [(), ("--new-version",)])
def test_a_reserved_folder_linked_elsewhere_is_refused_and_its_target_untouched(
    served: tuple[str, Path], tmp_path: Path, linked: str, extra: tuple[str, ...]
) -> None:
    url, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    victim = tmp_path / "victim"
    before = _victim(victim)
    if linked == "_archiver":  # the whole reserved folder moved beside the victim's files
        for p in (out / "_archiver").iterdir():
            shutil.move(p, victim / p.name)
        before = _listing(victim)
    target = out / linked
    if target.is_dir():
        shutil.rmtree(target)
    target.symlink_to(victim)
    done = run("capture", url, "-o", str(out), "--no-render", *extra)
    if linked == "_archiver":  # no state of its own: the folder holds no capture to resume
        assert done.returncode in (1, 2), done.stderr
    else:
        assert done.returncode == 1, done.stderr
        assert done.stderr == f"archiver: {target}: is a symbolic link, not a folder of the tree: refused\n"
    assert _listing(victim) == before


def test_index_refuses_a_linked_tmp(served: tuple[str, Path], tmp_path: Path) -> None:
    _, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    victim = tmp_path / "victim"
    before = _victim(victim)
    (out / "_archiver" / "tmp").symlink_to(victim)
    done = run("index", str(out))
    assert done.returncode == 1 and "_archiver/tmp: is a symbolic link" in done.stderr
    assert _listing(victim) == before


def test_a_page_folder_linked_elsewhere_gets_no_page_written_through_it(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    victim = tmp_path / "victim"
    before = _victim(victim)
    shutil.rmtree(out / "docs")
    (out / "docs").symlink_to(victim)
    done = run("capture", url, "-o", str(out), "--no-render", "--new-version")
    assert done.returncode == 1 and "Traceback" not in done.stderr  # before: exit 3, "internal error"
    assert done.stderr.startswith(f"archiver: {out}: {out}/docs: is a symbolic link, not a folder of")
    assert _listing(victim) == before  # no b.html written into the linked folder


def test_index_reads_no_page_through_a_linked_folder(served: tuple[str, Path], tmp_path: Path) -> None:
    """Before: ``archiver index`` read ``docs/b.html`` through ``docs -> elsewhere`` and put that
    file's text in the tree's index (``archiver search`` and serve's search then showed it)."""
    _, base = served
    out = Path(shutil.copytree(base, tmp_path / "out", symlinks=True))
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "b.html").write_text("<html><body><p>zanzibarsecret</p></body></html>")
    shutil.rmtree(out / "docs")
    (out / "docs").symlink_to(secret)
    done = run("index", str(out))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"{out}/docs/b.html: is reached through a folder that is not the tree's own" in done.stderr
    found = run("search", str(out), "-q", "zanzibarsecret")
    assert "zanzibarsecret" not in found.stdout
