"""serve's pages of a tree's history (formats/history.md §7): the index's calendar of versions (each
a link to its own origin), and the tree's answer for a page its newest capture lacks but an earlier
version kept: still a 404, but a page that says so (with what the live site answered, from the newest
run's report) and links to every version that kept it; a path no version has stays a plain 404; a
hostile report (huge, not JSON) is a report that said nothing."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from archiver.serve import running
from archiver.serve.history_pages import calendar
from archiver.versions import reports, store
from tests.serve.helpers import get_on as _get
from tests.versions.helpers import HOME, page, write_tree

V1, V2 = "20261130T090000Z", "20261201T090000Z"


@pytest.mark.parametrize(
    ("versions", "months"),
    [
        ([], []),
        ([("a", "2026-11-30T09:00:00Z")], [("2026-11", ["30"])]),
        (
            [("c", "2026-12-01T09:00:00Z"), ("a", "2026-11-30T09:00:00Z"), ("b", "2026-11-30T17:30:00Z")],
            [("2026-11", ["30 09:00", "30 17:30"]), ("2026-12", ["01"])],
        ),
        (
            [("a", "2025-12-31T23:59:59Z"), ("b", "2026-01-01T00:00:00Z")],
            [("2025-12", ["31"]), ("2026-01", ["01"])],
        ),
    ],
)
def test_the_calendar_groups_versions_by_month_and_day(
    versions: list[tuple[str, str]], months: list[tuple[str, list[str]]]
) -> None:
    got = calendar(versions)
    assert [(m, [d.label for d in days]) for m, days in got] == months
    assert sorted(d.id for _, days in got for d in days) == sorted(v for v, _ in versions)


def _report(root: Path, items: list[dict[str, object]]) -> None:
    (root / "_archiver" / "report.json").write_text(json.dumps({"items": items}))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, Path]]:
    root = tmp_path_factory.mktemp("gone") / "site"
    write_tree(
        root,
        {"index.html": page("Home", "<p>one</p>"), "docs/old.html": page("Old", "<p>soon gone</p>"),
         "docs/moved.html": page("Moved", "<p>out of reach</p>")},
        "2026-11-30T09:00:00Z",
    )  # fmt: skip
    store.record(root)
    write_tree(root, {"index.html": page("Home", "<p>two</p>")}, "2026-12-01T09:00:00Z")
    _report(root, [{"url": HOME + "docs/old.html", "outcome": "failed", "status": 404,
                    "reason": "HTTP 404 Not Found"}])  # fmt: skip
    store.record(root)
    with running([root]) as url:
        yield url, int(urlsplit(url).port or 0), root


def test_a_page_gone_from_the_live_site_is_marked_and_linked(served: tuple[str, int, Path]) -> None:
    base, port, _ = served
    status, headers, body = _get(base, "/site/docs/old.html", f"site.localhost:{port}")
    assert status == 404
    assert headers["content-type"].startswith("text/html")
    assert headers["content-security-policy"].startswith("default-src 'none'")
    text = body.decode()
    assert "Not in the newest capture" in text
    assert "HTTP 404 Not Found (failed)" in text and "2026-12-01T09:00:00Z" in text
    memento = f"http://site-{V1.lower()}.localhost:{port}/site@{V1}/docs/old.html"
    assert f'href="{memento}"' in text
    assert f"<http://localhost:{port}/~/timemap/site/docs/old.html>" in headers["link"]
    assert f'<{HOME}docs/old.html>; rel="original"' in headers["link"]
    # and that memento is there, on its own origin
    assert _get(base, f"/site@{V1}/docs/old.html", f"site-{V1.lower()}.localhost:{port}")[0] == 200


def test_a_page_the_newest_run_did_not_reach_says_so(served: tuple[str, int, Path]) -> None:
    base, port, _ = served
    status, _, body = _get(base, "/site/docs/moved.html", f"site.localhost:{port}")
    assert status == 404 and b"not reached by that capture" in body


def test_a_path_no_version_has_is_a_plain_404(served: tuple[str, int, Path]) -> None:
    base, port, _ = served
    status, headers, body = _get(base, "/site/docs/never.html", f"site.localhost:{port}")
    assert status == 404 and headers["content-type"].startswith("text/plain") and b"<" not in body


def test_the_index_shows_a_calendar_linking_each_version(served: tuple[str, int, Path]) -> None:
    base, port, _ = served
    index = _get(base, "/", f"localhost:{port}")[2].decode()
    row = re.search(r"site, 2 versions: (.*?)</small>", index)
    assert row is not None
    assert "2026-11: " in row.group(1) and "2026-12: " in row.group(1)
    assert f'href="http://site-{V1.lower()}.localhost:{port}/site@{V1}/"' in row.group(1)
    assert 'title="site as of 2026-11-30T09:00:00Z">30</a>' in row.group(1)
    assert index.count(f"site@{V1}/") == 1  # in the calendar, not a row of its own


@pytest.mark.parametrize("content", [b"{not json", b"[" * 100_000, b'{"items": [1, "x", null]}'])
def test_a_broken_report_reports_nothing(tmp_path: Path, content: bytes) -> None:
    root = tmp_path / "site"
    write_tree(root, {"index.html": page("Home", "<p>x</p>")}, "2026-11-30T09:00:00Z")
    (root / "_archiver" / "report.json").write_bytes(content)
    v = store.versions(root)[-1]
    assert reports.failures(root, v) == {}


def test_a_huge_report_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "site"
    write_tree(root, {"index.html": page("Home", "<p>x</p>")}, "2026-11-30T09:00:00Z")
    _report(root, [{"url": HOME, "outcome": "failed", "reason": "x" * 2000}])
    v = store.versions(root)[-1]
    assert reports.failures(root, v)  # read when it fits
    monkeypatch.setattr(reports, "MAX_REPORT_BYTES", 1000)
    assert reports.failures(root, v) == {}


def test_asking_a_gone_page_again_does_not_read_the_manifest_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attack on the server's CPU: one gone path asked over and over. Finding the newest version
    reads and hashes the whole manifest (store.versions); it is done again only when the tree or
    its store changed, and then the answer follows the change."""
    from archiver.serve.history_pages import GonePages

    root = tmp_path / "site"
    write_tree(root, {"index.html": page("Home", "<p>one</p>"), "old.html": page("Old", "<p>x</p>")},
               "2026-11-30T09:00:00Z")  # fmt: skip
    store.record(root)
    write_tree(root, {"index.html": page("Home", "<p>two</p>")}, "2026-12-01T09:00:00Z")
    calls: list[Path] = []
    real = store.versions

    def counted(where: Path) -> list[store.Version]:
        calls.append(where)
        return real(where)

    monkeypatch.setattr(store, "versions", counted)
    gone = GonePages()
    for _ in range(50):
        assert gone._failures(root)[0] == "2026-12-01T09:00:00Z"
    assert len(calls) == 1
    store.record(root)  # the store's folder changes: found again, the same newest date
    write_tree(root, {"index.html": page("Home", "<p>three</p>")}, "2026-12-02T09:00:00Z")
    calls.clear()  # record() asks too
    for _ in range(5):
        assert gone._failures(root)[0] == "2026-12-02T09:00:00Z"
    assert len(calls) == 1


def test_a_damaged_store_is_said_in_the_log_and_the_tree_still_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tree whose version store cannot be read (here a pending.json that is no mark) is served
    without its earlier versions: its TimeMap then answers 404, and before nothing said why."""
    from archiver.serve.sources import mounts_for
    from tests.versions.helpers import two_versions

    root = two_versions(
        tmp_path / "site", {"index.html": page("Home", "one")}, {"index.html": page("Home", "two")}
    )
    (root / "_archiver" / ".versions" / "pending.json").write_text("[" * 5000 + "]" * 5000)
    mounts = mounts_for([root])
    try:
        assert [m.kind for m in mounts] == ["tree"]  # served, no version mounts
    finally:
        for m in mounts:
            m.close()
    err = capsys.readouterr().err
    assert "pending.json" in err and "(its earlier versions are not served)" in err, err
