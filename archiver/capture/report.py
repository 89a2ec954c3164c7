"""What a capture did: the per-URL outcomes (:class:`Item`), the report (:class:`CaptureReport`) with
its human summary (grouped by reason, with the flag that changes each), and its JSON file."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import msgspec

from archiver import urls
from archiver.atomicfile import write_atomic
from archiver.capture.policy import redact
from archiver.errors import URLError

__all__ = ["CaptureReport", "Item", "group_label", "is_loss", "size_text", "write_report"]


class Item(msgspec.Struct):
    """The outcome of one URL, as the report lists it (secret query values redacted). This module's
    classes are :class:`msgspec.Struct` ones: an item is made for every URL of a run, by C code, and
    a dataclass's generated methods were compiled from source at every start of a capture."""

    url: str
    kind: str
    outcome: str
    reason: str = ""
    status: int | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The fields that are neither None nor empty (a report lists every URL: no loop a field)."""
        doc: dict[str, Any] = {}
        if self.url:
            doc["url"] = self.url
        if self.kind:
            doc["kind"] = self.kind
        if self.outcome:
            doc["outcome"] = self.outcome
        if self.reason:
            doc["reason"] = self.reason
        if self.status is not None:
            doc["status"] = self.status
        if self.path:
            doc["path"] = self.path
        return doc


class CaptureReport(msgspec.Struct):
    """What a capture did: counts by outcome, bytes written, time, and every URL's outcome."""

    out: str
    home: str
    complete: bool
    pages: int = 0
    assets: int = 0
    bytes: int = 0
    requests: int = 0
    elapsed: float = 0.0
    counts: dict[str, int] = msgspec.field(default_factory=dict)
    items: list[Item] = msgspec.field(default_factory=list)
    #: What this run stored (a resumed run's totals above include earlier runs).
    run_pages: int = 0
    run_assets: int = 0
    #: The bytes this run wrote (``bytes`` is the whole tree's stored files, earlier runs included).
    run_bytes: int = 0
    #: Files a re-capture kept because their server answered 304 (history.md §6.1: the previous
    #: bytes stand, records marked ``revalidated``); 0 for a first capture.
    unchanged: int = 0
    #: What the transport says once about the run (an import: bodies stored decoded, warc.md §8.4).
    notes: list[str] = msgspec.field(default_factory=list)

    def outcome(self, url: str) -> Item | None:
        """The item for ``url`` (any spelling that canonicalises to the same dedup key)."""
        try:
            key = redact(urls.dedup_key(urls.canonicalize(url)))
        except URLError:
            key = url
        return next((i for i in self.items if i.url == key), None)

    def problems(self) -> list[Item]:
        return [i for i in self.items if i.outcome not in ("ok", "redirected", "merged")]

    def losses(self) -> list[Item]:
        """The URLs this capture wanted and lost to the network or the server (:func:`is_loss`)."""
        return [i for i in self.items if is_loss(i)]

    def why_no_page(self) -> str:
        """Why nothing was stored, in a few words, from the first page that did not end ok (the
        seeds come first): its outcome and the plainest form of its reason, so a host that is down
        reads "connection refused", not "robots.txt unreachable"."""
        item = next((i for i in self.problems() if i.kind == "page"), None)
        if item is None:
            return "no page was in scope"
        reason = _plain_reason(item.reason) or item.outcome
        status = f" [{item.status}]" if item.status else ""
        return f"{item.url}{status}: {item.outcome}: {reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "home": self.home,
            "complete": self.complete,
            "pages": self.pages,
            "assets": self.assets,
            "bytes": self.bytes,
            "requests": self.requests,
            "elapsed": round(self.elapsed, 3),
            "this_run": {"pages": self.run_pages, "assets": self.run_assets, "bytes": self.run_bytes}
            | ({"unchanged": self.unchanged} if self.unchanged else {}),
            "counts": dict(sorted(self.counts.items())),
            "items": [i.to_json() for i in self.items],
        } | ({"notes": list(self.notes)} if self.notes else {})

    def summary(self, *, examples: int = 3) -> str:
        """A few human lines: totals (and this run's share when it resumed an earlier one), outcome
        counts, then the URLs that did not end ok grouped by outcome and reason, largest group
        first, with the first ``examples`` URLs of each: a site with 1,600 out-of-scope links gives
        one line for them, not 1,600 (the full list is in ``--json`` and the report file)."""
        rate = self.run_pages / self.elapsed if self.elapsed else 0.0
        resumed = (self.run_pages, self.run_assets) != (self.pages, self.assets)
        run = f"{_n(self.run_pages, 'page')}, {_n(self.run_assets, 'asset')}, {size_text(self.run_bytes)}"
        if self.unchanged:  # a re-capture: what the server said had not changed since
            run += f"; {self.unchanged} unchanged: answered 304, the previous bytes kept"
        this_run = f" (this run: {run})" if resumed or self.unchanged else ""
        lines = [
            f"captured {self.pages} pages and {self.assets} assets ({size_text(self.bytes)}) into {self.out}"
            f"{this_run} in {self.elapsed:.1f} s ({rate:.1f} pages/s)"
            + ("" if self.complete else "; INCOMPLETE: run again to resume"),
        ]
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        if counts:
            lines.append(f"outcomes: {counts}")
        lines += [f"note: {note}" for note in self.notes]
        groups: dict[tuple[str, str], list[Item]] = {}
        for item in self.problems():
            groups.setdefault((item.outcome, _reason_class(item.reason)), []).append(item)
        for (outcome, _pattern), members in sorted(groups.items(), key=lambda g: (-len(g[1]), g[0])):
            if len(members) == 1:
                item = members[0]
                status = f" [{item.status}]" if item.status else ""
                lines.append(f"  {outcome:<11} {item.kind:<5} {item.url}{status}: {_with_flag(item.reason)}")
                continue
            lines.append(f"  {outcome:<11} {len(members):>5} URLs: {group_label(members)}")
            for item in members[:examples]:
                status = f" [{item.status}]" if item.status else ""
                lines.append(f"      e.g. {item.kind:<5} {item.url}{status}")
            if len(members) > examples:
                lines.append(f"      … and {len(members) - examples} more")
        return "\n".join(lines)


