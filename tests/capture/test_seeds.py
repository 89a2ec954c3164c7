"""Seeds from a file and from a bookmarks export: parsed by name, deduplicated by dedup key, and each
listed page captured exactly once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from archiver.capture import capture_main
from archiver.capture.seeds import collect_seeds, parse_bookmarks, parse_seeds_file
from archiver.errors import UsageError
from archiver.fixture import FixtureServer

# Firefox writes HREF first, Chrome ADD_DATE later, Safari lower-case names; some omit </DT>.
BOOKMARKS = """<!DOCTYPE NETSCAPE-Bookmark-file-1>
<!-- This is an automatically generated file. -->
<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=UTF-8">
<TITLE>Bookmarks</TITLE>
<H1>Bookmarks</H1>
<DL><p>
    <DT><H3 ADD_DATE="1700000000" LAST_MODIFIED="1700000001" PERSONAL_TOOLBAR_FOLDER="true">Bookmarks bar</H3>
    <DL><p>
        <DT><A HREF="{base}about.html" ADD_DATE="1700000002" ICON="data:image/png;base64,AAAA">About us</A>
        <DT><A ADD_DATE="1700000003" LAST_MODIFIED="1700000004" HREF="{base}docs/">Docs</A>
        <DT><H3>Field &amp; guides</H3>
        <DL><p>
            <DT><a last_modified="1" href="{base}docs/faq.html#offline" add_date="2">FAQ</a>
            <DT><A TAGS="x" HREF="{upper}docs/guide/index.html">Guide (upper-case host)</A>
            <DT><H3>Deeper</H3>
            <DL><p>
                <DT><A HREF="{base}blog/?utm_source=bookmarks&amp;utm_medium=x">Blog</A>
            </DL><p>
        </DL><p>
        <DT><A HREF="javascript:alert('bookmarklet')">A bookmarklet</A>
    </DL><p>
    <DT><A HREF="place:sort=8&amp;maxResults=10">Recent</A>
    <DT><A HREF="{base}about.html#team">About again (fragment)</A>
    <DT><A HREF="{base}gallery/">Gallery</A>
