"""testdata/trees/mini is exactly what tools/make_mini_tree.py builds through the mapping core, so the
packers' shared input follows the tree contract and changes only when the contract does."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import unquote

from archiver.tree import read_records

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "testdata" / "trees" / "mini"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_committed_tree_matches_the_generator(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_mini_tree", ROOT / "tools" / "make_mini_tree.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path / "mini")
    assert _files(tmp_path / "mini") == _files(MINI), "run: python tools/make_mini_tree.py"


def test_every_local_reference_resolves_and_the_manifest_is_true() -> None:
    records = {r.path: r for r in read_records(MINI)}
    on_disk = set(_files(MINI)) - {"_archiver/manifest.jsonl"}
    assert set(records) == on_disk
    for record in records.values():
        if record.media_type not in ("text/html", "text/css"):
            continue
        text = (MINI / record.path).read_text(encoding="utf-8")
        refs = re.findall(r'(?:href|src)="([^"]+)"|url\("([^"]+)"\)', text)
        refs += [(c.split()[0], "") for s in re.findall(r'srcset="([^"]+)"', text) for c in s.split(", ")]
        for ref in filter(None, (a or b for a, b in refs)):
            if ref.startswith("https://example.org/"):
                continue
            target = (MINI / record.path).parent / unquote(ref)
            assert target.resolve().relative_to(MINI.resolve()).as_posix() in records, (record.path, ref)
