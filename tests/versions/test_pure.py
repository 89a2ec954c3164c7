"""The pure core of a tree's history (formats/history.md): version ids and the dates that pick one,
volatile spans (vectors), the link patrol's verdicts and retry dates (vectors), and the
classification of two versions' pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.versions import dates, diff, recapture, volatile
from tests.vectors import rows


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("row", rows("volatile.json", "cases"))
def test_volatile_vectors(row: dict[str, Any]) -> None:
    assert volatile.same_but_volatile(row["old"], row["new"]) is row["volatile"]


@pytest.mark.parametrize("row", rows("outcomes.json", "outcomes"))
def test_outcome_vectors(row: dict[str, Any]) -> None:
    assert diff.outcome(row["status"], row["reason"], row["recorded"]) == row["verdict"]


@pytest.mark.parametrize("row", rows("outcomes.json", "retries"))
def test_retry_vectors(row: dict[str, Any]) -> None:
    got = diff.retry_after(_t(row["first"]), _t(row["checked"]))
    assert got == (_t(row["next"]) if row["next"] else None)


@given(st.text())
def test_normalising_is_idempotent_and_never_grows_a_line_count(text: str) -> None:
    once = volatile.normalise(text)
    assert volatile.normalise(once) == once
    assert once.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("20261201T093000Z", "2026-12-01T09:30:00Z"),
        ("20261201T093000Z-2", "2026-12-01T09:30:00Z"),
        ("2026-12-01", "2026-12-01T23:59:59Z"),
        ("2026-12-01T09:30Z", "2026-12-01T09:30:00Z"),
        ("2026-12-01T09:30:15+01:00", "2026-12-01T08:30:15Z"),
        ("20261201093015", "2026-12-01T09:30:15Z"),
    ],
)
def test_a_date_names_an_instant(text: str, instant: str) -> None:
    assert dates.parse(text) == _t(instant)


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01", "2026-12-01T25:00Z", "", "2026/12/01", "1" * 15])
def test_a_bad_date_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        dates.parse(text)


@pytest.mark.parametrize(
    "text",
    ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00+01:00", "0000-01-01", "00000000T000000Z",
     "20261399T000000Z", "99999999999999", "1e20", "2" * 100_000],
)  # fmt: skip
def test_an_absurd_date_is_a_value_error_naming_at_most_64_characters_of_it(text: str) -> None:
    # before: the first two raised OverflowError (a traceback from extract/ls/diff --version)
    with pytest.raises(ValueError, match="not a date") as err:
        dates.parse(text)
    assert len(str(err.value)) < 200
    with pytest.raises(ValueError):
        dates.version_id(text)  # a manifest's `created` out of range is no id either


@pytest.mark.parametrize("created", ["0001-01-01T00:00:00Z", "0999-06-01T12:00:00Z", "9999-12-31T23:59:59Z"])
def test_every_id_made_is_one_that_reads_back(created: str) -> None:
    # before: strftime's %Y wrote year 1 as "1": a pending.json started in year 1 gave the tree's
    # state the id '10101T000000Z', and `ls --versions` died of it with a traceback (exit 70)
    vid = dates.version_id(created)
    assert dates.id_date(vid) == _t(created)


def test_the_last_day_datetime_holds_is_a_date() -> None:
    # before: 9999-12-31 (the end of that day) overflowed computing the next day's start
    assert dates.parse("9999-12-31") == _t("9999-12-31T23:59:59Z")
    assert dates.in_force(["20261201T093000Z"], dates.parse("9999-12-31")) == "20261201T093000Z"


def test_the_version_in_force_is_the_newest_at_or_before_the_date() -> None:
    ids = ["20261201T093000Z", "20261115T080000Z", "20261201T093000Z-2", "20261202T000000Z"]
    assert dates.in_force(ids, _t("2026-11-14T00:00:00Z")) is None
    assert dates.in_force(ids, _t("2026-11-30T00:00:00Z")) == "20261115T080000Z"
    assert dates.in_force(ids, dates.parse("2026-12-01")) == "20261201T093000Z-2"
    assert dates.in_force(ids, _t("2030-01-01T00:00:00Z")) == "20261202T000000Z"
    assert dates.version_id("2026-12-01T09:30:00.123456+00:00") == "20261201T093000Z"
    assert (
        dates.next_id("20261201T093000Z", {"20261201T093000Z", "20261201T093000Z-2"}) == "20261201T093000Z-3"
    )


@settings(max_examples=40)
@given(
    st.lists(
        st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)), min_size=1, max_size=8
    ),
    st.datetimes(min_value=datetime(1999, 1, 1), max_value=datetime(2101, 1, 1)),
)
def test_in_force_never_picks_a_later_version(stamps: list[datetime], when: datetime) -> None:
    ids = sorted({s.replace(microsecond=0).strftime("%Y%m%dT%H%M%SZ") for s in stamps})
    at = when.replace(tzinfo=UTC)
    got = dates.in_force(ids, at)
    earlier = [i for i in ids if dates.id_date(i) <= at]
    assert got == (max(earlier) if earlier else None)


@dataclass
class R:
    path: str
    sha256: str
    kind: str = "page"
    title: str | None = None
    status: int | None = 200
    urls: list[str] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)


@dataclass
class F:
    url: str
    outcome: str
    status: int | None
    reason: str


def _recs(*items: R) -> dict[str, R]:
    for r in items:
        r.urls = r.urls or [f"http://s/{r.path}"]
    return {r.path: r for r in items}


def test_every_class_of_compare() -> None:
    old = _recs(
        R("index.html", "h0"),
        R("same.html", "a"),
        R("edited.html", "b1"),
        R("stamp.html", "c1"),
        R("markup.html", "d1"),
        R("dropped.html", "e"),
        R("dead.html", "f"),
        R("maybe.html", "g"),
        R("moved.html", "h"),
        R("soft.html", "i"),
        R("style.css", "j1", kind="asset"),
    )
    new = _recs(
        R("index.html", "h0", redirects=["http://s/soft.html"]),
        R("same.html", "a"),
        R("edited.html", "b2"),
        R("stamp.html", "c2"),
        R("markup.html", "d2"),
        R("fresh.html", "k"),
        R("moved.html", "h2", status=301),
        R("soft.html", "i2", status=302),
        R("target.html", "t", redirects=["http://s/moved.html"]),
        R("style.css", "j2", kind="asset"),
    )
    texts = {
        ("old", "edited.html"): "Intro\nStep one",
        ("new", "edited.html"): "Intro\nStep one\nStep two",
        ("old", "stamp.html"): "Docs\nBuilt 2026-11-30",
        ("new", "stamp.html"): "Docs\nBuilt 2026-12-01",
        ("old", "markup.html"): "Same words",
        ("new", "markup.html"): "Same words",
    }
    failures = {
        "http://s/dead.html": F("http://s/dead.html", "failed", 404, "HTTP 404"),
        "http://s/maybe.html": F("http://s/maybe.html", "unconfirmed", None, "timed out (ReadTimeout)"),
    }
    checked = _t("2026-12-02T09:00:00Z")
    entries = diff.compare(
        old,
        new,
        failures,
        lambda side, p: texts.get((side, p)),
        first_failures={"http://s/maybe.html": _t("2026-12-01T09:00:00Z")},
        checked=checked,
        with_unchanged=True,
    )
    got = {e.path: e for e in entries}
    assert {p: e.cls for p, e in got.items()} == {
        "index.html": "unchanged",
        "same.html": "unchanged",
        "edited.html": "changed",
        "stamp.html": "volatile",
        "markup.html": "markup",
        "dropped.html": "removed",
        "dead.html": "gone",
        "maybe.html": "gone",
        "moved.html": "redirected",
        "soft.html": "redirected",
        "fresh.html": "added",
        "target.html": "added",
    }
    assert "style.css" not in got  # assets are counted, not listed
    assert got["edited.html"].diff == ["@@ -2 +2,2 @@", " Step one", "+Step two"]
    assert (got["dead.html"].outcome, got["dead.html"].retry_after) == ("failed", None)
    assert got["maybe.html"].outcome == "unconfirmed"
    assert got["maybe.html"].retry_after == _t("2026-12-04T09:00:00Z")
    assert (got["moved.html"].target, got["moved.html"].outcome) == ("target.html", "")
    assert (got["soft.html"].target, got["soft.html"].outcome) == ("index.html", "soft-404")
    assert diff.summary(entries)["counts"]["gone"] == 2


@pytest.mark.parametrize(
    "fetched",
    [None, "", "2026-12-01T08:59:59Z", "2026-12-01T09:00:00Z", "2026-12-01T09:00:01Z",
     "2026-12-01T09:00:00+00:00", "2026-12-01T10:00:00+02:00", "2026-12-01T08:59:59.5Z",
     "2026-12-01T08:59:59", "yesterday", "9999-12-31T23:59:59Z"],
)  # fmt: skip
def test_a_record_fetched_before_the_run_started_is_told_as_a_parse_tells_it(fetched: str | None) -> None:
    started = _t("2026-12-01T09:00:00Z")
    stamp = recapture._stamp(started)
    when = recapture._fetched_at(fetched)
    assert recapture._before(fetched, started, stamp) is (when is not None and when < started)
    assert recapture._before(fetched, started, None) is (when is not None and when < started)
