"""The address guard decides by origin (issue 14 point 6): a seed on ``http://127.0.0.1:A/`` allows
that origin, not every port of 127.0.0.1. Its page links to, loads from (img, script, iframe, CSS
``url()``, ``fetch()``, preconnect) and redirects to (301, 302, meta refresh, JS ``location``) port B
of the loopback under every spelling of the address; B is a plain TCP listener that counts its
``accept()`` calls and must count none, with and without the browser. ``--allow-host 127.0.0.1:B``
opens exactly that port (positive control), ``--allow-host 127.0.0.1:C`` does not.

All traffic stays on 127.0.0.1 and ::1."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from archiver import urls
from archiver.capture import CaptureReport, capture
from archiver.capture.fetch import AddressGuard
from archiver.cli import main
from archiver.errors import URLError
from archiver.fixture import FixtureConfig, FixtureServer


class Listener:
    """A TCP listener on 127.0.0.1:PORT (and [::1]:PORT where the machine has IPv6 loopback) that
    counts connections and answers each with a tiny HTTP 200."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.accepted: list[object] = []
        self._lock = threading.Lock()
        self.port = 0
        self.ipv6 = False
        for _ in range(20):  # find a port free on both loopbacks
            four = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            four.bind(("127.0.0.1", 0))
            port = four.getsockname()[1]
            try:
                six = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                six.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                six.bind(("::1", port))
            except OSError:
                with contextlib.suppress(UnboundLocalError):
                    six.close()
                if self._has_ipv6():
                    four.close()
                    continue
                self.sockets, self.port = [four], port
                break
            self.sockets, self.port, self.ipv6 = [four, six], port, True
            break
        assert self.port
        self._threads = []
        for s in self.sockets:
            s.listen(64)
            t = threading.Thread(target=self._accept, args=(s,), daemon=True)
            t.start()
            self._threads.append(t)

    @staticmethod
    def _has_ipv6() -> bool:
        try:
            with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
                s.bind(("::1", 0))
            return True
        except OSError:
            return False

    def _accept(self, s: socket.socket) -> None:
        while True:
            try:
                conn, peer = s.accept()
            except OSError:
                return
            with self._lock:
                self.accepted.append(peer)
            with contextlib.suppress(OSError):
                conn.settimeout(2)
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
                    b"Connection: close\r\n\r\nok"
                )
            conn.close()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.accepted)

    def close(self) -> None:
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    it = Listener()
    try:
        yield it
    finally:
        it.close()


def spellings(listener: Listener) -> list[str]:
    hosts = ["127.0.0.1", "0x7f000001", "2130706433", "127.1", "[::ffff:127.0.0.1]", "localhost"]
    if listener.ipv6:
        hosts += ["[::1]", "[0:0:0:0:0:0:0:1]"]
    return [f"{h}:{listener.port}" for h in hosts]


def make_site(root: Path, targets: list[str]) -> None:
    """index.html refers to each target (``host:port``) in every way a page can; meta-N.html and
    js-N.html move on to it by meta refresh and by script."""
    root.mkdir(parents=True)
    body, css = [], []
    for n, t in enumerate(targets):
        body += [
            f'<link rel="preconnect" href="http://{t}"><link rel="dns-prefetch" href="//{t}">',
            f'<a href="http://{t}/page-{n}/">page</a>',
            f'<img src="http://{t}/img-{n}.png">',
            f'<script src="http://{t}/script-{n}.js"></script>',
            f'<iframe src="http://{t}/frame-{n}/"></iframe>',
            f"<div style=\"background: url('http://{t}/inline-{n}.png')\">x</div>",
            f'<a href="/_fixture/redirect/chain/0?code=301&amp;to=http://{t}/r301-{n}">301</a>',
            f'<a href="/_fixture/redirect/chain/0?code=302&amp;to=http://{t}/r302-{n}">302</a>',
            f'<a href="meta-{n}.html">meta</a> <a href="js-{n}.html">js</a>',
            f'<script>fetch("http://{t}/fetch-{n}").catch(() => 0)</script>',
        ]
        css.append(f"#x{n} {{ background: url(http://{t}/css-{n}.png) }}")
        (root / f"meta-{n}.html").write_text(
            f'<!doctype html><meta http-equiv="refresh" content="0; url=http://{t}/meta-{n}"><title>m</title>'
        )
        (root / f"js-{n}.html").write_text(
            f'<!doctype html><title>j</title><script>location.href = "http://{t}/js-{n}"</script>'
        )
    (root / "style.css").write_text("\n".join(css))
    (root / "index.html").write_text(
        '<!doctype html><html><head><meta charset="utf-8"><title>Ports</title>'
        '<link rel="stylesheet" href="/style.css"></head><body>\n' + "\n".join(body) + "\n</body></html>"
    )


