"""No response header line may hold CR, LF or NUL (RFC 9110 §5.5). The values of a representation's
headers are partly an archive's bytes (a record's URL in a memento's Link, a media type), and the
fast path (app.py) writes its lines to the wire as they are: a line break there began a header of the
archive's choosing on the response (a version manifest's URL gave ``Set-Cookie``; memento.link_uri now
escapes URLs). Whatever builds one, a representation with such a value is refused when it is made
(the request is answered 500 with a line in the log), never written."""

from __future__ import annotations

import pytest

from archiver.serve.representation import InMemory, Representation


@pytest.mark.parametrize("bad", [b"a\r\nset-cookie: x=1", b"a\nb", b"a\rb", b"a\x00b"])
def test_a_header_value_with_a_line_break_is_refused(bad: bytes) -> None:
    with pytest.raises(ValueError, match="line break"):
        Representation(1, "text/html", '"e"', 0, extra=[(b"link", bad)])


def test_a_media_type_with_a_line_break_is_refused() -> None:
    with pytest.raises(ValueError, match="line break"):
        InMemory(b"x", "text/html\r\nset-cookie: x=1", 0)


def test_the_security_headers_are_checked_too() -> None:
    rep = InMemory(b"x", "text/html", 0)
    with pytest.raises(ValueError, match="line break"):
        rep.secure([(b"x-frame-options", b"DENY\r\nx: y")], [])


def test_plain_values_pass() -> None:
    rep = Representation(1, "text/html; charset=utf-8", '"e"', 0, extra=[(b"link", b"<http://a/%0D%0A>")])
    assert b"\r\nlink: <http://a/%0D%0A>\r\n" in b"\r\n" + rep.block
