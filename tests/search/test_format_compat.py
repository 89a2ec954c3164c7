"""Format 2 (postings as strings, formats/search.md §4.3) beside format 1, which the last release
wrote: the Python reader and js/search.js read both and find the same pages with the same scores and
snippets; format 2 is smaller; a damaged postings string is named; a newer format is refused."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.errors import FormatError
from archiver.search import build, engine, query
from tests.search.helpers import build_files, plain_files
from tests.search.test_js_ranking import _JS, NODE, PAGES, QUERIES, ROOT


def _results(files: dict[str, bytes]) -> list[list[object]]:
    index = query.Index(files.__getitem__, "mem")
    return [
        [
            (r.path, r.score, r.snippet.text, r.snippet.marks)
            for r in query.search([index], q, limit=100).results
        ]
        for q in QUERIES
    ]


def _js(files: dict[str, bytes]) -> list[object]:
    decoded = plain_files(files)
    done = subprocess.run(
        [NODE, "-e", _JS, str(ROOT / "js" / "search.js")],
        input=json.dumps({"files": decoded, "queries": QUERIES}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_format_1_and_2_find_the_same_pages_in_python_and_in_javascript() -> None:
    old = build_files(PAGES, shard_bytes=256, group_bytes=128, version=1)
    new = build_files(PAGES, shard_bytes=256, group_bytes=128, version=2)
    assert json.loads(build.payload_of("manifest", old["manifest"]))["version"] == 1
    assert json.loads(build.payload_of("manifest", new["manifest"]))["version"] == 2
    shard = json.loads(build.payload_of("t/0", old["t/0"]))
    assert isinstance(shard[0][1], list)  # format 1: numbers, as the last release wrote them
    assert isinstance(json.loads(build.payload_of("t/0", new["t/0"]))[0][1], str)
    assert _results(old) == _results(new)
    assert any(_results(new))
    assert _js(old) == _js(new)
    postings = sum(len(d) for n, d in old.items() if n.startswith("t/"))
    assert sum(len(d) for n, d in new.items() if n.startswith("t/")) < 0.75 * postings


@given(st.lists(st.integers(0, 2**40), max_size=60))
def test_postings_strings_round_trip(numbers: list[int]) -> None:
    text = build.pack_numbers(numbers)
    assert build.unpack_numbers(text) == numbers
    assert json.dumps(text) == f'"{text}"'  # no character JSON escapes


def test_javascript_unpacks_what_python_packs() -> None:
    cases = [[0], [31, 32, 1023, 1024, 32767, 32768, 10**9, 2**40], list(range(0, 5000, 37)), []]
    script = (
        "const s = require(process.argv[1]);"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(cases.map((c) => s.unpack(c))));"
    )
    done = subprocess.run(
        [NODE, "-e", script, str(ROOT / "js" / "search.js")],
        input=json.dumps([build.pack_numbers(c) for c in cases]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == cases


def _reseal(files: dict[str, bytes], name: str, payload: bytes) -> None:
    """Replace file ``name`` and make the manifest's size and SHA-256 agree (damage a check passes)."""
    files[name] = build.wrap(name, payload)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    row = manifest["shards"][int(name.split("/")[1])]
    row[2], row[3] = len(files[name]), hashlib.sha256(payload).hexdigest()
    files["manifest"] = build.manifest_bytes(manifest)


@pytest.mark.parametrize("bad", ["!!", "Z", "a\\u00e9"])
def test_a_malformed_postings_string_is_named(bad: str) -> None:
    files = build_files(PAGES, version=2)
    rows = json.loads(build.payload_of("t/0", files["t/0"]))
    rows[0][1] = json.loads(f'"{bad}"')
    _reseal(files, "t/0", json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode())
    index = query.Index(files.__getitem__, "mem")
    with pytest.raises(FormatError) as caught:
        index.shard(0)
    assert caught.value.subject == "mem/t/0.js" and "postings" in caught.value.message


def test_format_3_finds_what_format_2_finds_and_is_smaller() -> None:
    """Format 3 (compressed files, the text table in the fragment groups, no headings in the
    fragments): the same results in Python and in JavaScript as format 2, the manifest lists no
    text file, and the index is smaller."""
    old = build_files(PAGES * 4, shard_bytes=256, group_bytes=128, version=2)
    new = build_files(PAGES * 4, shard_bytes=256, group_bytes=128)
    manifest = json.loads(build.payload_of("manifest", new["manifest"]))
    assert manifest["version"] == 3 and "text" not in manifest and manifest["text_files"] > 1
    assert _results(old) == _results(new)
    assert any(_results(new))
    assert _js(old) == _js(new)
    assert sum(map(len, new.values())) < 0.7 * sum(map(len, old.values()))


