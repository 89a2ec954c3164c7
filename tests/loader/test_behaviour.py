"""What the loader does besides drawing pages: fidelity details (doctype, <html>/<body> attributes,
script order, objects, SVG, CSS assets and fonts), what goes over the wire in each serving mode,
integrity checks, media, navigation and history, opening from disk, errors and noscript."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext

from archiver import gwtar
from archiver.fixture import FixtureConfig, FixtureServer, site_root
from tests.loader.harness import StallingServer, Wire, open_gwtar, pixel_diff, serve, solo_pages, wait_ready
from tests.loader.trees import SCRIPT_ORDER, features_tree
from tests.pixels import both, settle, settled_share

pytestmark = pytest.mark.browser
VISIBLE_IMAGES_DECODED = (
    "[...document.images].filter(i => i.getBoundingClientRect().top < innerHeight)"
    ".every(i => i.naturalWidth > 0)"
)
VIEWPORT = {"width": 1024, "height": 768}


@pytest.fixture(scope="module")
def features_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return features_tree(tmp_path_factory.mktemp("features") / "tree")


@pytest.fixture(scope="module")
def features_gwtar(features_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("features-gwtar") / "features.gwtar.html"
    gwtar.pack(features_dir, out, main="index.html")
    return out


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport=VIEWPORT)
    yield ctx
    ctx.close()


def _member(path: Path, name: str) -> gwtar.Member:
    reader = gwtar.open(path)
    try:
        return next(m for m in reader.members if m.path == name)
    finally:
        reader.close()


def _covers(requests: list[dict], member: gwtar.Member) -> bool:
    """Did one of these requests ask for bytes of ``member``?"""
    for r in requests:
        if r["range"] is None:
            continue
        for part in r["range"].removeprefix("bytes=").split(","):
            a, _, b = part.partition("-")
            if int(a) < member.offset + member.size and int(b or 1 << 62) >= member.offset:
                return True
    return False


# ------------------------------------------------------------------------------------------- fidelity


def test_features_page_is_faithful(
    browser: Browser, context: BrowserContext, features_dir: Path, features_gwtar: Path
) -> None:
    """Compared with the same tree served as static files: same pixels, same script order, doctype,
    <html>/<body> attributes, and every kind of reference resolved (object, embed, SVG image and use,
    a container's own style, CSS @import, fonts and CSS images)."""
    page = context.new_page()
    with solo_pages(browser, 2) as (ref, scratch):
        with FixtureServer(FixtureConfig(root=features_dir, robots=None)) as static:
            ref.goto(static.url)
            ref.wait_for_function("document.getElementById('notes').textContent === 'from the archive'")
            settle(ref)
            want_order = ref.evaluate("window.order")
        assert sorted(want_order) == sorted(SCRIPT_ORDER)
        with serve("range", features_gwtar) as served:
            open_gwtar(page, served)
            page.wait_for_function("document.getElementById('notes').textContent === 'from the archive'")
            got = page.evaluate("""() => ({
                order: window.order, compat: document.compatMode,
                doctype: document.doctype && document.doctype.name,
                html: ['lang', 'className'].map(k => document.documentElement[k])
                    .concat(document.documentElement.dataset.html),
                body: [document.body.className, document.body.dataset.body],
                object: document.getElementById('object').data, embed: document.getElementById('embed').src,
                svgImage: document.querySelector('#svg image').getAttribute('href'),
                use: document.querySelector('#svg use').getAttribute('xlink:href'),
                card: getComputedStyle(document.getElementById('card')).backgroundImage,
                h1: getComputedStyle(document.querySelector('h1')).backgroundImage,
                font: [...document.fonts].filter(f => f.family === 'Sans').map(f => f.status),
                problems: gwtar.problems.filter(p => p.kind !== 'missing'),
                missing: gwtar.problems.filter(p => p.kind === 'missing').map(p => p.path),
            })""")
            settle(page)
            diff = settled_share(both(ref, page), lambda a, b: pixel_diff(scratch, a, b), name="features")
        assert got["order"] == want_order, "scripts run in the order the original runs them"
        assert got["compat"] == "CSS1Compat" and got["doctype"] == "html"
        assert got["html"] == ["de", "root", "kept"]
        assert got["body"] == ["features", "kept"]
        for key in ("object", "embed", "svgImage", "use", "card", "h1"):
            assert "blob:" in got[key], key
        assert got["use"].endswith("#icon-leaf")
        assert got["font"] == ["loaded"]
        assert got["problems"] == []
        assert got["missing"] == [], "the unused woff candidate is never asked for"
        assert diff <= 0.005


@pytest.mark.parametrize("mode", ["range", "file"])
def test_quirks_and_legacy_charset_pages(context: BrowserContext, features_gwtar: Path, mode: str) -> None:
    page = context.new_page()
    with serve(mode, features_gwtar) as served:
        open_gwtar(page, served)
        page.click("#to-end")
        page.wait_for_function("Math.abs(document.getElementById('end').getBoundingClientRect().top) < 2")
        assert page.url.endswith("#/index.html#end") and page.evaluate("gwtar.page") == "index.html"
        page.click("#to-quirks")
        wait_ready(page, "quirks.html")
        assert page.evaluate("document.compatMode") == "BackCompat", "no doctype: quirks, as the original"
        page.go_back()
        wait_ready(page, "index.html")
        page.click("#to-latin")
        wait_ready(page, "latin1.html")
        assert page.inner_text("#word") == "caf\u00e9 \u2013 na\u00efve"


def test_meta_refresh_belongs_to_its_page(context: BrowserContext, features_gwtar: Path) -> None:
    """A refresh moves on from its own page, and never from the page shown after it."""
    page = context.new_page()
    with serve("range", features_gwtar) as served:
        open_gwtar(page, served, "#/refresh.html")
        wait_ready(page, "latin1.html")
        page.evaluate("gwtar.go('refresh.html')")
        wait_ready(page, "refresh.html")
        page.evaluate("gwtar.go('quirks.html')")
        wait_ready(page, "quirks.html")
        page.wait_for_timeout(1000)
        assert page.evaluate("gwtar.page") == "quirks.html"


def test_fixture_home_uses_fonts_and_css_assets(context: BrowserContext, site_gwtar: Path) -> None:
    page = context.new_page()
    with serve("range", site_gwtar) as served:
        open_gwtar(page, served)
        got = page.evaluate("""() => ({
            family: getComputedStyle(document.body).fontFamily,
            fonts: [...document.fonts].map(f => f.family.replace(/"/g, '') + ':' + f.status),
            hero: [...document.images].map(i => [i.alt, i.naturalWidth, i.currentSrc.slice(0, 5)]),
            sheets: [...document.styleSheets].map(s => (s.href || '').slice(0, 5)),
            preload: document.querySelector('link[rel=preload]').hasAttribute('href'),
        })""")
    assert "Acme Field Sans" in got["family"]
    assert "Acme Field Sans:loaded" in got["fonts"]
    assert all(w > 0 and src == "blob:" for _, w, src in got["hero"]), got["hero"]
    assert {s for s in got["sheets"] if s} == {"blob:"}
    assert got["preload"] is False, "preload hints are neutralised, never fetched"


# -------------------------------------------------------------------------------------------- the wire


def test_range_server_lazy_and_never_whole(context: BrowserContext, site_gwtar: Path) -> None:
    """On a Range-capable server: every loader request is a Range request, none fetches the whole file,
    multi-range batches are used, and images below the fold wait until they are scrolled to."""
    page = context.new_page()
    wire = Wire.attach(context, page)
    far = _member(site_gwtar, "img/lazy/far-away.jpg")
    with serve("range", site_gwtar) as served:
        open_gwtar(page, served, "#/demo/lazy.html")
        size = site_gwtar.stat().st_size
        requests = wire.network()
        assert requests[0]["range"] is None, "the navigation itself"
        assert all(r["range"] and r["status"] == 206 for r in requests[1:]), requests
        assert all(r["bytes"] < size // 4 for r in requests[1:])
        assert not _covers(requests, far), "below the fold: not fetched yet"
        page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        page.wait_for_function(
            "[...document.images].every(i => !i.closest('main') || i.currentSrc.startsWith('blob:')"
            " || i.loading !== 'lazy')"
        )
        page.evaluate("gwtar.idle()")
        assert _covers(wire.network(), far)
        assert page.evaluate("gwtar.stats.multi") is True
        assert any("," in (r["range"] or "") for r in wire.network()), "a multi-range request"


def test_multi_range_refused_falls_back(context: BrowserContext, site_gwtar: Path) -> None:
    page = context.new_page()
    Wire.attach(context, page)
    with serve("nomulti", site_gwtar) as served:
        open_gwtar(page, served, "#/gallery/index.html")
        log = served.server_log()
        multi = [e for e in log if e[2] and "," in e[2]]
        assert multi and all(status == 200 for *_, status in multi), "the fixture server refuses multi-range"
        assert [e for e in log if e[2] and "," not in e[2] and e[3] == 206], "single ranges afterwards"
        assert page.evaluate("gwtar.stats.multi") is False
        assert page.evaluate(VISIBLE_IMAGES_DECODED)


def test_server_ignoring_range_streams_once(context: BrowserContext, site_gwtar: Path) -> None:
    """No Range at all: the archive is read once, front to back. The page renders from the bytes that
    have arrived (the server stalls after the main page's members and the loader is ready anyway),
    reading stops at totalArchiveSize, and navigation uses what arrived."""
    page = context.new_page()
    wire = Wire.attach(context, page)
    reader = gwtar.open(site_gwtar)
    total = reader.total_archive_size
    listed_end = max(m.offset + m.size for m in reader.members if m.key is not None)
    reader.close()
    with StallingServer(site_gwtar, listed_end + 4096) as server:
        page.goto(server.url, wait_until="commit")
        wait_ready(page, "index.html")
        assert page.evaluate("gwtar.mode") == "stream"
        assert page.evaluate("gwtar.stats.bytes") <= listed_end + 4096 < total, "rendered mid-stream"
        assert page.evaluate(VISIBLE_IMAGES_DECODED)
        server.release()
        page.evaluate("gwtar.go('docs/index.html')")
        wait_ready(page, "docs/index.html")
        page.wait_for_function(f"gwtar.stats.bytes >= {total}", timeout=30_000)
        page.evaluate("gwtar.go('gallery/index.html')")
        wait_ready(page, "gallery/index.html")
        assert page.evaluate("gwtar.stats.bytes") == total, "stopped at totalArchiveSize"
        assert server.gets == 2, "the navigation, then one stream for everything"
        assert len([r for r in wire.network() if r["url"] == server.url]) == 2


@pytest.mark.parametrize("mode", ["range", "nomulti"])
def test_video_waits_until_played(context: BrowserContext, site_gwtar: Path, mode: str) -> None:
    page = context.new_page()
    wire = Wire.attach(context, page)
    video = _member(site_gwtar, "media/field-notes.mp4")
    with serve(mode, site_gwtar) as served:
        open_gwtar(page, served, "#/blog/2026/04/field-recording.html")
        assert not _covers(wire.network(), video)
        assert not [r for r in wire.network() if "/~/" in r["url"]]
        page.locator("video").scroll_into_view_if_needed()
        page.evaluate("gwtar.idle()")
        assert page.evaluate("document.querySelector('video').poster.startsWith('blob:')")
        assert not _covers(wire.network(), video), "in view, but not played"
        page.evaluate("document.querySelector('video').play().catch(() => {})")
        if mode == "range":  # archiver serve has member URLs: the video streams from one
            page.wait_for_function("document.querySelector('video').src.includes('/~/media/field-notes.mp4')")
            page.wait_for_timeout(300)
            member = [
                r
                for r in wire.network()
                if r["url"].endswith("/~/media/field-notes.mp4") and r["method"] == "GET"
            ]
            assert member, wire.network()[-3:]
        else:  # a static host: one Range request for the whole member, then a blob
            page.wait_for_function("document.querySelector('video').src.startsWith('blob:')", timeout=20_000)
            assert _covers(wire.network(), video)


def test_media_from_disk_play_from_a_file_slice(context: BrowserContext, features_gwtar: Path) -> None:
    page = context.new_page()
    wire = Wire.attach(context, page)
    with serve("file", features_gwtar) as served:
        open_gwtar(page, served, "#/media/index.html")
        page.evaluate("document.getElementById('audio').play().catch(() => {})")
        page.wait_for_function("document.getElementById('audio').currentTime > 0.2", timeout=10_000)
        assert page.evaluate("document.querySelector('#audio source').src.startsWith('blob:')")
    assert wire.network() == []


@pytest.mark.parametrize("mode", ["range", "file"])
def test_a_pages_own_play_resolves(context: BrowserContext, features_gwtar: Path, mode: str) -> None:
    # a page script's audio.play() before the member is loaded: the loader swaps the placeholder for
    # the real source (el.load()), which used to reject that play() with an AbortError
    page = context.new_page()
    with serve(mode, features_gwtar) as served:
        open_gwtar(page, served, "#/media/index.html")
        outcome = page.evaluate("document.getElementById('audio').play().then(() => 'resolved', e => e.name)")
        assert outcome == "resolved"
        page.wait_for_function("document.getElementById('audio').currentTime > 0.2", timeout=10_000)


# ------------------------------------------------------------------------------------------- integrity


def _corrupt(src: Path, dest: Path, member: str) -> Path:
    shutil.copyfile(src, dest)
    m = _member(dest, member)
    with dest.open("r+b") as fh:
        fh.seek(m.offset + m.size // 2)
        byte = fh.read(1)
        fh.seek(m.offset + m.size // 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return dest


def test_corrupted_asset_is_detected_and_reported(
    context: BrowserContext, mini_gwtar: Path, tmp_path: Path
) -> None:
    bad = _corrupt(mini_gwtar, tmp_path / "mini.gwtar.html", "_archiver/mini.example/img/logo__q-951eba.png")
    page = context.new_page()
    with serve("nomulti", bad) as served:
        assert served.url.startswith("http://127.0.0.1:")
        open_gwtar(page, served)
        got = page.evaluate("""() => ({
            secure: isSecureContext,
            problems: gwtar.problems.filter(p => p.kind === 'integrity').map(p => p.path),
            logo: ['src', 'data-gwtar-error'].map(a => document.images[0].getAttribute(a)),
            notice: document.querySelector('[data-gwtar-notice]').shadowRoot.textContent,
            others: [...document.images].slice(1).map(i => i.naturalWidth > 0),
        })""")
    assert got["secure"] is True
    assert got["problems"] == ["_archiver/mini.example/img/logo__q-951eba.png"]
    assert got["logo"][0] is None, "the corrupt bytes are never shown"
    assert "SHA-256 mismatch" in got["logo"][1]
    assert "logo__q-951eba.png" in got["notice"] and "damaged" in got["notice"]
    assert all(got["others"])


def test_corrupted_page_is_not_shown(context: BrowserContext, mini_gwtar: Path, tmp_path: Path) -> None:
    bad = _corrupt(mini_gwtar, tmp_path / "mini.gwtar.html", "index.html")
    page = context.new_page()
    with serve("range", bad) as served:
        open_gwtar(page, served)
        assert page.evaluate("gwtar.state") == "error"
        assert "integrity check" in page.inner_text("#gwtar-error")
        assert page.locator("h1").inner_text() == "This archive could not be shown"


# ------------------------------------------------------------------------------------ navigation, disk


def test_links_history_and_deep_links(context: BrowserContext, site_gwtar: Path) -> None:
    page = context.new_page()
    wire = Wire.attach(context, page)
    with serve("range", site_gwtar) as served:
        open_gwtar(page, served)
        first = len(wire.network())
        page.click("nav >> text=Docs")
        wait_ready(page, "docs/index.html")
        assert page.url.endswith("#/docs/index.html")
        assert page.title().startswith("Documentation") or "Docs" in page.title()
        page.evaluate("gwtar.go('docs/faq.html', 'offline')")
        wait_ready(page, "docs/faq.html")
        assert page.evaluate(
            "document.getElementById('offline').getBoundingClientRect().top < 5"
            " || scrollY + innerHeight >= document.documentElement.scrollHeight - 1"
        ), "scrolled to the fragment (or as far as the page goes)"
        page.go_back()
        wait_ready(page, "docs/index.html")
        page.go_back()
        wait_ready(page, "index.html")
        reused = page.evaluate("gwtar.stats.requests")
        page.go_forward()
        wait_ready(page, "docs/index.html")
        assert page.evaluate("gwtar.stats.requests") == reused, "assets already fetched are reused"
        page.reload(wait_until="commit")
        wait_ready(page, "docs/index.html")
        assert page.evaluate("document.title") and "Docs" in page.inner_text("body")
    assert first > 1


def test_open_from_disk_renders_and_navigates_without_network(
    context: BrowserContext, site_gwtar: Path
) -> None:
    page = context.new_page()
    wire = Wire.attach(context, page)
    with serve("file", site_gwtar) as served:
        page.goto(served.url, wait_until="commit")
        page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
        text = page.inner_text("body")
        assert "Open this archive" in text and "tail -c +" in text and "| tar -x" in text
        with page.expect_file_chooser() as chooser:
            page.click("#gwtar-file")
        chooser.value.set_files(str(site_gwtar))
        wait_ready(page, "index.html")
        assert page.evaluate("gwtar.mode") == "file"
        page.click("nav >> text=Gallery")
        wait_ready(page, "gallery/index.html")
        assert page.evaluate(VISIBLE_IMAGES_DECODED)
    assert wire.network() == [], wire.network()


def test_picker_refuses_a_file_that_is_not_an_archive(
    context: BrowserContext, site_gwtar: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.html"
    other.write_text("<p>not an archive</p>")
    page = context.new_page()
    page.goto(site_gwtar.as_uri(), wait_until="commit")
    page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
    page.set_input_files("#gwtar-file", str(other))
    page.wait_for_selector("#gwtar-error")
    assert "not a gwtar archive" in page.inner_text("#gwtar-error")


# --------------------------------------------------------------------------------------- errors, noscript


def test_server_gone_shows_a_message(context: BrowserContext, mini_gwtar: Path) -> None:
    page = context.new_page()
    Wire.attach(context, page)
    with serve("nomulti", mini_gwtar) as served:
        open_gwtar(page, served)
        served.fixture.stop()
        page.evaluate("gwtar.go('docs/intro/index.html')")
        wait_ready(page)
        assert page.evaluate("gwtar.state") == "error"
        assert "could not be loaded" in page.inner_text("#gwtar-error")


def test_missing_page_shows_not_in_archive(context: BrowserContext, mini_gwtar: Path) -> None:
    page = context.new_page()
    with serve("range", mini_gwtar) as served:
        open_gwtar(page, served, "#/no/such/page.html")
        assert "Not in this archive" in page.inner_text("h1")


def test_without_javascript_noscript_explains(browser: Browser, mini_gwtar: Path) -> None:
    ctx = browser.new_context(java_script_enabled=False)
    try:
        page = ctx.new_page()
        with serve("nomulti", mini_gwtar) as served:
            page.goto(served.url, wait_until="commit")
            page.wait_for_selector("body")
            text = page.inner_text("body")
        assert "gwtar" in text and "tar" in text and "JavaScript" in text
    finally:
        ctx.close()


def test_one_global_and_no_prototype_touched(
    context: BrowserContext, mini_gwtar: Path, tmp_path: Path
) -> None:
    """Against a blank page of the same origin: the loader adds window.gwtar and nothing else."""
    probe = """() => ({
        window: Object.getOwnPropertyNames(window).sort(),
        protos: [Object, Array, String, Function, Promise, Element, Node, Document, HTMLElement, EventTarget]
            .map(c => c.name + ':' + Object.getOwnPropertyNames(c.prototype).sort().join(',')),
    })"""
    archive = tmp_path / "mini.gwtar.html"
    shutil.copyfile(mini_gwtar, archive)
    (tmp_path / "blank.html").write_text("<!DOCTYPE html><title>blank</title>")
    blank, page = context.new_page(), context.new_page()
    with serve("nomulti", archive) as served:
        blank.goto(served.url.replace("mini.gwtar.html", "blank.html"))
        before = blank.evaluate(probe)
        open_gwtar(page, served)
        after = page.evaluate(probe)
    assert sorted(set(after["window"]) - set(before["window"])) == ["gwtar"]
    assert after["protos"] == before["protos"]


def _singlefile_page(path: Path) -> Path:
    """A page as SingleFile saves one: everything inline, assets as data: URIs, SingleFile's own CSP."""
    site = site_root()

    def uri(name: str, mime: str) -> str:
        return f"data:{mime};base64,{base64.b64encode((site / name).read_bytes()).decode()}"

    script = "data:text/javascript;base64," + base64.b64encode(b'window.order.push("data-js");').decode()
    csp = (
        "default-src 'none'; font-src 'self' data:; img-src 'self' data:; style-src 'unsafe-inline'; "
        "media-src 'self' data:; script-src 'unsafe-inline' data:; object-src 'self' data:; "
        "frame-src 'self' data:;"
    )
    path.write_text(
        f"""<!DOCTYPE html><html lang="fr" data-sf="1"><head><meta charset="utf-8"><title>SF page</title>
<meta http-equiv="content-security-policy" content="{csp}">
<style>@font-face{{font-family:F;src:url({uri("fonts/acme-field-sans.woff2", "font/woff2")}) format("woff2")}}
body{{font-family:F}} .bg{{background:url({uri("img/inline/tile.png", "image/png")});height:50px}}</style>
<script>window.order = ["inline-1"];</script><script src="{script}"></script>
<script>window.order.push("inline-2");</script></head>
<body class="b"><h1>SingleFile page</h1>
<img id="logo" src="{uri("img/logo.png", "image/png")}" width="160" height="48"><div class="bg"></div>
<div style="background-image:url({uri("img/bg/paper.png", "image/png")});height:30px"></div>
</body></html>""",
        encoding="utf-8",
    )
    return path


def test_singlefile_input_matches_the_page_from_disk(context: BrowserContext, tmp_path: Path) -> None:
    original = _singlefile_page(tmp_path / "page.html")
    gwtar.pack(original, tmp_path / "page.gwtar.html")
    ref, scratch, page = context.new_page(), context.new_page(), context.new_page()
    ref.goto(original.as_uri())
    settle(ref)
    want = ref.evaluate("window.order")
    with serve("nomulti", tmp_path / "page.gwtar.html") as served:
        open_gwtar(page, served)
        got = page.evaluate(
            "({order: window.order, lang: document.documentElement.lang, problems: gwtar.problems})"
        )
        diff = settled_share(both(ref, page), lambda a, b: pixel_diff(scratch, a, b), name="singlefile")
    assert want == ["inline-1", "data-js", "inline-2"]
    assert got == {"order": want, "lang": "fr", "problems": []}
    assert diff <= 0.005


def test_dropping_the_file_opens_it(context: BrowserContext, mini_gwtar: Path) -> None:
    page = context.new_page()
    wire = Wire.attach(context, page)
    page.goto(mini_gwtar.as_uri(), wait_until="commit")
    page.wait_for_function("window.gwtar && gwtar.state === 'picker'")
    page.evaluate(
        """b64 => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], "mini.gwtar.html", { type: "text/html" }));
            const drop = new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true });
            window.dispatchEvent(drop);
        }""",
        base64.b64encode(mini_gwtar.read_bytes()).decode(),
    )
    wait_ready(page, "index.html")
    assert page.evaluate("gwtar.mode") == "file"
    assert page.title() == "Mini home"
    assert wire.network() == []
