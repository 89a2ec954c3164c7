"""HTTP Range and conditional requests for one representation (RFC 9110 §13-§15): the decision only.

Pure: no network, no filesystem, no clock. The caller passes the representation's size, strong
ETag, Last-Modified (whole seconds) and the current time; :func:`decide` returns what to send
(status and byte ranges), never raises, and costs O(n log n) in the number of ranges, which is
capped. :func:`multipart_layout` frames several ranges as ``multipart/byteranges``.

The rules, in the order they are applied (formats/serve.md lists the choices and how nginx differs):

1. Preconditions, RFC 9110 §13.2.2: ``If-Match`` (strong comparison; ``*`` matches) else
   ``If-Unmodified-Since`` → 412 when false; then ``If-None-Match`` (weak comparison) else
   ``If-Modified-Since`` (304 when Last-Modified ≤ the date) → 304 for GET and HEAD. Invalid dates
   are ignored; ``If-Modified-Since`` is ignored when ``If-None-Match`` is present.
2. ``Range`` is handled for GET only (§14.2: a HEAD gets the 200 headers). A value that is not
   ``unit=…`` or names a unit other than ``bytes`` (any case) is ignored: 200.
3. ``If-Range`` (§13.1.5), only with a Range: an entity tag must equal the strong ETag exactly (a weak
   tag never matches); a date must equal Last-Modified, and Last-Modified must be strong (at least one
   second before now). No match → the Range is ignored: 200 with the whole representation.
4. ``bytes=`` with a syntax error (a bad number, ``last < first``, junk) → 416: the header is
   rejected, as §14.2 allows and nginx does. More than ``max_ranges`` ranges → ignored (200), as
   nginx's ``max_ranges``.
5. Ranges are clamped to the representation (``a-b`` with b past the end, ``-n`` with n ≥ size) and
   unsatisfiable ones dropped; none left → 416 with ``Content-Range: bytes */size``.
6. When ranges overlap or touch, they are sorted and merged (§14.2 allows coalescing), so a response
   never carries more bytes than the representation has: the defence against many overlapping
   ranges (CVE-2025-62727 and its kind). One range left → a plain 206; several → multipart, in the
   order the client asked when nothing was merged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

__all__ = [
    "MAX_RANGES",
    "Decision",
    "content_range",
    "decide",
    "format_http_date",
    "multipart_layout",
    "parse_http_date",
    "parse_range",
    "simple_range",
    "unsatisfied_range",
]

#: Default cap on the number of ranges in one request (Starlette uses 100 too; nginx has no default).
MAX_RANGES: Final = 100

# parse_range's verdicts besides a list of ranges.
IGNORE: Final = "ignore"
INVALID: Final = "invalid"

_MAX_DIGITS: Final = 18  # 10**18 bytes is an exabyte: any longer number is "larger than every file"
_HUGE: Final = 10**18
_WEEKDAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS: Final = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_NUMBER: Final = {name: i + 1 for i, name in enumerate(_MONTHS)}
_LONG_WEEKDAYS: Final = frozenset(
    {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
)


@dataclass(frozen=True, slots=True)
class Decision:
    """What to answer. ``status`` is 200, 206, 304, 412 or 416. ``ranges`` are half-open
    ``(start, stop)`` byte ranges of the representation to send: the whole of it for 200, one or
    more for 206 (several means ``multipart/byteranges``), none otherwise. For 416 the response
    carries ``Content-Range: bytes */size`` (:func:`unsatisfied_range`)."""

    status: int
    ranges: tuple[tuple[int, int], ...] = ()

    @property
    def multipart(self) -> bool:
        return self.status == 206 and len(self.ranges) > 1


_NOT_MODIFIED: Final = Decision(304)
_PRECONDITION_FAILED: Final = Decision(412)
_UNSATISFIABLE: Final = Decision(416)


def decide(
    method: str,
    size: int,
    *,
    etag: str | None = None,
    last_modified: int | None = None,
    now: float | None = None,
    range_: str | None = None,
    if_range: str | None = None,
    if_match: str | None = None,
    if_none_match: str | None = None,
    if_modified_since: str | None = None,
    if_unmodified_since: str | None = None,
    max_ranges: int = MAX_RANGES,
) -> Decision:
    """The answer to a GET or HEAD of a representation of ``size`` bytes whose strong validator is
    ``etag`` (quoted, as sent) and whose ``last_modified`` is in whole seconds since the epoch.
    Header arguments are the field values as received (several fields joined by ``, ``) or None.
    ``now`` (seconds since the epoch) decides whether Last-Modified is a strong validator; None
    means "long after". Never raises."""
    full = Decision(200, ((0, size),))
    # 1. Preconditions (RFC 9110 §13.2.2).
    if if_match is not None:
        if not _match_list(if_match, etag, weak=False):
            return _PRECONDITION_FAILED
    elif if_unmodified_since is not None and last_modified is not None:
        date = parse_http_date(if_unmodified_since)
        if date is not None and last_modified > date:
            return _PRECONDITION_FAILED
    if method in ("GET", "HEAD"):
        if if_none_match is not None:
            if _match_list(if_none_match, etag, weak=True):
                return _NOT_MODIFIED
        elif if_modified_since is not None and last_modified is not None:
            date = parse_http_date(if_modified_since)
            if date is not None and last_modified <= date:
                return _NOT_MODIFIED
    # 2. Range: GET only.
    if range_ is None or method != "GET":
        return full
    parsed = parse_range(range_, size, max_ranges=max_ranges)
    if parsed == IGNORE:
        return full
    # 3. If-Range: a validator that does not match means "send me everything".
    if if_range is not None and not _if_range_matches(if_range, etag, last_modified, now):
        return full
    if parsed == INVALID or not parsed:
        return _UNSATISFIABLE
    assert not isinstance(parsed, str)
    return Decision(206, tuple(parsed))


def parse_range(value: str, size: int, *, max_ranges: int = MAX_RANGES) -> list[tuple[int, int]] | str:
    """A Range field value against a representation of ``size`` bytes: the satisfiable ranges as
    half-open ``(start, stop)`` pairs, clamped, merged when they overlap or touch (else in request
    order); or ``"ignore"`` (not a byte range, or too many ranges); or ``"invalid"`` (a ``bytes=``
    value with a syntax error). An empty list means nothing is satisfiable (416)."""
    eq = value.find("=")
    if eq <= 0:
        return IGNORE
    unit = value[:eq]
    if unit.lower() != "bytes":
        # Another unit, or not "token=" at all: either way not ours to interpret (RFC 9110 §14.2).
        return IGNORE
    specs = value[eq + 1 :].split(",")
    ranges: list[tuple[int, int]] = []
    count = 0
    for raw in specs:
        spec = raw.strip(" \t")
        if not spec:
            continue  # RFC 9110 §5.6.1: empty list elements are allowed
        count += 1
        if count > max_ranges:
            return IGNORE
        dash = spec.find("-")
        if dash < 0:
            return INVALID
        first_text = spec[:dash]
        last_text = spec[dash + 1 :]
        if first_text:
            first = _number(first_text)
            if first is None:
                return INVALID
            if last_text:
                last = _number(last_text)
                if last is None or last < first:
                    return INVALID
                stop = min(last + 1, size)
            else:
                stop = size
            if first < size:
                ranges.append((first, stop))
        else:
            length = _number(last_text)
            if length is None:
                return INVALID
            if length > 0 and size > 0:
                ranges.append((max(size - length, 0), size))
    if count == 0:
        return INVALID
    return _coalesce(ranges)


def simple_range(value: bytes, size: int) -> tuple[int, int] | None:
    """The fast path for the commonest header, ``bytes=a-b`` or ``bytes=a-`` with ``a < size`` and
    at most 18 digits: the half-open range :func:`decide` would choose when no other conditional
    header is present. None for anything else (then call :func:`decide`)."""
    if value[:6] != b"bytes=":
        return None
    dash = value.find(b"-", 6)
    if dash <= 6:
        return None
    first = value[6:dash]
    last = value[dash + 1 :]
    if not first.isdigit() or len(first) > _MAX_DIGITS:
        return None
    start = int(first)
    if start >= size:
        return None
    if not last:
        return start, size
    if not last.isdigit() or len(last) > _MAX_DIGITS:
        return None
    end = int(last)
    if end < start:
        return None
    return start, min(end + 1, size)


def _number(text: str) -> int | None:
    """A non-negative decimal (1*DIGIT); numbers too long for any file count as huge."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    if len(text) > _MAX_DIGITS:
        stripped = text.lstrip("0")
        if len(stripped) > _MAX_DIGITS:
            return _HUGE
        return int(stripped or "0")
    return int(text)


