"""The version store against a hostile copy (formats/history.md §4), each test the attack that broke
the old code: a version manifest listing a path twice (extract emptied the tree's own file), a
manifest that is a FIFO, a folder or a symbolic link (ls, pack and serve hung, crashed or read
outside the tree), a ``pending.json`` nested too deep or out of range (a RecursionError traceback,
the wrong field blamed)."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from archiver.errors import FormatError
from archiver.serve import running
from archiver.versions import recapture, store, storefiles
from tests.versions.helpers import two_versions
from tests.versions.test_store import V1, V2, _cli

FIRST = "20261130T090000Z"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return two_versions(tmp_path / "site", V1, V2)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line(done: object) -> None:
    err = done.stderr  # type: ignore[attr-defined]
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def _repeat_first_record(root: Path, version: str = FIRST) -> Path:
    manifest = store.store_dir(root) / f"{version}.jsonl"
    os.chmod(manifest, 0o644)
    lines = manifest.read_bytes().splitlines(keepends=True)
    manifest.write_bytes(b"".join([*lines, lines[1]]))  # `sed -n 2p F >> F`
    return manifest


# ----------------------------------------------------------------------- a path listed twice


def test_a_path_listed_twice_never_empties_the_trees_own_file(site: Path, tmp_path: Path) -> None:
    _repeat_first_record(site)
    listed = store.version_records(store.recorded(site)[0])
    path = next(listed).path
    before = {p: _sha(site / p) for p in V2}
    done = _cli("extract", str(site), "--version", FIRST, "-o", str(tmp_path / "out"))
    # old code: exit 0 and the tree's index.html 0 bytes (written through the second link)
    assert {p: _sha(site / p) for p in V2} == before
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    _one_line(done)
    assert f"{FIRST}.jsonl" in done.stderr and path in done.stderr and "listed twice" in done.stderr
    packed = _cli("pack", str(site), "--format", "gwtar", "--version", FIRST, "-o", str(tmp_path / "x.html"))
    assert packed.returncode == 1 and {p: _sha(site / p) for p in V2} == before
    _one_line(packed)
    checked = _cli("verify", str(site))  # old code: OK
    assert checked.returncode == 1
    assert "listed twice" in checked.stdout + checked.stderr and path in checked.stdout + checked.stderr


def test_ls_of_a_version_listing_a_path_twice_prints_no_listing(site: Path) -> None:
    _repeat_first_record(site)
    for args in ([], ["--json"]):
        done = _cli("ls", str(site), "--version", FIRST, *args)
        assert done.returncode == 1 and done.stdout == ""  # old code: its first three files, then exit 1
        _one_line(done)
        assert "listed twice" in done.stderr


def test_ls_versions_with_a_damaged_later_version_prints_no_listing(site: Path) -> None:
    _repeat_first_record(site, "20261201T090000Z")
    done = _cli("ls", str(site), "--versions")
    assert done.returncode == 1 and done.stdout == ""  # old code: the first version's line, then exit 1
    _one_line(done)
    assert "20261201T090000Z.jsonl" in done.stderr and "listed twice" in done.stderr


def test_every_reader_refuses_a_path_listed_twice(site: Path) -> None:
    _repeat_first_record(site)
    v = store.recorded(site)[0]
    with pytest.raises(FormatError, match="listed twice"):
        list(store.version_records(v))
    with pytest.raises(FormatError, match="listed twice"):
        store.read_version(site, v, "no/such/path.html")
    with pytest.raises(FormatError, match="listed twice"):
        store.extract(site, v, site.parent / "out")


def test_a_path_inside_another_records_file_is_refused_not_a_traceback(site: Path, tmp_path: Path) -> None:
    manifest = store.store_dir(site) / f"{FIRST}.jsonl"
    os.chmod(manifest, 0o644)
    lines = manifest.read_bytes().splitlines(keepends=True)
    first = lines[1].decode()
    path = first.split('"path":"', 1)[1].split('"', 1)[0]
    manifest.write_bytes(b"".join([*lines, first.replace(f'"path":"{path}"', f'"path":"{path}/x"').encode()]))
    done = _cli("extract", str(site), "--version", FIRST, "-o", str(tmp_path / "out"))
    assert done.returncode == 1 and not (tmp_path / "out").exists()
    _one_line(done)


# --------------------------------------------------------------------- a manifest not a file


def _fifo(root: Path) -> Path:
    fifo = store.store_dir(root) / "20261129T000000Z.jsonl"
    os.mkfifo(fifo)
    return fifo


def _release(fifo: Path) -> None:
    """Open the FIFO's other end, so a reader the old code left blocked on it goes on."""
    with contextlib.suppress(OSError):
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_a_fifo_manifest_holds_neither_ls_nor_pack(site: Path, tmp_path: Path) -> None:
    fifo = _fifo(site)
    try:
        listed = _cli_quick("ls", str(site), "--versions")  # old code: waited on open forever
        assert listed.returncode == 0, listed.stderr
        packed = _cli_quick(
            "pack", str(site), "--format", "gwtar", "--all-versions", "-o", str(tmp_path / "a.html")
        )
        assert packed.returncode == 0, packed.stderr
        checked = _cli_quick("verify", str(site))
        assert checked.returncode == 1 and "is not a regular file" in checked.stdout + checked.stderr
    finally:
        _release(fifo)
    assert [v.id for v in store.recorded(site)] == [FIRST, "20261201T090000Z"]


