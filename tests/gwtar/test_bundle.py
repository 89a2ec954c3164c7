"""The bundle (formats/gwtar.md §5.5): a gwtar packed with a search index stores the index's files as
one tar member, each still a site index entry of its own; readers see the files as before, ``verify``
and ``extract`` check the table, and a forged one is refused with one line."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from archiver.cli import main
from archiver.errors import FormatError
from archiver.gwtar import layout, parse, read, rules
from archiver.gwtar.extract import extract
from archiver.gwtar.verify import verify
from archiver.gwtar.write import pack
from tests.gwtar.corpus import STUB_LOADER

PREFIX = "_archiver/search/"


def _tar_names(path: Path) -> list[str]:
    with read.open(path) as g, path.open("rb") as f:
        return [e.name for e in read.TarWalk(f, g.overhead, g.total_archive_size)]


def _meta(path: Path) -> dict:
    return parse.parse_header(read.read_header_bytes(path.open("rb"))).meta or {}


def test_the_index_is_one_member_and_every_reader_sees_its_files(tmp_path: Path, mini_tree: Path) -> None:
    out = pack(mini_tree, tmp_path / "a.gwtar.html", loader=STUB_LOADER, search_index=True).path
    plain = pack(mini_tree, tmp_path / "b.gwtar.html", loader=STUB_LOADER).path
    names = _tar_names(out)
    assert rules.BUNDLE_PATH in names and not any(n.startswith(PREFIX) for n in names)
    meta = _meta(out)
    assert meta["version"] == rules.BUNDLE_VERSION and b"<!-- archiver gwtar 2; " in out.read_bytes()[:200]
    assert _meta(plain)["version"] == 1 and "bundle" not in _meta(plain)
    assert rules.BUNDLE_PATH not in _tar_names(plain)
    with read.open(out) as g:
        files = {m.path: g.read(m) for m in g.members if m.path.startswith(PREFIX)}
        assert meta["members"] == len(g.members)
        first, count = meta["bundle"]["first"], meta["bundle"]["count"]
        assert [m.path for m in g.members[first : first + count]] == sorted(files)
    assert len(files) > 5 and f"{PREFIX}manifest.js" in files
    report = verify(out, links=False)
    assert report.ok, report.problems
    assert report.members == meta["members"] and report.search
    got = tmp_path / "x"
    extract(out, got)
    for path, data in files.items():
        assert (got / path).read_bytes() == data
    assert not (got / rules.BUNDLE_PATH).exists()
    # the same input gives the same bytes
    again = pack(mini_tree, tmp_path / "c.gwtar.html", loader=STUB_LOADER, search_index=True).path
    assert again.read_bytes() == out.read_bytes()


def _forged(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, change: Callable[[str, int, int], tuple]
) -> Path:
    """A pack whose bundled files' site index entries are rewritten by ``change(path, offset, size)``
    -> (path, offset, size): the index's own SHA-256 still matches, as a forger would make it."""
    real = layout._entry_parts

    def forged(spec: layout.MemberSpec, offset: int) -> tuple[bytes, bytes]:
        if spec.path.startswith(PREFIX):
            path, offset, size = change(spec.path, offset, spec.size)
            spec = layout.MemberSpec(**{**spec.__dict__, "path": path, "size": size})
        return real(spec, offset)

    monkeypatch.setattr(layout, "_entry_parts", forged)
    out = pack(mini_tree, tmp_path / "forged.gwtar.html", loader=STUB_LOADER, search_index=True).path
    monkeypatch.setattr(layout, "_entry_parts", real)
    return out


X0 = f"{PREFIX}x/0.js"
MID = f"{PREFIX}manifest.js"  # neither the first bundled file nor the last
JS = f"{PREFIX}search.js"


