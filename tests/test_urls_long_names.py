"""Names and paths too long for a file system (tree.md §4.7): pure vectors and properties of
:func:`archiver.urls.fit_name` and of :func:`archiver.urls.local_path` on long URLs. Before, a URL
segment of more than 255 bytes of UTF-8 (120 Chinese characters: a common article title) or a tree
path over 4,095 bytes was mapped as it was and the capture failed the page at every run ("cannot
store: [Errno 36] File name too long")."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver import urls
from archiver.urls import NAME_MAX, PATH_BUDGET, fit_name

HOME = "https://ex.com/"
CJK = "中" * 120  # 360 bytes of UTF-8


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("index.html", "index.html"),
        ("a" * 255, "a" * 255),
        ("é" * 127, "é" * 127),  # 254 bytes: fits
    ],
)
def test_names_that_fit_are_left_alone(name: str, expected: str) -> None:
    assert fit_name(name) == expected


def test_a_long_name_keeps_its_start_its_extension_and_a_hash() -> None:
    short = fit_name(CJK + ".html")
    assert short.startswith("中" * 60) and short.endswith(".html")
    assert "__l-" in short and len(short.encode()) <= 240
    assert fit_name(CJK + ".html") == short  # deterministic
    assert fit_name(CJK + "x.html") != short


def test_a_long_name_is_never_cut_inside_an_escape() -> None:
    for pad in range(3):
        name = "a" * pad + "%2F" * 100  # only whole escapes: a cut may not leave '%2' or '%'
        head = fit_name(name).split("__l-")[0]
        rest = head[pad:]
        assert head[:pad] == "a" * pad and rest == "%2F" * (len(rest) // 3) and rest


long_names = st.text(
    st.characters(codec="utf-8", exclude_characters="/", exclude_categories=("Cs", "Cc")),
    min_size=60,
    max_size=400,
)


@given(long_names, st.integers(4, 64))
def test_fit_name_always_fits_and_keeps_short_names(name: str, hash_len: int) -> None:
    fitted = fit_name(name, hash_len)
    size = len(fitted.encode())
    assert size <= NAME_MAX
    if len(name.encode()) <= NAME_MAX:
        assert fitted == name
    else:
        assert size <= 240 and "/" not in fitted and fitted


@given(long_names, long_names)
def test_two_long_names_get_two_names(a: str, b: str) -> None:
    if a != b and len(a.encode()) > NAME_MAX:
        assert fit_name(a, 64) != fit_name(b, 64)


@given(
    st.lists(st.text(st.sampled_from("ab中%é-"), min_size=1, max_size=300), min_size=1, max_size=30),
    st.sampled_from(["page", "asset"]),
)
def test_every_tree_path_fits(segs: list[str], kind: str) -> None:
    url = urls.canonicalize(HOME + "/".join(quote(s) for s in segs))
    path = urls.local_path(url, kind=kind, home=HOME)  # type: ignore[arg-type]
    assert len(path.encode()) <= PATH_BUDGET
    assert all(0 < len(p.encode()) <= NAME_MAX for p in path.split("/"))
    assert path == urls.local_path(url, kind=kind, home=HOME)  # type: ignore[arg-type]
    if kind == "page":
        assert path.endswith(".html")


def test_a_path_over_the_budget_keeps_its_first_folders() -> None:
    deep = "/".join(["c" * 240] * 20)
    path = urls.local_path(urls.canonicalize(f"{HOME}{deep}/x.html"), kind="page", home=HOME)
    parts = path.split("/")
    assert parts[:8] == ["c" * 240] * 8 and parts[-1].startswith("__l-") and parts[-1].endswith(".html")
    other = urls.local_path(urls.canonicalize(f"{HOME}{deep}/y.html"), kind="page", home=HOME)
    assert other != path and other.rsplit("/", 1)[0] == path.rsplit("/", 1)[0]


def test_a_urls_own_fold_marker_is_escaped() -> None:
    assert urls.local_path("https://ex.com/a__l-123456.html", kind="page", home=HOME) == "a%5F_l-123456.html"
