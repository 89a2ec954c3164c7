"""Indexes built in memory for the search tests: HTML pages in, a :class:`query.Index` out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

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


def plain_files(files: dict[str, bytes]) -> dict[str, Any]:
    """Every file's JSON value in the shape of format 2 (the node harnesses read that shape): a
    format 3 index's compressed payloads expanded, its fragment groups' text tables put back into
    the manifest (formats/search.md §4.4)."""
    manifest = json.loads(build.payload_of("manifest", files["manifest"]))
    out: dict[str, Any] = {"manifest": manifest}
    texts: dict[int, list[Any]] = {}
    for name, data in files.items():
        if name == "manifest":
            continue
        payload = build.payload_of(name, data)
        value = json.loads(build.inflate(payload) if manifest["version"] >= 3 else payload)
        if manifest["version"] >= 3 and name.startswith("d/"):
            texts.update({row[0]: row[1:] for row in value["text"]})
            value = value["docs"]
        out[name] = value
    if manifest["version"] >= 3:
        manifest["text"] = [texts[i] for i in range(manifest["text_files"])]
    return out