def _coalesce(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if len(ranges) < 2:
        return ranges
    ordered = sorted(ranges)
    clash = any(ordered[i][0] <= ordered[i - 1][1] for i in range(1, len(ordered)))
    if not clash:
        return ranges
    merged = [ordered[0]]
    for start, stop in ordered[1:]:
        last_start, last_stop = merged[-1]
        if start <= last_stop:
            merged[-1] = (last_start, max(last_stop, stop))
        else:
            merged.append((start, stop))
    return merged


# ------------------------------------------------------------------------------------ validators


def _match_list(value: str, etag: str | None, *, weak: bool) -> bool:
    """Does an If-Match / If-None-Match value match ``etag``? ``*`` matches any current
    representation. Strong comparison: both tags strong and equal; weak: opaque tags equal."""
    value = value.strip(" \t")
    if value == "*":
        return True  # "any current representation", and this one exists
    if etag is None:
        return False
    ours_weak = etag.startswith("W/")
    ours = etag[2:] if ours_weak else etag
    if not weak and ours_weak:
        return False
    for tag in _entity_tags(value):
        their_weak = tag.startswith("W/")
        theirs = tag[2:] if their_weak else tag
        if theirs == ours and (weak or not their_weak):
            return True
    return False


def _entity_tags(value: str) -> list[str]:
    """The entity tags of a ``1#entity-tag`` list; a malformed list yields what parsed before it."""
    tags: list[str] = []
    i = 0
    n = len(value)
    while i < n:
        while i < n and value[i] in " \t,":
            i += 1
        if i >= n:
            break
        start = i
        if value.startswith("W/", i):
            i += 2
        if i >= n or value[i] != '"':
            break
        close = value.find('"', i + 1)
        if close < 0:
            break
        tags.append(value[start : close + 1])
        i = close + 1
    return tags


def _if_range_matches(value: str, etag: str | None, last_modified: int | None, now: float | None) -> bool:
    value = value.strip(" \t")
    if value.startswith(('"', "W/")):
        # Strong comparison of one entity-tag; a weak one never matches (RFC 9110 §13.1.5).
        return etag is not None and not etag.startswith("W/") and value == etag
    date = parse_http_date(value)
    if date is None or last_modified is None or date != last_modified:
        return False
    # A Last-Modified is a strong validator only when it is at least a second older than now.
    return now is None or last_modified <= now - 1


# ------------------------------------------------------------------------------------ dates


def parse_http_date(value: str) -> int | None:
    """Seconds since the epoch of an HTTP-date in any of RFC 9110 §5.6.7's three forms
    (IMF-fixdate ``Sun, 06 Nov 1994 08:49:37 GMT``, RFC 850 ``Sunday, 06-Nov-94 08:49:37 GMT``,
    asctime ``Sun Nov  6 08:49:37 1994``), or None when it is not one."""
    parts = value.strip(" \t").split()
    try:
        if len(parts) == 6 and parts[0].endswith(",") and parts[5] == "GMT":  # IMF-fixdate
            if parts[0][:-1] not in _WEEKDAYS or len(parts[1]) != 2 or len(parts[3]) != 4:
                return None
            day, month, year, clock = parts[1], parts[2], parts[3], parts[4]
        elif len(parts) == 4 and parts[0].endswith(",") and parts[3] == "GMT":  # RFC 850
            if parts[0][:-1] not in _LONG_WEEKDAYS:
                return None
            pieces = parts[1].split("-")
            if len(pieces) != 3 or len(pieces[0]) != 2 or len(pieces[2]) != 2:
                return None
            day, month, year, clock = pieces[0], pieces[1], pieces[2], parts[2]
            if not year.isdigit():
                return None
            # RFC 9110: a two-digit year more than 50 years in the future means the past century.
            year = str(2000 + int(year) if int(year) < 70 else 1900 + int(year))
        elif len(parts) == 5 and parts[0] in _WEEKDAYS:  # asctime
            if len(parts[4]) != 4 or not 1 <= len(parts[2]) <= 2:
                return None
            month, day, clock, year = parts[1], parts[2], parts[3], parts[4]
        else:
            return None
        month_number = _MONTH_NUMBER.get(month)
        hms = clock.split(":")
        if month_number is None or len(hms) != 3 or not all(len(p) == 2 for p in hms):
            return None
        numbers = [day, year, *hms]
        if not all(p.isascii() and p.isdigit() for p in numbers):
            return None
        hour, minute, second = (int(p) for p in hms)
        moment = datetime(int(year), month_number, int(day), hour, minute, min(second, 59), tzinfo=UTC)
    except (ValueError, OverflowError):
        return None
    return int(moment.timestamp())


def format_http_date(seconds: float) -> str:
    """The IMF-fixdate of a time in seconds since the epoch (``Thu, 01 Jan 1970 00:00:00 GMT``)."""
    moment = datetime.fromtimestamp(int(seconds), tz=UTC)
    return (
        f"{_WEEKDAYS[moment.weekday()]}, {moment.day:02d} {_MONTHS[moment.month - 1]} {moment.year:04d} "
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d} GMT"
    )


# ------------------------------------------------------------------------------------ framing


def content_range(start: int, stop: int, size: int) -> str:
    """The Content-Range value of the half-open range ``[start, stop)``: ``bytes a-b/size``."""
    return f"bytes {start}-{stop - 1}/{size}"


def unsatisfied_range(size: int) -> str:
    """The Content-Range value of a 416: ``bytes */size``."""
    return f"bytes */{size}"


def multipart_layout(
    ranges: tuple[tuple[int, int], ...] | list[tuple[int, int]],
    size: int,
    content_type: str,
    boundary: str,
) -> tuple[list[bytes], bytes, int]:
    """Framing of a ``multipart/byteranges`` body (RFC 9110 §14.6): one head per range (to be
    followed by that range's bytes), the closing delimiter, and the total body length. The
    response's Content-Type is ``multipart/byteranges; boundary=<boundary>``."""
    heads: list[bytes] = []
    total = 0
    for start, stop in ranges:
        head = (
            f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\n"
            f"Content-Range: {content_range(start, stop, size)}\r\n\r\n"
        ).encode("latin-1")
        heads.append(head)
        total += len(head) + (stop - start)
    tail = f"\r\n--{boundary}--\r\n".encode("latin-1")
    return heads, tail, total + len(tail)