def _cli_quick(*args: str) -> object:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=30
    )


def test_a_manifest_opened_as_it_turns_into_a_fifo_is_a_format_error(site: Path) -> None:
    fifo = _fifo(site)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(_try(lambda: storefiles.decode_manifest(fifo))))
    reader.start()
    reader.join(10)
    _release(fifo)
    reader.join(10)
    assert done and isinstance(done[0], FormatError) and "not a regular file" in str(done[0])


def _try(call: object) -> object:
    try:
        return call()  # type: ignore[operator]
    except Exception as e:  # the test looks at it
        return e


def test_a_folder_under_a_manifests_name_is_no_version(site: Path) -> None:
    (store.store_dir(site) / "20261129T000000Z.jsonl").mkdir()
    listed = _cli("ls", str(site), "--versions")  # old code: IsADirectoryError, exit 70
    assert listed.returncode == 0, listed.stderr
    checked = _cli("verify", str(site))
    assert checked.returncode == 1 and "is not a regular file" in checked.stdout + checked.stderr


def test_a_symlinked_manifest_is_not_read_outside_the_tree(site: Path, tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:SECRET-LINE\n")
    (store.store_dir(site) / "20261129T000000Z.jsonl").symlink_to(outside)
    for args in (["ls", str(site), "--versions"], ["diff", str(site)], ["verify", str(site)]):
        done = _cli(*args)
        assert "SECRET-LINE" not in done.stdout + done.stderr, args  # old code: in ls's error
        assert "Traceback" not in done.stderr
    with pytest.raises(FormatError, match="symbolic link"):
        storefiles.decode_manifest(store.store_dir(site) / "20261129T000000Z.jsonl")


@pytest.fixture
def served_with_fifo(site: Path) -> Iterator[tuple[str, int]]:
    fifo = _fifo(site)
    try:
        with running([site]) as url:
            yield url, int(urlsplit(url).port or 0)
    finally:
        _release(fifo)


def test_a_fifo_manifest_does_not_hold_serves_timemap(served_with_fifo: tuple[str, int]) -> None:
    _base, port = served_with_fifo
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:  # old code: no answer (the server's one loop waited on the FIFO)
        conn.request("GET", "/~/timemap/site/index.html", headers={"Host": f"localhost:{port}"})
        reply = conn.getresponse()
        body = reply.read()
    finally:
        conn.close()
    assert reply.status == 200 and body.count(b'rel="memento') + body.count(b"memento") >= 2


# ---------------------------------------------------------------------------- pending.json


@pytest.mark.parametrize("depth", [100_000, 2_000])  # over the size bound; within it, too deep to parse
def test_a_pending_mark_nested_too_deep_is_one_line_naming_it(site: Path, depth: int) -> None:
    (store.store_dir(site) / store.PENDING).write_text("[" * depth + "]" * depth + "\n")
    for args in (["ls", str(site), "--versions"], ["diff", str(site)]):
        done = _cli(*args)  # old code: RecursionError traceback, exit 70
        assert done.returncode == 1, (args, done.stderr)
        _one_line(done)
        assert store.PENDING in done.stderr
    with pytest.raises(FormatError) as caught:
        recapture.begin(site)
    assert store.PENDING in str(caught.value.subject)


def test_a_pending_start_out_of_range_blames_started_not_created(site: Path) -> None:
    (store.store_dir(site) / store.PENDING).write_text('{"started":"0000-01-01T00:00:00Z"}\n')
    done = _cli("ls", str(site), "--versions")
    assert done.returncode == 1
    _one_line(done)
    assert store.PENDING in done.stderr and "started" in done.stderr and "created" not in done.stderr


def test_a_pending_mark_that_is_a_fifo_holds_nothing(site: Path) -> None:
    mark = store.store_dir(site) / store.PENDING
    os.mkfifo(mark)
    try:
        done = _cli_quick("ls", str(site), "--versions")
    finally:
        _release(mark)
    assert done.returncode == 1 and "not a regular file" in done.stderr  # type: ignore[attr-defined]


def test_a_version_record_nested_too_deep_is_named_by_verify(site: Path) -> None:
    manifest = store.store_dir(site) / f"{FIRST}.jsonl"
    os.chmod(manifest, 0o644)
    with manifest.open("ab") as f:
        f.write(b'{"x":' + b"[" * 5000 + b"]" * 5000 + b"}\n")  # an unknown member, skipped
    checked = _cli("verify", str(site))  # msgspec raises RecursionError, not DecodeError
    assert checked.returncode == 1 and "Traceback" not in checked.stderr  # old code: exit 70
    assert f"{FIRST}.jsonl" in checked.stdout + checked.stderr


# ------------------------------------------------------------- a manifest swapped after its check


@pytest.mark.parametrize("swapped_in", [b"../../ntro.html", b"docs/intrX.html"])
def test_what_is_extracted_is_the_manifest_checked_not_one_swapped_in_after(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped_in: bytes
) -> None:
    """``extract --version`` and ``pack --version`` (both :func:`store.extract`) read the version
    manifest once: the attack renames a manifest of the same size over the checked one as the check
    ends. Old code read it again by its name (twice: the records, then the bytes written as the
    output's manifest): a ``../`` path failed the extraction after the check had passed it, another
    path was extracted unchecked, and the output's manifest was the swapped one."""
    manifest = store.store_dir(site) / f"{FIRST}.jsonl"
    checked = manifest.read_bytes()
    hostile = checked.replace(b'"path":"docs/intro.html"', b'"path":"' + swapped_in + b'"')
    assert len(hostile) == len(checked) and hostile != checked
    real = store.problems_of_version

    def then_swap(*args: object, **kwargs: object) -> Iterator[tuple[str, str]]:
        yield from real(*args, **kwargs)  # type: ignore[arg-type]
        os.chmod(manifest, 0o644)
        swap = manifest.with_name("swap.tmp")
        swap.write_bytes(hostile)
        os.replace(swap, manifest)

    monkeypatch.setattr(store, "problems_of_version", then_swap)
    out = tmp_path / "a" / "b" / "out"
    out.parent.mkdir(parents=True)
    assert store.extract(site, store.recorded(site)[0], out) == len(V1)
    assert not (out / "docs" / "intrX.html").exists() and not (tmp_path / "a" / "ntro.html").exists()
    assert (out / "docs" / "intro.html").read_text() == V1["docs/intro.html"]
    written = (out / "_archiver" / "manifest.jsonl").read_bytes()
    assert swapped_in not in written and b'"path":"docs/intro.html"' in written


# -------------------------------------------------------------- a run's report that is a link


def test_a_report_that_is_a_symbolic_link_is_read_by_no_one(site: Path, tmp_path: Path) -> None:
    """The run's report is read as the store copies it (``store._report_bytes``): a regular file,
    never a symbolic link's target (old code: ``diff``'s and serve's failures, and a re-capture's
    "complete", were read from a file outside the tree)."""
    from archiver.urls import REPORT_NAME, RESERVED_DIR
    from archiver.versions import reports

    outside = tmp_path / "elsewhere.json"
    failed = {"url": "http://site.localhost/docs/intro.html", "outcome": "failed", "status": 404}
    outside.write_text(json.dumps({"complete": True, "items": [failed]}))
    assert reports.report_items(site, SimpleNamespace(recorded=False, id="x")) == []
    own = site / RESERVED_DIR / REPORT_NAME
    own.unlink(missing_ok=True)
    own.symlink_to(outside)
    first = store.recorded(site)[0]
    kept = store.store_dir(site) / f"{first.id}.report.json"
    kept.unlink(missing_ok=True)
    kept.symlink_to(outside)
    assert reports.report_items(site, SimpleNamespace(recorded=False, id="x")) == []  # old code: [failed]
    assert reports.report_items(site, first) == []  # old code: [failed]
    assert not reports.failures(site, first)
    assert recapture._complete(site) is False  # old code: True
    assert store._report_bytes(own) is None  # as the store already did


# ----------------------------------------------------------------------- a sparse terabyte manifest


def test_a_sparse_terabyte_tree_manifest_is_refused_unread(site: Path) -> None:
    """The tree's own manifest made a sparse file of 1 TiB: ``ls --versions`` (and a re-capture's
    start) read it whole to compare it with the newest version's: MemoryError, a traceback, exit 70.
    Now a FormatError naming it, one line, exit 1; and the records' whole read refuses it too."""
    manifest = site / "_archiver" / "manifest.jsonl"
    os.truncate(manifest, 1 << 40)
    done = _cli("ls", str(site), "--versions")
    assert done.returncode == 1, done.stderr
    _one_line(done)
    assert f"{manifest}: is larger than" in done.stderr
    with pytest.raises(FormatError, match="is larger than"):
        store.manifest_records(site)
