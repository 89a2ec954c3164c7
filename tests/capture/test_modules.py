"""The capture's pure modules import nothing that does network, disk or browser IO, and say so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "archiver" / "capture"
PURE = ["rewrite_css.py", "rewrite_html.py", "policy.py", "robots.py", "textcodec.py"]
ALLOWED = {
    "__future__", "codecs", "collections.abc", "contextlib", "dataclasses", "functools", "re", "typing",
    "urllib.parse", "tinycss2", "tinycss2.serializer", "selectolax.lexbor", "archiver", "archiver.urls",
    "archiver.errors", "archiver.capture", "archiver.srcset", "archiver.capture.policy",
    "archiver.capture.rewrite_css",
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


def test_every_module_has_all_and_future_annotations() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "from __future__ import annotations" in text, path.name
        assert "__all__" in text, path.name
