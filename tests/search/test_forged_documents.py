"""A forged format 1-2 manifest claiming far more documents than its index holds (formats/search.md
§4.2): the server's engine made a bitmask of ``documents / 8`` bytes per term from it (an index of
2,000,000,001 documents and 64 terms naming the last one: 13 s of CPU, then MemoryError under 3 GB).
The manifest's fragment groups must number exactly its documents, each group holding at most
MAX_GROUP_DOCUMENTS, so the masks stay within what the manifest itself lists."""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys

import pytest

from archiver.errors import FormatError
from archiver.search import build, query
from tests.search.helpers import build_files, html

PAGES = [(f"p{i}.html", html(f"Page {i}", f"<p>page words number {i}</p>")) for i in range(5)]
HUGE = 2_000_000_001


def _forged(version: int, documents: int, docs: list[list[object]] | None = None) -> dict[str, bytes]:
    """A real index of PAGES whose manifest says ``documents`` (and ``docs`` as its fragment table),
    with a shard of 64 terms each naming document ``documents - 1``."""
    files = build_files(PAGES, version=version)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    flat = [documents - 1, 1, 0, 0, 5, 1, 0] if version < 3 else [documents - 1, 1, 0, 0]
    terms = [[f"page{k:03d}", build.pack_numbers(flat)] for k in range(64)]
    payload = json.dumps(terms, separators=(",", ":")).encode()
    if version >= 3:
        payload = build.deflate(payload)
    files = {n: d for n, d in files.items() if not n.startswith("t/")}
    files["t/0"] = build.wrap("t/0", payload)
    manifest["documents"] = documents
    manifest["shards"] = [["page000", "page063", len(files["t/0"]), hashlib.sha256(payload).hexdigest(), 64]]
    if docs is not None:
        manifest["docs"] = docs
    files["manifest"] = build.manifest_bytes(manifest)
    return files


@pytest.mark.parametrize("version", [1, 2])
def test_a_manifest_claiming_more_documents_than_its_groups_hold_is_refused(version: int) -> None:
    files = _forged(version, HUGE)
    with pytest.raises(FormatError, match=f"says {HUGE} documents, its fragment groups hold 5"):
        query.Index(files.__getitem__, "mem")


@pytest.mark.parametrize("version", [1, 2])
def test_a_fragment_group_claiming_two_billion_documents_is_refused(version: int) -> None:
    real = json.loads(build.payload_of("manifest", build_files(PAGES, version=version)["manifest"]))
    group = real["docs"][0]
    files = _forged(version, HUGE, [[0, HUGE - 1, group[2], group[3]]])
    with pytest.raises(FormatError, match="do not number the documents in order"):
        query.Index(files.__getitem__, "mem")
    gaps = [[0, 0, group[2], group[3]], [HUGE - 1, HUGE - 1, group[2], group[3]]]
    with pytest.raises(FormatError, match="do not number the documents in order"):
        query.Index(_forged(version, HUGE, gaps).__getitem__, "mem")


def test_every_real_index_still_opens() -> None:
    for version in (1, 2, 3):
        for group_bytes in (1, 128, 4096):
            files = build_files(PAGES, version=version, group_bytes=group_bytes)
            index = query.Index(files.__getitem__, "mem")
            assert index.documents == 5
            assert query.search([index], "page").total == 5
    empty = build_files([], version=2)
    assert query.Index(empty.__getitem__, "mem").documents == 0


_ENGINE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from archiver.errors import FormatError
from archiver.search import engine, query
from tests.search.test_forged_documents import HUGE, _forged
files = _forged(2, HUGE)
try:
    index = query.Index(files.__getitem__, "mem")
    engine.Engine(1 << 29).search([index], [1], "page")
except FormatError as e:
    print("refused:", e.message)
"""


def test_the_engine_is_not_made_to_build_huge_bitmasks() -> None:
    """The attack as the server met it (one query for a prefix of the 64 terms), under 1 GB of
    address space: refused in well under a second, no MemoryError."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-c", _ENGINE], capture_output=True, text=True, timeout=120)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused: says 2000000001 documents")
    assert after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime < 10


def test_format_3_lengths_still_bound_its_documents() -> None:
    files = _forged(3, 6)  # lengths list 5 documents: the manifest is refused as before
    with pytest.raises(FormatError, match="tables are malformed"):
        query.Index(files.__getitem__, "mem")
