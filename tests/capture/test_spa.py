"""Single-page apps with hash routes (tree.md §2.1 step 10, §4.2, §6.4), on two real hash-router
frameworks installed from npm by tools/bootstrap: docsify (markdown pages behind ``#/guide``) and
Vue 3 with vue-router's ``createWebHashHistory`` (``#/about``). A rendered capture follows each
route as a page, stores it as a ``__r-`` route page showing that route's content, and rewrites the
links between routes so that a click in the offline copy lands on the right route: from file://,
from the gwtar and from the ZIM, both through ``archiver serve`` (real Chromium each time)."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from archiver import gwtar, zim
from archiver.capture import capture
from archiver.capture.browser import launch
from archiver.fixture import FixtureConfig, FixtureServer
from archiver.serve import running

pytestmark = pytest.mark.browser

NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"

DOCSIFY_INDEX = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Spa docs</title><link rel="stylesheet" href="vue.css"></head>
<body>
<div id="app">Loading</div>
<script>window.$docsify = { name: "Spa docs", loadSidebar: false, subMaxLevel: 0 };</script>
<script src="docsify.min.js"></script>
</body>
</html>
"""
DOCSIFY_PAGES = {
    "README.md": "# Docsify home\n\nWelcome. See the [guide](guide.md) and the [API](api.md).\n",
    "guide.md": "# The guide\n\nGuide text: walk before you run. On to the [API](api.md).\n",
    "api.md": "# The API\n\nAPI text: call it with care. Back to the [guide](guide.md).\n",
}

VUE_INDEX = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Spa shop</title></head>
<body>
<div id="app">
  <nav><router-link to="/">Home</router-link> | <router-link to="/about">About us</router-link> |
  <router-link to="/contact">Contact</router-link></nav>
  <router-view></router-view>