def report_line(report: CaptureReport) -> str:
    """``json.dumps(report.to_json(), ensure_ascii=False)``, the same text (``capture --json``), by
    msgspec's encoder and its formatter at ``indent=0``, whose separators are ``", "`` and ``": "``
    (the standard library's encoder took ~13 K instructions an item, 2 % of an unchanged
    re-capture's 1,000 URLs). The document's one float is ``elapsed``: written with an exponent
    (``1e-05``, which msgspec writes ``0.00001``) it goes through ``json.dumps``; a run's elapsed
    time rounded to the millisecond never is."""
    doc = report.to_json()
    if "e" in repr(doc["elapsed"]):
        import json  # never, in practice

        return json.dumps(doc, ensure_ascii=False)
    return msgspec.json.format(msgspec.json.encode(doc), indent=0).decode()


def write_report(path: Path, report: CaptureReport) -> None:
    """The report as JSON in the reserved folder (a private file: never served or packed), written
    to a temporary name and renamed, so a reader never sees half of it."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")  # private too (tree.is_private)
    # msgspec's encoder, formatted as json.dumps(indent=1, ensure_ascii=False) did (the same
    # bytes): the standard library's indenting encoder is pure Python, 6 % of a re-capture's CPU
    data = msgspec.json.format(msgspec.json.encode(report.to_json()), indent=1) + b"\n"
    write_atomic(path, data, tmp=tmp, durable=False)  # a link planted under tmp is never followed


#: The flag that changes a reason's outcome, named beside it in the summary (the stored reason stays
#: as it is: resumed state matches on it).
_FLAGS = (
    ("beyond the depth limit", "--depth"),
    ("beyond the page budget", "--max-pages"),
    ("out of scope", "--scope, --include, --subdomains, --allow-domain"),
    ("skip list", "--skip-ext"),
    ("asset on another site", "--assets-any-host"),
    ("disallowed by robots.txt", "--ignore-robots"),
    ("larger than the size cap", "--asset-cap"),
)


def _with_flag(reason: str) -> str:
    """``reason`` with the flag that would change it, when it names a setting and not yet a flag."""
    if "--" in reason:
        return reason
    for start, flag in _FLAGS:
        if reason.startswith(start):
            return f"{reason} ({flag})"
    return reason


#: HTTP answers that are the site's own word on a URL, not a failure to get it.
_SITES_OWN = frozenset({400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 416,
                        417, 418, 421, 422, 423, 424, 425, 426, 428, 431, 451})  # fmt: skip


def is_loss(item: Item) -> bool:
    """Whether ``item`` is an in-scope URL lost to the network or the server, which another run may
    get (the exit code :data:`archiver.errors.EXIT_PARTIAL`): a timeout, a 5xx, a 408 or 429, a
    network error (refused, reset, unresolvable), a host whose robots.txt could not be read. Not a
    loss: the site's own 4xx answers (a 404 is the site's, not ours), what the options or
    robots.txt left out (``skipped``), the address guard's refusals (a setting), redirect loops."""
    if item.outcome not in ("failed", "unconfirmed"):
        return False
    if item.status is not None and item.status in _SITES_OWN:
        return False
    # a redirect loop or an overlong chain (3xx) is the site's doing too
    return item.status is None or not 300 <= item.status < 400


