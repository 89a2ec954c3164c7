"""``archiver diff TREE`` (formats/history.md §5) on three versions of a site: each page's class,
the text diff of what a reader sees, the soft-404, the gone pages with the link patrol's verdict and
the next check of an unconfirmed one, and the JSON form; an older tree is one version."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.versions import store
from tests.versions.helpers import HOME, page, write_tree


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "archiver", *args], capture_output=True, text=True, timeout=120
    )


def _report(root: Path, items: list[dict[str, object]]) -> None:
    (root / "_archiver" / "report.json").write_text(json.dumps({"items": items}))


BASE = {
    "index.html": page("Home", "<p>Welcome.</p>"),
    "guide.html": page("Guide", "<p>Install the kit.</p>"),
    "news.html": page("News", "<p>Generated 2026-11-30 09:00 by the build 3f9a2c1.</p><p>Nothing new.</p>"),
    "styled.html": page("Styled", "<p>Same words.</p>"),
    "old.html": page("Old", "<p>Unlinked now.</p>"),
    "dead.html": page("Dead", "<p>Soon gone.</p>"),
    "flaky.html": page("Flaky", "<p>Host is slow.</p>"),
    "moved.html": page("Moved", "<p>Moving.</p>"),
    "promo.html": page("Promo", "<p>Limited offer.</p>"),
}


def _stub(target: str) -> str:
    return f'<!DOCTYPE html><html><head><meta http-equiv="refresh" content="0; url={target}"></head></html>'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history") / "site"
    write_tree(root, BASE, "2026-11-30T09:00:00Z")
    _report(root, [])
    store.record(root)
    second = dict(BASE)
    del second["old.html"], second["dead.html"], second["flaky.html"]
    second.update(
        {
            "guide.html": page("Guide", "<p>Install the kit.</p><p>Then run it.</p>"),
            "news.html": page(
                "News", "<p>Generated 2026-12-01 10:12 by the build 9be0d47.</p><p>Nothing new.</p>"
            ),
            "styled.html": page("Styled", "<p class=x>Same <b>words</b>.</p>").replace(
                "<nav>", "<nav class=n>"
            ),
            "moved.html": _stub("guide/"),
            "promo.html": _stub("index.html"),
            "guide/index.html": page("Guide v2", "<p>New home of the guide.</p>"),
            "fresh.html": page("Fresh", "<p>New page.</p>"),
        }
    )
    write_tree(
        root,
        second,
        "2026-12-01T09:00:00Z",
        statuses={"moved.html": 301, "promo.html": 302},
        redirects={"guide/index.html": [HOME + "moved.html"], "index.html": [HOME + "promo.html"]},
    )
    _report(
        root,
        [
            {
                "url": HOME + "dead.html",
                "kind": "page",
                "outcome": "failed",
                "status": 404,
                "reason": "HTTP 404",
            },
            {
                "url": HOME + "flaky.html",
                "kind": "page",
                "outcome": "unconfirmed",
                "reason": "timed out (ReadTimeout)",
            },
        ],
    )
    store.record(root)
    third = dict(second)
    third["guide.html"] = page("Guide", "<p>Install the kit.</p><p>Then run it twice.</p>")
    write_tree(
        root,
        third,
        "2026-12-02T09:00:00Z",
        statuses={"moved.html": 301, "promo.html": 302},
        redirects={"guide/index.html": [HOME + "moved.html"], "index.html": [HOME + "promo.html"]},
    )
    _report(
        root,
        [
            {
                "url": HOME + "flaky.html",
                "kind": "page",
                "outcome": "unconfirmed",
                "reason": "timed out (ReadTimeout)",
            },
        ],
    )
    return root


def test_each_page_gets_its_class(site: Path) -> None:
    done = _cli("diff", str(site), "--from", "2026-11-30", "--to", "2026-12-01", "--json")
    assert done.returncode == 0, done.stderr
    docs = json.loads("[" + ",".join(_objects(done.stdout)) + "]")
    summary, entries = docs[-1], {d["path"]: d for d in docs[:-1]}
    assert {p: d["class"] for p, d in entries.items()} == {
        "dead.html": "gone",
        "flaky.html": "gone",
        "fresh.html": "added",
        "guide.html": "changed",
        "guide/index.html": "added",
        "moved.html": "redirected",
        "news.html": "volatile",
        "old.html": "removed",
        "promo.html": "redirected",
        "styled.html": "markup",
    }
    assert entries["guide.html"]["diff"] == ["@@ -3 +3,2 @@", " Install the kit.", "+Then run it."]
    assert (entries["dead.html"]["outcome"], "retry_after" in entries["dead.html"]) == ("failed", False)
    assert entries["flaky.html"]["outcome"] == "unconfirmed"
    assert entries["flaky.html"]["retry_after"] == "2026-12-02T09:00:00Z"
    assert (entries["moved.html"]["target"], entries["moved.html"].get("outcome")) == (
        "guide/index.html",
        None,
    )
    assert (entries["promo.html"]["target"], entries["promo.html"]["outcome"]) == ("index.html", "soft-404")
    assert summary["from"] == "20261130T090000Z" and summary["to"] == "20261201T090000Z"
    assert summary["counts"]["gone"] == 2 and summary["volatile_rules"] == 1


def _objects(text: str) -> list[str]:
    """The JSON objects of ``--json`` output: one a line, then the summary (indented)."""
    out, start = [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("{") and line.endswith("}"):
            out.append(line)
        elif line == "{":
            start = i
    if start is not None:
        out.append("\n".join(lines[start:]))
    return out


def test_the_default_compares_the_newest_two_and_follows_a_failure_across_versions(site: Path) -> None:
    done = _cli("diff", str(site), "--text")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "20261201T090000Z → 20261202T090000Z" in out
    assert "changed              guide.html" in out and "+Then run it twice." in out
    # flaky.html was gone in the version before: no page of the newer version, nothing listed for it
    assert "flaky.html" not in out
    assert out.rstrip().endswith("1 changed")


def test_ls_versions_and_an_older_tree_is_one_version(site: Path, tmp_path: Path) -> None:
    done = _cli("ls", str(site), "--versions")
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert [r.split()[0] for r in rows] == ["20261130T090000Z", "20261201T090000Z", "20261202T090000Z"]
    assert rows[-1].endswith("(the tree now, not recorded yet)")
    plain = tmp_path / "plain"
    write_tree(plain, {"index.html": page("Home", "")}, "2026-10-01T00:00:00Z")
    one = _cli("ls", str(plain), "--versions", "--json")
    assert one.returncode == 0 and json.loads(one.stdout)["version"] == "20261001T000000Z"
    nothing = _cli("diff", str(plain))
    assert nothing.returncode == 2 and "nothing to compare yet" in nothing.stderr


@pytest.mark.parametrize(
    "args",
    [["--to", "tomorrow"], ["--from", "1999-01-01"], ["--to", "9999-12-31T23:59:59-01:00"],
     ["--from", "0001-01-01T00:00+01:00"]],
)  # fmt: skip
def test_a_bad_date_is_one_line_and_exit_2(site: Path, args: list[str]) -> None:
    done = _cli("diff", str(site), *args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_report_that_is_a_fifo_counts_as_none(tmp_path: Path) -> None:
    """A FIFO under a version's report name: before, its open waited for a writer forever (diff and
    serve's gone page hung); now it reports nothing, as an unreadable report does (history.md §7)."""
    import os
    import threading

    from archiver.versions import reports

    root = tmp_path / "site"
    write_tree(root, {"index.html": page("Home", "<p>one</p>")}, "2026-11-30T09:00:00Z")
    store.record(root)
    v = store.versions(root)[0]
    os.mkfifo(v.manifest.with_name(f"{v.id}.report.json"))
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(reports.report_items(root, v)), daemon=True)
    reader.start()
    reader.join(10)
    assert not reader.is_alive() and got == [[]]