@pytest.mark.parametrize(
    ("forge", "why"),
    [
        ("longer-last", "past the bundle's end"),
        ("shorter-last", "belong to no file"),
        ("earlier", "overlaps the one before it"),
        ("later", "leaves a gap"),
        ("tar-name", "named twice"),
    ],
)
def test_a_forged_table_is_refused_by_verify_and_extract(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, forge: str, why: str
) -> None:
    with read.open(
        pack(mini_tree, tmp_path / "a.gwtar.html", loader=STUB_LOADER, search_index=True).path
    ) as g:
        last = max((m for m in g.members if m.path.startswith(PREFIX)), key=lambda m: m.offset).path
    assert last not in (MID, JS)
    changes: dict[str, Callable[[str, int, int], tuple]] = {
        "longer-last": lambda p, o, s: (p, o, s + 700) if p == last else (p, o, s),
        "shorter-last": lambda p, o, s: (p, o, s - 1) if p == last else (p, o, s),
        "earlier": lambda p, o, s: (p, o - 10, s) if p == MID else (p, o, s),
        "later": lambda p, o, s: (p, o + 1, s) if p == MID else (p, o, s),
        "tar-name": lambda p, o, s: ("index.html", o, s) if p == JS else (p, o, s),
    }
    out = _forged(tmp_path, mini_tree, monkeypatch, changes[forge])
    report = verify(out, links=False)
    assert not report.ok
    assert any(why in p.message for p in report.problems), report.problems
    target = tmp_path / "x"
    with pytest.raises(FormatError) as e:
        extract(out, target)
    assert "\n" not in str(e.value) and ("nothing extracted" in str(e.value) or "twice" in str(e.value))
    assert not target.exists()


