"""The pure core stays pure (layout.md, anchors-style pattern 5): its modules import nothing that does
network, disk or browser IO, and call no file-opening builtins."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "archiver"
PURE = ["urls.py", "media.py", "errors.py", "srcset.py", "zim/compressible.py"]
ALLOWED = {
    "__future__", "collections", "collections.abc", "dataclasses", "functools", "hashlib", "ipaddress",
    "mimetypes", "re", "typing", "urllib.parse", "zlib", "idna", "publicsuffixlist", "archiver.errors",
    "archiver.media",
}  # fmt: skip
FORBIDDEN_CALLS = {"open", "exec", "eval", "__import__"}


@pytest.mark.parametrize("name", PURE)
def test_pure_module_imports(name: str) -> None:
    tree = ast.parse((PACKAGE / name).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{name} calls {node.func.id}()"
    assert imported <= ALLOWED, f"{name} imports {sorted(imported - ALLOWED)}"


@pytest.mark.parametrize("name", PURE)
def test_pure_module_says_so(name: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / name).read_text(encoding="utf-8"))) or ""
    assert "Pure: no network, no filesystem, no clock" in doc


def test_mimetypes_reads_no_system_files() -> None:
    from archiver import media

    assert media.media_type_for("a/b__q-951eba.PNG") == "image/png"
    assert media.media_type_for("x.woff2") == "font/woff2"
    assert media.media_type_for(".htaccess") == "application/octet-stream"
    assert media.media_type_for("noext") == "application/octet-stream"
