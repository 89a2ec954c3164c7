"""The broken-gwtar corpus: damaged and hostile files, each with the exit code ``archiver verify`` must
give and a phrase its report must contain.

    python -m tests.gwtar.corpus [OUT]     # default: testdata/gwtar (writes v1/ and broken/)

Tests build the corpus afresh in a temporary folder (including the 50 MB one, which is never
committed) and also check the committed copy, so the files other engineers use stay meaningful.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from archiver import tar
from archiver.gwtar import pack, parse, rules
from tests.gwtar.v1ref import MTIME, SAMPLE_HTML, Asset, add_fec_tail, build_v1, sample_assets

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"
#: A loader stand-in for fixtures and unit tests until js/loader.js lands (and to keep fixtures stable).
STUB_LOADER = "window.stop();\n/* archiver gwtar loader stand-in for tests */\n"


@dataclass(frozen=True)
class Case:
    name: str
    exit: int  # what verify must give: 0 valid (tolerated oddity), 1 invalid, 2 unreadable
    phrase: str  # a phrase the report's lines must contain
    extract_refused: bool = False  # extract must refuse with a FormatError


def ours(out: Path) -> bytes:
    pack(MINI, out, loader=STUB_LOADER)
    return out.read_bytes()


def _fields(data: bytes) -> parse.ParsedHeader:
    ph = parse.parse_header(data[: data.index(rules.END_MARK) + len(rules.END_MARK)])
    assert not ph.problems, ph.problems
    return ph


def replace_once(data: bytes, old: bytes, new: bytes) -> bytes:
    at = data.index(old)
    return data[:at] + new + data[at + len(old) :]


def rewrite_index(data: bytes, change: Callable[[dict], dict]) -> bytes:
    """Rewrite the site index member (the last one) with ``change``, keeping the file consistent
    otherwise: the index's tar header, the end blocks, the metadata's size and SHA-256 and
    totalArchiveSize are all updated, so only the index's content lies."""
    ph = _fields(data)
    assert ph.meta is not None and ph.overhead is not None and ph.total is not None
    where = parse.index_location(ph.meta)
    assert not isinstance(where, str)
    offset, size, sha = where
    start = ph.overhead + offset
    index = json.loads(data[start : start + size])
    new = json.dumps(change(index), ensure_ascii=False, separators=(",", ":")).encode()
    body = data[: start - tar.BLOCK] + tar.encode_header(rules.INDEX_PATH, len(new), mtime=MTIME) + new
    body += bytes(-len(new) % tar.BLOCK)
    body += tar.end_of_archive(len(body) - ph.overhead)
    new_sha = hashlib.sha256(new).hexdigest()
    body = replace_once(body, f'"size":"{size:024d}"'.encode(), f'"size":"{len(new):024d}"'.encode())
    body = replace_once(body, sha.encode(), new_sha.encode())
    return replace_once(
        body,
        f'let totalArchiveSize = parseInt("{ph.total:024d}")'.encode(),
        f'let totalArchiveSize = parseInt("{len(body):024d}")'.encode(),
    )


def raw_v1(
    extra: list[bytes], *, listed_names: tuple[str, str] = ("page.html", "page/page-asset-1.png")
) -> bytes:
    """A v1 file (reference layout) whose tar holds a page and one asset, then the raw tar blocks in
    ``extra``: for hostile members a real tool would never write."""
    html, png = SAMPLE_HTML, bytes(range(200))
    blocks = b""
    for name, content in zip(listed_names, (html, png), strict=True):
        blocks += tar.encode_header(name, len(content), mtime=MTIME) + content + bytes(-len(content) % 512)
    blocks += b"".join(extra)
    body = blocks + tar.end_of_archive(len(blocks))
    manifest = json.dumps(
        {
            "0": {"size": len(html), "content-type": "text/html", "basename": "page",
                  "hash": hashlib.sha256(html).hexdigest()},
            listed_names[1].rsplit("/", 1)[-1]: {"size": len(png), "content-type": "image/png",
                                                  "hash": hashlib.sha256(png).hexdigest()},
        },
        indent=4,
    )  # fmt: skip

    def header(overhead: int, total: int) -> bytes:
        return (
            "<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\n<body>\n<script>\nlet assets = "
            + manifest
            + f'\n</script>\n<script>\nlet overhead = parseInt("{overhead:012d}");'
            + f'\nlet totalArchiveSize = parseInt("{total:024d}");\n</script>\n'
            + "<script>\nwindow.stop();\n</script>\n</body>\n</html>\n<!-- GWTAR END\n"
        ).encode()

    n = len(header(0, 0))
    return header(n, n + len(body)) + body