FAST = dict(depth=3, delay=0, progress=False, retries=0, tabs=2, settle=0.5)


def run_capture(
    tmp_path: Path,
    targets: list[str],
    *,
    render: bool,
    allow_hosts: list[str] = [],  # noqa: B006
) -> tuple[CaptureReport, str]:
    site = tmp_path / "site"
    make_site(site, targets)
    # name-spelled and IPv6 targets are other sites: allow them into scope so they are fetched
    domains = ["localhost", "[::ffff:7f00:1]", "[::1]"]
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        report = capture(
            [server.url],
            tmp_path / "tree",
            render=render,
            assets_any_host=True,
            allow_domains=domains,
            allow_hosts=allow_hosts,
            **FAST,  # type: ignore[arg-type]
        )
        return report, server.url


def _key(ref: str, base: str) -> str:
    return urls.dedup_key(urls.canonicalize(ref, base))


@pytest.mark.parametrize("render", [False, pytest.param(True, marks=pytest.mark.browser)])
def test_no_connection_to_another_port_of_the_seed_host(
    tmp_path: Path, listener: Listener, render: bool
) -> None:
    targets = spellings(listener)
    report, home = run_capture(tmp_path, targets, render=render)
    assert listener.count == 0, listener.accepted
    assert report.outcome(home).outcome == "ok"  # type: ignore[union-attr]
    b = listener.port
    for n, t in enumerate(targets):
        host = t.rpartition(":")[0]
        for ref in (f"http://{t}/img-{n}.png", f"http://{t}/page-{n}/", f"http://{t}/css-{n}.png"):
            item = report.outcome(ref)
            assert item is not None and item.outcome == "refused", (ref, item)
            assert "address guard" in item.reason and "--allow-host" in item.reason, item.reason
            if host != "localhost":  # an address: the hint names its canonical origin
                canonical = "[::1]" if "::1" in host or "0:1]" in host else "127.0.0.1"
                assert f"--allow-host {canonical}:{b} " in item.reason, item.reason
        for code in (301, 302):
            hop = report.outcome(
                _key(f"/_fixture/redirect/chain/0?code={code}&to=http://{t}/r{code}-{n}", home)
            )
            assert hop is not None and hop.outcome == "refused", (t, code, hop)
        # the browser's own requests (a script, fetch(), a script moving the page on) are refused too
        for ref in [f"meta-{n}", *([f"script-{n}.js", f"fetch-{n}", f"js-{n}"] if render else [])]:
            item = report.outcome(f"http://{t}/{ref}")
            assert item is not None and item.outcome == "refused", (t, ref, item)
            assert "address guard" in item.reason, item.reason
    assert f"127.0.0.1:{b}" in report.outcome(f"http://127.1:{b}/img-3.png").reason  # type: ignore[union-attr]
    for page in (tmp_path / "tree").glob("*.html"):  # a refused navigation left no browser error page
        assert "neterror" not in page.read_text(encoding="utf-8"), page.name
    if render:  # the browser's own requests: found by the page rendering, a step deeper (tree.md §8)
        db = sqlite3.connect(tmp_path / "tree/_archiver/crawl.sqlite")
        rows = {k: (d, r) for k, d, r in db.execute("SELECT key, depth, referrer FROM urls")}
        db.close()
        for n, t in enumerate(targets):
            assert rows[_key(f"http://{t}/fetch-{n}", home)] == (1, _key(home, home))
            assert rows[_key(f"http://{t}/js-{n}", home)] == (2, _key(f"js-{n}.html", home))


@pytest.mark.parametrize("render", [False, pytest.param(True, marks=pytest.mark.browser)])
def test_allow_host_with_a_port_opens_exactly_that_port(
    tmp_path: Path, listener: Listener, render: bool
) -> None:
    b = listener.port
    targets = [f"127.0.0.1:{b}", f"0x7f000001:{b}"]
    other = b + 1 if b < 65535 else b - 1
    report, _ = run_capture(tmp_path / "c", targets, render=render, allow_hosts=[f"127.0.0.1:{other}"])
    assert listener.count == 0, listener.accepted
    report, _ = run_capture(tmp_path / "b", targets, render=render, allow_hosts=[f"127.0.0.1:{b}"])
    assert listener.count > 0  # positive control: the same capture does reach B
    item = report.outcome(f"http://0x7f000001:{b}/img-1.png")
    assert item is not None and item.outcome == "ok", item