</div>
<script src="vue.global.prod.js"></script>
<script src="vue-router.global.prod.js"></script>
<script>
const page = (title, text) => ({ template: `<main><h1>${title}</h1><p>${text}</p></main>` });
const router = VueRouter.createRouter({
  history: VueRouter.createWebHashHistory(),
  routes: [
    { path: "/", component: page("Vue home", "The shop front: everything is on sale.") },
    { path: "/about", component: page("About the shop", "Founded in a garage, still in it.") },
    { path: "/contact", component: page("Contact the shop", "Write to the garage door.") },
  ],
});
Vue.createApp({}).use(router).mount("#app");
</script>
</body>
</html>
"""


@dataclass(frozen=True)
class App:
    name: str
    tree: Path
    gwtar: Path
    zim: Path
    home_text: str
    # (route URL's fragment, link text on the home page, text only that route shows)
    routes: tuple[tuple[str, str, str], ...]


def _npm(rel: str) -> Path:
    path = NODE_MODULES / rel
    assert path.is_file(), f"{path} is missing: `bash tools/bootstrap test` installs it from npm"
    return path


def _docsify(root: Path) -> Path:
    root.mkdir()
    shutil.copy(_npm("docsify/lib/docsify.min.js"), root)
    shutil.copy(_npm("docsify/lib/themes/vue.css"), root)
    (root / "index.html").write_text(DOCSIFY_INDEX, encoding="utf-8")
    for name, text in DOCSIFY_PAGES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _vue(root: Path) -> Path:
    root.mkdir()
    shutil.copy(_npm("vue/dist/vue.global.prod.js"), root)
    shutil.copy(_npm("vue-router/dist/vue-router.global.prod.js"), root)
    (root / "index.html").write_text(VUE_INDEX, encoding="utf-8")
    return root


def _captured(name: str, site: Path, folder: Path, home_text: str, routes: Any) -> App:
    tree = folder / f"{name}-tree"
    with FixtureServer(FixtureConfig(root=site, robots=None)) as server:
        capture([server.url], tree, render=True, depth=3, delay=0, tabs=2, progress=False)
    packed, book = folder / f"{name}.gwtar.html", folder / f"{name}.zim"
    gwtar.pack(tree, packed)
    zim.pack(tree, book)
    return App(name, tree, packed, book, home_text, routes)


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, App]:
    folder = tmp_path_factory.mktemp("spa")
    return {
        "docsify": _captured(
            "docsify",
            _docsify(folder / "docsify-site"),
            folder,
            "Welcome. See the",
            (("/guide", "guide", "walk before you run"), ("/api", "API", "call it with care")),
        ),
        "vue": _captured(
            "vue",
            _vue(folder / "vue-site"),
            folder,
            "everything is on sale",
            (("/about", "About us", "still in it"), ("/contact", "Contact", "garage door")),
        ),
    }


def _records(tree: Path) -> dict[str, dict[str, Any]]:
    lines = (tree / "_archiver/manifest.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    out = {}
    for line in lines:
        record = json.loads(line)
        for url in record["urls"]:
            out[url] = record
    return out


@pytest.mark.parametrize("name", ["docsify", "vue"])
def test_each_route_is_a_route_page_showing_that_route(apps: dict[str, App], name: str) -> None:
    app = apps[name]
    records = _records(app.tree)
    home = next(u for u, r in records.items() if r["path"] == "index.html")
    for fragment, _label, text in app.routes:
        record = records.get(home + "#" + fragment)
        assert record is not None, f"{name}: route #{fragment} not captured: {sorted(records)}"
        assert record["kind"] == "page" and record["path"].startswith("index__r-"), record
        html = (app.tree / record["path"]).read_text(encoding="utf-8")
        assert text in html, f"{name}: {record['path']} does not show route #{fragment}"
        assert app.home_text not in html
    index = (app.tree / "index.html").read_text(encoding="utf-8")
    assert app.home_text in index
    assert 'href="#/' not in index  # every route link now names its route page


def _click_through(url: str, app: App, ready: str | None) -> list[str]:
    """Open ``url`` in Chromium, click each route's link on the home page, and return what went
    wrong (nothing when every click landed on its route's content)."""
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as pw:
        browser = launch(pw)
        try:
            for fragment, label, text in app.routes:
                page = browser.new_context().new_page()  # each click from a fresh start
                page.goto(url)
                if ready:
                    page.wait_for_function(ready, timeout=30_000)
                page.wait_for_function(
                    "t => document.body && document.body.innerText.includes(t)", arg=app.home_text
                )
                page.get_by_role("link", name=label, exact=True).first.click()
                try:
                    page.wait_for_function(
                        "t => document.body && document.body.innerText.includes(t)", arg=text, timeout=15_000
                    )
                except Exception:
                    shown = page.evaluate("() => document.body ? document.body.innerText : ''")
                    problems.append(f"#{fragment} ({label!r}) landed on {page.url}: {shown[:200]!r}")
                page.context.close()
        finally:
            browser.close()
    return problems


def _offline(url: str, app: App, ready: str | None = None) -> list[str]:
    # a thread of its own: Playwright's sync API refuses a thread where another one is active
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_click_through, url, app, ready).result(timeout=300)


@pytest.mark.parametrize("name", ["docsify", "vue"])
def test_route_links_navigate_from_disk(apps: dict[str, App], name: str) -> None:
    app = apps[name]
    assert _offline((app.tree / "index.html").as_uri(), app) == []


@pytest.mark.parametrize("name", ["docsify", "vue"])
def test_route_links_navigate_in_the_gwtar_served(apps: dict[str, App], name: str) -> None:
    app = apps[name]
    with running([app.gwtar]) as base:
        problems = _offline(base + app.gwtar.name, app, "() => window.gwtar && gwtar.state === 'ready'")
    assert problems == []


@pytest.mark.parametrize("name", ["docsify", "vue"])
def test_route_links_navigate_in_the_zim_served(apps: dict[str, App], name: str) -> None:
    app = apps[name]
    with running([app.zim]) as base:
        problems = _offline(f"{base}{app.zim.stem}/index.html", app)
    assert problems == []


