"""What a recording capture remembers to write revisits (formats/warc.md §7.4): the payload digests
it recorded (an identical payload is an ``identical-payload-digest`` revisit) and each URL's newest
payload (a ``304 Not Modified`` to a conditional request is a ``server-not-modified`` revisit of it),
both bounded, the oldest forgotten first; and the two pure tests on an exchange's bytes."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["PROFILE_IDENTICAL", "PROFILE_NOT_MODIFIED", "Memory", "Seen", "digest_of", "not_modified"]

PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
PROFILE_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


@dataclass
class Seen:
    """An original ``response`` record: its URL, its WARC-Date, its WARC-Record-ID."""

    uri: str
    date: str
    record_id: str


class Memory:
    """Digest → original, and URL → (digest, original) of its newest payload, ``limit`` each."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.seen: OrderedDict[bytes, Seen] = OrderedDict()
        self.by_uri: OrderedDict[str, tuple[bytes, Seen]] = OrderedDict()

    def remember(self, digest: bytes, seen: Seen) -> None:
        """A response record of payload ``digest`` was written."""
        self.seen[digest] = seen
        self.seen.move_to_end(digest)
        while len(self.seen) > self.limit:
            self.seen.popitem(last=False)
        self.newest(seen.uri, digest, seen)

    def newest(self, uri: str, digest: bytes, seen: Seen) -> None:
        """``uri``'s newest payload is ``digest``, first recorded as ``seen``."""
        self.by_uri[uri] = (digest, seen)
        self.by_uri.move_to_end(uri)
        while len(self.by_uri) > self.limit:
            self.by_uri.popitem(last=False)

    def learn(self, kind: str, uri: str, date: str, headers: dict[str, str], payload: str, size: int) -> None:
        """A record of an earlier run's file: a complete non-empty response is an original; an
        identical-payload revisit makes its URL's newest payload that of its original."""
        if kind == "response" and size and "warc-truncated" not in headers:
            self.remember(bytes.fromhex(payload), Seen(uri, date, headers.get("warc-record-id", "")))
        elif kind == "revisit" and headers.get("warc-profile") == PROFILE_IDENTICAL:
            digest = digest_of(headers.get("warc-payload-digest", ""))
            found = self.seen.get(digest)
            if found is not None:
                self.newest(uri, digest, found)


def not_modified(head: bytes, request: bytes) -> bool:
    """Whether the HTTP response header ``head`` is a 304 answering the request ``request`` made
    conditional (``If-None-Match`` or ``If-Modified-Since``)."""
    status = head.split(b"\r\n", 1)[0].split(b" ")
    if len(status) < 2 or status[1] != b"304":
        return False
    lowered = request.lower()
    return b"\r\nif-none-match:" in lowered or b"\r\nif-modified-since:" in lowered


def digest_of(value: str) -> bytes:
    """The bytes of a ``sha256:<hex>`` payload digest (empty for another algorithm or bad hex)."""
    algorithm, _, hexed = value.partition(":")
    try:
        return bytes.fromhex(hexed) if algorithm.lower() == "sha256" else b""
    except ValueError:
        return b""
