"""archiver.gwtar.layout: the planned header and offsets, parsed back (archiver.gwtar.parse); member
order; purity."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver import tar
from archiver.errors import FormatError
from archiver.gwtar import layout, parse, rules
from archiver.gwtar.layout import MemberSpec, Meta
from tests.gwtar.corpus import STUB_LOADER

PACKAGE = Path(__file__).resolve().parents[2] / "archiver"
META = Meta(tool="archiver/test", created="2026-01-01T00:00:00Z", main="index.html", basename="index",
            source="tree", home="https://ex.com/", title="Home")  # fmt: skip

segment = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), min_size=1,
                  max_size=30).filter(lambda s: s not in (".", ".."))  # fmt: skip
paths = st.lists(segment, min_size=1, max_size=10).map("/".join)
members_st = st.lists(
    st.tuples(paths, st.integers(0, 5000), st.sampled_from(["image/png", "text/css", "video/mp4"])),
    max_size=12,
    unique_by=lambda t: t[0],
)


def _specs(raw: list[tuple[str, int, str]], listed: int) -> list[MemberSpec]:
    out = [MemberSpec("index.html", 321, "text/html", "page", "Home", key="0")]
    listing = True
    for i, (path, size, mtype) in enumerate(raw):
        if path in ("index.html", rules.INDEX_PATH):
            continue
        listing = listing and i < listed and not layout.listing_problem(path, size)
        out.append(MemberSpec(path, size, mtype, key=path if listing else None))
    return out


@settings(max_examples=200)
@given(members_st, st.integers(0, 12))
def test_plan_parses_back_and_obeys_v1_arithmetic(raw: list[tuple[str, int, str]], listed: int) -> None:
    specs = _specs(raw, listed)
    plan = layout.plan(specs, META, loader=STUB_LOADER, mtime=1767225600)
    assert len(plan.header) == plan.overhead
    assert plan.header.isascii()
    ph = parse.parse_header(plan.header)
    assert ph.problems == []
    assert (ph.overhead, ph.total) == (plan.overhead, plan.total_archive_size)
    keys = [s.key for s in specs if s.key is not None]
    assert [k for k, _ in ph.manifest or []] == keys
    assert plan.data_offsets[: len(keys)] == rules.v1_data_offsets([s.size for s in specs[: len(keys)]])
    for slot in [*plan.hash_slots, plan.index_hash_slot]:
        assert plan.header[slot : slot + 64] == b"0" * 64
        assert plan.header[slot - 1 : slot] == b'"' and plan.header[slot + 64 : slot + 65] == b'"'
    assert plan.header.count(rules.END_MARK) == 1 and plan.header.endswith(rules.END_MARK)
    # the tar size adds up: headers, padded data, index, end blocks
    index = b"".join(plan.index_chunks(["a" * 64] * len(specs)))
    assert len(index) == plan.index_size
    doc = json.loads(index)
    assert [e["offset"] for e in doc["members"]] == plan.data_offsets
    assert (plan.overhead + plan.tar_size) % 512 == plan.overhead % 512
    assert ph.meta is not None and parse.index_location(ph.meta) == (
        plan.index_offset,
        plan.index_size,
        "0" * 64,
    )


def test_manifest_is_php_pretty_json_with_zero_first() -> None:
    specs = [MemberSpec("index.html", 10, "text/html", "page", key="0"),
             MemberSpec("a/b.css", 5, "text/css", key="a/b.css")]  # fmt: skip
    plan = layout.plan(specs, META, loader=STUB_LOADER, mtime=0)
    text = plan.header.decode()
    manifest = text[text.index("let assets = ") + 13 : text.index(";\n</script>")]
    want = {"0": {"size": 10, "content-type": "text/html", "basename": "index", "hash": "0" * 64},
            "a/b.css": {"size": 5, "content-type": "text/css", "hash": "0" * 64}}  # fmt: skip
    assert manifest == json.dumps(want, indent=4)  # json_encode(PRETTY_PRINT | UNESCAPED_SLASHES)


def test_header_layout_is_as_specified() -> None:
    plan = layout.plan([MemberSpec("index.html", 1, "text/html", "page", key="0")], META, loader="L();",
                       mtime=0)  # fmt: skip
    text = plan.header.decode()
    assert text.startswith("<html>\n<!-- Gwtar self-extracting HTML archive, v1 -->\n<!-- archiver gwtar 1; "
                           'archiver/test -->\n<meta charset="utf-8">\n'
                           "<body>\n<script>\nlet assets = {")  # fmt: skip
    assert re.search(r'\n</script>\n<script>\nlet overhead = parseInt\("\d{12}"\);\n'
                     r'let totalArchiveSize = parseInt\("\d{24}"\);\n</script>\n'
                     r'<script type="application/json" id="archiver-gwtar">\{.*\}</script>\n'
                     r"<script>\nL\(\);\n</script>\n<noscript>[^<]*</noscript>\n<script>\nwindow.stop\(\);\n"
                     r"</script>\n</body>\n</html>\n<plaintext hidden>\n<!-- GWTAR END\n$", text)  # fmt: skip


def test_hostile_strings_stay_inside_their_script() -> None:
    title = "</script><script>alert(1)</script><!-- GWTAR END\n& é"
    meta = Meta(**{**META.__dict__, "title": title})
    specs = [MemberSpec("index.html", 1, "text/html", "page", title, key="0"),
             MemberSpec("a</script>.png", 1, "image/png", key="a</script>.png")]  # fmt: skip
    plan = layout.plan(specs, meta, loader=STUB_LOADER, mtime=0)
    assert plan.header.count(b"</script") == 5  # the five elements' own end tags
    assert plan.header.count(b"<!--") == 3  # magic, archiver line, GWTAR END
    ph = parse.parse_header(plan.header)
    assert ph.problems == [] and ph.meta is not None and ph.meta["title"] == title
    assert [k for k, _ in ph.manifest or []] == ["0", "a</script>.png"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [("é", "is not ASCII"), ("a</SCRIPT>", "</script"), ("// <!-- x", "<!--"), ("window.stop();", None)],
)
def test_loader_problem(text: str, problem: str | None) -> None:
    why = layout.loader_problem(text)
    assert (why is None) if problem is None else (why is not None and problem in why)
    if problem:
        with pytest.raises(FormatError, match="loader"):
            layout.plan(
                [MemberSpec("index.html", 1, "text/html", "page", key="0")], META, loader=text, mtime=0
            )


def test_plan_rejects_bad_members() -> None:
    ok = MemberSpec("index.html", 1, "text/html", "page", key="0")
    for bad in (MemberSpec("../x", 1, "a"), MemberSpec("/x", 1, "a"), MemberSpec("a//b", 1, "a"),
                MemberSpec(rules.INDEX_PATH, 1, "a"), MemberSpec("index.html", 1, "a")):  # fmt: skip
        with pytest.raises(FormatError):
            layout.plan([ok, bad], META, loader=STUB_LOADER, mtime=0)
    with pytest.raises(FormatError, match="before unlisted"):
        layout.plan([ok, MemberSpec("a", 1, "x"), MemberSpec("b", 1, "x", key="b")], META, loader="", mtime=0)
    with pytest.raises(FormatError, match="no main page"):
        layout.plan([MemberSpec("a", 1, "x")], META, loader="", mtime=0)


def _spec(path: str, size: int = 10, kind: str = "asset", mtype: str = "image/png") -> MemberSpec:
    return MemberSpec(path, size, mtype, kind)  # type: ignore[arg-type]


def test_order_members_first_render_first() -> None:
    members = [
        _spec("index.html", kind="page", mtype="text/html"),
        _spec("about.html", kind="page", mtype="text/html"),
        _spec("_a/big.png", size=layout.LARGE + 1),
        _spec("_a/clip.mp4", mtype="video/mp4"),
        _spec("_a/font.woff2", mtype="font/woff2"),
        _spec("_a/img.png"),
        _spec("_a/late.js", mtype="text/javascript"),
        _spec("_a/site.css", mtype="text/css"),
        _spec("_a/other.png"),
        _spec("_a/huge-other.bin", size=layout.LARGE + 1, mtype="application/octet-stream"),
        _spec("_a/zz.css", mtype="text/css"),
        _spec("12", mtype="text/plain"),
    ]
    refs = [("_a/img.png", "image"), ("_a/clip.mp4", "media"), ("_a/late.js", "script"),
            ("_a/site.css", "style"), ("_a/font.woff2", "font"), ("_a/big.png", "image"),
            ("about.html", "other"), ("12", "other"), ("missing.png", "image"),
            ("_a/img.png", "image")]  # fmt: skip
    order = layout.order_members(members, "index.html", refs)  # type: ignore[arg-type]
    assert [(m.path, m.key) for m in order] == [
        ("index.html", "0"),
        ("_a/site.css", "_a/site.css"),
        ("_a/font.woff2", "_a/font.woff2"),
        ("_a/img.png", "_a/img.png"),
        ("_a/late.js", "_a/late.js"),
        ("_a/clip.mp4", "_a/clip.mp4"),
        ("_a/big.png", "_a/big.png"),
        ("about.html", None),  # pages next, in tree path order
        ("12", None),  # "12" cannot be a v1 key: unlisted, with the remaining assets
        ("_a/other.png", None),
        ("_a/zz.css", None),
        ("_a/huge-other.bin", None),  # large last
    ]
    single = layout.order_members(members, "index.html", refs, single_page=True)  # type: ignore[arg-type]
    assert [m.key for m in single] == [m.key for m in order if m.key is not None]


def test_order_members_main_must_be_listable() -> None:
    with pytest.raises(FormatError, match="not in the tree"):
        layout.order_members([_spec("a.html", kind="page")], "b.html", [])
    long = "d/" * 60 + "x" * 101 + ".html"
    with pytest.raises(FormatError, match="cannot be the v1 member"):
        layout.order_members([_spec(long, kind="page")], long, [])


def test_listing_problem() -> None:
    assert layout.listing_problem("a" * 101, 1) is not None
    assert layout.listing_problem("ok.png", tar.MAX_USTAR_SIZE + 1) is not None
    assert layout.listing_problem("007", 1) is None and layout.listing_problem("7", 1) is not None
    assert layout.listing_problem("__proto__", 1) is not None


text_st = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=300, deadline=None)
@given(
    path=segment,
    size=st.integers(0, 2**40),
    offset=st.integers(0, 2**45),
    media_type=text_st,
    kind=st.sampled_from(["page", "asset"]),
    title=st.none() | text_st,
    urls=st.lists(text_st, max_size=3),
)
def test_index_entry_is_the_json_encoders_text(
    path: str, size: int, offset: int, media_type: str, kind: str, title: str | None, urls: list[str]
) -> None:
    """The site index entry put together from its strings' JSON is the text json.dumps gives (quotes,
    backslashes, control characters, non-ASCII, a null title, empty and full URL lists)."""
    spec = MemberSpec(path, size, media_type, kind, title, tuple(urls))  # type: ignore[arg-type]
    before, after = layout._entry_parts(spec, offset)
    entry = {"path": path, "offset": offset, "size": size, "type": media_type, "sha256": layout.ZERO_HASH,
             "kind": kind, "title": title, "urls": urls}  # fmt: skip
    assert before + layout.ZERO_HASH.encode() + after == json.dumps(
        entry, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")


def test_index_entry_refuses_what_json_would_not_write_as_a_number_or_string() -> None:
    with pytest.raises(TypeError):
        layout._entry_parts(MemberSpec("a", True, "text/plain"), 512)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        layout._entry_parts(MemberSpec("a", 1, "text/plain", title=3), 512)  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(members_st, st.integers(0, 12), st.data())
def test_with_titles_is_the_plan_of_the_titled_members(
    raw: list[tuple[str, int, str]], listed: int, data: st.DataObject
) -> None:
    """Titles read while the body is written: the plan made again from only the titled entries is the
    plan of the titled members made from scratch, byte for byte."""
    specs = _specs(raw, listed)
    first = layout.plan(specs, META, loader=STUB_LOADER, mtime=1767225600)
    chosen = data.draw(st.sets(st.integers(0, len(specs) - 1)))
    titles = {i: data.draw(st.none() | text_st) for i in sorted(chosen)}
    got = layout.with_titles(first, titles, META, loader=STUB_LOADER)
    titled = [dataclasses.replace(s, title=titles[i]) if i in titles else s for i, s in enumerate(specs)]
    want = layout.plan(titled, META, loader=STUB_LOADER, mtime=1767225600)
    assert got == want
    hashes = ["b" * 64] * len(specs)
    assert b"".join(got.index_chunks(hashes)) == b"".join(want.index_chunks(hashes))


def _path_problem_by_segments(path: str) -> str | None:
    """member_path_problem as formats/gwtar.md words it, segment by segment (the reference)."""
    if not path:
        return "empty name"
    if "\x00" in path:
        return "name contains NUL"
    if path.startswith("/"):
        return "absolute name"
    if any(p in ("", ".", "..") for p in path.split("/")):
        return "name has an empty, '.' or '..' segment"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "name is not valid UTF-8"
    return None


@settings(max_examples=500)
@given(
    st.lists(st.sampled_from(["/", ".", "a", "é", "\x00", "\ud800", "..", "..."]), max_size=12).map("".join)
)
def test_member_path_problem_is_the_segment_by_segment_check(path: str) -> None:
    assert rules.member_path_problem(path) == _path_problem_by_segments(path)


@settings(max_examples=500)
@given(
    st.lists(
        st.lists(st.sampled_from(["/", ".", "a", "é", "\x00", "\ud800", "..", "..."]), max_size=8).map(
            "".join
        ),
        max_size=6,
    )
)
def test_plain_names_is_the_check_of_each_name(paths: list[str]) -> None:
    assert rules.plain_names(paths) == all(rules.member_path_problem(p) is None for p in paths)


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (MemberSpec("a//b", 1, "x"), "empty, '.' or '..' segment"),
        (MemberSpec("/abs", 1, "x"), "absolute name"),
        (MemberSpec("", 1, "x"), "empty name"),
        (MemberSpec("n\x00ul", 1, "x"), "contains NUL"),
        (MemberSpec("s\ud800", 1, "x"), "not valid UTF-8"),
        (MemberSpec("u1", 1, "x"), "name used twice"),
        (MemberSpec(rules.INDEX_PATH, 1, "x"), "reserved for the site index"),
        (MemberSpec("neg", -1, "x"), "negative size"),
        (MemberSpec("late", 1, "x", key="late"), "before unlisted"),
    ],
)
def test_an_unlisted_member_among_many_is_refused_by_name(bad: MemberSpec, why: str) -> None:
    """plan checks the unlisted members' names, repeats and sizes all at once (rules.plain_names):
    one bad member among thousands is still refused with its own message and name."""
    ok = [
        MemberSpec("index.html", 1, "text/html", "page", key="0"),
        MemberSpec("css", 1, "text/css", key="css"),
    ]
    unlisted = [MemberSpec(f"u{i}", 1, "x") for i in range(1, 2000)]
    for at in (0, 1000, len(unlisted)) if bad.key is None else (1, 1000, len(unlisted)):
        members = ok + unlisted[:at] + [bad] + unlisted[at:]
        with pytest.raises(FormatError, match=re.escape(why)) as e:
            layout.plan(members, META, loader=STUB_LOADER, mtime=0)
        assert e.value.subject == bad.path
    plan = layout.plan(ok + unlisted, META, loader=STUB_LOADER, mtime=0)
    assert [m.path for m in plan.members if m.key is not None] == ["index.html", "css"]