def _member(name: str, data: bytes = b"x", **kw: object) -> bytes:
    head = tar.encode_header(name, len(data) if kw.get("typeflag", b"0") == b"0" else 0, mtime=MTIME, **kw)  # type: ignore[arg-type]
    if kw.get("typeflag", b"0") != b"0":
        return head
    return head + data + bytes(-len(data) % 512)


def build(out: Path, *, big: bool = True) -> list[Case]:
    """Write the corpus into ``out`` (``v1/`` good reference-layout files, ``broken/`` the rest) and
    return the cases, ``broken/expected.json`` describing them."""
    good = out / "v1"
    broken = out / "broken"
    good.mkdir(parents=True, exist_ok=True)
    broken.mkdir(parents=True, exist_ok=True)

    # good v1 files in the reference's exact layout
    build_v1(good, "page", SAMPLE_HTML, sample_assets())
    (good / "page.gwtar.html").rename(good / "reference.gwtar.html")
    build_v1(good, "page", SAMPLE_HTML, sample_assets(), zero_not_first=True)
    (good / "page.gwtar.html").rename(good / "zero-not-first.gwtar.html")
    build_v1(good, "page", SAMPLE_HTML, [])
    (good / "page.gwtar.html").rename(good / "array-manifest.gwtar.html")
    build_v1(good, "page", SAMPLE_HTML, sample_assets(), folder="doc/x")
    (good / "page.gwtar.html").rename(good / "in-folder.gwtar.html")

    with tempfile.TemporaryDirectory() as tmp:
        base = ours(Path(tmp) / "mini.gwtar.html")
    ph = _fields(base)
    assert ph.overhead is not None and ph.total is not None and ph.meta is not None
    overhead, total = ph.overhead, ph.total
    where = parse.index_location(ph.meta)
    assert not isinstance(where, str)
    index_at = overhead + where[0]

    cases: list[Case] = []

    def add(name: str, data: bytes, exit_code: int, phrase: str, refused: bool = False) -> None:
        (broken / f"{name}.gwtar.html").write_bytes(data)
        cases.append(Case(name, exit_code, phrase, refused))

    # truncated at every structural boundary
    marks = {
        "empty": 0,
        "in-magic": 20,
        "after-magic": len(rules.MAGIC),
        "in-manifest": base.index(b"let assets = ") + 40,
        "after-overhead-field": base.index(b"let totalArchiveSize"),
        "in-metadata": base.index(b'id="archiver-gwtar">') + 30,
        "in-loader": base.index(STUB_LOADER.encode()) + 10,
        "before-end-mark": base.index(rules.END_MARK),
    }
    for name, cut in marks.items():
        phrase = "not a gwtar" if cut < len(rules.MAGIC) else "no '<!-- GWTAR END' line"
        add(f"truncated-{name}", base[:cut], 1, phrase)
    body_marks = {
        "at-overhead": overhead,
        "in-first-header": overhead + 256,
        "at-first-data": overhead + 512,
        "in-first-data": overhead + 700,
        "at-second-header": overhead + 512 + tar.data_span(1062),
        "at-index-header": index_at - 512,
        "in-index": index_at + 100,
        "at-end-blocks": index_at + tar.data_span(where[1]),
        "in-end-padding": total - 1,
    }
    for name, cut in body_marks.items():
        add(f"truncated-{name}", base[:cut], 1, "(truncated)")

    # lies
    add("lie-size-same-block", replace_once(base, b'"size": 208,', b'"size": 209,'), 1,
        "tar header says 208 bytes, the manifest 209")  # fmt: skip
    add("lie-size-shifts", replace_once(base, b'"size": 1062,', b'"size": 1662,'), 1, "offsets disagree")
    first_hash = base[base.index(b'"hash": "') + 9 :][:64]
    flipped = (b"0" if first_hash[:1] != b"0" else b"1") + first_hash[1:]
    add("lie-hash", replace_once(base, first_hash, flipped), 1, "does not match the manifest's")
    data_at = overhead + 512 + 50
    damaged = base[:data_at] + bytes([base[data_at] ^ 0x20]) + base[data_at + 1 :]
    add("flipped-data-byte", damaged, 1, "does not match")
    first_header = bytearray(base)
    first_header[overhead + 3] ^= 0x01
    add("bad-header-checksum", bytes(first_header), 1, "checksum does not match")

    def overlap(index: dict) -> dict:
        index["members"][2]["offset"] = index["members"][1]["offset"] + 100
        return index

    def outside(index: dict) -> dict:
        index["members"][3]["offset"] = 10**12
        return index

    def renamed(index: dict) -> dict:
        index["members"][1]["path"] = "../escape.css"
        return index

    add("index-overlapping-offsets", rewrite_index(base, overlap), 1, "where no member's data starts")
    add("index-offset-outside-file", rewrite_index(base, outside), 1, "malformed or points outside the tar")
    add("index-names-dotdot", rewrite_index(base, renamed), 1, "malformed or points outside the tar")
    meta_sha = ph.meta["index"]["sha256"].encode()
    add("metadata-index-hash-lies", replace_once(base, meta_sha, b"f" * 64), 1,
        "does not match the metadata's")  # fmt: skip
    add("metadata-index-offset-outside", replace_once(base, f'"offset":"{where[0]:024d}"'.encode(),
        b'"offset":"000000000000099999999999"'), 1, "does not point at the site index")  # fmt: skip
    add("manifest-size-past-end", replace_once(base, b'"size": 762,', b'"size": 99999999,'), 1,
        "past totalArchiveSize")  # fmt: skip

    # fields
    ov = f'parseInt("{overhead:012d}")'.encode()
    add("overhead-not-numeric", replace_once(base, ov, b'parseInt("0000000x' + ov[17:]), 1,
        "overhead is not a decimal number")  # fmt: skip
    add("overhead-wrong-width", replace_once(base, ov, f'parseInt("{overhead:011d}")'.encode()), 1,
        "overhead has 11 digits, v1 fixes 12")  # fmt: skip
    tt = f'parseInt("{total:024d}")'.encode()
    add("total-wrong-width", replace_once(base, tt, f'parseInt("{total:025d}")'.encode()), 1,
        "totalArchiveSize has 25 digits, v1 fixes 24")  # fmt: skip
    add("total-not-numeric", replace_once(base, tt, b'parseInt("' + b"9" * 23 + b'e")'), 1,
        "totalArchiveSize is not a decimal number")  # fmt: skip

    # manifests
    start = base.index(b"let assets = ") + len(b"let assets = ")
    stop = base.index(b"</script>", start)
    add("manifest-not-json", base[:start] + b"{not json" + base[stop:], 1, "manifest is not valid JSON")
    add("manifest-nested-deeply", base[:start] + b"[" * 20_000 + base[stop:], 1, "nested too deeply")
    add(
        "manifest-not-object",
        base[:start] + b'"text";' + base[stop:],
        1,
        "neither a JSON object nor an array",
    )
    if big:
        huge = b'{"0": {"size": 1, "content-type": "text/html", "basename": "x", "pad": "' + b"x" * (50 << 20)
        add(
            "manifest-50mb", base[:start] + huge + b'"}}' + base[stop:], 1, "header is truncated or too large"
        )
    add("not-a-gwtar", b"<!DOCTYPE html><html><body>hello</body></html>\n" * 50, 1, "not a gwtar")

    # hostile members in a v1 file
    add("member-dotdot", raw_v1([_member("../x")]), 1, "unsafe member name", True)
    add("member-absolute", raw_v1([_member("/etc/x")]), 1, "unsafe member name", True)
    add("listed-dotdot", raw_v1([], listed_names=("page.html", "../page-asset-1.png")), 1,
        "unsafe member name", True)  # fmt: skip
    add("member-symlink", raw_v1([_member("evil", typeflag=b"2", linkname="/etc/passwd")]), 1,
        "is a symbolic link", True)  # fmt: skip
    add("member-symlink-escape", raw_v1([_member("up", typeflag=b"2", linkname="../../x")]), 1,
        "is a symbolic link", True)  # fmt: skip
    add("member-hardlink", raw_v1([_member("hard", typeflag=b"1", linkname="/etc/passwd")]), 1,
        "is a hard link", True)  # fmt: skip
    add("member-device", raw_v1([_member("dev", typeflag=b"3")]), 1, "character device", True)
    add("member-twice", raw_v1([_member("page/page-asset-1.png", b"other")]), 1, "appears twice")

    # v1 reference-layout files, damaged
    ref = (good / "reference.gwtar.html").read_bytes()
    add("v1-truncated", ref[: len(ref) - 12000], 1, "(truncated)")
    add(
        "v1-key-array-index",
        replace_once(ref, b'"page-asset-2.svg": {', b'"12":               {'),
        1,
        "looks like an array index",
    )

    # tolerated: trailing data after the tar (research §5 item 11)
    add("tolerated-trailing-bytes", base + b"trailing bytes that are not a tar\n", 0, "unrecognised data")
    expected = {
        c.name: {"exit": c.exit, "phrase": c.phrase, "extract_refused": c.extract_refused} for c in cases
    }
    (broken / "expected.json").write_text(json.dumps(expected, indent=1) + "\n", encoding="utf-8")
    return cases


def fec_file(folder: Path) -> Path:
    """A reference-layout v1 file with a PAR2 FEC tail (needs the par2 and tar programs)."""
    path = build_v1(folder, "fec", SAMPLE_HTML, [Asset("png", "image/png", bytes(range(256)) * 40)])
    add_fec_tail(path)
    return path


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else ROOT / "testdata" / "gwtar"
    cases = build(out, big=False)
    print(f"wrote {len(cases)} broken cases and 4 v1 reference-layout files under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
