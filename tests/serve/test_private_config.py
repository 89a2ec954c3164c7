"""``archiver serve --print-config nginx|caddy`` denies a tree's private files (formats/serve.md §5.1
and §7) as ``archiver serve`` does: Debian's nginx, run with the printed configuration, answers 404
for the capture's state and ``_archiver/tmp/`` however the path is spelt, and still serves the
tree's public files, ``_archiver/manifest.jsonl`` among them. Caddy is not one of the test tools
(tools/bootstrap): its output is checked as text here, and was run by hand (serve.md §7)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from archiver.serve import print_config, running
from tests.serve.helpers import nginx, request

SECRET = b"PRIVATE-STATE-3b9e"

# Every spelling of a private file of the tree mounted at /t/ (after the server decodes the path).
PRIVATE_TARGETS = [
    "/t/_archiver/crawl.sqlite",
    "/t/_archiver/crawl.sqlite-wal",
    "/t/_archiver/crawl.sqlite-shm",
    "/t/_archiver/crawl.sqlite-journal",
    "/t/_archiver/tmp/x",
    "/t/_archiver/tmp/index.html",
    "/t/_archiver/tmp/p.gwtar.html",  # the gwtar location must not win
    "/t/_archiver/tmp/",
    "/t/_archiver/tmp",
    "/t/%5Farchiver/crawl.sqlite",
    "/t/%5farchiver/crawl%2Esqlite",
    "/t/_archiver%2Fcrawl.sqlite-wal",
    "/t/%5F%61rchiver/%74mp/x",
    "/t/_archiver//crawl.sqlite",
    "/t//_archiver/tmp//x",
    "/t/docs/../_archiver/crawl.sqlite",
    "/t/_archiver/crawl.sqlite?download=1",
    "/t/_archiver/warc/rec-20261201000000-00001.warc.gz",  # capture --warc: URLs unredacted
    "/t/_archiver/WARC/rec-20261201000000-00001.warc.gz",
    "/t/_archiver/warc/",
    "/t/_archiver/report.json",  # the capture report: private too (tree.md §9.3)
    "/t/_archiver/Report.JSON",
    "/t/_archiver/report.json.123.tmp",
]
PUBLIC_TARGETS = {
    "/t/": b"<title>Home</title>",
    "/t/index.html": b"<title>Home</title>",
    "/t/_archiver/manifest.jsonl": b'"format":"archiver-tree"',
    "/t/_archiver/ex.com/tmp/a.css": b"body{}",  # a host's own tmp folder is public
    "/t/_archiver/tmpfile.txt": b"public",
    "/t/_archiver/warcs.txt": b"public too",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("private") / "t"
    files = {
        "index.html": b"<title>Home</title>",
        "docs/index.html": b"<title>Docs</title>",
        "_archiver/manifest.jsonl": b'{"format":"archiver-tree","version":1,"home":"https://ex.com/",'
        b'"created":"2026-11-30T00:00:00Z"}\n',
        "_archiver/ex.com/tmp/a.css": b"body{}",
        "_archiver/tmpfile.txt": b"public",
        "_archiver/warcs.txt": b"public too",
        "_archiver/warc/rec-20261201000000-00001.warc.gz": SECRET + b" warc",
        "_archiver/crawl.sqlite": SECRET + b" state",
        "_archiver/report.json": SECRET + b" report",
        "_archiver/report.json.123.tmp": SECRET + b" report tmp",
        "_archiver/crawl.sqlite-wal": SECRET + b" wal",
        "_archiver/crawl.sqlite-shm": SECRET + b" shm",
        "_archiver/crawl.sqlite-journal": SECRET + b" journal",
        "_archiver/tmp/x": SECRET + b" tmp",
        "_archiver/tmp/index.html": SECRET + b" tmp index",
        "_archiver/tmp/p.gwtar.html": SECRET + b" gwtar",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    # nginx runs as this user, who must be able to read the tree (test temp folders are private)
    for folder in [root, *root.parents][:3]:
        folder.chmod(folder.stat().st_mode | 0o755)
    return root


def _check(base: str, server: str) -> None:
    for target in PRIVATE_TARGETS:
        for method in ("GET", "HEAD"):
            reply = request(base, method, target)
            # archiver serve refuses a path with ".." outright (serve.md §5); the others resolve it
            want = 400 if ".." in target and server == "archiver serve" else 404
            assert reply.status == want, f"{server}: {method} {target} -> {reply.status}"
            assert SECRET not in reply.body and reply.header("location") is None, f"{server}: {target}"
    for target, expected in PUBLIC_TARGETS.items():
        reply = request(base, "GET", target)
        assert reply.status == 200 and expected in reply.body, f"{server}: {target} -> {reply.status}"


@pytest.mark.interop
def test_nginx_with_the_printed_config_denies_private_files(tree: Path, tmp_path: Path) -> None:
    with nginx(tmp_path, [tree]) as url, running([tree]) as ours:
        _check(url, "nginx")
        _check(ours, "archiver serve")


def test_printed_configs_deny_private_paths_of_every_tree_mount(tree: Path, tmp_path: Path) -> None:
    other = tmp_path / "b (2)"
    shutil.copytree(tree, other)
    text = print_config("nginx", [tree, other])
    tail = r"/+_archiver/+(crawl\\.sqlite|report\\.json|tmp(/|$)|warc(/|$))"
    assert f'location ~* "^/t{tail}" {{' in text
    assert f'location ~* "^/b\\\\ \\\\(2\\\\){tail}" {{' in text
    assert text.index("+_archiver/+(crawl") < text.index(r"location ~* \.gwtar\.html$")
    caddy = print_config("caddy", [tree, other])
    # each tree twice: on the bare host and on its own origin (formats/serve.md §5.2)
    private = r"@private path_regexp (?i)^/+_archiver/+(crawl\.sqlite|report\.json|tmp(/|$)|warc(/|$))"
    assert caddy.count(private) == 4
    assert caddy.count("respond @private 404") == 4


@pytest.mark.interop
def test_nginx_serves_mounts_whose_names_need_percent_encoding(tmp_path: Path) -> None:
    """nginx matches locations against the decoded path: a mount called "my tree" or "café" is
    served at /my%20tree/ and /caf%C3%A9/ as archiver serve serves it (the printed config used to put
    the encoded form in the location, which never matched)."""
    roots = []
    for name in ("my tree", "café", "a+b"):
        root = tmp_path / "names" / name
        (root / "docs").mkdir(parents=True)
        (root / "index.html").write_bytes(f"<title>{name}</title>".encode())
        (root / "docs" / "index.html").write_bytes(b"<title>docs</title>")
        roots.append(root)
    for folder in [tmp_path / "names", *roots]:
        folder.chmod(folder.stat().st_mode | 0o755)
    with nginx(tmp_path, roots) as url, running(roots) as ours:
        for base in (url, ours):
            for prefix, name in (("/my%20tree", "my tree"), ("/caf%C3%A9", "café"), ("/a+b", "a+b")):
                home = request(base, "GET", prefix + "/")
                assert home.status == 200 and f"<title>{name}</title>".encode() in home.body, (base, prefix)
                assert request(base, "GET", prefix + "/docs/").status == 200
                moved = request(base, "GET", prefix)
                assert moved.status == 301 and (moved.header("location") or "").endswith(prefix + "/")


def test_caddy_redirect_matchers_are_decoded(tmp_path: Path) -> None:
    """Checked by hand with Caddy 2.6.2 (not a test tool): an encoded exact `redir` matcher looped."""
    root = tmp_path / "my tree"
    root.mkdir()
    (root / "index.html").write_bytes(b"<title>t</title>")
    text = print_config("caddy", [root])
    assert "    redir `/my tree` /my%20tree/ 301\n" in text
    assert "    handle_path /my%20tree/* {\n" in text
