"""A site index of a million entries (issue 14 point 7): ``archiver verify`` and ``archiver ls`` of it
stay under 250 MB of RSS (measured with getrusage of the child process); the streaming parser that
makes it so reads exactly what ``json.loads`` reads.

The archive is made at test time: a real pack of a small tree, whose site index is then replaced by
one of 1,000,000 realistic entries (path, offset, size, type, SHA-256, kind, title, URLs: about 200 MB
of JSON), every one naming the same real member, with the index's tar header, the metadata's size and
SHA-256 and totalArchiveSize kept consistent. verify calls it INVALID (the members are listed many
times); what is measured is that neither command holds the index, or one object per entry, at once.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import tar
from archiver.gwtar import pack, parse, rules
from archiver.gwtar.read import IndexStream
from tests.gwtar.corpus import MTIME, replace_once

ROOT = Path(__file__).resolve().parents[2]
ENTRIES = 1_000_000
BUDGET = 250 << 20


def million_index_archive(folder: Path) -> Path:
    tree = folder / "tree"
    tree.mkdir()
    (tree / "index.html").write_text('<html lang="en"><title>home</title><body>hi</body></html>')
    small = folder / "small.gwtar.html"
    pack(tree, small)
    data = small.read_bytes()
    head = data[: data.index(rules.END_MARK) + len(rules.END_MARK)]
    ph = parse.parse_header(head)
    assert ph.meta is not None and ph.overhead is not None and ph.total is not None
    where = parse.index_location(ph.meta)
    assert not isinstance(where, str)
    offset, size, sha = where
    start = ph.overhead + offset
    index = json.loads(data[start : start + size])
    first = index["members"][0]
    entry = (
        '{"path":"site/page-%07d.html","offset":' + str(first["offset"]) + ',"size":' + str(first["size"])
        + ',"type":"text/html","sha256":"' + first["sha256"] + '","kind":"page","title":"Page number %d",'
        + '"urls":["https://www.example.org/site/page-%07d.html"]}'
    )  # fmt: skip
    new = (
        '{"format":"archiver-gwtar-index","version":1,"members":['
        + ",".join(entry % (i, i, i) for i in range(ENTRIES))
        + "]}"
    ).encode()
    out = folder / "million.gwtar.html"
    with out.open("wb") as f:
        body_head = data[: start - tar.BLOCK] + tar.encode_header(rules.INDEX_PATH, len(new), mtime=MTIME)
        tail = bytes(-len(new) % tar.BLOCK)
        length = len(body_head) + len(new) + len(tail) - ph.overhead
        tail += tar.end_of_archive(length)
        total = len(body_head) + len(new) + len(tail)
        body_head = replace_once(
            body_head, f'"size":"{size:024d}"'.encode(), f'"size":"{len(new):024d}"'.encode()
        )
        body_head = replace_once(body_head, sha.encode(), hashlib.sha256(new).hexdigest().encode())
        body_head = replace_once(
            body_head,
            f'let totalArchiveSize = parseInt("{ph.total:024d}")'.encode(),
            f'let totalArchiveSize = parseInt("{total:024d}")'.encode(),
        )
        f.write(body_head)
        f.write(new)
        f.write(tail)
    return out


@pytest.fixture(scope="module")
def million(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return million_index_archive(tmp_path_factory.mktemp("million"))


def peak_rss(*args: str) -> tuple[int, subprocess.CompletedProcess[bytes]]:
    """Run ``archiver ARGS`` in a fresh child (through a wrapper that reports only its own child's
    peak) and return (peak RSS in bytes, result)."""
    probe = (
        "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
        "stderr=subprocess.PIPE); sys.stderr.buffer.write(p.stderr); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "archiver", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, timeout=300,
    )  # fmt: skip
    kib, code = done.stdout.split()
    return int(kib) * 1024, subprocess.CompletedProcess(args, int(code), b"", done.stderr)


def test_verify_of_a_million_entry_index_stays_small(million: Path) -> None:
    rss, done = peak_rss("verify", str(million))
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert rss < BUDGET, f"verify peaked at {rss / 2**20:.0f} MiB"


def test_ls_of_a_million_entry_index_stays_small(million: Path) -> None:
    rss, done = peak_rss("ls", str(million))
    assert done.returncode == 0, done.stderr
    assert rss < BUDGET, f"ls peaked at {rss / 2**20:.0f} MiB"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    members=st.lists(JSON, max_size=6),
    extra=st.dictionaries(st.sampled_from(["format", "version", "x"]), JSON, max_size=3),
    chunk=st.integers(1, 9),
    space=st.sampled_from([None, 1]),
)
def test_index_stream_reads_what_json_loads_reads(
    members: list, extra: dict, chunk: int, space: int | None
) -> None:
    text = json.dumps({**extra, "members": members}, indent=space, ensure_ascii=False).encode()
    stream = IndexStream(io.BytesIO(text), 0, len(text), chunk=chunk)
    assert list(stream.members()) == members
    assert stream.saw_members and stream.fields == extra


@pytest.mark.parametrize(
    "text",
    [
        b'{"members":[1,2',
        b'{"members":[1 2]}',
        b'{"members":[1]} x',
        b'{"members":[01]}',
        b'{"members":[1],}',
        b"\xff",
    ],
)
def test_index_stream_refuses_what_json_loads_refuses(text: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        list(IndexStream(io.BytesIO(text), 0, len(text), chunk=2).members())