def test_an_escaping_name_in_the_table_is_refused(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _forged(
        tmp_path, mini_tree, monkeypatch, lambda p, o, s: ("../../evil.js", o, s) if p == X0 else (p, o, s)
    )
    report = verify(out, links=False)
    assert any("malformed" in p.message for p in report.problems), report.problems
    with pytest.raises(FormatError, match="malformed") as e:
        extract(out, tmp_path / "x")
    assert "\n" not in str(e.value)
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "evil.js").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_ls_of_a_malformed_table_prints_its_one_line_and_no_listing(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:  # fmt: skip
    out = _forged(
        tmp_path, mini_tree, monkeypatch, lambda p, o, s: ("../../evil.js", o, s) if p == X0 else (p, o, s)
    )
    capsys.readouterr()
    code = main(["ls", str(out), *(["--json"] if as_json else [])])
    done = capsys.readouterr()
    assert code == 1 and done.out == ""  # old code: the 20 entries before the bad one, then exit 1
    assert len(done.err.splitlines()) == 1 and "site index entry 20 is malformed" in done.err


def test_ls_of_a_good_file_lists_what_the_reader_reads(
    tmp_path: Path, mini_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = pack(mini_tree, tmp_path / "a.gwtar.html", loader=STUB_LOADER, search_index=True).path
    capsys.readouterr()
    assert main(["ls", str(out), "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    with read.open(out) as g:
        assert [(d["path"], d["size"]) for d in listed] == [(m.path, m.size) for m in g.members]


def test_a_damaged_bundled_file_is_refused(tmp_path: Path, mini_tree: Path) -> None:
    out = pack(mini_tree, tmp_path / "a.gwtar.html", loader=STUB_LOADER, search_index=True).path
    with read.open(out) as g:
        at = g.member(X0).offset
    data = bytearray(out.read_bytes())
    data[at] ^= 1
    out.write_bytes(bytes(data))
    report = verify(out, links=False)
    assert any(p.member == X0 and "SHA-256" in p.message for p in report.problems), report.problems
    with pytest.raises(FormatError, match=r"SHA-256|hash"):
        extract(out, tmp_path / "x")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("bundle", "why"),
    [
        ({"offset": 0, "size": 10, "first": 0, "count": 1}, "is not the tar member"),
        ({"size": 10, "first": 0, "count": 1}, "not a decimal number"),
        ({"offset": 512, "size": 10, "first": -1, "count": 1}, "not entry numbers"),
    ],
)
def test_a_forged_bundle_location_is_refused(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, bundle: dict, why: str
) -> None:
    real = layout.script_json

    def forged(obj: object, *, indent: int | None = None) -> str:
        if isinstance(obj, dict) and "bundle" in obj:
            obj = {**obj, "bundle": bundle}
        return real(obj, indent=indent)

    monkeypatch.setattr(layout, "script_json", forged)
    out = pack(mini_tree, tmp_path / "a.gwtar.html", loader=STUB_LOADER, search_index=True).path
    monkeypatch.setattr(layout, "script_json", real)
    report = verify(out, links=False)
    assert any(why in p.message for p in report.problems), report.problems
    with pytest.raises(FormatError, match=why) as e:
        extract(out, tmp_path / "x")
    assert "\n" not in str(e.value)


def test_version_1_files_read_as_before(tmp_path: Path, mini_tree: Path) -> None:
    """A version-1 file with its index files as members (what earlier releases wrote) still reads,
    verifies and extracts: the writer makes one when nothing is bundled."""
    real = layout.bundle
    mp = pytest.MonkeyPatch()
    mp.setattr(layout, "bundle", lambda members, prefix: None)
    try:
        out = pack(mini_tree, tmp_path / "old.gwtar.html", loader=STUB_LOADER, search_index=True).path
    finally:
        mp.undo()
    assert layout.bundle is real
    assert _meta(out)["version"] == 1
    assert any(n.startswith(PREFIX) for n in _tar_names(out))
    assert verify(out, links=False).ok
    extract(out, tmp_path / "x")
    assert (tmp_path / "x" / f"{PREFIX}manifest.js").is_file()


def test_a_held_listing_past_its_memory_bound_prints_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """What ``ls`` holds past :data:`HOLD_IN_MEMORY` goes through a temporary file, in order."""
    from archiver.cli import output

    lines = [f"{i:>12}  text/html  p/é-{i}.html" for i in range(5000)]
    monkeypatch.setattr(output, "HOLD_IN_MEMORY", 1000)
    output._print_checked(iter(lines))
    assert capsysbinary.readouterr().out == "".join(f"{line}\n" for line in lines).encode()

    def broken() -> Iterator[str]:
        yield from lines
        raise FormatError("entry 5000 is malformed")

    with pytest.raises(FormatError):
        output._print_checked(broken())
    assert capsysbinary.readouterr().out == b""
    text = io.StringIO()  # a text-only stdout: the same characters
    monkeypatch.setattr(sys, "stdout", text)
    output._print_checked(iter(lines))
    assert text.getvalue() == "".join(f"{line}\n" for line in lines)


def _swapped_after_the_walk(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, swap: Callable[[Path], None]
) -> pytest.ExceptionInfo[FormatError]:
    """Pack ``mini_tree`` with its own index, ``swap`` applied to a bundled file (not the first)
    after the walk and the plan, as the body is about to be written."""
    from archiver.gwtar import write
    from archiver.search import store

    store.write_index(mini_tree)
    victim = mini_tree / MID
    real = write.write_body

    def swapping(*args: object, **kw: object) -> object:
        swap(victim)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(write, "write_body", swapping)
    with pytest.raises(FormatError) as e:
        pack(mini_tree, tmp_path / "out.gwtar.html", loader=STUB_LOADER, search_index=True)
    assert str(e.value.subject).endswith(MID)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tree"], "no output, no temporary file"
    return e


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("swap", "why"),
    [
        (_fifo, "cannot read|not a regular file"),
        (_folder, "not a regular file"),
        (lambda p: p.write_bytes(p.read_bytes() + b"more"), r"expected \d+ \(changed\?\)"),
        (lambda p: p.write_bytes(p.read_bytes()[:-3]), r"expected \d+ \(changed\?\)"),
        (lambda p: p.unlink(), "cannot read"),
    ],
    ids=["fifo", "folder", "grew", "shrank", "gone"],
)
def test_a_bundled_file_changed_after_the_walk_stops_the_pack(
    tmp_path: Path, mini_tree: Path, monkeypatch: pytest.MonkeyPatch, swap: Callable[[Path], None], why: str
) -> None:
    """The bundle's files are read by their own loop (one read each, a descriptor per folder): a file
    of the tree's index replaced by a FIFO (never waited on), a folder, or changed in size after the
    walk is an error naming it, as any other member's is, and nothing is left."""
    e = _swapped_after_the_walk(tmp_path, mini_tree, monkeypatch, swap)
    assert re.search(why, e.value.message), e.value.message