def test_the_command_line_flag_takes_a_port(tmp_path: Path, listener: Listener) -> None:
    b = listener.port
    site = tmp_path / "site"
    make_site(site, [f"127.0.0.1:{b}"])
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        argv = ["capture", server.url, "--no-render", "--delay", "0", "--retries", "0", "--depth", "1"]
        assert main([*argv, "-o", str(tmp_path / "a"), "--allow-host", f"127.0.0.1:{b + 1}"]) == 0
        assert listener.count == 0
        assert main([*argv, "-o", str(tmp_path / "b"), "--allow-host", f"2130706433:{b}"]) == 0
        assert listener.count > 0


@pytest.mark.parametrize("bad", ["127.0.0.1:0", "127.0.0.1:99999", "127.0.0.1:x", "[::1", "a b", ""])
def test_a_bad_allow_host_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["capture", "http://127.0.0.1:9/", "-o", "out", "--allow-host", bad])
    assert e.value.code == 2
    assert "--allow-host" in capsys.readouterr().err


async def _no_dns(host: str, port: int) -> list[str]:
    raise OSError(f"no DNS in this test ({host})")


@pytest.mark.parametrize(
    ("allow", "host", "port", "allowed"),
    [
        ("127.0.0.1:8080", "127.0.0.1", 8080, True),
        ("127.0.0.1:8080", "127.0.0.1", 8081, False),
        ("127.0.0.1:8080", "0x7f000001", 8080, True),
        ("127.0.0.1:8080", "2130706433", 8081, False),
        ("127.0.0.1:8080", "::ffff:127.0.0.1", 8080, True),
        ("127.0.0.1:8080", "[::ffff:7f00:1]", 8081, False),
        ("127.0.0.1", "127.1", 1, True),
        ("0x7f.1", "127.0.0.1", 2, True),
        ("[::1]:80", "::1", 80, True),
        ("[::1]:80", "0:0::1", 81, False),
        ("::1", "[::1]", 81, True),
        ("LocalHost.:99", "localhost", 99, True),
    ],
)
def test_every_spelling_gets_the_decision_of_its_canonical_form(
    allow: str, host: str, port: int, allowed: bool
) -> None:
    import asyncio

    from archiver.capture.fetch import AddressRefused

    guard = AddressGuard(frozenset({allow}), resolver=_no_dns if host != "localhost" else _loopback)
    try:
        asyncio.run(guard.addresses(host, port, "http"))
    except AddressRefused:
        assert not allowed
    else:
        assert allowed


async def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def test_a_bad_allow_host_entry_is_refused_by_the_api() -> None:
    with pytest.raises(URLError):
        AddressGuard(frozenset({"127.0.0.1:70000"}))


@pytest.mark.browser
def test_chromium_connects_nowhere_by_itself(listener: Listener) -> None:
    """The backstop under routing: the renderer's Chromium (launch flags NO_NETWORK_ARGS), with no
    route at all, reaches no spelling of the listener's address, not by navigation, preconnect,
    dns-prefetch, prefetch, beacon, EventSource nor WebSocket."""
    from playwright.sync_api import sync_playwright

    from archiver.capture.browser import NO_NETWORK_ARGS, launch

    targets = spellings(listener)
    page_html = "".join(
        f'<link rel="preconnect" href="http://{t}"><link rel="dns-prefetch" href="//{t}">'
        f'<link rel="prefetch" href="http://{t}/p"><img src="http://{t}/i.png">'
        f'<script>navigator.sendBeacon("http://{t}/b", "x"); new EventSource("http://{t}/e");'
        f'try {{ new WebSocket("ws://{t}/w") }} catch (e) {{}}</script>'
        for t in targets
    )
    errors = []
    with sync_playwright() as pw:
        chromium = launch(pw, args=NO_NETWORK_ARGS)
        try:
            page = chromium.new_page()
            page.set_content(page_html, wait_until="load")
            for t in targets:
                try:
                    page.goto(f"http://{t}/direct", timeout=10_000)
                except Exception as e:  # playwright's Error: the navigation failed
                    errors.append(str(e))
            page.wait_for_timeout(300)  # let any stray connection arrive (not a timing assertion)
        finally:
            chromium.close()
    assert listener.count == 0, listener.accepted
    assert len(errors) == len(targets) and all("ERR_NAME_NOT_RESOLVED" in e for e in errors), errors
