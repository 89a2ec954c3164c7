"""``archiver capture``'s flags: every option of :func:`archiver.capture.capture` a user can set has one,
bad values are one-line usage errors, and the flags reach the crawl (real captures, ``--no-render``, of
small sites served on 127.0.0.1)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from archiver.capture import capture
from archiver.cli import _parser, capture_options, main
from archiver.fixture import FixtureConfig, FixtureServer

# Parameters of capture() that are not for the command line, and why.
NOT_FLAGS = {
    "seeds": "positional URLs, --seeds and --bookmarks",
    "out": "-o",
    "as_json": "--json (capture_main prints the report)",
    "progress": "on a terminal only; --json turns it off",
    "resolver": "tests: a DNS stand-in",
    "network_backend": "tests: a socket stand-in",
    "seed_info": "filled from --bookmarks",
    "backoff": "retry schedule, not a user setting",
    "max_retry_after": "retry schedule, not a user setting",
    "transport": "--from-warc FILE... (the records of those files answer, formats/warc.md 8)",
    "revalidate": "--new-version sets it (the first pass of formats/history.md 6.3)",
    "final_manifest": "--new-version sets it (the manifest dated and trimmed, written once: history.md 6)",
    "refresh_mark": "--new-version sets it (the refresh applied once a re-capture: history.md 6)",
}


def _options(*argv: str) -> dict[str, object]:
    return capture_options(_parser().parse_args(["capture", "-o", "out", *argv]))


def test_every_user_option_of_capture_has_a_flag() -> None:
    parameters = set(inspect.signature(capture).parameters)
    assert NOT_FLAGS.keys() <= parameters  # the table names real parameters only
    assert set(_options()) == parameters - NOT_FLAGS.keys()


def test_defaults_are_capture_defaults() -> None:
    defaults = {
        name: p.default
        for name, p in inspect.signature(capture).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    options = _options()
    for name, value in options.items():
        expected = defaults[name]
        if name in ("include", "allow_domains", "prefer", "avoid") and expected is None:
            expected = []
        assert value == expected, name


def test_flags_map_to_options() -> None:
    options = _options(
        *("--prefer", "contact,about", "--prefer", " team ,", "--avoid", "blog,login"),
        *("--allow-domain", "cdn.ex.com", "--allow-domain", "ex.org", "--include", "/a/", "--scope", "/b/"),
        *("--exclude", "/a/old/", "--skip-ext", "MP4,.zip", "--asset-cap", "100", "--assets-any-host"),
        *("--delay", "0.25", "--concurrency", "4", "--timeout", "7", "--retries", "0", "--ignore-robots"),
        *("--allow-private", "--allow-host", "intranet", "--tabs", "2", "--settle", "0", "--refresh"),
        *("--no-render", "--depth", "0", "--max-pages", "9", "--subdomains", "--no-resume"),
        *("--warc", "--warc-max-size", "2G", "--no-search-index"),
        *("--state", "redis://127.0.0.1:6379/2", "--crawl", "big", "--lease", "12", "--progress-every", "5"),
    )
    assert options == {
        "render": False,
        "depth": 0,
        "max_pages": 9,
        "subdomains": True,
        "scope_prefix": "/b/",
        "include": ["/a/"],
        "exclude": ["/a/old/"],
        "allow_domains": ["cdn.ex.com", "ex.org"],
        "prefer": ["contact", "about", "team"],
        "avoid": ["blog", "login"],
        "assets_any_host": True,
        "skip_extensions": frozenset({".mp4", ".zip"}),
        "chromium": None,
        "delay": 0.25,
        "timeout": 7.0,
        "asset_cap": 100,
        "resume": False,
        "refresh": True,
        "rerender": False,
        "ignore_robots": True,
        "allow_private": True,
        "allow_hosts": ["intranet"],
        "concurrency": 4,
        "tabs": 2,
        "retries": 0,
        "settle": 0.0,
        "warc": True,
        "warc_max_size": 2 * 10**9,
        "state": "redis://127.0.0.1:6379/2",
        "crawl": "big",
        "lease": 12.0,
        "progress_every": 5.0,
        "search_index": False,
    }
    assert _options("--skip-ext", "")["skip_extensions"] == frozenset()
    assert _options()["search_index"] is None  # the default: on when rendering (CaptureOptions)
    assert _options("--search-index")["search_index"] is True


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--concurrency", "0", "must be at least 1"),
        ("--tabs", "0", "must be at least 1"),
        ("--depth", "-1", "must be at least 0"),
        ("--max-pages", "0", "must be at least 1"),
        ("--asset-cap", "1.5", "expected a whole number"),
        ("--delay", "-1", "finite number of seconds"),
        ("--timeout", "nan", "finite number of seconds"),
        ("--settle", "soon", "expected a number of seconds"),
        ("--skip-ext", "a/b", "not a file extension"),
    ],
)
def test_bad_values_are_one_usage_line(flag: str, value: str, says: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "archiver",
            "capture",
            "-o",
            str(tmp_path / "t"),
            flag,
            value,
            "http://x.test/",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "t").exists()


# ---- the flags reach the crawl


def _site(root: Path, pages: dict[str, str]) -> Path:
    for name, body in pages.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"<!DOCTYPE html><html><head><title>{name}</title></head><body>{body}</body></html>")
    return root


def _capture(capsys: pytest.CaptureFixture[str], url: str, out: Path, *flags: str) -> dict[str, object]:
    capsys.readouterr()
    assert main(["capture", url, "-o", str(out), "--no-render", "--delay", "0", "--json", *flags]) == 0
    report = json.loads(capsys.readouterr().out)
    assert isinstance(report, dict)
    return report


def _outcomes(report: dict[str, object]) -> dict[str, tuple[str, str]]:
    items = report["items"]
    assert isinstance(items, list)
    return {i["url"].rsplit("/", 1)[-1] or "/": (i["outcome"], i.get("reason", "")) for i in items}


def test_ignore_robots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    site = _site(tmp_path / "site", {"index.html": '<a href="/p/secret.html">s</a>', "p/secret.html": "s"})
    with FixtureServer(FixtureConfig(root=site, robots="User-agent: *\nDisallow: /p/\n")) as server:
        obeyed = _outcomes(_capture(capsys, server.url, tmp_path / "a"))
        ignored = _outcomes(_capture(capsys, server.url, tmp_path / "b", "--ignore-robots"))
    assert obeyed["secret.html"] == ("skipped", "disallowed by robots.txt")
    assert ignored["secret.html"][0] == "ok"
    assert (tmp_path / "b" / "p" / "secret.html").is_file()


def test_prefer_avoid_and_max_pages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    links = "".join(
        f'<a href="/{n}.html">{n}</a>' for n in ("blog-1", "contact", "blog-contact", "x", "about")
    )
    pages = {f"{n}.html": n for n in ("blog-1", "contact", "blog-contact", "x", "about")}
    site = _site(tmp_path / "site", {"index.html": links, **pages})
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        flags = ("--max-pages", "3", "--prefer", "contact,about", "--avoid", "blog", "--concurrency", "1")
        report = _capture(capsys, server.url, tmp_path / "t", *flags)
    stored = {name for name, (outcome, _) in _outcomes(report).items() if outcome == "ok"}
    assert stored == {"/", "contact.html", "about.html"}  # avoid wins over prefer: not blog-contact


def test_skip_ext_and_asset_cap(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    site = _site(
        tmp_path / "site", {"index.html": '<img src="/a.png"><a href="/f.pdf">pdf</a><img src="/b.gif">'}
    )
    (site / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 200)
    (site / "f.pdf").write_bytes(b"%PDF-1.4\n" + b"\0" * 10)
    (site / "b.gif").write_bytes(b"GIF89a" + b"\0" * 10)
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        default = _capture(capsys, server.url, tmp_path / "a")
        flagged = _capture(capsys, server.url, tmp_path / "b", "--skip-ext", "gif", "--asset-cap", "100")
    assert {f.name for f in (tmp_path / "a").rglob("*") if f.suffix in (".png", ".gif", ".pdf")} == {
        "a.png",
        "b.gif",
    }  # .pdf is on the default skip list
    found = {f.name for f in (tmp_path / "b").rglob("*") if f.suffix in (".png", ".gif", ".pdf")}
    assert found == {"f.pdf"}  # the list replaced: pdf stored, gif skipped, png over the cap
    reasons = " ".join(r for _, r in _outcomes(flagged).values())
    assert "size cap" in reasons
    assert default["pages"] == flagged["pages"] == 1


def test_allow_host_lets_one_private_host_in(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        other = server.url.replace("127.0.0.1", "localhost")  # another host name, on loopback
        _site(site, {"index.html": f'<img src="{other}logo.png">'})
        (site / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 20)
        refused = _capture(capsys, server.url, tmp_path / "a", "--assets-any-host")
        allowed = _capture(
            capsys, server.url, tmp_path / "b", "--assets-any-host", "--allow-host", "localhost"
        )
    assert _outcomes(refused)["logo.png"][0] == "refused"
    assert "--allow-host" in _outcomes(refused)["logo.png"][1]
    assert _outcomes(allowed)["logo.png"][0] == "ok"