def group_label(members: list[Item], *, shown: int = 4) -> str:
    """What a group of the summary says of its URLs: the reasons as they were recorded (never the
    group's pattern with its numbers taken out), each with its count when they differ, most
    frequent first: ``HTTP 503 ×6, HTTP 500 ×3``; past ``shown`` reasons, how many more."""
    counts: dict[str, int] = {}
    for item in members:
        reason = _with_flag(item.reason) or item.outcome
        counts[reason] = counts.get(reason, 0) + 1
    if len(counts) == 1:
        return next(iter(counts))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{reason} ×{n}" for reason, n in ranked[:shown])
    if len(ranked) > shown:
        rest = sum(n for _, n in ranked[shown:])
        more = len(ranked) - shown
        text += f", {more} other reason{'s' if more > 1 else ''} ×{rest}"
    return text


def _reason_class(reason: str) -> str:
    """A reason with what varies per URL taken out (numbers, quoted values), so that URLs skipped
    or failed for the same reason fall into one group of the summary."""
    reason = re.sub(r"'[^']*'|\"[^\"]*\"", "…", reason)
    return re.sub(r"\d+", "N", reason)


_NETWORK_ERRNO = {
    "111": "connection refused",
    "110": "connection timed out",
    "113": "no route to host",
    "101": "network unreachable",
    "-2": "host name does not resolve",
    "-3": "host name does not resolve (temporary failure)",
    "-5": "host name has no address",
}
# compiled at their use (re keeps them): only a report shown with its failures needs them
_ROBOTS_DOWN = r"^robots\.txt unreachable \((network error: .*)\)(: not fetched.*)?$"
_ERRNO = r"\[Errno (-?\d+)\]"


def _plain_reason(reason: str) -> str:
    """A failure reason said plainly: when robots.txt was unreachable because the host itself did
    not answer, the network error is the reason; a known errno becomes its words."""
    down = re.match(_ROBOTS_DOWN, reason)
    if down:
        reason = down.group(1)
    errno = re.search(_ERRNO, reason)
    if reason.startswith("network error:") and errno and errno.group(1) in _NETWORK_ERRNO:
        return f"{_NETWORK_ERRNO[errno.group(1)]} ({reason.removeprefix('network error: ')})"
    return reason


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def size_text(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
