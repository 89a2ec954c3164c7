"""The capture package by its seams (issue 24 point 5): the stages take a narrow context, not the whole
crawler, so no module of archiver/capture/ imports the crawl loop (crawl.py) back but the package's
entry point, and no module of it is in an import circle with another, counting every import: at the
top, in a function, and those under ``TYPE_CHECKING`` (a circle of type hints is still one design).

The imports are read from the source (``ast``), not by importing: the test is about the text."""

from __future__ import annotations

import ast
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[2] / "archiver" / "capture"
PACKAGE = "archiver.capture"
CRAWL = "archiver.capture.crawl"
#: what may import crawl.py: the package's entry point (``archiver.capture.capture``; the command line
#: reaches the crawl through it)
ENTRY_POINTS = {PACKAGE}
MAX_LINES = 600


def _name(path: Path) -> str:
    parts = list(path.relative_to(CAPTURE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in sorted(CAPTURE.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the package that ``name`` (at ``path``) imports, anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # a submodule by its name, else a name the module defines
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_reader_sees_a_circle_and_the_crawl_import() -> None:
    """The checks below would see what they look for (a test that can never fail proves nothing)."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    graph = _graph()
    assert CRAWL in graph[PACKAGE]  # the entry point's own import is read
    assert f"{PACKAGE}.state" in graph[CRAWL]


def test_no_module_of_capture_imports_the_crawl_loop_back() -> None:
    importers = sorted(name for name, imported in _graph().items() if CRAWL in imported)
    assert set(importers) <= ENTRY_POINTS, f"import crawl.py: {sorted(set(importers) - ENTRY_POINTS)}"


def test_no_import_circle_inside_capture() -> None:
    circles = _cycles(_graph())
    assert circles == [], "import circles: " + "; ".join(" ".join(c) for c in circles)


def test_every_module_of_capture_stays_small() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}