</DL><p>
"""


def test_bookmarks_attributes_by_name_and_nested_folders() -> None:
    text = BOOKMARKS.format(base="http://127.0.0.1:8000/", upper="HTTP://127.0.0.1:8000/")
    found = parse_bookmarks(text)
    assert [(s.url, s.folder, s.title) for s in found] == [
        ("http://127.0.0.1:8000/about.html", "Bookmarks bar", "About us"),
        ("http://127.0.0.1:8000/docs/", "Bookmarks bar", "Docs"),
        ("http://127.0.0.1:8000/docs/faq.html#offline", "Bookmarks bar/Field & guides", "FAQ"),
        (
            "HTTP://127.0.0.1:8000/docs/guide/index.html",
            "Bookmarks bar/Field & guides",
            "Guide (upper-case host)",
        ),
        (
            "http://127.0.0.1:8000/blog/?utm_source=bookmarks&utm_medium=x",
            "Bookmarks bar/Field & guides/Deeper",
            "Blog",
        ),
        ("http://127.0.0.1:8000/about.html#team", None, "About again (fragment)"),
        ("http://127.0.0.1:8000/gallery/", None, "Gallery"),
    ]


def test_seeds_file_comments_and_bare_hosts() -> None:
    assert parse_seeds_file("# mine\n\n  example.com  \nhttps://a.b/x\n#x\n") == [
        "example.com",
        "https://a.b/x",
    ]


def test_dedup_across_sources_and_spellings(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "http://127.0.0.1:8000/about.html\nhttp://127.0.0.1:80/\nHTTP://127.0.0.1:8000/about.html?utm_campaign=z\n"
    )
    marks = tmp_path / "bookmarks.html"
    marks.write_text(BOOKMARKS.format(base="http://127.0.0.1:8000/", upper="http://127.0.0.1:8000/"))
    found = collect_seeds(["127.0.0.1:8000/about.html#x"], seeds_file=seeds, bookmarks=marks)
    keys = [s.url for s in found]
    assert len(keys) == len(set(keys))
    assert keys[:2] == ["https://127.0.0.1:8000/about.html", "http://127.0.0.1:8000/about.html"]
    assert "http://127.0.0.1/" in keys  # :80 dropped
    assert "http://127.0.0.1:8000/blog/" in keys  # tracking parameters dropped
    assert sum(1 for k in keys if k.endswith("/about.html")) == 2  # https (typed bare) and http


def test_bad_or_missing_seeds_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no seed URL"):
        collect_seeds([])
    with pytest.raises(UsageError, match="argument: bad seed URL"):
        collect_seeds(["http://"])
    with pytest.raises(UsageError, match="cannot read the seeds file"):
        collect_seeds([], seeds_file=tmp_path / "missing.txt")


def test_each_listed_page_is_captured_once(tmp_path: Path) -> None:
    with FixtureServer() as server:
        base = server.url
        upper = base.replace("http://", "HTTP://")
        marks = tmp_path / "bookmarks.html"
        marks.write_text(BOOKMARKS.format(base=base, upper=upper))
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(
            f"{base}about.html\n{base}docs/index.html\n{upper}gallery/\n{base}gallery/#picture\n"
        )
        out = tmp_path / "tree"
        code = capture_main(
            [f"{base}about.html"],
            out,
            seeds_file=seeds,
            bookmarks=marks,
            as_json=True,
            render=False,
            depth=0,
            delay=0,
        )
        gets = Counter(r.path for r in server.requests if r.method == "GET")
    assert code == 0
    for path in ["/about.html", "/docs/faq.html", "/docs/guide/index.html", "/blog/", "/gallery/"]:
        assert gets[path] == 1, (path, gets)
    # /docs/ and /docs/index.html are one file (tree.md §3.3): one of them is fetched, once
    assert gets["/docs/"] + gets["/docs/index.html"] == 1
    assert (out / "docs/guide/index.html").is_file() and (out / "blog/index.html").is_file()
    header = (out / "_archiver/manifest.jsonl").read_text().splitlines()[0]
    assert '"seed_folders"' in header and "Bookmarks bar/Field & guides/Deeper" in header


def test_a_bookmarks_file_of_deeply_nested_folders_is_read_in_bounded_memory() -> None:
    """The attack: 20,000 nested folders with a bookmark in each (1.5 MB). Before, each bookmark's
    folder path joined every folder above it: 2.2 GB of memory and 12 s. Now a path names at most
    MAX_DEPTH folders and each level's path is one string its bookmarks share."""
    import tracemalloc

    from archiver.capture.bookmarks import MAX_DEPTH

    n = 20_000
    text = "<!DOCTYPE NETSCAPE-Bookmark-file-1>" + "".join(
        f'<DT><H3>folder{i}</H3><DL><p><DT><A HREF="https://example.com/p{i}">t{i}</A>' for i in range(n)
    )
    tracemalloc.start()
    try:
        found = parse_bookmarks(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(found) == n
    assert peak < 64 << 20, peak  # before: > 2 GB
    assert found[5].folder == "/".join(f"folder{i}" for i in range(6))
    assert found[-1].folder == "/".join(f"folder{i}" for i in range(MAX_DEPTH))


def test_huge_folder_names_and_titles_are_cut() -> None:
    from archiver.capture.bookmarks import MAX_NAME, MAX_TITLE

    link = f'<A HREF="https://example.com/">{"t " * 500_000}</A>'
    text = f"<DL><DT><H3>{'f' * 1_000_000}</H3><DL><DT>{link}</DL></DL>"
    (seed,) = parse_bookmarks(text)
    assert seed.folder == "f" * MAX_NAME
    assert seed.title is not None and len(seed.title) == MAX_TITLE


def test_a_seeds_file_over_the_bound_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from archiver.capture import seeds

    monkeypatch.setattr(seeds, "MAX_SEEDS_FILE", 1000)
    big = tmp_path / "seeds.txt"
    big.write_text("https://example.com/\n" * 100)
    with pytest.raises(UsageError, match="larger than"):
        collect_seeds([], seeds_file=big)
