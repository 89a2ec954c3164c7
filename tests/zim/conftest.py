"""Shared fixtures for the ZIM tests: hand-built trees and a packed copy of testdata/trees/mini."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from archiver.media import media_type_for
from archiver.tree import Header, Record, title_from_html, write_records
from archiver.zim import pack

ROOT = Path(__file__).resolve().parents[2]
MINI = ROOT / "testdata" / "trees" / "mini"
SITE = ROOT / "testdata" / "site"
DAY = dt.date(2026, 11, 29)

MakeTree = Callable[..., Path]


def build_tree(
    root: Path,
    files: dict[str, bytes],
    *,
    home: str = "https://ex.test/",
    extra: dict[str, dict] | None = None,
    options: dict | None = None,
) -> Path:
    """A canonical tree at ``root`` holding ``files`` (tree path → bytes) and a manifest; ``extra``
    adds record fields per path (urls, redirects, kind …)."""
    records = []
    for path, data in sorted(files.items()):
        full = root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(data)
        page = path.endswith((".html", ".htm"))
        fields = {
            "path": path,
            "kind": "page" if page else "asset",
            "media_type": media_type_for(path),
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "title": title_from_html(data) if page else None,
        }
        fields.update((extra or {}).get(path, {}))
        records.append(Record(**fields))
    header = Header(home=home, created="2026-11-29T12:00:00Z", seeds=[home], options=options or {})
    write_records(root, header, records)
    return root


def page(title: str, body: str = "", *, lang: str = "en", head: str = "") -> bytes:
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n<title>{title}</title>\n'
        f"{head}</head>\n<body>\n<h1>{title}</h1>\n{body}\n</body>\n</html>\n"
    ).encode()


@pytest.fixture
def make_tree(tmp_path: Path) -> MakeTree:
    counter = iter(range(1000))

    def make(files: dict[str, bytes], **kw: object) -> Path:
        return build_tree(tmp_path / f"tree{next(counter)}", files, **kw)  # type: ignore[arg-type]

    return make


@pytest.fixture(scope="session")
def mini_zim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mini") / "mini.zim"
    pack(MINI, out, today=DAY)
    return out


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file of a tree except its manifest, path → bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != "_archiver/manifest.jsonl"
    }
