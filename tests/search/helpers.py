"""Indexes built in memory for the search tests: HTML pages in, a :class:`query.Index` out."""

from __future__ import annotations

from collections.abc import Sequence

from archiver.search import build, query
from archiver.search.text import extract


def build_files(pages: Sequence[tuple[str, str | bytes]], **options: int) -> dict[str, bytes]:
    """Every file of the index of ``pages`` ((path, HTML) in order), by name."""
    files: dict[str, bytes] = {}
    parsed = [(p, extract(h.encode("utf-8") if isinstance(h, str) else h)) for p, h in pages]
    builder = build.Builder(files.__setitem__, skip=build.boilerplate(pg for _, pg in parsed), **options)
    for path, page in parsed:
        builder.add(path, page)
    files["manifest"] = build.manifest_bytes(builder.finish())
    return files


def index_of(pages: Sequence[tuple[str, str | bytes]], **options: int) -> query.Index:
    files = build_files(pages, **options)

    def load(name: str) -> bytes:
        if name not in files:
            raise OSError(f"no file {name}")
        return files[name]

    return query.Index(load, "mem")


def html(title: str, body: str) -> str:
    return f"<!DOCTYPE html><html><head><title>{title}</title></head><body>{body}</body></html>"
