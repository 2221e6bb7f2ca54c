"""controller/diffs stays pure: no module imports anything that does I/O."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DIFFS = Path(__file__).resolve().parents[2] / "controller" / "diffs"
FORBIDDEN = (
    "httpx",
    "sqlalchemy",
    "flask",
    "click",
    "requests",
    "socket",
    "urllib.request",
    "controller.store",
    "controller.sources",
    "controller.events",
    "controller.services",
    "gc",  # a pause of the collector is the job's choice (controller/collector.py)
)
FORBIDDEN_CALLS = {"open"}


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


@pytest.mark.parametrize("module", sorted(DIFFS.glob("*.py")), ids=lambda p: p.name)
def test_module_imports_nothing_with_io(module: Path) -> None:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    for name in _imports(tree):
        for bad in FORBIDDEN:
            assert name != bad and not name.startswith(bad + "."), f"{module.name} imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{module.name} calls {node.func.id}()"


def test_the_walk_sees_every_module() -> None:
    assert {p.name for p in DIFFS.glob("*.py")} >= {"jsonschema.py", "openapi.py", "mcp.py"}
