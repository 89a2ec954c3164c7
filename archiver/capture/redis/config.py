"""The registration of a Redis-shared crawl (formats/crawl-state.md §6.5): the config every worker of
a crawl must agree on (its seeds and scope options) and the words that say how a worker's differs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from archiver.capture.redis.conn import shown, shown_url
from archiver.errors import UsageError

if TYPE_CHECKING:
    from archiver.capture.options import CaptureOptions

__all__ = ["CONFIG_VERSION", "check_same", "crawl_config"]

CONFIG_VERSION = 1


def crawl_config(seed_keys: Iterable[str], options: CaptureOptions) -> dict[str, Any]:
    """What every worker of a crawl must agree on: its seeds and the options that decide its scope
    (and the delay, which is crawl-wide). Registered by the first worker."""
    scope = options.manifest_options()
    scope.pop("seed_folders", None)
    scope["prefer"] = list(options.prefer)
    scope["avoid"] = list(options.avoid)
    scope["delay"] = 1.0 if options.delay is None else options.delay
    return {"version": CONFIG_VERSION, "seeds": sorted(set(seed_keys)), "options": scope}


def _differences(registered: dict[str, Any], given: dict[str, Any]) -> str:
    parts = []
    if registered.get("seeds") != given["seeds"]:
        shown = ", ".join(registered.get("seeds") or []) or "none"
        parts.append(f"other seeds (registered: {shown})")
    old = registered.get("options") or {}
    for name in sorted(set(old) | set(given["options"])):
        if old.get(name) != given["options"].get(name):
            parts.append(
                f"{name} {json.dumps(old.get(name))} (given {json.dumps(given['options'].get(name))})"
            )
    return "; ".join(parts) or f"config version {registered.get('version')}"


def check_same(registered: dict[str, Any], config: dict[str, Any], url: str, crawl: str) -> None:
    """A worker whose seeds or scope options differ from the registered ones is refused (exit 2)."""
    if registered != json.loads(json.dumps(config, sort_keys=True)):
        raise UsageError(
            f"the crawl on {shown_url(url)} was registered with {_differences(registered, config)};"
            " give the same seeds and scope options, or another --crawl name",
            subject=f"--crawl {shown(crawl)}",
        )