def _font_sites(folder: Path) -> tuple[Path, Path]:
    fonts, site = folder / "fonts", folder / "site"
    fonts.mkdir()
    site.mkdir()
    (fonts / "family.css").write_text("body { font-family: serif; }\n", encoding="utf-8")
    (site / "index.html").write_text(
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Fonts</title>'
        '<link rel="stylesheet" href="main.css"></head><body><p>Text</p></body></html>\n',
        encoding="utf-8",
    )
    return fonts, site


@pytest.mark.parametrize("in_scope", [False, True])
def test_a_stylesheet_import_of_another_host_is_decided_like_any_asset(
    tmp_path: Path, in_scope: bool
) -> None:
    # web fonts: main.css @imports a stylesheet of another host (localhost, not 127.0.0.1)
    fonts_root, site_root = _font_sites(tmp_path)
    with FixtureServer(FixtureConfig(root=fonts_root, robots=None)) as fonts:
        fonts_port = fonts.port
        imported = f"http://localhost:{fonts_port}/family.css"
        (site_root / "main.css").write_text(f'@import url("{imported}");\np {{ color: red; }}\n', "utf-8")
        with FixtureServer(FixtureConfig(root=site_root, robots=None)) as server:
            port = server.port
            tree = tmp_path / "tree"
            extra: dict[str, Any] = (
                {"assets_any_host": True, "allow_hosts": ["localhost"]} if in_scope else {}
            )
            report = capture([server.url], tree, render=False, depth=2, delay=0, progress=False, **extra)
    main = (tree / f"_archiver/127.0.0.1:{port}/main.css").read_text("utf-8")
    item = next(i for i in report.items if i.url == imported)
    if in_scope:  # localised: fetched, stored, the @import names the file
        assert item.outcome == "ok" and item.path == f"_archiver/localhost:{fonts_port}/family.css"
        assert (tree / item.path).read_text("utf-8").startswith("body")
        assert imported not in main and f"localhost%3A{fonts_port}/family.css" in main, main
    else:  # left absolute, reported; in the ZIM, switched off (zim.md §3.3)
        assert (item.outcome, item.reason) == ("skipped", "asset on another site")
        assert f'@import url("{imported}")' in main
        book = tmp_path / "fonts.zim"
        zim.pack(tree, book)
        from libzim.reader import Archive

        entry = Archive(str(book)).get_entry_by_path(f"_archiver/127.0.0.1:{port}/main.css")
        packed = bytes(entry.get_item().content).decode("utf-8")
        assert f'@import url("about:invalid#{imported}")' in packed


HOME = "https://app.ex.com/"


@pytest.mark.parametrize(
    ("ref", "base", "routes", "expected"),
    [
        ("#/inbox", HOME, True, ("local", "https://app.ex.com/#/inbox")),
        ("#!/inbox", HOME, True, ("local", "https://app.ex.com/#!/inbox")),
        ("#!/inbox", HOME + "#!/drafts", True, ("local", "https://app.ex.com/#!/inbox")),  # route to route
        ("#/a b", HOME, True, ("local", "https://app.ex.com/#/a%20b")),
        ("#/inbox", HOME + "docs/", True, ("keep", None)),  # not a page at /: an anchor in it
        ("#top", HOME, True, ("keep", None)),
        ("#", HOME, True, ("keep", None)),
        ("#/inbox", HOME, False, ("keep", None)),  # fetched as is, every route is the same document
    ],
)
def test_route_link_decision(ref: str, base: str, routes: bool, expected: tuple[str, str | None]) -> None:
    from archiver.capture.policy import Scope

    scope = Scope(home=HOME, seeds=(HOME,), routes=routes)
    decision = scope.decide(ref, base, "link", 0)
    assert (decision.action, decision.url) == expected
    assert decision.fragment == ""  # the route is part of the key, never written back after the file
    if routes and expected[0] == "local":
        beyond = Scope(home=HOME, seeds=(HOME,), routes=True, max_depth=0).decide(ref, base, "link", 0)
        assert (beyond.action, beyond.url) == ("absolute", expected[1])  # the live route, absolute
    if routes:  # an image named by a route-looking fragment is still an anchor of the document
        assert scope.decide(ref, base, "embed", 0).action == "keep"
