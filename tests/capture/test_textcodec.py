"""Choosing the encoding of fetched HTML and CSS."""

from __future__ import annotations

from archiver.capture.textcodec import decode_css, decode_html


def test_html_encodings() -> None:
    assert decode_html("é".encode("cp1252"), None) == "é"  # not UTF-8: windows-1252 fallback
    assert decode_html("é".encode(), None) == "é"
    assert decode_html(b'<meta charset="iso-8859-1">\xe9', None).endswith("é")
    assert decode_html(b"\xef\xbb\xbf<p>\xc3\xa9", "iso-8859-1") == "<p>é"  # BOM wins
    assert decode_html("é".encode("utf-16-le"), None) != "é"  # no BOM: not guessed
    assert decode_html(b"\xe9", "utf-16") == "\ufffd"  # a UTF-16 label means UTF-8
    assert decode_html(b"x", "no-such-charset") == "x"


def test_css_charset_rule_is_read_and_dropped() -> None:
    assert decode_css(b'@charset "iso-8859-1";\n.a{content:"\xe9"}') == '.a{content:"é"}'
    assert decode_css(b".a{}", "utf-8") == ".a{}"