def test_javascript_inflates_what_python_deflates() -> None:
    values = [[["fox", "5e1WW1"]], {"docs": [["a.html", "Alpha", [], [0]]], "text": []}, "東京 é" * 500, []]
    script = (
        "const s = require(process.argv[1]);"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "Promise.all(cases.map((c) => s.inflate(c))).then((v) => process.stdout.write(JSON.stringify(v)));"
    )
    packed = [json.loads(build.deflate(json.dumps(v, ensure_ascii=False).encode())) for v in values]
    done = subprocess.run(
        [NODE, "-e", script, str(ROOT / "js" / "search.js")],
        input=json.dumps(packed),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == values


@pytest.mark.parametrize(
    "bad",
    [b'"!!!!"', b'"' + base64.b64encode(b"not zlib") + b'"', b"[1,2]",
     build.deflate(b"[1,2]")[:-6] + b'"', b'"' + base64.b64encode(zlib.compress(b" " * (80 << 20))) + b'"'],
)  # fmt: skip
def test_a_damaged_compressed_file_is_named(bad: bytes) -> None:
    """A format 3 file whose size and SHA-256 agree with the manifest but whose payload is no
    base-64, no zlib stream, a cut stream or a bomb expanding past the bound: a FormatError naming it."""
    files = build_files(PAGES)
    _reseal(files, "t/0", bad)
    index = query.Index(files.__getitem__, "mem")
    with pytest.raises(FormatError) as caught:
        index.shard(0)
    assert caught.value.subject == "mem/t/0.js"
    assert "compress" in caught.value.message or "expands" in caught.value.message


def test_a_newer_format_is_refused() -> None:
    files = build_files(PAGES)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    manifest["version"] = build.VERSION + 1
    files["manifest"] = build.manifest_bytes(manifest)
    with pytest.raises(FormatError, match="newer than this archiver reads"):
        query.Index(files.__getitem__, "mem")


@pytest.mark.parametrize("numbers", [[99, 0, 0, 1, 5], [0, 0, 0, 3, 1], [0, 1]])
def test_a_format_3_posting_that_is_cut_or_names_no_document_is_named(numbers: list[int]) -> None:
    """Format 3's postings take their lengths from the manifest (§4.3): a posting naming a document
    past ``documents``, one with fewer positions than its frequencies say, one cut short: the shard
    is named, in Python, instead of an IndexError or a wrong score."""
    files = build_files(PAGES)
    rows = json.loads(build.inflate(build.payload_of("t/0", files["t/0"])))
    rows[0][1] = build.pack_numbers(numbers)
    _reseal(files, "t/0", build.deflate(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode()))
    index = query.Index(files.__getitem__, "mem")
    with pytest.raises(FormatError) as caught:
        index.postings(rows[0][0], False)
    assert caught.value.subject == "mem/t/0.js" and "malformed" in caught.value.message


def test_format_3_hashes_are_128_bits_and_a_shorter_one_is_refused() -> None:
    files = build_files(PAGES)
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    assert {len(row[3]) for row in manifest["shards"] + manifest["docs"]} == {32}
    manifest["shards"][0][3] = manifest["shards"][0][3][:16]  # 64 bits: too weak to accept
    files["manifest"] = build.manifest_bytes(manifest)
    with pytest.raises(FormatError, match="SHA-256"):
        query.Index(files.__getitem__, "mem").shard(0)


@pytest.mark.parametrize(
    "postings",
    [[0, -4, 0, 0], [-1, 1, 0, 0, 0], [3, 1, 0, 0, 0, -3, 1, 0, 0, 0], [0.5, 1, 0, 0, 0],
     [0, 1, 0, 0, "x"], [[0], 1, 0, 0, 0], [True, 1, 0, 0, 0], {"a": 1}],
)  # fmt: skip
def test_postings_as_a_list_must_be_counts(postings: object) -> None:
    """A format 1 list in a forged shard (its hash resealed): a negative count walked the decoder
    back (``[0, -4, 0, 0]`` held `archiver search` and serve's search API in an endless loop at 100 %
    CPU), a negative delta named document -1 (Python's last), a float or a string was a traceback.
    The shard is named when it is loaded."""
    files = build_files(PAGES)
    rows = json.loads(build.inflate(build.payload_of("t/0", files["t/0"])))
    rows[0][1] = postings
    _reseal(files, "t/0", build.deflate(json.dumps(rows, separators=(",", ":")).encode()))
    index = query.Index(files.__getitem__, "mem")
    with pytest.raises(FormatError) as caught:
        index.shard(0)  # (the old code returned it: its postings then looped or raised)
    assert caught.value.subject == "mem/t/0.js" and "malformed" in caught.value.message
    # serve's engine reads the shard its own way: the same refusal (its loop held the whole server)
    with pytest.raises(FormatError) as caught:
        engine.Engine(1 << 20)._shard(query.Index(files.__getitem__, "mem"), "k", 0)
    assert caught.value.subject == "mem/t/0.js" and "malformed" in caught.value.message


@pytest.mark.parametrize("name", ["manifest", "t/0"])
def test_json_nested_past_the_parsers_stack_is_not_valid_json(name: str) -> None:
    """Before: a payload of 100,000 '[' (then as many ']') raised RecursionError: `archiver search`
    and `verify` died with a traceback (exit 70)."""
    files = build_files(PAGES)
    deep = b"[" * 100_000 + b"]" * 100_000
    if name == "manifest":
        files["manifest"] = build.wrap("manifest", deep)
        with pytest.raises(FormatError, match="is not valid JSON"):
            query.Index(files.__getitem__, "mem")
        return
    _reseal(files, name, build.deflate(deep))
    with pytest.raises(FormatError, match="is not valid JSON") as caught:
        query.Index(files.__getitem__, "mem").shard(0)
    assert caught.value.subject == "mem/t/0.js"
