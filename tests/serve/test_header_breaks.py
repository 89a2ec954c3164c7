"""No response header line may hold CR, LF or NUL (RFC 9110 §5.5). The values of a representation's
headers are partly an archive's bytes (a record's URL in a memento's Link, a media type), and the
fast path (app.py) writes its lines to the wire as they are: a line break there began a header of the
archive's choosing on the response (a version manifest's URL gave ``Set-Cookie``; memento.link_uri now
escapes URLs). Two layers: the archive's values are cleaned where a representation is made (a media
type with a control character or non-ASCII is ``application/octet-stream``, an extra header holding
one is left out: test_memento), and any line that still holds a break (a header added later, the
security headers) is refused there (the request is answered 500 with a line in the log), never
written."""

from __future__ import annotations

import pytest

from archiver.serve.representation import InMemory, Representation


@pytest.mark.parametrize("bad", [b"a\r\nset-cookie: x=1", b"a\nb", b"a\rb", b"a\x00b"])
def test_an_archives_header_value_with_a_line_break_is_left_out(bad: bytes) -> None:
    rep = Representation(1, "text/html", '"e"', 0, extra=[(b"link", bad), (b"x-ok", b"1")])
    assert [n for n, _ in rep.head if n in (b"link", b"x-ok")] == [b"x-ok"]
    assert b"set-cookie" not in rep.block


def test_a_media_type_with_a_line_break_is_octet_stream() -> None:
    rep = InMemory(b"x", "text/html\r\nset-cookie: x=1", 0)
    assert rep.block.startswith(b"content-type: application/octet-stream\r\n")
    assert b"set-cookie" not in rep.block


@pytest.mark.parametrize("bad", [b"a\r\nset-cookie: x=1", b"a\x00b"])
def test_a_line_break_that_gets_past_the_cleaning_is_refused(bad: bytes) -> None:
    rep = InMemory(b"x", "text/html", 0)
    with pytest.raises(ValueError, match="line break"):
        rep._blocks([*rep.head, (b"x-added", bad)], rep.head)


def test_the_security_headers_are_checked_too() -> None:
    rep = InMemory(b"x", "text/html", 0)
    with pytest.raises(ValueError, match="line break"):
        rep.secure([(b"x-frame-options", b"DENY\r\nx: y")], [])


def test_plain_values_pass() -> None:
    rep = Representation(1, "text/html; charset=utf-8", '"e"', 0, extra=[(b"link", b"<http://a/%0D%0A>")])
    assert b"\r\nlink: <http://a/%0D%0A>\r\n" in b"\r\n" + rep.block
