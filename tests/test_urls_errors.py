"""Bad input to the mapping core raises URLError, with a clear one-line message naming the input."""

from __future__ import annotations

import pytest

from archiver import urls
from archiver.errors import ArchiverError, URLError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty URL"),
        ("   ", "empty URL"),
        ("http://", "no host"),
        ("https://ex.com/" + "a" * 10_240, "longer than 8192"),
        ("https://ex.com/a\x01b", "control character"),
        ("https://ex.com/\x7f", "control character"),
        ("https://ex.com:65536/", "invalid port"),
        ("https://ex.com:-1/", "invalid port"),
        ("https://ex.com:\u0661/", "invalid port"),
        ("http://[::1", "closing"),
        ("http://[::g]/", "invalid IPv6"),
        ("http://[::1]x/", "junk after"),
        ("gopher://ex.com/", "unsupported scheme"),
        ("relative/path", "without a base"),
        ("http://a..b/", "invalid host"),
        ("http://\u2028/", "invalid"),
    ],
)
def test_bad_input(text: str, message: str) -> None:
    with pytest.raises(URLError, match=message) as info:
        urls.canonicalize(text)
    assert isinstance(info.value, ArchiverError) and isinstance(info.value, ValueError)
    line = str(info.value)
    assert "\n" not in line and len(line) < 200, "one short line, input shortened"


def test_error_names_the_input() -> None:
    with pytest.raises(URLError) as info:
        urls.canonicalize("https://ex.com:99999/")
    assert "'https://ex.com:99999/'" in str(info.value)


def test_rel_refuses_paths_that_are_not_tree_paths() -> None:
    for bad in ("", "../x", "a/../../b", "a\x00b"):
        with pytest.raises(URLError):
            urls.rel(bad, "index.html")


def test_local_path_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="kind"):
        urls.local_path("https://ex.com/", kind="other", home=HOME)  # type: ignore[arg-type]


HOME = "https://ex.com/"
